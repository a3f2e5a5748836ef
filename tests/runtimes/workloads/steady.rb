# A Ruby that loaded vmtrace and allocates without a pause, answering on
# stdin: "state" prints one JSON line (armed?, the hooks on, its RSS in
# KiB, the objects it made so far, and the addresses of libvmtrace's
# variables a consumer writes into it: the sampling period, the flush
# request, the stacks epoch); "end" stops the work, prints whether its sum
# is what its rounds make, and exits 0: what it prints is its own, traced
# or not.
require "fiddle"
require "json"
$stdout.sync = true

ext = $LOADED_FEATURES.find { |f| f.end_with?("vmtrace_ext.so") }
handle = Fiddle::Handle.new(ext)
VARS = %w[vmtrace_sample_period vmtrace_batch_request vmtrace_stacks_epoch].to_h { |v| [v, handle[v]] }

made = 0
sum = 0
stop = false
worker = Thread.new do
  until stop
    a = Array.new(16) { |i| "x#{i}" }
    sum += a.size
    made += 1
  end
end

def rss_kib
  File.read("/proc/self/status")[/^VmRSS:\s+(\d+)/, 1].to_i
end

while (line = $stdin.gets)
  case line.strip
  when "state"
    puts JSON.generate(armed: Vmtrace.armed?, hooks: Vmtrace.hooks, rss_kib: rss_kib,
                       rounds: made, vars: VARS)
  when "end"
    stop = true
    worker.join
    puts "sum #{sum == made * 16 ? 'ok' : 'wrong'} #{made}"
    exit 0
  end
end
