/*
 * ruby_ext.h: vmtrace's Ruby extension (provider/ruby) as the vmtrace
 * adapter sees it: libvmtrace inside a stock Ruby, so a Ruby with it loaded
 * is traced through vmtrace's own probes, counted inside the process.
 */
#ifndef VT_RUBY_EXT_H
#define VT_RUBY_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/usdt_notes.h"
#include "runtimes/runtime.h"

#define VT_RUBY_EXT_FILE "vmtrace_ext.so"

/* The extension's path (its directory also holds vmtrace.rb) into path:
 * $VMTRACE_RUBY_EXT_DIR, the build tree beside this vmtrace, or where
 * `cmake --install` put it. 0, or -ENOENT. */
int vt_ruby_ext_find(char *path, size_t len);

/* True when path is the extension's module. */
bool vt_ruby_ext_is(const char *path);

/* runtime.h's dlopened for a Ruby program (its file named ruby*): the
 * extension a spawned Ruby will load, so its probes are attached first. */
int vt_ruby_ext_dlopened(const char *exe, char *path, size_t len);

/* "RUBYLIB=DIR/vmtrace_preload:DIR..." that loads the extension at path
 * into a spawned Ruby (the command's own RUBYLIB kept after it), in buf:
 * Ruby's first require, of RubyGems, loads it (provider/ruby/lib/
 * vmtrace_preload), and a Ruby that cannot see DIR or load the extension
 * runs as without vmtrace. 0, -EINVAL (DIR holds a ':'), or -ENAMETOOLONG. */
int vt_ruby_ext_rubylib(const char *path, char *buf, size_t len);

/* vmtrace's gem for the Ruby pid runs (its program rubyX.Y), installed
 * below pid's root (a container's: /var/lib/gems/X.Y.0 or
 * /usr/local/lib/ruby/gems/X.Y.0), reached from that root with no link
 * followed. Its extension's path as vmtrace and the kernel reach it
 * (/proc/PID/root/...: that same file, by its inode; vt_tfs_maps_path gives
 * the process's name for it) into ext, and the extension opened read-only
 * into *ext_fd (the caller closes it). 0, or -ENOENT. */
int vt_ruby_ext_in_root(pid_t pid, char *ext, size_t elen, int *ext_fd);

/* The extension as the session and the vmtrace adapter see it (ruby_inside.c) */
extern const struct vt_inside vt_ruby_inside;
/* runtime.h's follow_env and follow_keeps: RUBYLIB, for vmtrace's provider */
size_t vt_ruby_follow_env(const char *asked, const char **env, size_t max);
bool vt_ruby_follow_keeps(pid_t pid, const char *name, const char *chosen, struct vt_usdt_list *probes);

#endif
