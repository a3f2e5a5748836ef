/*
 * python_ext.h: vmtrace's CPython extension (provider/python) as the vmtrace
 * adapter sees it: libvmtrace inside CPython, loaded into a spawned Python
 * when `--runtime vmtrace` asks for it.
 */
#ifndef VT_PYTHON_EXT_H
#define VT_PYTHON_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"
#include "runtimes/runtime.h"

/* The extension module's path into path: $VMTRACE_PYTHON_EXT_DIR, the build
 * tree beside this vmtrace, or where `cmake --install` put it. 0 or -ENOENT. */
int vt_python_ext_find(char *path, size_t len);

/* True when path is the extension's module. */
bool vt_python_ext_is(const char *path);

/* True when exe (a program's path) is a CPython (its file named python3*). */
bool vt_python_ext_program(const char *exe);

/* "PYTHONPATH=DIR/autoload:DIR[:...]" that imports the extension at path
 * into a spawned Python before its program (a sitecustomize), in buf; for
 * an installed extension "PYTHONPATH=DIR/vmtrace_autoload/autoload[:...]".
 * 0, or -ENAMETOOLONG. */
int vt_python_ext_env(const char *path, char *buf, size_t len);

/* The extension as the session and the vmtrace adapter see it (python_inside.c) */
extern const struct vt_inside vt_python_inside;
/* runtime.h's follow_env and follow_keeps: PYTHONPATH for vmtrace's
 * provider, PYTHONTRACEMALLOC for CPython's own probes */
size_t vt_python_follow_env(const char *asked, const char **env, size_t max);
bool vt_python_follow_keeps(pid_t pid, const char *name, const char *chosen, struct vt_usdt_list *probes);
/* runtime.h's at_exec: the extension given to a CPython a followed command starts */
void vt_python_at_exec(pid_t pid, const char *exe, const struct vt_exec_opts *o, struct vt_usdt_list *probes);

#endif
