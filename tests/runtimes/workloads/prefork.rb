# A prefork server's shape (Unicorn, Puma's cluster mode): the master loads
# vmtrace and forks two workers at start; each waits for SIGUSR1 and then
# makes Foo objects, worker i (1, 2) 1000 * i of them. The master, on its
# own SIGUSR1, makes 500 Bar objects and forks a third worker, which
# waits for SIGUSR2 and makes 3000 Foo objects. Every process writes
# "done PID" when it has made its objects; the master ends on SIGTERM.
# The counts follow from the construction: per process, exact.
class Foo; end
class Bar; end

$stdout.sync = true

def worker(n, signal)
  r, w = IO.pipe
  pid = fork do
    r.close
    go = Queue.new
    trap(signal) { go << 1 }
    w.puts "ready"
    w.close
    go.pop
    i = 0
    while i < n
      Foo.new
      i += 1
    end
    puts "done #{Process.pid}"
    sleep
  end
  w.close
  r.gets
  r.close
  pid
end

workers = [worker(1000, "USR1"), worker(2000, "USR1")]
go = Queue.new
trap("USR1") { go << 1 }
trap("TERM") { go << :term }
puts "workers #{workers.join(' ')}"
puts "ready #{Process.pid}"
while (what = go.pop) != :term
  i = 0
  while i < 500
    Bar.new
    i += 1
  end
  workers << worker(3000, "USR2")
  puts "forked #{workers.last}"
  puts "done #{Process.pid}"
end
workers.each { |pid| Process.kill("KILL", pid) }
Process.waitall
