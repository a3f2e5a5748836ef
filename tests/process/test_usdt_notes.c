/*
 * The ELF note parser against real binaries (libvmtrace, libruby, python)
 * and against hand-built malformed notes and ELF files: bad input is an
 * error, never a crash or a probe made of garbage.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "process/usdt_notes.h"
#include "vmtrace/vmtrace.h"

#define PAGE 4096

/* ---- building note sections by hand ---- */

struct buf {
	unsigned char b[4096];
	size_t n;
};

static void put_u32(struct buf *b, uint32_t v)
{
	memcpy(b->b + b->n, &v, 4);
	b->n += 4;
}

static void put_bytes(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void pad4(struct buf *b)
{
	while (b->n % 4)
		b->b[b->n++] = 0;
}

/* A note with the given header fields and payloads (sizes may lie). */
static void note(struct buf *b, uint32_t namesz, const void *name, size_t name_len,
		 uint32_t descsz, const void *desc, size_t desc_len, uint32_t type)
{
	put_u32(b, namesz);
	put_u32(b, descsz);
	put_u32(b, type);
	put_bytes(b, name, name_len);
	pad4(b);
	put_bytes(b, desc, desc_len);
	pad4(b);
}

/* A well-formed stapsdt descriptor: addresses, then three strings. */
static size_t stapsdt_desc(unsigned char *d, uint64_t pc, uint64_t base, uint64_t sema,
			   const char *prov, const char *name, const char *args)
{
	size_t n = 0;
	memcpy(d + n, &pc, 8), n += 8;
	memcpy(d + n, &base, 8), n += 8;
	memcpy(d + n, &sema, 8), n += 8;
	memcpy(d + n, prov, strlen(prov) + 1), n += strlen(prov) + 1;
	memcpy(d + n, name, strlen(name) + 1), n += strlen(name) + 1;
	memcpy(d + n, args, strlen(args) + 1), n += strlen(args) + 1;
	return n;
}

static void good_note(struct buf *b, const char *prov, const char *name, const char *args)
{
	unsigned char d[512];
	size_t n = stapsdt_desc(d, 0x1234, 0x2000, 0x4040, prov, name, args);
	note(b, 8, "stapsdt", 8, (uint32_t)n, d, n, 3);
}

static int parse(struct buf *b, struct vt_usdt_list *l)
{
	return vt_usdt_parse_notes(b->b, b->n, "/x", l);
}

static void test_good_notes(void **state)
{
	(void)state;
	struct buf b = { .n = 0 };
	struct vt_usdt_list l = { 0 };

	good_note(&b, "vmtrace", "object__alloc", "8@%r13 8@%r12 8@%rbx 8@%rbp 8@%rax");
	good_note(&b, "p", "no_args", "");
	assert_int_equal(parse(&b, &l), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[0].provider, "vmtrace");
	assert_string_equal(l.v[0].name, "object__alloc");
	assert_string_equal(l.v[0].args, "8@%r13 8@%r12 8@%rbx 8@%rbp 8@%rax");
	assert_int_equal(l.v[0].nargs, 5);
	assert_int_equal(l.v[0].pc, 0x1234);
	assert_int_equal(l.v[0].base, 0x2000);
	assert_int_equal(l.v[0].semaphore, 0x4040);
	assert_string_equal(l.v[0].path, "/x");
	assert_int_equal(l.v[1].nargs, 0);
	assert_string_equal(l.v[1].args, "");
	vt_usdt_list_free(&l);
	assert_null(l.v);
	assert_int_equal(l.n, 0);
	vt_usdt_list_free(NULL);
}

static void test_empty_section(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	assert_int_equal(vt_usdt_parse_notes("", 0, "/x", &l), 0);
	assert_int_equal(vt_usdt_parse_notes(NULL, 0, "/x", &l), 0);
	assert_int_equal(l.n, 0);
}

static void test_truncated_header(void **state)
{
	(void)state;
	struct buf b = { .n = 0 };
	struct vt_usdt_list l = { 0 };

	good_note(&b, "p", "n", "");
	size_t whole = b.n;
	put_u32(&b, 8);
	put_u32(&b, 30); /* 8 of 12 header bytes */
	assert_int_equal(parse(&b, &l), -EINVAL);
	assert_int_equal(l.n, 1); /* the note before the bad one is kept */
	vt_usdt_list_free(&l);

	for (size_t cut = 1; cut < whole - 3; cut++) { /* the last 3 are padding */
		assert_int_equal(vt_usdt_parse_notes(b.b, cut, "/x", &l), -EINVAL);
		assert_int_equal(l.n, 0);
	}
}

static void test_size_overflows(void **state)
{
	(void)state;
	unsigned char d[256];
	size_t n = stapsdt_desc(d, 1, 2, 3, "p", "n", "");
	struct vt_usdt_list l = { 0 };
	const uint32_t huge[] = { 0xffffffffu, 0xfffffffdu, 0x80000000u, 4096 };

	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		struct buf b = { .n = 0 };
		note(&b, huge[i], "stapsdt", 8, (uint32_t)n, d, n, 3);
		assert_int_equal(parse(&b, &l), -EINVAL);
		b.n = 0;
		note(&b, 8, "stapsdt", 8, huge[i], d, n, 3);
		assert_int_equal(parse(&b, &l), -EINVAL);
		assert_int_equal(l.n, 0);
	}
	/* namesz that only fits with its padding cut off */
	struct buf b = { .n = 0 };
	put_u32(&b, 5);
	put_u32(&b, 0);
	put_u32(&b, 3);
	put_bytes(&b, "abcde", 5);
	assert_int_equal(parse(&b, &l), -EINVAL);
}

static void test_missing_nuls(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	unsigned char d[256];
	size_t n = stapsdt_desc(d, 1, 2, 3, "prov", "name", "8@%rdi");

	/* Cut the descriptor before each of the three NULs. */
	const size_t prov_nul = 24 + 4, name_nul = prov_nul + 5, args_nul = n - 1;
	const size_t cuts[] = { prov_nul, name_nul, args_nul, 24 + 2 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		struct buf b = { .n = 0 };
		note(&b, 8, "stapsdt", 8, (uint32_t)cuts[i], d, cuts[i], 3);
		/* bytes after the descriptor are not NULs it may borrow */
		memset(b.b + b.n, 'A', 16);
		assert_int_equal(parse(&b, &l), -EINVAL);
		assert_int_equal(l.n, 0);
	}
	/* No NUL anywhere: a descriptor of letters. */
	struct buf b = { .n = 0 };
	unsigned char letters[64];
	memset(letters, 'x', sizeof(letters));
	note(&b, 8, "stapsdt", 8, sizeof(letters), letters, sizeof(letters), 3);
	assert_int_equal(parse(&b, &l), -EINVAL);
}

static void test_short_and_empty_fields(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	unsigned char d[256];
	struct buf b = { .n = 0 };

	/* descriptor shorter than its three addresses */
	memset(d, 0, sizeof(d));
	note(&b, 8, "stapsdt", 8, 23, d, 23, 3);
	assert_int_equal(parse(&b, &l), -EINVAL);
	/* zero-length descriptor */
	b.n = 0;
	note(&b, 8, "stapsdt", 8, 0, d, 0, 3);
	assert_int_equal(parse(&b, &l), -EINVAL);
	/* empty provider, empty name */
	b.n = 0;
	size_t n = stapsdt_desc(d, 1, 2, 3, "", "n", "");
	note(&b, 8, "stapsdt", 8, (uint32_t)n, d, n, 3);
	assert_int_equal(parse(&b, &l), -EINVAL);
	b.n = 0;
	n = stapsdt_desc(d, 1, 2, 3, "p", "", "");
	note(&b, 8, "stapsdt", 8, (uint32_t)n, d, n, 3);
	assert_int_equal(parse(&b, &l), -EINVAL);
	/* argument specs that are not SIZE@OPERAND */
	const char *bad_args[] = { "8", "8@", "@%rdi", "8@%rdi garbage" };
	for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
		b.n = 0;
		n = stapsdt_desc(d, 1, 2, 3, "p", "n", bad_args[i]);
		note(&b, 8, "stapsdt", 8, (uint32_t)n, d, n, 3);
		assert_int_equal(parse(&b, &l), -EINVAL);
	}
	assert_int_equal(l.n, 0);
}

static void test_other_owners_skipped(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	unsigned char d[256];
	size_t n = stapsdt_desc(d, 1, 2, 3, "p", "n", "");
	struct buf b = { .n = 0 };

	note(&b, 4, "GNU", 4, (uint32_t)n, d, n, 3);          /* wrong owner */
	note(&b, 8, "stapsdX", 8, (uint32_t)n, d, n, 3);      /* near miss */
	note(&b, 7, "stapsdt", 7, (uint32_t)n, d, n, 3);      /* no NUL in owner */
	note(&b, 8, "stapsdt", 8, (uint32_t)n, d, n, 1);      /* wrong type */
	note(&b, 0, "", 0, 0, "", 0, 0);                       /* zero-length note */
	note(&b, 4, "GNU", 4, 0x10, "garbage, no NULs", 16, 3); /* foreign content */
	good_note(&b, "p", "real", "");
	assert_int_equal(parse(&b, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0].name, "real");
	vt_usdt_list_free(&l);
}

static void test_last_padding_cut(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	unsigned char d[256];
	size_t n = stapsdt_desc(d, 1, 2, 3, "p", "n", ""); /* 24+2+2+1 = 29: 3 bytes of padding */
	struct buf b = { .n = 0 };
	note(&b, 8, "stapsdt", 8, (uint32_t)n, d, n, 3);
	assert_int_equal(n % 4, 1);
	assert_int_equal(vt_usdt_parse_notes(b.b, b.n - 3, "/x", &l), 0);
	assert_int_equal(l.n, 1);
	vt_usdt_list_free(&l);
}

/* ---- real binaries ---- */

static const struct vt_usdt_probe *find(const struct vt_usdt_list *l, const char *prov, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].provider, prov) && !strcmp(l->v[i].name, name))
			return &l->v[i];
	return NULL;
}

static void check_libvmtrace_probes(const struct vt_usdt_list *l, const char *path_part)
{
	/* every probe of probes/vmtrace.d, with its number of arguments */
	static const struct { const char *name; int nargs; } abi[] = {
		{ "object__alloc", 6 }, { "object__free", 3 }, { "method__entry", 4 },
		{ "method__return", 4 }, { "method__cache__reset", 3 },
		{ "constant__cache__reset", 2 }, { "global__serial__inc", 2 },
		{ "gc__begin", 2 }, { "gc__end", 2 }, { "signal__received", 1 },
		{ "signal__handled", 2 }, { "bus__dropped", 2 }, { "sample__armed", 1 },
	};
	size_t ours = 0;
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].provider, "vmtrace"))
			ours++;
	assert_true(ours >= sizeof(abi) / sizeof(abi[0]));
	for (size_t i = 0; i < sizeof(abi) / sizeof(abi[0]); i++) {
		const struct vt_usdt_probe *p = find(l, "vmtrace", abi[i].name);
		assert_non_null(p);
		assert_int_equal(p->nargs, abi[i].nargs);
		assert_int_not_equal(p->semaphore, 0);
		assert_int_not_equal(p->pc, 0);
		assert_non_null(strstr(p->path, path_part));
	}
	/* each probe its own semaphore */
	const struct vt_usdt_probe *a = find(l, "vmtrace", "object__alloc");
	const struct vt_usdt_probe *f = find(l, "vmtrace", "object__free");
	assert_int_not_equal(a->semaphore, f->semaphore);
}

static void test_libvmtrace(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	assert_int_equal(vt_usdt_read_file(LIBVMTRACE, &l), 0);
	check_libvmtrace_probes(&l, "libvmtrace.so");
	vt_usdt_list_free(&l);
}

static void test_libruby(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	assert_int_equal(vt_usdt_read_file(LIBRUBY, &l), 0);
	assert_true(l.n >= 20);
	const char *names[] = { "array__create", "object__create", "method__entry",
				"method__return", "cmethod__entry", "gc__mark__begin",
				"gc__sweep__end", "hash__create", "string__create" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct vt_usdt_probe *p = find(&l, "ruby", names[i]);
		assert_non_null(p);
		assert_int_not_equal(p->semaphore, 0);
	}
	assert_int_equal(find(&l, "ruby", "array__create")->nargs, 3);
	assert_int_equal(find(&l, "ruby", "method__entry")->nargs, 4);
	for (size_t i = 0; i < l.n; i++)
		assert_string_equal(l.v[i].provider, "ruby");
	vt_usdt_list_free(&l);
}

static void test_python(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	assert_int_equal(vt_usdt_read_file(PYTHON, &l), 0);
	const struct vt_usdt_probe *p = find(&l, "python", "function__entry");
	assert_non_null(p);
	assert_int_equal(p->nargs, 3);
	assert_non_null(find(&l, "python", "gc__start"));
	assert_non_null(find(&l, "python", "gc__done"));
	vt_usdt_list_free(&l);
}

static void test_elf_symbol(void **state)
{
	(void)state;
	uint64_t addr = 0, off = 0;
	assert_int_equal(vt_elf_symbol(LIBVMTRACE, "vmtrace_sample_period", &addr, &off), 0);
	assert_int_not_equal(addr, 0);
	/* a loadable address and its file offset agree modulo the page */
	assert_int_equal(addr % PAGE, off % PAGE);
	assert_int_equal(vt_elf_symbol(LIBVMTRACE, "vmtrace_no_such_symbol", &addr, &off), -ENOENT);
	assert_int_equal(vt_elf_symbol("/nonexistent/file", "x", &addr, &off), -ENOENT);

	/* the symbol's address is where the loaded library keeps it */
	void *h = dlopen(LIBVMTRACE, RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	void *sym = dlsym(h, "vmtrace_sample_period");
	Dl_info info;
	assert_non_null(sym);
	assert_true(dladdr(sym, &info) != 0);
	assert_int_equal((uintptr_t)sym - (uintptr_t)info.dli_fbase, addr);
	dlclose(h);
}

/* ---- malformed files ---- */

static char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	char *b = malloc(*len);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

static void write_whole(const char *path, const void *b, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	fclose(f);
}

static void test_bad_files(void **state)
{
	(void)state;
	char path[] = "/tmp/vmtrace-notes-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct vt_usdt_list l = { 0 };
	size_t len;
	char *lib = read_whole(LIBVMTRACE, &len);

	/* not an ELF file at all */
	write_whole(path, "#!/bin/sh\necho hi\n", 18);
	assert_int_equal(vt_usdt_read_file(path, &l), -ENOEXEC);
	/* empty */
	write_whole(path, "", 0);
	assert_int_equal(vt_usdt_read_file(path, &l), -ENOEXEC);
	/* ELF header cut short */
	write_whole(path, lib, 40);
	assert_int_equal(vt_usdt_read_file(path, &l), -ENOEXEC);
	/* section headers past the end of the file */
	write_whole(path, lib, len / 2);
	assert_int_equal(vt_usdt_read_file(path, &l), -ENOEXEC);
	/* a directory, a missing file */
	assert_int_equal(vt_usdt_read_file("/tmp", &l), -ENOEXEC);
	assert_int_equal(vt_usdt_read_file("/nonexistent/file", &l), -ENOENT);

	/* a valid ELF whose first stapsdt note claims a huge descriptor */
	char *copy = malloc(len);
	memcpy(copy, lib, len);
	char *owner = memmem(copy, len, "\x03\0\0\0stapsdt", 12);
	assert_non_null(owner);
	uint32_t huge = 0xfffffff0u;
	memcpy(owner - 4, &huge, 4);
	write_whole(path, copy, len);
	assert_int_equal(vt_usdt_read_file(path, &l), -ENOEXEC);

	/* ... or a provider without its NUL (the probe's strings run into the next note) */
	memcpy(copy, lib, len);
	owner = memmem(copy, len, "\x03\0\0\0stapsdt", 12);
	uint32_t descsz;
	memcpy(&descsz, owner - 4, 4);
	memset(owner + 12 + 24, 'A', descsz - 24);
	write_whole(path, copy, len);
	assert_int_equal(vt_usdt_read_file(path, &l), -ENOEXEC);
	assert_int_equal(l.n, 0); /* nothing half-read is left behind */

	/* the unpatched copy reads fine */
	write_whole(path, lib, len);
	assert_int_equal(vt_usdt_read_file(path, &l), 0);
	assert_true(l.n >= 13);
	vt_usdt_list_free(&l);

	free(copy);
	free(lib);
	unlink(path);
}

/* ---- processes ---- */

static void test_read_pid_self(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	assert_int_equal(vmtrace_sample_period_effective(), 0); /* keeps libvmtrace linked */
	assert_int_equal(vt_usdt_read_pid(getpid(), &l), 0);
	check_libvmtrace_probes(&l, "libvmtrace.so.0.1.0");
	/* each module once: no site listed twice */
	for (size_t i = 0; i < l.n; i++)
		for (size_t j = i + 1; j < l.n; j++)
			assert_false(l.v[i].pc == l.v[j].pc && !strcmp(l.v[i].path, l.v[j].path) &&
				     !strcmp(l.v[i].name, l.v[j].name));
	vt_usdt_list_free(&l);
}

static void test_read_pid_missing(void **state)
{
	(void)state;
	struct vt_usdt_list l = { 0 };
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(vt_usdt_read_pid(child, &l), -ESRCH);
	assert_int_equal(vt_usdt_read_pid(0, &l), -ESRCH);
	assert_int_equal(vt_usdt_read_pid(-5, &l), -ESRCH);
	assert_int_equal(l.n, 0);
}

/* A module deleted after it was mapped is still read, through map_files,
 * and its probes take that link as their path (the one the kernel can still
 * attach uprobes by). Mapping the copy (not loading it) keeps a second
 * libvmtrace's code out. */
static void test_read_pid_deleted(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* map_files needs privilege */
	char path[] = "/tmp/vmtrace-deleted-XXXXXX.so";
	int fd = mkstemps(path, 3);
	assert_true(fd >= 0);
	size_t len;
	char *lib = read_whole(LIBVMTRACE, &len);
	assert_int_equal(write(fd, lib, len), (ssize_t)len);
	free(lib);
	void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	unlink(path);

	struct vt_usdt_list l = { 0 };
	assert_int_equal(vt_usdt_read_pid(getpid(), &l), 0);
	char link[64];
	int found = 0;
	snprintf(link, sizeof(link), "/proc/%d/map_files/%lx-", (int)getpid(), (unsigned long)map);
	for (size_t i = 0; i < l.n; i++)
		if (!strncmp(l.v[i].path, link, strlen(link)) && !strcmp(l.v[i].provider, "vmtrace"))
			found++;
	assert_true(found >= 13);
	vt_usdt_list_free(&l);
	munmap(map, len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_notes),
		cmocka_unit_test(test_empty_section),
		cmocka_unit_test(test_truncated_header),
		cmocka_unit_test(test_size_overflows),
		cmocka_unit_test(test_missing_nuls),
		cmocka_unit_test(test_short_and_empty_fields),
		cmocka_unit_test(test_other_owners_skipped),
		cmocka_unit_test(test_last_padding_cut),
		cmocka_unit_test(test_libvmtrace),
		cmocka_unit_test(test_libruby),
		cmocka_unit_test(test_python),
		cmocka_unit_test(test_elf_symbol),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_read_pid_self),
		cmocka_unit_test(test_read_pid_missing),
		cmocka_unit_test(test_read_pid_deleted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
