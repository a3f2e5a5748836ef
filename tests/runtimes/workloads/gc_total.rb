# Loaded with -r (RUBYOPT) before a real program: at its exit, prints to
# stderr the number of objects Ruby will have made in all (GC.stat's
# total_allocated_objects), then leaves with exit!, so nothing is made
# after. The runtime's own count, taken in the process, for corpus_test.py
# (the line after the prefix): everything since Ruby started, which a
# recording's rows and its "made before counting began" add up to.
#
# The number is read before it is printed, so it adds what printing it
# makes. That is measured on a second printing of the same steps: the
# first makes what a first call makes once (method caches, a method entry
# for a module's method, whatever the program had not yet made lazily), so
# the second makes only what every printing makes, as the last does. The
# exit goes through a Method made at load, called the way the reads of the
# count were, so it makes nothing after the count.
module VtGcTotal
  PREFIX = "vmtrace-gc-total ".freeze
  CALIBRATION = "vmtrace-gc-calibration ".freeze
  SEP = "\n".freeze
  EXIT = Process.method(:exit!) # a singleton method: its call makes nothing

  def self.print(prefix, n)
    $stderr.syswrite(prefix)
    $stderr.syswrite(n.to_s)
    $stderr.syswrite(SEP)
  end
end

at_exit do
  # a constant's first read at a place makes its cache (and may walk its
  # value to see whether it can be shared): all are read here, before
  stat = GC.method(:stat) # a Method's call with one argument made once: leave's then makes nothing
  print = VtGcTotal.method(:print)
  calibration = VtGcTotal::CALIBRATION
  prefix = VtGcTotal::PREFIX
  leave = VtGcTotal::EXIT
  print.call(calibration, 0)
  a1 = stat.call(:total_allocated_objects); a2 = stat.call(:total_allocated_objects)
  u1 = stat.call(:total_allocated_objects)
  print.call(calibration, u1)
  u2 = stat.call(:total_allocated_objects)
  t = stat.call(:total_allocated_objects)
  print.call(prefix, t + (u2 - u1 - (a2 - a1)))
  leave.call(0)
end
