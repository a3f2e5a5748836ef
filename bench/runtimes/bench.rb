# bench.rb: the Ruby workload of bench/runtimes/run.sh. Each iteration makes
# 5 Ruby-level method calls (step, make_point, Point#initialize, row, label)
# and 3 allocations (a Point, an Array, a String).
#
# Usage: ruby bench.rb ITERATIONS [--tracepoint] [--armed]
#   Prints "ready", waits for a line on stdin (the tracer attaches meanwhile),
#   runs, prints "ns_per_iter N" and exits.
#   --armed  with vmtrace's Ruby extension loaded: wait, after the line, for
#            the attached tracer to have turned its hooks on
class Point
  def initialize(x)
    @x = x
  end
end

def make_point(i)
  Point.new(i)
end

def row(i)
  [i, i]
end

def label(_i)
  "p"
end

def step(i)
  make_point(i)
  row(i)
  label(i)
end

iterations = Integer(ARGV[0] || 200_000)
TracePoint.new(:call, :return) {}.enable if ARGV.include?("--tracepoint")
$stdout.puts "ready"
$stdout.flush
$stdin.gets
sleep 0.001 until Vmtrace.armed? if ARGV.include?("--armed")
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
i = 0
while i < iterations
  step(i)
  i += 1
end
t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
$stdout.puts "ns_per_iter #{(t1 - t0) / iterations}"
$stdout.flush
