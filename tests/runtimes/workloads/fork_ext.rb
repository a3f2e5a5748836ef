# fork_ext.rb: a parent that loaded vmtrace's Ruby extension forks a worker
# (as Unicorn and Resque do), for ext_test.py's fork case. The child prints
# "child PID", waits for a tracer of its own to arm it, makes N Worked
# objects and prints "made N"; the parent waits for it.
class Worked; end
N = 5000
pid = fork do
  $stdout.puts "child #{$$}"
  $stdout.flush
  sleep 0.001 until Vmtrace.armed?
  i = 0
  while i < N
    Worked.new
    i += 1
  end
  $stdout.puts "made #{N}"
  $stdout.flush
end
Process.wait(pid)
