# chains.rb: Leaf objects from stacks that differ only in what a cache of
# the frames must tell apart, made in one loop so each stack keeps coming
# back: the same method from two callers (Maker#p, Maker#q); the same
# iseqs under other method entries (Copy, a dup of Maker, whose methods
# name Copy as their owner), also for a caller alone (Maker#r, Copy#r
# calling Maker#c); two stacks told apart by their caller's line
# alone (Maker#two calls c twice); two sites in one method (the innermost
# pc differs); one block from two procs whose methods are gone from the
# stack (only the block's env names Maker#mk or Copy#mk).
#
# Usage: ruby chains.rb N
#   Prints "ready", waits for a line on stdin, runs, prints "done", waits
#   for a second line, exits. Each stack's Leaf count is N or 2N (see
#   tests/runtimes/stack_test.py).
class Leaf; end

class Maker
  def c = Leaf.new
  def p = c
  def q = c
  def r(other) = other.c

  def two
    c
    c
    Leaf.new
    Leaf.new
  end

  def mk = proc { Leaf.new }
end
Copy = Maker.dup

n = Integer(ARGV[0])
maker = Maker.new
copy = Copy.new
procs = [maker.mk, copy.mk]
$stdout.sync = true
puts "ready"
$stdin.gets
i = 0
while i < n
  maker.p
  maker.q
  [maker, copy].each { |o| o.p } # one call site, two method entries
  [maker, copy].each { |o| o.r(maker) } # ... and then the same method
  maker.two
  procs.each { |pr| pr.call }    # one stack, the method in the block's env
  i += 1
end
puts "done"
$stdin.gets
