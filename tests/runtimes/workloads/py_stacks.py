"""py_stacks.py: a CPython workload whose allocations per call path follow
from its construction, for ext_test.py's py-stacks case. leaf() makes 200
bytes(500) objects (533 bytes each through the object allocator) into a
list its caller made; it is reached three ways:
    <module> -> top -> mid -> leaf     once   (200 objects)
    <module> -> top -> leaf            once   (200)
    <module> -> other -> mid -> leaf   twice  (400)
"""


def leaf(keep):
    for i in range(200):
        keep[i] = bytes(500)


def mid(keep):
    leaf(keep)


def top(keeps):
    mid(keeps[0])
    leaf(keeps[1])


def other(keeps):
    mid(keeps[2])
    mid(keeps[3])


keeps = [[None] * 200 for _ in range(4)]
top(keeps)
other(keeps)
