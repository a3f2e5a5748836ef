# attach_busy.rb: a busy Ruby that never required vmtrace, for
# attach_test.py's attach/detach cycles: three threads make objects in
# rounds whose result is known, one collects every 50 ms, one waits in a
# read of stdin (a line there stops all), and SIGUSR1 is counted by a trap.
# Prints "ready", then, when stopped, "ok SUM bad N": SUM is one round's
# result, N the rounds that gave another (0 unless something broke them).
$stdout.sync = true
signals = 0
Signal.trap("USR1") { signals += 1 }

def round(seed)
  words = []
  300.times { |i| words << "w#{seed + i}"; { i => [i, i.to_s] } }
  words.sum(&:size)
end

WANT = round(7)
stop = false
bad = 0
workers = Array.new(3) do
  Thread.new do
    until stop
      bad += 1 unless round(7) == WANT
    end
  end
end
collector = Thread.new { until stop; GC.start; sleep 0.05; end }
reader = Thread.new { $stdin.gets; stop = true }
puts "ready"
reader.join
(workers + [collector]).each(&:join)
puts "ok #{WANT} bad #{bad}"
