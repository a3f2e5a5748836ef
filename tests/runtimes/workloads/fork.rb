# fork.rb: a Ruby process that forks, for `record --all` (tests/e2e/all.sh).
# The child makes 700 ChildObj in Object#child_work, the parent 300
# ParentObj in Object#parent_work; the parent prints "child PID" and
# "parent PID", then waits for the child.
class ParentObj; end
class ChildObj; end

def child_work
  i = 0
  while i < 700
    ChildObj.new
    i += 1
  end
end

def parent_work
  i = 0
  while i < 300
    ParentObj.new
    i += 1
  end
end

pid = fork { child_work }
$stdout.puts "child #{pid}"
$stdout.puts "parent #{Process.pid}"
$stdout.flush
parent_work
Process.wait(pid)
exit($?.success? ? 0 : 1)
