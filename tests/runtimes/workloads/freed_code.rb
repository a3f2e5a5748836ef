# freed_code.rb: methods made, run and removed one after another. Each
# makes K Marker objects; once removed, its code is freed by the collector,
# and the address of its instructions or its method entry may come back as
# another method's. vmtrace must count each method's objects under its own
# name: K rows of Marker per method, and no method more.
#
# Usage: ruby freed_code.rb N   (prints "done N K" at the end)
class Marker; end

module Gen; end

N = Integer(ARGV[0] || 300)
K = 3
N.times do |i|
  Gen.module_eval(<<~RUBY, "gen.rb", 1)
    def self.make_#{i}
      Marker.new
      Marker.new
      Marker.new
      nil
    end
  RUBY
  Gen.public_send(:"make_#{i}")
  Gen.singleton_class.remove_method(:"make_#{i}")
  GC.start(full_mark: true, immediate_sweep: true) if i % 10 == 9
end
puts "done #{N} #{K}"
