# live.rb: the live heap of ext_test.py's case ext-live, its counts by
# construction: 2000 Kept held to the end; 2000 Gone and 500 Late freed by
# the last collection. Each Late is born with one ivar (in its slot), then
# grows to five, which moves them to a buffer of its own: its free holds
# more bytes than its allocation counted.
KEEP = []
LATE = []
class Kept; end
class Gone; end
class Late; def initialize; @a = 1; end; end

def make
  2000.times { KEEP << Kept.new; Gone.new }
  500.times { LATE << Late.new }
end

def grow
  LATE.each { |o| %i[@b @c @d @e].each { |iv| o.instance_variable_set(iv, 0) } }
  LATE.clear
end

# --armed (vmtrace's extension loaded, recorded by pid): waits for the
# tracer to have armed it first, and prints one JSON line after the last
# collection: the bytes of a Kept and of a Late as made
# (ObjectSpace.memsize_of, before Late grows); then waits for a line on stdin.
armed = ARGV.include?("--armed")
if armed
  require "json"
  require "objspace"
  sleep 0.001 until Vmtrace.armed?
end
make
born = { "Kept" => ObjectSpace.memsize_of(KEEP[0]), "Late" => ObjectSpace.memsize_of(LATE[0]) } if armed
grow
GC.start(full_mark: true, immediate_sweep: true)
if armed
  puts JSON.generate(born)
  $stdout.flush
  $stdin.gets
end
