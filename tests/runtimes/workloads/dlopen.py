# dlopen.py LIB N: a process that loads libvmtrace with dlopen after it has
# started (ctypes), then makes N allocations of class Dl in method dl_make
# of 32 bytes each through the provider's C API, and prints its pid. For
# `record --all` (tests/e2e/all.sh): the uprobes on the library's file reach
# a mapping made after they were attached.
import ctypes
import os
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.vmtrace__alloc.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_char_p]
lib.vmtrace__alloc.restype = None
# the provider keeps the pointers: the strings must live as long as the process
KLASS, METHOD, SITE = b"Dl", b"dl_make", b"dlopen.py:16"
for _ in range(int(sys.argv[2])):
    lib.vmtrace__alloc(KLASS, METHOD, 32, SITE)
print(os.getpid(), flush=True)
