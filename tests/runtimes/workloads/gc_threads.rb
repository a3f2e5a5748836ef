# gc_threads.rb: Ruby collections on a known thread, for the timeline tests
# in tests/runtimes. Automatic collection is off; a second thread runs
# GC.start twice (a mark and a sweep phase each). Prints "ready", waits for a
# line, works, then prints one JSON line: the thread's kernel thread id and
# how many GC.start it ran.
require "json"

GC.disable
$stdout.puts "ready"
$stdout.flush
$stdin.gets
tid = Thread.new { 2.times { GC.start }; Thread.current.native_thread_id }.value
$stdout.puts JSON.generate({ "worker" => { "tid" => tid, "starts" => 2 } })
$stdout.flush
