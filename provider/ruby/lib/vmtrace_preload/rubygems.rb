# rubygems.rb in vmtrace_preload/: first on RUBYLIB when `vmtrace record --
# CMD` starts a Ruby. Ruby requires "rubygems" before any of the program's
# code (its gem prelude), so vmtrace's extension loads here and counts from
# before RubyGems makes its objects; then the RubyGems this file hides loads
# as it would have. A Ruby that cannot load the extension (built for
# another version) runs on as without it, and one that cannot see this
# directory (a container's own root) never reads it: vmtrace says which in
# its report. What vmtrace put into RUBYLIB leaves the environment here, so
# the program and the commands it runs see their own.
module VmtracePreload
  HERE = File.expand_path(__dir__)
  LIB = File.dirname(HERE)

  def self.restore_rubylib
    mine = [HERE, LIB]
    rest = ENV.fetch("RUBYLIB", "").split(File::PATH_SEPARATOR)
    rest.shift while !rest.empty? && mine.include?(File.expand_path(rest.first))
    if rest.empty?
      ENV.delete("RUBYLIB")
    else
      ENV["RUBYLIB"] = rest.join(File::PATH_SEPARATOR)
    end
  end

  def self.hidden_rubygems
    $LOAD_PATH.each do |dir|
      dir = File.expand_path(dir.to_s)
      next if dir == HERE
      path = File.join(dir, "rubygems.rb")
      return path if File.file?(path)
    end
    nil
  end
end

VmtracePreload.restore_rubylib
$LOAD_PATH.delete_if { |dir| File.expand_path(dir.to_s) == VmtracePreload::HERE }
begin
  require "vmtrace"
rescue LoadError
  # not this Ruby's: the program runs untraced, and vmtrace's report says so
end
require VmtracePreload.hidden_rubygems || "rubygems"
Object.send(:remove_const, :VmtracePreload)
