/*
 * uprobe_multi.c: uprobe_multi links and libbpf's USDT argument specs
 * (uprobe_multi.h).
 *
 * The link is made with the bpf(2) system call itself: libbpf 1.1.2 and
 * the UAPI headers of this distribution predate it, so the attach type and
 * the link_create fields are spelt out below as the kernel defines them
 * (include/uapi/linux/bpf.h since 6.6).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <linux/bpf.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>

#include "process/elf_code.h"
#include "runtimes/uprobe_multi.h"

#define VT_BPF_TRACE_UPROBE_MULTI 48 /* enum bpf_attach_type */

/* union bpf_attr's link_create, as far as uprobe_multi reaches */
struct vt_link_create_uprobe_multi {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, multi_flags, pid;
	uint32_t pad;
};

static int link_create(int prog_fd, const char *path, const uint64_t *offsets,
		       const uint64_t *ref_ctr, const uint64_t *cookies, uint32_t cnt, pid_t pid)
{
	struct vt_link_create_uprobe_multi attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = VT_BPF_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctr;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = cnt;
	attr.pid = pid > 0 ? (uint32_t)pid : 0;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : (int)fd;
}

bool vt_uprobe_multi_ok(void)
{
	static int ok = -1;
	const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = VT_BPF_TRACE_UPROBE_MULTI);
	uint64_t offset = 0;
	int prog, err;

	if (ok >= 0)
		return ok;
	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", ret0, 2, &opts);
	if (prog < 0)
		return (ok = 0);
	/* "/" is no regular file: a kernel that knows the attach type says
	 * so (EBADF) before it makes anything; one that does not, EINVAL */
	err = link_create(prog, "/", &offset, NULL, NULL, 1, 0);
	if (err >= 0)
		close(err);
	close(prog);
	return (ok = err == -EBADF);
}

bool vt_uprobe_multi_prepare(struct bpf_object *obj)
{
	struct bpf_program *prog;

	if (!vt_uprobe_multi_ok())
		return false;
	bpf_object__for_each_program(prog, obj) {
		const char *sec = bpf_program__section_name(prog);

		if (bpf_program__type(prog) == BPF_PROG_TYPE_KPROBE &&
		    (!strncmp(sec, "usdt", 4) || !strncmp(sec, "uprobe", 6)))
			bpf_program__set_expected_attach_type(prog, VT_BPF_TRACE_UPROBE_MULTI);
	}
	return true;
}

int vt_uprobe_multi_attach(const struct bpf_program *prog, const char *path,
			   const uint64_t *offsets, const uint64_t *ref_ctr,
			   const uint64_t *cookies, uint32_t cnt, pid_t pid)
{
	return link_create(bpf_program__fd(prog), path, offsets, ref_ctr, cookies, cnt, pid);
}

static void *close_one(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

static bool close_behind;

void vt_uprobe_links_close_behind(bool on)
{
	close_behind = on;
}

static int fd_order(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Hand the links to a process of their own that closes them and ends, so
 * their RCU waits (tens of milliseconds each, and the kernel takes them one
 * after another) are not this process's. The grandchild keeps no other
 * file: no pipe of the caller's waits for it. Only async-signal-safe calls
 * after the fork. true when the links are handed over. */
static bool close_in_background(struct vt_uprobe_links *l)
{
	int *fds = malloc((l->nfds + 1) * sizeof(*fds)), go[2];
	size_t n = l->nfds;
	unsigned lo = 0;
	char c;
	pid_t child;

	if (!fds || pipe2(go, O_CLOEXEC)) {
		free(fds);
		return false;
	}
	memcpy(fds, l->fds, n * sizeof(*fds));
	fds[n++] = go[0]; /* kept, to learn when this process let go */
	qsort(fds, n, sizeof(*fds), fd_order);
	child = fork();
	if (child == 0) {
		if (fork() != 0)
			_exit(0); /* reaped below at once; its child is init's */
		for (size_t i = 0; i < n; i++) {
			if ((unsigned)fds[i] > lo)
				syscall(SYS_close_range, lo, (unsigned)fds[i] - 1, 0);
			lo = (unsigned)fds[i] + 1;
		}
		syscall(SYS_close_range, lo, ~0u, 0);
		/* the last close of a link is the one that waits: be the last */
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		for (size_t i = 0; i < l->nfds; i++)
			close(l->fds[i]);
		_exit(0);
	}
	free(fds);
	close(go[0]);
	if (child < 0) {
		close(go[1]);
		return false;
	}
	waitpid(child, NULL, 0);
	/* the grandchild's copies hold the links: these closes do not wait */
	for (size_t i = 0; i < l->nfds; i++)
		close(l->fds[i]);
	close(go[1]);
	return true;
}

/* In a child that keeps only fd and keep: close every other descriptor. */
static void keep_two(int fd, int keep)
{
	unsigned lo = (unsigned)(fd < keep ? fd : keep), hi = (unsigned)(fd < keep ? keep : fd);

	if (lo)
		syscall(SYS_close_range, 0u, lo - 1, 0);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0);
	syscall(SYS_close_range, hi + 1, ~0u, 0);
}

/* Close the links from processes of their own, one per link, while this
 * one waits for them. The kernel takes a link's uprobes out of the target
 * in the task that drops the link's last reference, and in a task being
 * killed it may not get the target's memory map: the breakpoints and the
 * semaphores would stay in the target, which would count on with no one
 * listening. A vmtrace killed meanwhile (its recording ending at Ctrl-C,
 * then SIGKILL) does not kill these: they end the detach. Only
 * async-signal-safe calls after the fork. true when handed over. */
static bool close_in_children(struct vt_uprobe_links *l)
{
	size_t n = l->nfds;
	pid_t *kids = calloc(n, sizeof(*kids));
	int go[2];
	char c;

	if (!kids || pipe2(go, O_CLOEXEC)) {
		free(kids);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			keep_two(l->fds[i], go[0]);
			/* this process's copy is gone first: the child's close is the last */
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			close(l->fds[i]);
			_exit(0);
		}
	}
	close(go[0]);
	for (size_t i = 0; i < n; i++)
		if (kids[i] > 0)
			close(l->fds[i]);
	close(go[1]);
	for (size_t i = 0; i < n; i++) {
		if (kids[i] > 0)
			while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
				;
		else
			close(l->fds[i]); /* no child: closed here */
	}
	free(kids);
	return true;
}

void vt_uprobe_links_close(struct vt_uprobe_links *l)
{
	size_t n = l->nfds;
	pthread_t *threads;
	bool *started;

	if (n && (close_behind ? close_in_background(l) : close_in_children(l)))
		n = 0;
	threads = calloc(n ? n : 1, sizeof(*threads));
	started = calloc(n ? n : 1, sizeof(*started));
	for (size_t i = 0; i < n; i++) {
		started[i] = threads && started &&
			     !pthread_create(&threads[i], NULL, close_one, (void *)(intptr_t)l->fds[i]);
		if (!started[i])
			close(l->fds[i]); /* no thread: its wait is just not overlapped */
	}
	for (size_t i = 0; threads && started && i < n; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
	free(threads);
	free(started);
	free(l->fds);
	free(l->spec_v);
	vt_usdt_list_free(&l->notes);
	free(l->notes_path);
	memset(l, 0, sizeof(*l));
}

static int keep_fd(struct vt_uprobe_links *l, int fd)
{
	int *fds;

	if (fd < 0)
		return fd;
	fds = realloc(l->fds, (l->nfds + 1) * sizeof(*fds));
	if (!fds) {
		close(fd);
		return -ENOMEM;
	}
	l->fds = fds;
	l->fds[l->nfds++] = fd;
	return 0;
}

int vt_uprobe_links_uprobe(struct vt_uprobe_links *l, const struct bpf_program *prog,
			   const char *path, const char *func, uint64_t file_offset,
			   uint64_t cookie, uint64_t ref_ctr_offset, pid_t pid)
{
	uint64_t addr;

	if (func) {
		int err = vt_elf_symbol(path, func, &addr, &file_offset);

		if (err)
			return err;
	}
	return keep_fd(l, vt_uprobe_multi_attach(prog, path, &file_offset, &ref_ctr_offset,
						 &cookie, 1, pid));
}

/* The id of spec in l->specs, adding it when new. */
static int spec_id(struct vt_uprobe_links *l, const struct vt_usdt_spec *spec, uint64_t *id)
{
	struct vt_usdt_spec *v;
	uint32_t i;
	int err;

	for (i = 0; i < l->nspecs; i++)
		if (!memcmp(&l->spec_v[i], spec, sizeof(*spec)))
			break;
	if (i == l->nspecs) {
		if (!l->specs || bpf_map__value_size(l->specs) != sizeof(*spec))
			return -EINVAL;
		if (i >= bpf_map__max_entries(l->specs))
			return -E2BIG;
		v = realloc(l->spec_v, (i + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->spec_v = v;
		err = bpf_map__update_elem(l->specs, &i, sizeof(i), spec, sizeof(*spec), BPF_ANY);
		if (err)
			return err;
		l->spec_v[l->nspecs++] = *spec;
	}
	*id = i;
	return 0;
}

int vt_uprobe_links_usdt(struct vt_uprobe_links *l, const struct bpf_program *prog,
			 const char *path, const char *provider, const char *probe,
			 uint64_t cookie, pid_t pid)
{
	uint64_t *offsets = NULL, *refs = NULL, *cookies = NULL;
	uint32_t n = 0;
	int err = 0;

	if (!l->notes_path || strcmp(l->notes_path, path)) {
		vt_usdt_list_free(&l->notes);
		free(l->notes_path);
		l->notes_path = NULL;
		err = vt_usdt_read_file(path, &l->notes);
		if (err)
			return err;
		l->notes_path = strdup(path);
		if (!l->notes_path)
			return -ENOMEM;
	}
	for (size_t i = 0; !err && i < l->notes.n; i++) {
		const struct vt_usdt_probe *p = &l->notes.v[i];
		struct vt_usdt_spec spec;
		uint8_t byte;
		void *m;

		if (strcmp(p->provider, provider) || strcmp(p->name, probe))
			continue;
		if (!(m = realloc(offsets, (n + 1) * sizeof(*offsets))) || !(offsets = m) ||
		    !(m = realloc(refs, (n + 1) * sizeof(*refs))) || !(refs = m) ||
		    !(m = realloc(cookies, (n + 1) * sizeof(*cookies))) || !(cookies = m)) {
			err = -ENOMEM;
			break;
		}
		refs[n] = 0;
		err = vt_elf_code_at(path, p->pc, &byte, 1, &offsets[n]);
		if (!err && p->semaphore)
			err = vt_elf_code_at(path, p->semaphore, &byte, 1, &refs[n]);
		if (!err)
			err = vt_usdt_parse_args(p->args, cookie, &spec);
		if (!err)
			err = spec_id(l, &spec, &cookies[n]);
		n++;
	}
	if (!err && !n)
		err = -ENOENT;
	if (!err)
		err = keep_fd(l, vt_uprobe_multi_attach(prog, path, offsets, refs, cookies, n, pid));
	free(offsets);
	free(refs);
	free(cookies);
	return err;
}

/* ---- argument specs ---- */

struct reg_name {
	const char *names[4]; /* the 64-, 32-, 16- and 8-bit names */
	short off;
};

#define REG(r64, r32, r16, r8, field) { { r64, r32, r16, r8 }, offsetof(struct pt_regs, field) }
static const struct reg_name regs[] = {
	REG("rip", "eip", NULL, NULL, rip),
	REG("rax", "eax", "ax", "al", rax),
	REG("rbx", "ebx", "bx", "bl", rbx),
	REG("rcx", "ecx", "cx", "cl", rcx),
	REG("rdx", "edx", "dx", "dl", rdx),
	REG("rsi", "esi", "si", "sil", rsi),
	REG("rdi", "edi", "di", "dil", rdi),
	REG("rbp", "ebp", "bp", "bpl", rbp),
	REG("rsp", "esp", "sp", "spl", rsp),
	REG("r8", "r8d", "r8w", "r8b", r8),
	REG("r9", "r9d", "r9w", "r9b", r9),
	REG("r10", "r10d", "r10w", "r10b", r10),
	REG("r11", "r11d", "r11w", "r11b", r11),
	REG("r12", "r12d", "r12w", "r12b", r12),
	REG("r13", "r13d", "r13w", "r13b", r13),
	REG("r14", "r14d", "r14w", "r14b", r14),
	REG("r15", "r15d", "r15w", "r15b", r15),
};

/* "%name" (len bytes) as a pt_regs offset, or -1. */
static int reg_off(const char *s, size_t len)
{
	if (len < 2 || s[0] != '%')
		return -1;
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int w = 0; w < 4; w++)
			if (regs[i].names[w] && strlen(regs[i].names[w]) == len - 1 &&
			    !strncmp(regs[i].names[w], s + 1, len - 1))
				return regs[i].off;
	return -1;
}

/* A signed decimal number at s (up to end): *v, and where it ends. */
static const char *number(const char *s, const char *end, int64_t *v)
{
	char *stop;
	char buf[32];
	size_t len = (size_t)(end - s);

	if (!len || len >= sizeof(buf))
		return NULL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	*v = strtoll(buf, &stop, 0);
	if (errno || stop == buf)
		return NULL;
	return s + (stop - buf);
}

/* One SIZE@OPERAND token, s..end. */
static int parse_arg(const char *s, const char *end, struct vt_usdt_arg_spec *a)
{
	const char *at = memchr(s, '@', (size_t)(end - s)), *op;
	int64_t size, v = 0;
	int r;

	if (!at || number(s, at, &size) != at)
		return -EINVAL;
	if (size != 1 && size != 2 && size != 4 && size != 8 && size != -1 && size != -2 &&
	    size != -4 && size != -8)
		return -EINVAL;
	a->arg_signed = size < 0;
	a->arg_bitshift = (int8_t)(64 - 8 * (size < 0 ? -size : size));
	op = at + 1;
	if (op < end && *op == '$') { /* $constant */
		if (number(op + 1, end, &v) != end)
			return -EINVAL;
		a->arg_type = VT_USDT_ARG_CONST;
		a->val_off = (uint64_t)v;
		return 0;
	}
	if (op < end && *op == '%') { /* %register */
		r = reg_off(op, (size_t)(end - op));
		if (r < 0)
			return -EINVAL;
		a->arg_type = VT_USDT_ARG_REG;
		a->reg_off = (int16_t)r;
		return 0;
	}
	/* [offset](%register): memory at a register */
	const char *open = memchr(op, '(', (size_t)(end - op));

	if (!open || end[-1] != ')' || (open > op && number(op, open, &v) != open))
		return -EINVAL;
	r = reg_off(open + 1, (size_t)(end - 1 - (open + 1)));
	if (r < 0)
		return -EINVAL;
	a->arg_type = VT_USDT_ARG_REG_DEREF;
	a->reg_off = (int16_t)r;
	a->val_off = (uint64_t)v;
	return 0;
}

int vt_usdt_parse_args(const char *args, uint64_t cookie, struct vt_usdt_spec *spec)
{
	const char *s = args ? args : "";

	memset(spec, 0, sizeof(*spec));
	spec->usdt_cookie = cookie;
	for (;;) {
		const char *end;
		int err;

		while (*s == ' ')
			s++;
		if (!*s)
			return 0;
		if (spec->arg_cnt == VT_USDT_MAX_ARGS)
			return -EINVAL;
		end = s + strcspn(s, " ");
		err = parse_arg(s, end, &spec->args[spec->arg_cnt]);
		if (err)
			return err;
		spec->arg_cnt++;
		s = end;
	}
}
