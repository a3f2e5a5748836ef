# events_test.rb: Vmtrace.events, the bus Ruby code uses (provider/ruby/lib/
# vmtrace/events.rb), in a stock Ruby with vmtrace's extension loaded.
#
# Usage: ruby -I BUILD/lib/ruby events_test.rb CASE
# Cases: order, before, keep-alive, signal, drops, gc, statsd, fork.
# Exit 0 pass, 1 fail.
require "vmtrace"
require "socket"

$failures = 0
def check(cond, what)
  puts "#{cond ? 'ok  ' : 'FAIL'} #{what}"
  $failures += 1 unless cond
end

def wait_for(seconds = 10)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  until yield
    return false if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t > seconds

    sleep 0.01
  end
  true
end

bus = Vmtrace.events
case ARGV[0]
when "order"
  got = []
  bus.subscribe(:tick) { |i| got << i }
  1000.times { |i| bus.publish(:tick, i) }
  bus.drain
  check(got == (0...1000).to_a, "1000 events delivered in the order published (#{got.size})")
  check(Thread.current != bus.instance_variable_get(:@thread), "subscribers run on the bus's thread")
when "before"
  5.times { |i| bus.publish(:early, i) }
  got = []
  bus.subscribe(:early) { |i| got << i }
  bus.publish(:early, 5)
  bus.drain
  check(got == [0, 1, 2, 3, 4, 5], "events published before the first subscriber reach it, in order: #{got}")
  over = Vmtrace::Events::KEEP + 10
  over.times { |i| bus.publish(:unheard, i) }
  bus.drain
  check(bus.dropped[:unheard] == 10, "past #{Vmtrace::Events::KEEP} kept, the rest dropped and counted: #{bus.dropped[:unheard]}")
when "keep-alive"
  # the payload's only reference is the bus's until delivery: a finalizer
  # would say if GC took it first
  freed = []
  gate = Thread::Queue.new
  seen = []
  bus.subscribe(:held) { |o| gate.pop; seen << o.size }
  bus.publish(:block, nil) # a kept event ahead: nothing waits on it
  make = lambda do
    s = "payload " * 100
    ObjectSpace.define_finalizer(s, proc { freed << true })
    bus.publish(:held, s)
  end
  make.call
  3.times { GC.start(full_mark: true, immediate_sweep: true) }
  check(freed.empty?, "the payload survives full GCs while undelivered")
  gate << true
  bus.drain
  check(seen == [800], "the subscriber sees the payload whole: #{seen}")
when "signal"
  got = []
  where = []
  bus.subscribe(:signal) do |name|
    got << name
    # a Mutex cannot be locked in a trap: subscribers run outside it
    m = Mutex.new
    m.synchronize { where << Thread.current.name }
  end
  bus.route_signal("USR1")
  Process.kill(:USR1, $$)
  check(wait_for { got == ["USR1"] }, "a trapped signal reaches its subscriber: #{got}")
  check(where == ["vmtrace events"], "... on the bus's thread, where a Mutex works: #{where}")
when "drops"
  gate = Thread::Queue.new
  n = 0
  bus.subscribe(:slow) { gate.pop; n += 1 }
  sent = 0
  (Vmtrace::Events::QUEUE + 500).times { sent += 1 if bus.publish(:slow, 1) }
  dropped = bus.dropped[:slow]
  check(dropped >= 500 && sent + dropped == Vmtrace::Events::QUEUE + 500,
        "a stalled subscriber: #{dropped} dropped and counted, #{sent} queued")
  (sent + 1).times { gate << true }
  bus.drain
  check(n == sent, "every queued event delivered once it moves again: #{n} of #{sent}")
when "gc"
  pauses = []
  allocs = []
  bus.subscribe(:gc) { |p| pauses << p }
  bus.subscribe(:alloc) { |a| allocs << a }
  sleep 0.1
  before = GC.count
  3.times { GC.start(full_mark: true, immediate_sweep: true) }
  200_000.times { "x" * 10 }
  check(wait_for { pauses.count { |p| p[:kind] == :major } >= 3 },
        "GC.start's three major collections reach :gc (#{pauses.size} pauses, GC.count +#{GC.count - before})")
  check(pauses.all? { |p| p[:duration_ns] > 0 && p[:heap_bytes] > 0 }, "each pause has a duration and a heap")
  check(Vmtrace.hooks.include?(:gc), "the GC hook is on while :gc has subscribers: #{Vmtrace.hooks}")
  check(wait_for(3) { allocs.any? { |a| a[:allocated] >= 200_000 } }, ":alloc summaries count the objects made: #{allocs}")
when "statsd"
  server = UDPSocket.new
  server.bind("127.0.0.1", 0)
  bus.statsd("127.0.0.1:#{server.addr[1]}", kinds: %i[signal])
  bus.publish(:signal, "HUP")
  bus.drain
  got = server.recvfrom(100)[0] if IO.select([server], nil, nil, 5)
  check(got == "vmtrace.signal:1|c", "a statsd counter per event: #{got.inspect}")
when "fork"
  got = []
  bus.subscribe(:tick) { |i| got << i }
  r, w = IO.pipe
  pid = fork do
    r.close
    child = []
    Vmtrace.events.subscribe(:tick) { |i| child << i }
    Vmtrace.events.publish(:tick, $$)
    Vmtrace.events.drain
    w.puts(child.inspect)
    w.close
  end
  w.close
  said = r.read
  Process.wait(pid)
  check(said.strip == "[#{pid}]", "a fork's child runs its own bus: #{said.strip}")
  bus.publish(:tick, 1)
  bus.drain
  check(got == [1], "the parent's bus goes on: #{got}")
else
  warn "usage: events_test.rb order|before|keep-alive|signal|drops|gc|statsd|fork"
  exit 2
end
exit($failures.zero? ? 0 : 1)
