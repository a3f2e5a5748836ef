/* callpath.c: VM frames described to libvmtrace, and counts per call path (callpath.h). */
#include <stdlib.h>
#include <string.h>

#include <vmtrace/vmtrace.h>

#include "callpath.h"

void callpath_describe(void)
{
	struct vmtrace_frame_layout l = VMTRACE_FRAME_LAYOUT(struct vm_frame, caller, name, file, line);

	if (vmtrace_frames_describe(&l) != 0) {
		fputs("demovm: libvmtrace refused the frame layout\n", stderr);
		abort();
	}
}

void callpath_init(struct vm_paths *p, unsigned root_method)
{
	p->n = 1;
	p->path[0] = (struct vm_path){ 0, root_method };
}

uint32_t callpath_enter(struct vm_paths *p, uint32_t parent, unsigned method)
{
	uint32_t h = (parent * 0x9E3779B1u) ^ (method * 0x85EBCA77u);

	for (uint32_t i = h & (VM_PATH_SLOTS - 1);; i = (i + 1) & (VM_PATH_SLOTS - 1)) {
		uint32_t s = p->slot[i];

		if (s && p->path[s - 1].parent == parent && p->path[s - 1].method == method)
			return s - 1;
		if (!s) {
			if (p->n == VM_PATH_MAX) {
				fputs("demovm: too many call paths\n", stderr);
				abort();
			}
			p->path[p->n] = (struct vm_path){ parent, method };
			p->slot[i] = ++p->n;
			return p->n - 1;
		}
	}
}

/* ---- the truth file's "stacks" ---- */

struct stack_row {
	char *stack;
	unsigned klass;
	uint64_t count, bytes;
};

static char *path_name(const struct vm_paths *p, uint32_t path)
{
	uint32_t chain[VM_PATH_MAX], n = 0;
	size_t len = 1;
	char *s;

	for (uint32_t x = path;; x = p->path[x].parent) {
		chain[n++] = x;
		len += strlen(vm_method_at(p->path[x].method)->qualified) + 1;
		if (x == 0)
			break;
	}
	s = malloc(len);
	if (!s)
		abort();
	s[0] = '\0';
	while (n--) {
		strcat(s, vm_method_at(p->path[chain[n]].method)->qualified);
		if (n)
			strcat(s, ";");
	}
	return s;
}

static int row_cmp(const void *a, const void *b)
{
	const struct stack_row *x = a, *y = b;
	int c = strcmp(x->stack, y->stack);

	return c ? c : strcmp(vm_class_at(x->klass)->name, vm_class_at(y->klass)->name);
}

static void put_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

void callpath_print(FILE *out, struct vm_paths *const *threads, unsigned nthreads)
{
	struct stack_row *rows = NULL;
	size_t n = 0, cap = 0, shown = 0;

	for (unsigned t = 0; t < nthreads; t++) {
		const struct vm_paths *p = threads[t];

		for (uint32_t x = 0; p && x < p->n; x++)
			for (unsigned c = 0; c < vm_class_count(); c++) {
				if (!p->alloc[x][c].count)
					continue;
				if (n == cap) {
					cap = cap ? 2 * cap : 256;
					rows = realloc(rows, cap * sizeof(*rows));
					if (!rows)
						abort();
				}
				rows[n++] = (struct stack_row){ path_name(p, x), c, p->alloc[x][c].count,
								p->alloc[x][c].bytes };
			}
	}
	if (n)
		qsort(rows, n, sizeof(*rows), row_cmp);
	fputs("  \"stacks\": [", out);
	for (size_t i = 0; i < n; i++) {
		/* rows of one stack and class, from several threads, add up */
		while (i + 1 < n && row_cmp(&rows[i], &rows[i + 1]) == 0) {
			rows[i + 1].count += rows[i].count;
			rows[i + 1].bytes += rows[i].bytes;
			free(rows[i].stack);
			i++;
		}
		fputs(shown++ ? ",\n    {\"stack\": " : "\n    {\"stack\": ", out);
		put_json_string(out, rows[i].stack);
		fputs(", \"class\": ", out);
		put_json_string(out, vm_class_at(rows[i].klass)->name);
		fprintf(out, ", \"count\": %llu, \"bytes\": %llu}", (unsigned long long)rows[i].count,
			(unsigned long long)rows[i].bytes);
		free(rows[i].stack);
	}
	fputs(shown ? "\n  ],\n" : "],\n", out);
	free(rows);
}
