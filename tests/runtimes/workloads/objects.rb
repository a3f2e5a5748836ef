# objects.rb: a Ruby workload that allocates every kind of object a Ruby
# program commonly makes, for tests/runtimes: vmtrace's count per class must
# equal ObjectSpace's.
#
# Usage: ruby objects.rb [--tracepoint]
#   Counts, per class below, the live objects of exactly that class
#   (ObjectSpace.each_object), stops itself (SIGSTOP: vmtrace attaches while
#   it is stopped), runs the workload with GC disabled, stops itself again
#   (vmtrace detaches), counts again and prints one JSON line: per class,
#   the objects the workload allocated. The counting allocates nothing of
#   its own between the two counts, so the two views cover the same objects.
#   --tracepoint  enables an empty TracePoint on :call/:return first (Ruby
#                 fires method__entry/method__return only under one).
#   --attached    never required vmtrace: wait, before the first count, for
#                 a tracer to have loaded the extension into this process
#                 and armed it; then as --armed
#   --armed       with vmtrace's Ruby extension loaded (-rvmtrace): instead
#                 of stopping, wait for the tracer to have armed it before
#                 the workload; after printing, wait for it to be disarmed
#                 (--wait-detach: the tracer is ended by the test). The
#                 tracer counts more than the workload then: compare its
#                 rows with sites in kw..workload (WORKLOAD_LINES).
require "json"
require "objspace"

class Point
  def initialize(x)
    @x = x
  end
end
class Empty; end
# more ivars than fit in the slot (3): each object gets a buffer at birth
class Wide
  def initialize(x)
    @a = x
    @b = x
    @c = x
    @d = x
    @e = x
  end
end

def kw(**opts)
  opts
end

def workload(n)
  wide_bytes = 0
  s = "abc"
  h = { a: 1 }
  f = 1.0e300
  big = 2**70
  i = 0
  while i < n
    t = "literal #{i}"            # interpolation: one String (and the Integer's to_s)
    t = s.dup                     # String#dup
    t = "plain"                   # an unfrozen literal
    t = [i, i]                    # array literal
    t = Array.new(3)              # Array.new
    t = { k: i }                  # hash literal
    t = Hash.new                  # Hash.new
    t = h.merge(b: 2)             # merge: the keyword Hash argument and the result
    t = kw(a: i)                  # keyword arguments into **opts
    t = proc { i }                # Proc
    t = f * 1.5                   # a Float outside the flonum range: heap allocated
    t = big + i                   # Bignum
    t = caller(0, 1)              # Thread::Backtrace, an Array and a String
    t = Point.new(i)              # user class with initialize
    t = Empty.new                 # user class without
    t = Wide.new(i)               # user class with an ivar buffer
    wide_bytes += ObjectSpace.memsize_of(t)
    i += 1
  end
  wide_bytes
end

CLASSES = [String, Array, Hash, Proc, Float, Integer, Thread::Backtrace, Point, Empty, Wide].freeze
COUNTS_BEFORE = Array.new(CLASSES.size, 0)
COUNTS_AFTER = Array.new(CLASSES.size, 0)

def count_into(counts)
  c = 0
  while c < CLASSES.size
    klass = CLASSES[c]
    n = 0
    ObjectSpace.each_object(klass) { |o| n += 1 if o.class.equal?(klass) }
    counts[c] = n
    c += 1
  end
end

n = Integer(ENV.fetch("OBJECTS_N", "1000"))
TracePoint.new(:call, :return) {}.enable if ARGV.include?("--tracepoint")
GC.disable
Wide.new(0) # its class learns its 5 ivars: later ones get their buffer at birth
armed = ARGV.include?("--armed") || ARGV.include?("--attached")
# what loading the extension makes comes before the first count
sleep 0.001 until Object.const_defined?(:Vmtrace) && Vmtrace.armed? if ARGV.include?("--attached")
count_into(COUNTS_BEFORE)
if armed
  sleep 0.001 until Vmtrace.armed?
else
  Process.kill(:STOP, $$)
end
wide_bytes = workload(n)
Process.kill(:STOP, $$) unless armed
count_into(COUNTS_AFTER)
GC.enable
delta = {}
CLASSES.each_with_index { |k, c| delta[k.name] = COUNTS_AFTER[c] - COUNTS_BEFORE[c] }
$stdout.puts JSON.generate({ "objectspace" => delta, "n" => n, "wide_bytes" => wide_bytes })
if ARGV.include?("--wait-detach")
  $stdout.flush
  # the tracer's probes go one at a time, the allocations' not last: wait,
  # ten seconds at most, for every hook to be off, and say which stayed on
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
  sleep 0.01 while (Vmtrace.armed? || !Vmtrace.hooks.empty?) &&
                   Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  $stdout.puts JSON.generate({ "hooks_after_detach" => Vmtrace.hooks })
end
