/* truth.c: merging the threads' counts and writing the truth file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "callpath.h"
#include "truth.h"

/* The live row of (klass, method, site), added empty when new; NULL when full. */
static struct truth_live_row *live_row(struct truth *t, unsigned klass, unsigned method, const char *site)
{
	for (unsigned i = 0; i < t->nlive; i++)
		if (t->live[i].klass == klass && t->live[i].method == method && t->live[i].site == site)
			return &t->live[i];
	if (t->nlive == VM_LIVE_ROWS)
		return NULL;
	t->live[t->nlive] = (struct truth_live_row){ site, klass, method, { 0, 0 } };
	return &t->live[t->nlive++];
}

void truth_live(struct truth *t, unsigned klass, unsigned method, const char *site, uint64_t size)
{
	struct truth_live_row *r = live_row(t, klass, method, site);

	if (!r) {
		t->live_overflow++;
		return;
	}
	r->n.count++;
	r->n.bytes += size;
}

void truth_merge(struct truth *into, const struct truth *from)
{
	for (unsigned i = 0; i < from->nlive; i++) {
		const struct truth_live_row *r = &from->live[i];
		struct truth_live_row *d = live_row(into, r->klass, r->method, r->site);

		if (!d) {
			into->live_overflow += r->n.count;
			continue;
		}
		d->n.count += r->n.count;
		d->n.bytes += r->n.bytes;
	}
	into->live_overflow += from->live_overflow;
	for (unsigned c = 0; c < VM_CLASS_MAX; c++) {
		for (unsigned m = 0; m < VM_METHOD_MAX; m++) {
			into->alloc[c][m].count += from->alloc[c][m].count;
			into->alloc[c][m].bytes += from->alloc[c][m].bytes;
		}
		into->frees[c].count += from->frees[c].count;
		into->frees[c].bytes += from->frees[c].bytes;
		into->class_resets[c] += from->class_resets[c];
	}
	for (unsigned m = 0; m < VM_METHOD_MAX; m++)
		into->method_resets[m] += from->method_resets[m];
	for (unsigned k = 0; k < VM_CONST__COUNT; k++)
		into->constant_resets[k] += from->constant_resets[k];
	for (unsigned r = 0; r < VM_REASON__COUNT; r++)
		into->serial_incs[r] += from->serial_incs[r];
	into->gc_minor += from->gc_minor;
	into->gc_major += from->gc_major;
	for (unsigned s = 0; s < VM_SIGNAL_MAX; s++)
		into->signals[s] += from->signals[s];
}

uint64_t truth_total_allocs(const struct truth *t, uint64_t *bytes)
{
	uint64_t count = 0, sum = 0;
	for (unsigned c = 0; c < VM_CLASS_MAX; c++)
		for (unsigned m = 0; m < VM_METHOD_MAX; m++) {
			count += t->alloc[c][m].count;
			sum += t->alloc[c][m].bytes;
		}
	*bytes = sum;
	return count;
}

uint64_t truth_total_frees(const struct truth *t, uint64_t *bytes)
{
	uint64_t count = 0, sum = 0;
	for (unsigned c = 0; c < VM_CLASS_MAX; c++) {
		count += t->frees[c].count;
		sum += t->frees[c].bytes;
	}
	*bytes = sum;
	return count;
}

/* ---- JSON ---- */

static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

/* One row of a sorted list: up to two keys and their indexes. */
struct row {
	const char *key1, *key2;
	unsigned i, j;
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strcmp(x->key1, y->key1);
	if (c == 0 && x->key2 && y->key2)
		c = strcmp(x->key2, y->key2);
	return c;
}

static void sort_rows(struct row *rows, size_t n)
{
	qsort(rows, n, sizeof(*rows), row_cmp);
}

static void list_open(FILE *out, const char *name)
{
	fprintf(out, "  \"%s\": [", name);
}

static void item_open(FILE *out, size_t k)
{
	fputs(k ? ",\n    {" : "\n    {", out);
}

static void list_close(FILE *out, size_t n)
{
	fputs(n ? "\n  ],\n" : "],\n", out);
}

/* A list of {"FIELD": name, "count": counts[row.i]} for rows, by name. */
static void put_named_counts(FILE *out, const char *list, const char *field,
			     struct row *rows, size_t n, const uint64_t *counts)
{
	sort_rows(rows, n);
	list_open(out, list);
	for (size_t k = 0; k < n; k++) {
		item_open(out, k);
		fprintf(out, "\"%s\": ", field);
		put_string(out, rows[k].key1);
		fprintf(out, ", \"count\": %llu}", (unsigned long long)counts[rows[k].i]);
	}
	list_close(out, n);
}

static int live_cmp(const void *a, const void *b)
{
	const struct truth_live_row *x = a, *y = b;
	int c = strcmp(vm_class_at(x->klass)->name, vm_class_at(y->klass)->name);

	if (!c)
		c = strcmp(vm_method_at(x->method)->qualified, vm_method_at(y->method)->qualified);
	if (!c)
		c = strcmp(x->site ? x->site : "", y->site ? y->site : "");
	return c;
}

/* "live": objects never freed per (class, method, site), by those names */
static void put_live(FILE *out, const struct truth *t)
{
	static struct truth_live_row rows[VM_LIVE_ROWS];
	unsigned n = t->nlive;

	memcpy(rows, t->live, n * sizeof(rows[0]));
	qsort(rows, n, sizeof(rows[0]), live_cmp);
	list_open(out, "live");
	for (unsigned k = 0; k < n; k++) {
		item_open(out, k);
		fputs("\"class\": ", out);
		put_string(out, vm_class_at(rows[k].klass)->name);
		fputs(", \"method\": ", out);
		put_string(out, vm_method_at(rows[k].method)->qualified);
		fputs(", \"site\": ", out);
		put_string(out, rows[k].site ? rows[k].site : "");
		fprintf(out, ", \"count\": %llu, \"bytes\": %llu}", (unsigned long long)rows[k].n.count,
			(unsigned long long)rows[k].n.bytes);
	}
	list_close(out, n);
	fprintf(out, "  \"live_overflow\": %llu,\n", (unsigned long long)t->live_overflow);
}

void truth_print(FILE *out, const struct truth *t, const struct truth_run *run)
{
	static struct row rows[VM_CLASS_MAX * VM_METHOD_MAX + VM_CLASS_MAX];
	size_t n;

	fprintf(out, "{\n  \"seed\": %llu, \"ops\": %llu, \"threads\": %u,\n",
		(unsigned long long)run->seed, (unsigned long long)run->ops, run->threads);

	n = 0;
	for (unsigned c = 0; c < vm_class_count(); c++)
		for (unsigned m = 0; m < vm_method_count(); m++)
			if (t->alloc[c][m].count)
				rows[n++] = (struct row){ vm_class_at(c)->name,
							  vm_method_at(m)->qualified, c, m };
	sort_rows(rows, n);
	list_open(out, "allocations");
	for (size_t k = 0; k < n; k++) {
		const struct truth_count *tc = &t->alloc[rows[k].i][rows[k].j];
		item_open(out, k);
		fputs("\"class\": ", out);
		put_string(out, rows[k].key1);
		fputs(", \"method\": ", out);
		put_string(out, rows[k].key2);
		fprintf(out, ", \"count\": %llu, \"bytes\": %llu}",
			(unsigned long long)tc->count, (unsigned long long)tc->bytes);
	}
	list_close(out, n);
	if (run->paths)
		callpath_print(out, run->paths, run->threads);

	n = 0;
	for (unsigned c = 0; c < vm_class_count(); c++)
		if (t->frees[c].count)
			rows[n++] = (struct row){ vm_class_at(c)->name, NULL, c, 0 };
	sort_rows(rows, n);
	list_open(out, "frees");
	for (size_t k = 0; k < n; k++) {
		item_open(out, k);
		fputs("\"class\": ", out);
		put_string(out, rows[k].key1);
		fprintf(out, ", \"count\": %llu, \"bytes\": %llu}",
			(unsigned long long)t->frees[rows[k].i].count,
			(unsigned long long)t->frees[rows[k].i].bytes);
	}
	list_close(out, n);

	put_live(out, t);

	/* method "" stands for a whole-class reset (the probe's NULL) */
	n = 0;
	for (unsigned m = 0; m < vm_method_count(); m++)
		if (t->method_resets[m])
			rows[n++] = (struct row){ vm_method_at(m)->owner->name,
						  vm_method_at(m)->name, 0, m };
	for (unsigned c = 0; c < vm_class_count(); c++)
		if (t->class_resets[c])
			rows[n++] = (struct row){ vm_class_at(c)->name, "", 1, c };
	sort_rows(rows, n);
	list_open(out, "method_cache_resets");
	for (size_t k = 0; k < n; k++) {
		uint64_t count = rows[k].i ? t->class_resets[rows[k].j] : t->method_resets[rows[k].j];
		item_open(out, k);
		fputs("\"class\": ", out);
		put_string(out, rows[k].key1);
		fputs(", \"method\": ", out);
		put_string(out, rows[k].key2);
		fprintf(out, ", \"count\": %llu}", (unsigned long long)count);
	}
	list_close(out, n);

	n = 0;
	for (unsigned c = 0; c < VM_CONST__COUNT; c++)
		if (t->constant_resets[c])
			rows[n++] = (struct row){ vm_constant_name(c), NULL, c, 0 };
	put_named_counts(out, "constant_cache_resets", "name", rows, n, t->constant_resets);

	n = 0;
	for (unsigned r = 0; r < VM_REASON__COUNT; r++)
		if (t->serial_incs[r])
			rows[n++] = (struct row){ vm_serial_reason_name(r), NULL, r, 0 };
	put_named_counts(out, "global_serial_incs", "reason", rows, n, t->serial_incs);

	fprintf(out, "  \"global_serial\": %llu,\n", (unsigned long long)run->global_serial);
	fprintf(out, "  \"gc\": {\"minor\": %llu, \"major\": %llu},\n",
		(unsigned long long)t->gc_minor, (unsigned long long)t->gc_major);

	fputs("  \"signals\": [", out);
	n = 0;
	for (unsigned s = 0; s < VM_SIGNAL_MAX; s++) {
		if (!t->signals[s])
			continue;
		item_open(out, n++);
		fprintf(out, "\"signo\": %u, \"received\": %llu}", s,
			(unsigned long long)t->signals[s]);
	}
	fputs(n ? "\n  ]\n}\n" : "]\n}\n", out);
}

int truth_write(const char *path, const struct truth *t, const struct truth_run *run)
{
	FILE *out = fopen(path, "w");
	if (!out)
		return -errno;
	truth_print(out, t, run);
	if (ferror(out)) {
		fclose(out);
		return -EIO;
	}
	if (fclose(out) != 0)
		return -errno;
	return 0;
}
