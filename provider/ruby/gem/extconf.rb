# extconf.rb: builds vmtrace_ext.so (the extension and libvmtrace, whose
# sources build-gem.sh staged here) against this Ruby's headers.
require "mkmf"

# layout.h has a row per Ruby API version: the versions it knows.
rows = File.read(File.join(__dir__, "layout.h")).scan(/VT_RB_LAYOUT "([^"]+)"/).flatten
           .flat_map { |r| r.split(", ") }
api = RUBY_VERSION[/\A\d+\.\d+/]
unless rows.include?(api)
  abort "vmtrace: the extension knows the layout of Ruby #{rows.join(', ')}; this is Ruby #{RUBY_VERSION}"
end

# The layout the hooks read, held against the VM's own structures (as the
# CMake build does): the MJIT header where this Ruby installs one (3.1),
# else the VM's headers of its source when VMTRACE_RUBY_SOURCE names them.
# A Ruby whose layout differs does not build.
cc = [RbConfig::CONFIG["CC"], "-fsyntax-only", "-w", "-I#{__dir__}",
      "-I#{RbConfig::CONFIG['rubyhdrdir']}", "-I#{RbConfig::CONFIG['rubyarchhdrdir']}"]
mjit = File.join(RbConfig::CONFIG["rubyarchhdrdir"], "rb_mjit_min_header-#{RUBY_VERSION}.h")
source = ENV["VMTRACE_RUBY_SOURCE"]
if File.exist?(mjit)
  check = cc + ["-DRUBY_MJIT_HEADER=\"#{mjit}\""]
elsif source && File.exist?(File.join(source, "vm_core.h"))
  check = cc + ["-I#{source}", "-I#{File.join(source, 'include')}"]
end
if check
  ok = system(*check, File.join(__dir__, "layout_check.c"))
  abort "vmtrace: this Ruby's layout is not the one the extension reads" unless ok
else
  message "vmtrace: Ruby #{RUBY_VERSION} installs no VM headers: its layout is layout.h's #{api} row, " \
          "checked against Ruby #{api}'s source when vmtrace was built (VMTRACE_RUBY_SOURCE=DIR checks it here)\n"
end

$INCFLAGS << " -I$(srcdir)/include"
$CFLAGS << " -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer"
$srcs = Dir[File.join(__dir__, "*.c")].map { |f| File.basename(f) } - ["layout_check.c"]
create_makefile("vmtrace_ext")
