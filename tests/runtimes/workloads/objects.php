<?php
// A PHP workload whose objects and calls are known by construction (the
// PHP tests in php_test.py check them exactly): after "ready" and a line on
// stdin it makes, from one function each,
//   makePoints:  200 Point (two declared properties), Point::__construct 200 times
//   makeEmpty:   50 EmptyThing (no property)
//   makeGuarded: 20 Guarded (one property and __get: the engine keeps a guard slot)
//   makeClosures: 30 Closure (a class with its own create handler)
//   throwSome:   10 RuntimeException, each thrown by fail() and caught
//   afterCatch:  one EmptyThing after each catch in throwSome (10 more)
// then prints "done" and exits after one more line. Everything stays
// reachable in $keep until the end.
class Point { public $x; public $y; function __construct($x) { $this->x = $x; $this->y = $x; } }
class EmptyThing { }
class Guarded { public $v = 1; function __get($n) { return 0; } }

$keep = [];

function makePoints() { global $keep; for ($i = 0; $i < 200; $i++) $keep[] = new Point($i); }
function makeEmpty() { global $keep; for ($i = 0; $i < 50; $i++) $keep[] = new EmptyThing(); }
function makeGuarded() { global $keep; for ($i = 0; $i < 20; $i++) $keep[] = new Guarded(); }
function makeClosures() { global $keep; for ($i = 0; $i < 30; $i++) $keep[] = function () use ($i) { return $i; }; }
function fail($i) { throw new RuntimeException("no " . $i); }
function afterCatch() { global $keep; $keep[] = new EmptyThing(); }
function throwSome() {
	global $keep;
	for ($i = 0; $i < 10; $i++) {
		try {
			fail($i);
		} catch (RuntimeException $e) {
			$keep[] = $e;
			afterCatch();
		}
	}
}

echo "ready\n";
fgets(STDIN);
makePoints();
makeEmpty();
makeGuarded();
makeClosures();
throwSome();
echo "done\n";
fgets(STDIN);
