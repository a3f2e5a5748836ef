/*
 * python_ext.h: vmtrace's CPython extension (provider/python) as the vmtrace
 * adapter sees it: libvmtrace inside CPython, loaded into a spawned Python
 * when `--runtime vmtrace` asks for it.
 */
#ifndef VT_PYTHON_EXT_H
#define VT_PYTHON_EXT_H

#include <stdbool.h>
#include <stddef.h>

/* The extension module's path into path: $VMTRACE_PYTHON_EXT_DIR, the build
 * tree beside this vmtrace, or where `cmake --install` put it. 0 or -ENOENT. */
int vt_python_ext_find(char *path, size_t len);

/* True when path is the extension's module. */
bool vt_python_ext_is(const char *path);

/* True when exe (a program's path) is a CPython (its file named python3*). */
bool vt_python_ext_program(const char *exe);

/* "PYTHONPATH=DIR/autoload:DIR[:...]" that imports the extension at path
 * into a spawned Python before its program (a sitecustomize), in buf. 0, or
 * -ENAMETOOLONG. */
int vt_python_ext_env(const char *path, char *buf, size_t len);

#endif
