# vmtrace's CPython extension (`import vmtrace`), built by pip against the
# CPython that installs it: libvmtrace's sources beside the module's, its
# frames read as that version lays them out (src/frames.h). Offline:
#   pip install --no-index --no-build-isolation vmtrace-VERSION.tar.gz
import glob
import os

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
version = open(os.path.join(here, "VERSION")).read().strip()
sources = sorted(glob.glob("src/*.c"))

setup(
    name="vmtrace",
    version=version,
    description="vmtrace's CPython provider: allocations by function and line, dormant until a tracer arms it",
    ext_modules=[Extension(
        "vmtrace",
        sources=sources,
        include_dirs=["src", "include"],
        define_macros=[("_GNU_SOURCE", "1")],
        extra_compile_args=["-fno-omit-frame-pointer", "-std=gnu11"],
        # calls between the module's own functions bind inside it; the
        # consumer finds libvmtrace's symbols exported
        extra_link_args=["-Wl,-Bsymbolic-functions", "-pthread", "-lm"],
    )],
    packages=["vmtrace_autoload"],
    package_dir={"vmtrace_autoload": "vmtrace_autoload"},
    package_data={"vmtrace_autoload": ["autoload/sitecustomize.py"]},
)
