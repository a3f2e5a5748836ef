import java.util.ArrayList;
import java.util.List;

/*
 * Virtual threads (JDK 21+) whose allocations are known by construction
 * (versions_test.py, JDK-virtual): THREADS virtual threads each make EACH
 * Leaf in Virtual.work, called from their own run(), with a yield between
 * halves so threads move between carriers; the main thread makes Root
 * objects in its own method meanwhile. Everything stays reachable, so no
 * JIT drops an allocation.
 */
public class Virtual {
	static final int THREADS = 50, EACH = 200, ROOTS = 1000;

	static final class Leaf { long a; }
	static final class Root { int a; }

	static final Object[][] leaves = new Object[THREADS][];
	static Object[] roots;

	static void work(int t) {
		Object[] mine = new Object[EACH];
		for (int i = 0; i < EACH; i++) {
			mine[i] = new Leaf();
			if (i == EACH / 2)
				Thread.yield();
		}
		leaves[t] = mine;
	}

	static void makeRoots() {
		roots = new Object[ROOTS];
		for (int i = 0; i < ROOTS; i++)
			roots[i] = new Root();
	}

	public static void main(String[] args) throws Exception {
		List<Thread> threads = new ArrayList<>();
		for (int t = 0; t < THREADS; t++) {
			final int id = t;
			threads.add(Thread.ofVirtual().start(() -> work(id)));
		}
		makeRoots();
		for (Thread t : threads)
			t.join();
		System.out.println("done");
	}
}
