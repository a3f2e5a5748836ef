"""py_many_stacks.py: 30000 call paths, more than a small stack table
holds: <module>;run;f_I for each I, each f_I making four objects of its
own: 3 bytes objects (bytes(40 + n) is a new one each time) and the list
that holds them."""
N = 30000
SRC = "\n".join(f"def f_{i}(n):\n    return [bytes(40 + n), bytes(41 + n), bytes(42 + n)]" for i in range(N))
exec(compile(SRC, "many_stacks_gen.py", "exec"))


def run():
    g = globals()
    for i in range(N):
        g[f"f_{i}"](i % 7)


run()
