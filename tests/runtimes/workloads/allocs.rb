# allocs.rb: a Ruby workload whose allocations per class per method are
# known by construction, for tests/runtimes.
#
# Usage: ruby allocs.rb [--tracepoint] [--crosscheck FILE]
#   Prints "ready", waits for one line on stdin (vmtrace attaches meanwhile),
#   runs the workload, prints "done", waits for a second line, then exits.
#   --tracepoint  enables an empty TracePoint on :call/:return first: Ruby
#                 >= 2.5 fires method__entry/method__return only while one is
#                 enabled.
#   --gc          runs GC.start twice in the workload (mark and sweep phases)
#   --crosscheck  writes Ruby's own view of the workload to FILE as JSON:
#                 the GC.stat(:total_allocated_objects) delta and, from
#                 ObjectSpace.trace_object_allocations, the objects allocated
#                 per "class file:line" (GC is disabled during the workload,
#                 so every object allocated is still alive to be found).
#
# Expected with method attribution (class, innermost Ruby method, count):
#   Foo    Object#make_foo        1000   Foo.new in a while loop
#   Foo    Object#make_foo_block   200   200.times { Foo.new }: a block is not a method
#   Array  Object#build_rows       500   r = [i, i]
#   Hash   Object#make_hashes      200   h = { a: i }
#   String Object#make_strings     300   s = "row" (an unfrozen literal: a new String each time)
#   Bar    Object#make_bar         100   Bar.new(i): allocated before Bar#initialize runs
#   String Bar#initialize          100   @name = "bar"
#   Baz    Object#thread_work      500   two threads, 250 each, interleaved under the GVL
require "json"

class Foo; end
class Baz; end
class Bar
  def initialize(i)
    @i = i
    @name = "bar" # site:bar_name
  end
end

def make_foo(n)
  i = 0
  while i < n
    Foo.new # site:make_foo
    i += 1
  end
end

def make_foo_block(n)
  n.times { Foo.new } # site:make_foo_block
end

def build_rows(n)
  i = 0
  r = nil
  while i < n
    r = [i, i] # site:build_rows
    i += 1
  end
  r
end

def make_hashes(n)
  i = 0
  h = nil
  while i < n
    h = { a: i } # site:make_hashes
    i += 1
  end
  h
end

def make_strings(n)
  i = 0
  s = nil
  while i < n
    s = "row" # site:make_strings
    i += 1
  end
  s
end

def make_bar(n)
  i = 0
  while i < n
    Bar.new(i) # site:make_bar
    i += 1
  end
end

def thread_work(n)
  i = 0
  while i < n
    Baz.new # site:thread_work
    i += 1
    Thread.pass if i % 50 == 0
  end
end

def workload
  make_foo(1000)
  make_foo_block(200)
  build_rows(500)
  make_hashes(200)
  make_strings(300)
  make_bar(100)
  threads = [Thread.new { thread_work(250) }, Thread.new { thread_work(250) }]
  threads.each(&:join)
  2.times { GC.start } if ARGV.include?("--gc")
end

tracepoint = ARGV.include?("--tracepoint")
crosscheck = ARGV.index("--crosscheck") && ARGV[ARGV.index("--crosscheck") + 1]
TracePoint.new(:call, :return) {}.enable if tracepoint

$stdout.puts "ready"
$stdout.flush
$stdin.gets

if crosscheck
  require "objspace"
  GC.disable
  before = GC.stat(:total_allocated_objects)
  ObjectSpace.trace_object_allocations { workload }
  delta = GC.stat(:total_allocated_objects) - before
  sites = Hash.new(0)
  ObjectSpace.each_object do |o|
    file = ObjectSpace.allocation_sourcefile(o)
    next unless file == __FILE__
    sites["#{o.class} #{file}:#{ObjectSpace.allocation_sourceline(o)}"] += 1
  end
  File.write(crosscheck, JSON.generate({ "total_allocated_objects_delta" => delta,
                                         "sites" => sites }))
  GC.enable
else
  workload
end

$stdout.puts "done"
$stdout.flush
$stdin.gets
