# nested.rb: a Ruby workload with known call stacks, for tests/runtimes'
# stack cases: a calls b calls c, which makes N Leaf objects; d calls c,
# which makes M; a block in e makes K through c. Leaf is made nowhere
# else, so each stack's Leaf count is exactly its number below.
#
# Usage: ruby nested.rb N M K
#   Prints "ready", waits for a line on stdin, runs, prints "done", waits
#   for a second line, exits.
class Leaf; end

class Maker
  def c(n)
    i = 0
    while i < n
      Leaf.new
      i += 1
    end
  end

  def b(n) = c(n)
  def a(n) = b(n)
  def d(n) = c(n)
  def e(n) = [n].each { |x| c(x) }
end

n, m, k = ARGV.map(&:to_i)
maker = Maker.new
$stdout.sync = true
puts "ready"
$stdin.gets
maker.a(n)
maker.d(m)
maker.e(k)
puts "done"
$stdin.gets
