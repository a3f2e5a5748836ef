import java.io.BufferedReader;
import java.io.InputStreamReader;

/*
 * A Java workload whose allocations are known by construction (the JVM
 * tests in jvm_test.py check them exactly): after "ready" and a line on
 * stdin it allocates, from one method each,
 *   makeAlpha:  one Alpha[1000] and 1000 Alpha
 *   makeBeta:   300 Beta (into the Beta[300] that <clinit> made), one long[50]
 *   makeGamma:  200 Gamma, on a thread of its own
 *   makeDelta:  100 Delta, each after catching the IllegalStateException
 *               that fail() made and threw
 * then runs System.gc() GCS times (its first argument, default 0), prints
 * "done" and exits after one more line. Everything stays reachable from
 * static fields, so no JIT can drop an allocation.
 */
public class Allocs {
	static class Alpha { int x; long y; Alpha(int i) { x = i; y = i; } }
	static class Beta { Object ref; }
	static class Gamma { long a, b; }
	static class Delta { }

	static Alpha[] alphas;
	static Beta[] betas = new Beta[300];
	static long[] longs;
	static Gamma[] gammas = new Gamma[200];
	static Delta[] deltas = new Delta[100];

	static void makeAlpha() {
		alphas = new Alpha[1000];
		for (int i = 0; i < alphas.length; i++)
			alphas[i] = new Alpha(i);
	}

	static void makeBeta() {
		for (int i = 0; i < betas.length; i++)
			betas[i] = new Beta();
		longs = new long[50];
	}

	static void makeGamma() {
		for (int i = 0; i < gammas.length; i++)
			gammas[i] = new Gamma();
	}

	static void fail() {
		throw new IllegalStateException();
	}

	static void makeDelta() {
		for (int i = 0; i < deltas.length; i++) {
			try {
				fail();
			} catch (IllegalStateException e) {
				deltas[i] = new Delta();
			}
		}
	}

	public static void main(String[] args) throws Exception {
		int gcs = args.length > 0 ? Integer.parseInt(args[0]) : 0;
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
		Thread worker = new Thread(Allocs::makeGamma, "gamma");

		System.out.println("ready");
		System.out.flush();
		in.readLine();
		makeAlpha();
		makeBeta();
		worker.start();
		worker.join();
		makeDelta();
		for (int i = 0; i < gcs; i++)
			System.gc();
		System.out.println("done");
		System.out.flush();
		in.readLine();
	}
}
