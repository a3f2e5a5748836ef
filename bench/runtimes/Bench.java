import java.io.BufferedReader;
import java.io.InputStreamReader;

/*
 * The Java workload of bench/runtimes/run_java.sh. Each iteration calls
 * step (one call), which makes one Point (two more calls: Point.<init> and
 * Object.<init>): 1 object and 3 method entries per iteration. It runs the
 * loop once to warm the JIT, prints "ready", waits for a line on stdin (the
 * tracer attaches meanwhile), runs it again timed, prints "ns_per_iter N".
 *
 * Usage: java Bench ITERATIONS
 */
public class Bench {
	static final class Point { final int x; Point(int x) { this.x = x; } }

	static final Point[] sink = new Point[1024];

	static void step(int i) {
		sink[i & 1023] = new Point(i);
	}

	static void loop(int n) {
		for (int i = 0; i < n; i++)
			step(i);
	}

	public static void main(String[] args) throws Exception {
		int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000000;
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in));

		loop(n);
		System.out.println("ready");
		System.out.flush();
		in.readLine();
		long t0 = System.nanoTime();
		loop(n);
		long t1 = System.nanoTime();
		System.out.println("ns_per_iter " + (t1 - t0) / n);
		System.out.flush();
	}
}
