/*
 * A JVM to attach to (target_fs_test.py): prints "ready" once main runs
 * (HotSpot's SIGQUIT handler is installed by then) and allocates a little
 * every 10 ms until it is killed. Its arguments are a marker the test finds
 * it by, inside a pid namespace too.
 */
public class Idle {
	static Object sink;

	public static void main(String[] args) throws Exception {
		System.out.println("ready");
		System.out.flush();
		for (;;) {
			sink = new int[16];
			Thread.sleep(10);
		}
	}
}
