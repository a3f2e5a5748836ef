"""py_types.py: objects of two classes whose counts follow from its
construction, each made in a function of its own at a marked line, for
python_versions_test.py's types case. Alpha and Beta have __slots__, so each
object is one allocation of sys.getsizeof bytes (its pre-header included).
Prints, as its last line before "done", what it made: the counts the
collector finds (gc.get_objects) and each object's size."""
import gc
import json
import sys


class Alpha:
    __slots__ = ("a",)


class Beta:
    __slots__ = ("a", "b", "c")


def make_alpha(keep):
    for i in range(len(keep)):
        keep[i] = Alpha()  # ALPHA_LINE


def make_beta(keep):
    for i in range(len(keep)):
        keep[i] = Beta()  # BETA_LINE


alphas, betas = [None] * 1000, [None] * 300
make_alpha(alphas)
make_beta(betas)
objects = gc.get_objects()
print(json.dumps({
    "Alpha": [sum(type(o) is Alpha for o in objects), sys.getsizeof(alphas[0])],
    "Beta": [sum(type(o) is Beta for o in objects), sys.getsizeof(betas[0])],
}), flush=True)
