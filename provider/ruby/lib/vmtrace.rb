# vmtrace.rb: vmtrace inside Ruby. `require "vmtrace"` (or `ruby -rvmtrace`,
# or RUBYOPT=-rvmtrace) loads libvmtrace into this process, dormant until a
# `vmtrace` consumer attaches: then Ruby's own allocation, free and GC hooks
# count into libvmtrace's batched tables, and they go off again when the
# consumer leaves (docs/runtimes.md).
begin
  require_relative "vmtrace_ext"     # beside it: the build tree, cmake --install
rescue LoadError
  require "vmtrace_ext"              # the gem's extension directory
end
require_relative "vmtrace/events"
# The extension sets up all it needs itself (fork, exit): a tracer may load
# it without this file (docs/runtimes.md, attaching).
