"""Objects whose size has a variable part, made in one function: N tuples
of 7 items, N ints of five digits, N bytes of 50 bytes, and one list
holding them (the ints by negation, which allocates exactly the digits it
keeps: arithmetic allocates a digit more, then trims the object's size). Prints, as JSON, N and sys.getsizeof of one of each kind:
what vmtrace's bytes per object must be (runtime_test.py python-sizes)."""
import itertools
import json
import sys

N = 3000


def make(times, one, big, blob):
    keep = []
    for _ in times:
        keep.append(one * 7)      # a new tuple of 7 items
        keep.append(-big)         # a new int of 5 digits
        keep.append(blob * 2)     # new bytes of 50
    return keep


kept = make(itertools.repeat(None, N), (None,), 1 << 130, b"x" * 25)
print(json.dumps({"n": N, "sizeof": {"tuple": sys.getsizeof(kept[0]),
                                     "int": sys.getsizeof(kept[1]),
                                     "bytes": sys.getsizeof(kept[2])}}))
