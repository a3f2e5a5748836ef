/* record_load.c: a record file read for a command, or one line saying why not. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "record/record_load.h"

int vt_record_load(struct vt_profile *p, const char *path, bool hint_make)
{
	struct vt_record_error bad;
	int err = vt_profile_read_detail(p, path, &bad);

	switch (err) {
	case 0:
		return 0;
	case -EBADMSG:
		if (bad.line)
			fprintf(stderr, "vmtrace: %s: not a vmtrace record, or truncated or damaged: "
				"line %lu: %s\n", path, bad.line, bad.what);
		else
			fprintf(stderr, "vmtrace: %s: not a vmtrace record, or truncated or damaged: "
				"%s\n", path, bad.what);
		return 1;
	case -EPROTONOSUPPORT:
		fprintf(stderr, "vmtrace: %s: written by a newer vmtrace (unknown record format "
			"version)\n", path);
		return 1;
	case -ENOENT:
		fprintf(stderr, "vmtrace: %s: %s%s\n", path, strerror(-err),
			hint_make ? " (make one with vmtrace record)" : "");
		return 1;
	default:
		fprintf(stderr, "vmtrace: %s: %s\n", path, strerror(-err));
		return 1;
	}
}
