import java.util.TreeSet;

/*
 * A Java program for no_harm_test.py: prints its environment (but "_") and
 * exits 3, having made a few objects.
 */
public class EnvExit {
	static Object sink;

	public static void main(String[] args) {
		for (String k : new TreeSet<>(System.getenv().keySet()))
			if (!k.equals("_"))
				System.out.println(k + "=" + System.getenv(k));
		for (int i = 0; i < 5; i++)
			sink = new Object();
		System.exit(3);
	}
}
