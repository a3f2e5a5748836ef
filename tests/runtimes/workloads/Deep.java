/*
 * Deep.java: a Java workload for jvm_agent_test.py's agent-stack case:
 * allocates 100 Leaf objects at the bottom of a recursion 200 calls deep,
 * deeper than the 128 frames a stack keeps.
 */
public class Deep {
	static final class Leaf { }

	static Leaf[] leaves = new Leaf[100];

	static void down(int n) {
		if (n > 0) {
			down(n - 1);
			return;
		}
		for (int i = 0; i < leaves.length; i++)
			leaves[i] = new Leaf();
	}

	public static void main(String[] args) {
		down(200);
	}
}
