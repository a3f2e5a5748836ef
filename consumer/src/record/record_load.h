/*
 * record_load.h: reading a record file for a command, with the one-line
 * error a user sees when it cannot be read (record_load.c).
 */
#ifndef VT_RECORD_LOAD_H
#define VT_RECORD_LOAD_H

#include <stdbool.h>

#include "profile/profile.h"

/* vt_profile_read_detail(p, path) and, on failure, one line on stderr
 * naming path and why; hint_make: a missing file suggests `vmtrace
 * record`. 0 when read, 1 (the exit status) when not. */
int vt_record_load(struct vt_profile *p, const char *path, bool hint_make);

#endif
