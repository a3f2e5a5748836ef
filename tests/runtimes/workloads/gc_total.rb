# Loaded with -r (RUBYOPT) before a real program: at its exit, prints to
# stderr the number of objects Ruby will have made in all (GC.stat's
# total_allocated_objects), then leaves with exit!, so nothing is made
# after. The number is read before it is printed, so it adds what printing
# it makes, measured by the same steps run just before ("calibration"), less
# what one read of GC.stat makes. The runtime's own count, taken in the
# process, for corpus_test.py (the line after the prefix; the one before is
# the calibration's). With vmtrace's Ruby extension loaded, the count is
# of the objects made since it was armed (Vmtrace.armed_at_allocations),
# where its counting begins.
VT_GC_TOTAL_PREFIX = "vmtrace-gc-total ".freeze
VT_GC_TOTAL_SEP = "\n".freeze
at_exit do
  since = defined?(Vmtrace) && Vmtrace.armed_at_allocations || 0
  a1 = GC.stat(:total_allocated_objects); a2 = GC.stat(:total_allocated_objects)
  u1 = GC.stat(:total_allocated_objects); x = u1.to_s; $stderr.syswrite(x); $stderr.syswrite(VT_GC_TOTAL_SEP)
  u2 = GC.stat(:total_allocated_objects)
  $stderr.syswrite(VT_GC_TOTAL_PREFIX)
  t = GC.stat(:total_allocated_objects)
  e = t + (u2 - u1 - (a2 - a1)) - since
  s = e.to_s; $stderr.syswrite(s); $stderr.syswrite(VT_GC_TOTAL_SEP)
  exit!(0)
end
