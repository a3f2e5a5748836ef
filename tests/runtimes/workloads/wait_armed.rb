# Loaded with -r after vmtrace (RUBYOPT="-rvmtrace -r.../wait_armed.rb"): the
# program waits until a tracer attached by pid has armed the extension, so
# a recording by pid sees all of it (versions_test.py); then says on stderr
# how many objects Ruby had made when counting began.
sleep 0.001 until Vmtrace.armed?
$stderr.syswrite("vmtrace-armed-at #{Vmtrace.armed_at_allocations}\n")
