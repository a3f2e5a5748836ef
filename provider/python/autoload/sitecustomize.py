# sitecustomize.py: first on sys.path when `vmtrace record -- python3 ...`
# starts a Python (or follows a command to one in a container's root):
# imports vmtrace's CPython extension before the program runs, then the
# sitecustomize this one hides, if there is one.
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))

try:
    import vmtrace  # noqa: F401 (armed at once: the tracer is attached already)
except ImportError:
    pass  # built for another CPython: the program runs untraced, vmtrace's report says so

# vmtrace held this Python in that import until it had attached
# (VMTRACE_HOLD_FD): the import took the variable out of the environment,
# but os.environ, which subprocess hands to children, copied it before
os.environ.pop("VMTRACE_HOLD_FD", None)

# what vmtrace put in front of PYTHONPATH (this directory, then, for a
# build's layout, the module's beside it; an installed package's is on the
# path already) leaves the environment the program and its children see
_rest = os.environ.get("PYTHONPATH", "").split(os.pathsep)
if os.path.abspath(_rest[0] or ".") == _here:
    del _rest[0]
    if _rest and os.path.abspath(_rest[0] or ".") == os.path.dirname(_here):
        del _rest[0]
if _rest:
    os.environ["PYTHONPATH"] = os.pathsep.join(_rest)
else:
    os.environ.pop("PYTHONPATH", None)
for _dir in sys.path:
    _path = os.path.join(_dir or ".", "sitecustomize.py")
    if os.path.abspath(_dir or ".") != _here and os.path.isfile(_path):
        _spec = importlib.util.spec_from_file_location("_vmtrace_hidden_sitecustomize", _path)
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
        break
