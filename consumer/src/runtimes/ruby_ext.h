/*
 * ruby_ext.h: vmtrace's Ruby extension (provider/ruby) as the vmtrace
 * adapter sees it: libvmtrace inside a stock Ruby, so a Ruby with it loaded
 * is traced through vmtrace's own probes, counted inside the process.
 */
#ifndef VT_RUBY_EXT_H
#define VT_RUBY_EXT_H

#include <stdbool.h>
#include <stddef.h>

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

/* "RUBYOPT=-I DIR -rvmtrace ..." that loads the extension at path into a
 * spawned Ruby (the command's own RUBYOPT kept after it), in buf. 0, or
 * -ENAMETOOLONG. */
int vt_ruby_ext_rubyopt(const char *path, char *buf, size_t len);

#endif
