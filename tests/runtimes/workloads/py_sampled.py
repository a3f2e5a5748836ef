"""py_sampled.py: a CPython workload whose bytes per line follow from its
construction, for ext_test.py's py-sampled case: small() makes SMALL
bytes(100) objects at one line (133 bytes each through the object
allocator: bytes' 33-byte header and the text's NUL), big() makes BIG
bytes(10000) at another (10033 each); none is kept.
"""
SMALL, BIG = 3_000_000, 100_000


def small(n):
    for _ in range(n):
        bytes(100)  # SMALL_LINE


def big(n):
    for _ in range(n):
        bytes(10000)  # BIG_LINE


small(SMALL)
big(BIG)
