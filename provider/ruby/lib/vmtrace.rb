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

module Vmtrace
  # A fork's child has only the forking thread: it starts its own watcher,
  # so it follows the gates of its own consumers (Puma, Unicorn, Resque).
  module ForkWatch
    def _fork
      pid = super
      if pid == 0
        Vmtrace._after_fork
        Vmtrace.events.__send__(:after_fork) if Vmtrace.instance_variable_get(:@events)
      end
      pid
    end
  end
  Process.singleton_class.prepend(ForkWatch)

  # A death by a signal Ruby re-raises at its end skips the C exit where
  # libvmtrace delivers its last counts: hand them over first. (exit!,
  # which Unicorn's and Resque's children end with, is the extension's.)
  at_exit { Vmtrace._flush(true) }
end
