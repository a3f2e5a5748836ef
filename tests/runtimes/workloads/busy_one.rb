# busy_one.rb: one thread making objects until a line arrives on stdin (a
# second thread waits in that read), for bench/runtimes/attach_time.py.
# Prints "ready" first.
$stdout.sync = true
stop = false
Thread.new { $stdin.gets; stop = true }
puts "ready"
until stop
  words = []
  300.times { |i| words << "w#{i}"; { i => [i] } }
end
