# vmtrace/events.rb: the event bus for Ruby code (Vmtrace.events).
#
#   Vmtrace.events.subscribe(:signal) { |name| ... }
#   Vmtrace.events.publish(:signal, "TERM")
#   Vmtrace.events.route_signal("TERM")     # trap it: subscribers run outside the trap
#   Vmtrace.events.subscribe(:gc) { |pause| pause[:kind], pause[:duration_ns] ... }
#   Vmtrace.events.statsd("127.0.0.1:8125") # every event a statsd counter
#
# One background Ruby thread runs every subscriber, in the order events
# were published. publish only pushes onto a bounded queue, so it may be
# called from a trap handler; when the queue is full the event is dropped
# and counted (dropped[kind]). An event of a kind nobody subscribes to yet
# is kept (up to KEEP per kind, the rest dropped and counted) and delivered
# to its first subscriber. A payload stays referenced by the queue or the
# kept list until every subscriber has seen it, so Ruby's GC cannot take it
# before.
#
# The VM's own events, published while subscribed:
#   :gc           each stop Ruby makes for its collector: {kind:, start_ns:,
#                 duration_ns:, heap_bytes:} (the extension's GC hook)
#   :alloc        each second, objects made and freed since the last one
#                 (GC.stat's counts)
#   :cache_reset  each change of Ruby's constant cache or class serial
#                 (RubyVM.stat), with the old and new values
module Vmtrace
  class Events
    QUEUE = 4096 # events waiting for the thread
    KEEP = 1024  # events kept for a kind with no subscriber yet
    VM_EVERY = 0.05 # seconds between looks at the VM's own events

    attr_reader :dropped

    def initialize
      @subscribers = {}
      @kept = {}
      @dropped = Hash.new(0)
      @queue = Thread::Queue.new
      @thread = nil
      @watcher = nil
    end

    # Run block with each payload of kind published from now on (and those
    # kept from before, if it is the first). Returns the block.
    def subscribe(kind, &block)
      raise ArgumentError, "Vmtrace.events.subscribe(#{kind.inspect}) needs a block" unless block

      kind = kind.to_sym
      start
      watch_vm if %i[gc alloc cache_reset].include?(kind)
      @queue << [:subscribe, kind, block]
      block
    end

    # Deliver payload to kind's subscribers on the bus's thread. false when
    # the queue was full (the event is dropped and counted). Safe in a trap.
    def publish(kind, payload = nil)
      kind = kind.to_sym
      if @queue.size >= QUEUE
        @dropped[kind] += 1
        return false
      end
      @queue << [:event, kind, payload]
      true
    end

    # Trap signal (e.g. "TERM"): it is published as :signal with its name,
    # and its subscribers run on the bus's thread, outside the trap.
    def route_signal(signal)
      name = signal.to_s.delete_prefix("SIG")
      Signal.trap(name) { publish(:signal, name) }
    end

    # Send each event of kinds as a statsd counter "vmtrace.KIND:1|c" (and
    # each :gc pause's duration as a timer "vmtrace.gc.KIND:MS|ms") to
    # host:port over UDP.
    def statsd(address, kinds: %i[gc signal cache_reset])
      require "socket"
      host, port = address.split(":")
      sock = UDPSocket.new
      kinds.each do |kind|
        subscribe(kind) do |payload|
          sock.send("vmtrace.#{kind}:1|c", 0, host, Integer(port))
          if kind == :gc
            ms = payload[:duration_ns] / 1e6
            sock.send(format("vmtrace.gc.%s:%.3f|ms", payload[:kind], ms), 0, host, Integer(port))
          end
        end
      end
      sock
    end

    # Wait until every event published so far has been delivered (tests).
    def drain
      done = Thread::Queue.new
      @queue << [:drain, done]
      start
      done.pop
    end

    private

    # A fork's child has only the forking thread: the bus's threads again.
    def after_fork
      return if @subscribers.empty? && @queue.empty?

      @thread = @watcher = nil
      start
      watch_vm if @subscribers.keys.intersect?(%i[gc alloc cache_reset])
    end

    def start
      return if @thread&.alive?

      @thread = Thread.new { run }
      @thread.name = "vmtrace events"
    end

    def run
      loop do
        op, kind, payload = @queue.pop
        case op
        when :event then deliver(kind, payload)
        when :subscribe
          first = !@subscribers.key?(kind)
          (@subscribers[kind] ||= []) << payload
          (@kept.delete(kind) || []).each { |p| call(payload, p) } if first
        when :drain then kind << true
        end
      end
    end

    def deliver(kind, payload)
      subs = @subscribers[kind]
      if subs
        subs.each { |s| call(s, payload) }
      else
        kept = (@kept[kind] ||= [])
        if kept.size >= KEEP
          @dropped[kind] += 1
        else
          kept << payload
        end
      end
    end

    def call(subscriber, payload)
      subscriber.call(payload)
    rescue StandardError => e
      warn "vmtrace: an events subscriber raised #{e.class}: #{e.message}"
    end

    # The VM's own events: a thread that looks at them every VM_EVERY s.
    def watch_vm
      Vmtrace._gc_listen(true)
      return if @watcher&.alive?

      @watcher = Thread.new { watch_loop }
      @watcher.name = "vmtrace vm events"
    end

    def watch_loop
      last_alloc = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      made = GC.stat(:total_allocated_objects)
      freed = GC.stat(:total_freed_objects)
      vm = RubyVM.stat
      gc_lost = 0
      loop do
        sleep VM_EVERY
        pauses, lost = Vmtrace._gc_pauses
        pauses.each do |kind, start, duration, heap|
          publish(:gc, { kind: kind, start_ns: start, duration_ns: duration, heap_bytes: heap })
        end
        @dropped[:gc] += lost - gc_lost if lost > gc_lost
        gc_lost = lost
        now_vm = RubyVM.stat
        %i[global_constant_state class_serial].each do |k|
          publish(:cache_reset, { what: k, from: vm[k], to: now_vm[k] }) if now_vm[k] != vm[k]
        end
        vm = now_vm
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        next if now - last_alloc < 1

        m = GC.stat(:total_allocated_objects)
        f = GC.stat(:total_freed_objects)
        publish(:alloc, { allocated: m - made, freed: f - freed, seconds: now - last_alloc })
        made = m
        freed = f
        last_alloc = now
      end
    end
  end

  # The process's bus.
  def self.events
    @events ||= Events.new
  end
end
