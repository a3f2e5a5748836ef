import java.io.BufferedReader;
import java.io.InputStreamReader;

/*
 * A Java workload for sampled allocation tracing (jvm_agent_test.py): after
 * "ready" and a line on stdin it allocates, from one method each,
 *   makeSmall:   SMALL Small  (12 + 4 + 8 = 24 bytes each)
 *   makeBig:     BIG Big      (12 + 3 * 8 = 36 -> 40 bytes), on a thread of its own
 *   makeArrays:  ARRAYS long[64] (16 + 512 = 528 bytes)
 * each stored into a static field so no JIT drops it, prints "done" and
 * exits after one more line. Counts are the constants below.
 */
public class Sampled {
	static final int SMALL = 40_000_000, BIG = 12_000_000, ARRAYS = 1_000_000;

	static final class Small { int a; long b; }
	static final class Big { long a, b, c; }

	static Object sink;

	static void makeSmall() {
		for (int i = 0; i < SMALL; i++)
			sink = new Small();
	}

	static void makeBig() {
		for (int i = 0; i < BIG; i++)
			sink = new Big();
	}

	static void makeArrays() {
		for (int i = 0; i < ARRAYS; i++)
			sink = new long[64];
	}

	public static void main(String[] args) throws Exception {
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
		Thread big = new Thread(Sampled::makeBig, "big");

		System.out.println("ready");
		System.out.flush();
		in.readLine();
		makeSmall();
		big.start();
		big.join();
		makeArrays();
		System.out.println("done");
		System.out.flush();
		in.readLine();
	}
}
