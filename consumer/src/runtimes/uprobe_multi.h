/*
 * uprobe_multi.h: attaching USDT probes and uprobes through the kernel's
 * uprobe_multi links (Linux 6.6 and later), and taking them down fast.
 *
 * Why not libbpf's bpf_program__attach_usdt. libbpf 1.1.2 makes one perf
 * event per probe site, and the kernel waits out an RCU grace period
 * (80-150 ms here) as it closes each one, one after the other: a recording
 * of ten probes paid more than a second after its target had exited. A
 * uprobe_multi link holds every site of one program in one binary, attaches
 * in one system call, and its close waits for one grace period; the links
 * of a session are closed each from a process of its own, so their waits
 * overlap and the whole detach costs about one.
 *
 * The BPF side is unchanged: BPF_USDT() (bpf/usdt.bpf.h) finds a site's
 * argument spec in the __bpf_usdt_specs map by the attach cookie, so the
 * sites' cookies are spec ids and this code fills that map in libbpf's
 * layout, from the argument strings of the ELF notes (usdt_notes.h).
 * Where the kernel has no uprobe_multi, nothing here is used and libbpf
 * attaches as before.
 */
#ifndef VMTRACE_UPROBE_MULTI_H
#define VMTRACE_UPROBE_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

#include "process/usdt_notes.h"

/* libbpf's argument spec (bpf/usdt.bpf.h: struct __bpf_usdt_spec), the
 * value of __bpf_usdt_specs; the size is checked against the map's. */
#define VT_USDT_MAX_ARGS 12
enum { VT_USDT_ARG_CONST, VT_USDT_ARG_REG, VT_USDT_ARG_REG_DEREF };
struct vt_usdt_arg_spec {
	uint64_t val_off;       /* the constant, or the offset from the register */
	int32_t arg_type;       /* VT_USDT_ARG_* */
	int16_t reg_off;        /* the register's offset in struct pt_regs */
	bool arg_signed;
	int8_t arg_bitshift;    /* 64 - the argument's size in bits */
};
struct vt_usdt_spec {
	struct vt_usdt_arg_spec args[VT_USDT_MAX_ARGS];
	uint64_t usdt_cookie;   /* bpf_usdt_cookie() */
	int16_t arg_cnt;
};
_Static_assert(sizeof(struct vt_usdt_spec) == 208, "libbpf's struct __bpf_usdt_spec");

/* A note's argument string ("8@%rdi -4@$1 8@16(%rsp)", x86-64) as a spec
 * with cookie. 0, or -EINVAL for a form it does not know (an index
 * register, an unknown register, more than VT_USDT_MAX_ARGS arguments). */
int vt_usdt_parse_args(const char *args, uint64_t cookie, struct vt_usdt_spec *spec);

/* Does this kernel make uprobe_multi links? Asked once, cached. */
bool vt_uprobe_multi_ok(void);

/* Before obj is loaded: its uprobe and USDT programs take uprobe_multi
 * links, when the kernel makes them (a program loaded so can take no
 * other). Returns whether it does. */
bool vt_uprobe_multi_prepare(struct bpf_object *obj);

/* One link of prog at cnt sites of the file at path (file offsets), each
 * with its semaphore's file offset (ref_ctr, NULL or 0: none) and its
 * cookie, for the process pid (<= 0: every process). The link's fd, or
 * -errno. */
int vt_uprobe_multi_attach(const struct bpf_program *prog, const char *path,
			   const uint64_t *offsets, const uint64_t *ref_ctr,
			   const uint64_t *cookies, uint32_t cnt, pid_t pid);

/* A session's uprobe_multi links and the argument specs they use. Zeroed,
 * then specs set to the loaded object's __bpf_usdt_specs map. */
struct vt_uprobe_links {
	struct bpf_map *specs;         /* __bpf_usdt_specs */
	struct vt_usdt_spec *spec_v;   /* what specs holds, by id */
	uint32_t nspecs;
	int *fds;
	size_t nfds;
	struct vt_usdt_list notes;     /* the notes of notes_path, read once */
	char *notes_path;
};

/* One link of prog at every site of provider:probe in the file at path.
 * 0, -ENOENT when it has none, -E2BIG when specs is full, -EINVAL for an
 * argument form vt_usdt_parse_args does not know, or -errno. */
int vt_uprobe_links_usdt(struct vt_uprobe_links *l, const struct bpf_program *prog,
			 const char *path, const char *provider, const char *probe,
			 uint64_t cookie, pid_t pid);

/* One link of prog at the function func of the file at path or, func NULL,
 * at file_offset, with its cookie and semaphore (ref_ctr_offset, 0: none). */
int vt_uprobe_links_uprobe(struct vt_uprobe_links *l, const struct bpf_program *prog,
			   const char *path, const char *func, uint64_t file_offset,
			   uint64_t cookie, uint64_t ref_ctr_offset, pid_t pid);

/* Close every link, each from a child process so the kernel's waits overlap
 * and a caller killed meanwhile does not cut the detach short (threads of
 * its own when no child can be made), and free what l holds; returns when
 * all are closed. Accepts a zeroed l. */
void vt_uprobe_links_close(struct vt_uprobe_links *l);
/* With on, vt_uprobe_links_close() hands the links to a process of their
 * own to close (their detach waits are then not the caller's): for a
 * target that is gone, whose gates nobody reads again. */
void vt_uprobe_links_close_behind(bool on);

#endif /* VMTRACE_UPROBE_MULTI_H */
