# service.rb: a steady Ruby service for bench/serve/run_ruby.sh. Each
# operation handles a made-up request the way a small web handler would:
# parse a query string into a hash, build a record object, render a JSON
# reply, and keep the last 1000 replies (a cache that turns over, so the
# heap holds a steady working set). Runs SECONDS (default 60) and prints
# "service: OPS ops in SECS s".
require "json"

class Request
  attr_reader :path, :params
  def initialize(path, params)
    @path = path
    @params = params
  end
end

def parse(query)
  query.split("&").to_h { |kv| kv.split("=", 2) }
end

def handle(i, cache)
  req = Request.new("/items/#{i % 97}", parse("id=#{i}&name=item#{i % 13}&tags=a,b,c&page=#{i % 7}"))
  reply = JSON.generate({ "path" => req.path, "id" => req.params["id"].to_i,
                          "tags" => req.params["tags"].split(","), "name" => req.params["name"].upcase })
  cache[i % 1000] = reply
end

seconds = (ARGV[0] || 60).to_f
$stdout.sync = true
puts "ready"
cache = Array.new(1000)
ops = 0
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
loop do
  100.times { handle(ops += 1, cache) }
  break if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 >= seconds
end
puts format("service: %d ops in %.2f s", ops, Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0)
