/*
 * usdt_notes.h: the USDT probes of a binary or of a running process, read
 * from the ELF notes (.note.stapsdt) with libelf. The parser bounds-checks
 * every field and string: malformed notes are an error, never a crash.
 */
#ifndef VMTRACE_USDT_NOTES_H
#define VMTRACE_USDT_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct vt_usdt_probe {
	char *provider, *name;
	char *args;          /* argument specs as in the note, e.g. "8@%r13 -4@$1" */
	int nargs;
	uint64_t pc;         /* the site's address as linked */
	uint64_t base;       /* .stapsdt.base as linked (for prelink adjustment) */
	uint64_t semaphore;  /* the semaphore's address as linked, 0 = none */
	char *path;          /* the module holding the probe (as the caller named it) */
};

struct vt_usdt_list {
	struct vt_usdt_probe *v;
	size_t n, cap;
};

/* Parse the raw bytes of one SHT_NOTE section (64-bit little-endian ELF)
 * and append every stapsdt note to out, each with path. 0, or -EINVAL for a
 * malformed note (out keeps the notes before it), -ENOMEM. */
int vt_usdt_parse_notes(const void *data, size_t len, const char *path, struct vt_usdt_list *out);

/* Every USDT probe of the ELF file at path. 0, -ENOENT/-EACCES..., or
 * -ENOEXEC when the file is not an ELF file or is malformed. */
int vt_usdt_read_file(const char *path, struct vt_usdt_list *out);

/* Every USDT probe of the ELF file open at fd, each with path. */
int vt_usdt_read_fd(int fd, const char *path, struct vt_usdt_list *out);

/* Every USDT probe of every ELF module mapped by pid (each module once).
 * Paths are the ones in /proc/PID/maps. -ESRCH when pid does not exist. */
int vt_usdt_read_pid(pid_t pid, struct vt_usdt_list *out);

void vt_usdt_list_free(struct vt_usdt_list *l); /* accepts NULL; leaves l empty */
/* p moved to the end of l (p left empty): 0, or -ENOMEM (p kept). */
int vt_usdt_list_take(struct vt_usdt_list *l, struct vt_usdt_probe *p);
/* Does l hold a probe of provider? */
bool vt_usdt_has_provider(const struct vt_usdt_list *l, const char *provider);
/* The probes of the modules of_module says yes to taken out of l. */
void vt_usdt_list_drop(struct vt_usdt_list *l, bool (*of_module)(const char *path));

/* The file offset and link-time address of the dynamic or static symbol
 * `name` in the ELF file at path. 0, or -ENOENT when absent. */
int vt_elf_symbol(const char *path, const char *name, uint64_t *addr, uint64_t *file_offset);

#endif /* VMTRACE_USDT_NOTES_H */
