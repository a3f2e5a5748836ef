# sampled.rb: three classes made in counts known by construction, for
# sampled recordings (ruby_sampled_test.py): 3,000,000 each of Small (one
# ivar, 40 bytes), Mid (two, 40 bytes) and Wide (five: an ivar buffer of 40
# bytes at birth, 80 in all), each made by its own method, interleaved so
# that no class has a stretch of the run to itself.
#
#   --wait      print "ready" and work when a line comes on stdin (a
#               recording by pid attaches meanwhile); after the result, wait
#               for another line and print the hooks left on
#   --objspace  ObjectSpace.trace_object_allocations on first: the result
#               says where ObjectSpace saw the last Wide made
#
# Prints one JSON line: the counts, the sampler's figures when the
# extension is loaded, and ObjectSpace's answer.
require "json"
require "objspace"

class Small; def initialize; @a = 1; end; end
class Mid; def initialize; @a = 1; @b = 2; end; end
class Wide; def initialize; @a = 1; @b = 2; @c = 3; @d = 4; @e = 5; end; end

N = 3_000_000
ROUND = 1000

def make_small(n) = n.times { Small.new }
def make_mid(n) = n.times { Mid.new }
def make_wide(n)
  last = nil
  n.times { last = Wide.new }
  last
end

wait = ARGV.include?("--wait")
objspace = ARGV.include?("--objspace")
$stdout.sync = true
if wait
  puts "ready"
  $stdin.gets
end
ObjectSpace.trace_object_allocations_start if objspace
last = nil
(N / ROUND).times do
  make_small(ROUND)
  make_mid(ROUND)
  last = make_wide(ROUND)
end
seen = objspace ? [File.basename(ObjectSpace.allocation_sourcefile(last).to_s),
                   ObjectSpace.allocation_sourceline(last)] : nil
sampler = defined?(Vmtrace) ? Vmtrace.sampler : {}
puts JSON.generate({ "counts" => { "Small" => N, "Mid" => N, "Wide" => N },
                     "bytes" => { "Small" => 40, "Mid" => 40, "Wide" => 80 },
                     "made" => GC.stat(:total_allocated_objects), "sampler" => sampler,
                     "objspace" => seen })
if wait
  $stdin.gets
  puts JSON.generate({ "hooks" => Vmtrace.hooks.map(&:to_s) })
end
