# vmtrace.gemspec: vmtrace's Ruby extension as a gem (staged by build-gem.sh,
# which puts libvmtrace's sources beside the extension's in ext/vmtrace/).
Gem::Specification.new do |s|
  s.name = "vmtrace"
  s.version = File.read(File.join(__dir__, "VERSION")).strip
  s.summary = "vmtrace's provider inside Ruby: exact allocations for the vmtrace tracer"
  s.description = "libvmtrace inside stock Ruby: dormant until a vmtrace consumer attaches, " \
                  "then Ruby's own hooks count every object into libvmtrace's batched tables; " \
                  "and Vmtrace.events, an event bus for Ruby code."
  s.authors = ["vmtrace"]
  s.license = "MIT"
  s.required_ruby_version = [">= 3.1", "< 3.5"] # layout.h's rows: 3.1, 3.3 and 3.4 (extconf.rb refuses 3.2)
  s.files = Dir.chdir(__dir__) { Dir["lib/**/*.rb", "ext/vmtrace/**/*.{c,h,rb}", "VERSION"] }
  s.extensions = ["ext/vmtrace/extconf.rb"]
  s.require_paths = ["lib"]
end
