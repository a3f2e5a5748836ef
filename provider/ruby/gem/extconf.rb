# extconf.rb: builds vmtrace_ext.so (the extension and libvmtrace, whose
# sources build-gem.sh staged here) against this Ruby's headers.
require "mkmf"

unless RUBY_VERSION.start_with?("3.1.")
  abort "vmtrace: this extension reads Ruby 3.1's layout; this is Ruby #{RUBY_VERSION}"
end

# The layout the hooks read, held against the VM's own structures (as the
# CMake build does): a Ruby whose layout differs does not build.
mjit = File.join(RbConfig::CONFIG["rubyarchhdrdir"], "rb_mjit_min_header-#{RUBY_VERSION}.h")
abort "vmtrace: #{mjit} is missing: cannot check Ruby's layout" unless File.exist?(mjit)
ok = system(RbConfig::CONFIG["CC"], "-fsyntax-only", "-w", "-I#{__dir__}",
            "-DRUBY_MJIT_HEADER=\"#{mjit}\"", File.join(__dir__, "layout_check.c"))
abort "vmtrace: this Ruby's layout is not the one the extension reads" unless ok

$INCFLAGS << " -I$(srcdir)/include"
$CFLAGS << " -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer"
$srcs = Dir[File.join(__dir__, "*.c")].map { |f| File.basename(f) } - ["layout_check.c"]
create_makefile("vmtrace_ext")
