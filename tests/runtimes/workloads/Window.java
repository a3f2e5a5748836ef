import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.CountDownLatch;

/*
 * A JVM whose threads run before vmtrace is attached (jvm_agent_test.py,
 * agent-pid-exact): after "ready" and a line on stdin, the main thread
 * makes SMALL Small (24 bytes each) and a thread started before "ready"
 * makes BIG Big (40 bytes each), each stored into a static field so no JIT
 * drops it; then "done", and exit after one more line. The bytes made
 * after the line are the constants below.
 */
public class Window {
	static final int SMALL = 100_000, BIG = 50_000;

	static final class Small { int a; long b; }
	static final class Big { long a, b, c; }

	static Object sink, other;

	public static void main(String[] args) throws Exception {
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
		CountDownLatch go = new CountDownLatch(1);
		Thread big = new Thread(() -> {
			try {
				go.await();
			} catch (InterruptedException e) {
				return;
			}
			for (int i = 0; i < BIG; i++)
				other = new Big();
		}, "big");

		big.start();
		System.out.println("ready");
		System.out.flush();
		in.readLine();
		go.countDown();
		for (int i = 0; i < SMALL; i++)
			sink = new Small();
		big.join();
		System.out.println("done");
		System.out.flush();
		in.readLine();
	}
}
