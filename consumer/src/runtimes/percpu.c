/*
 * percpu.c: merging per-CPU map values (percpu.h).
 */
#include <string.h>

#include "runtimes/percpu.h"

size_t vt_percpu_stride(size_t value_size)
{
	return (value_size + 7) & ~(size_t)7;
}

static int is_max_field(size_t off, const size_t *max_offsets, size_t nmax)
{
	for (size_t i = 0; i < nmax; i++)
		if (max_offsets[i] == off)
			return 1;
	return 0;
}

void vt_percpu_merge(const void *percpu, size_t value_size, int ncpus, void *out,
		     const size_t *max_offsets, size_t nmax)
{
	size_t stride = vt_percpu_stride(value_size), nfields = value_size / 8;
	const unsigned char *base = percpu;

	for (size_t f = 0; f < nfields; f++) {
		int take_max = is_max_field(f * 8, max_offsets, nmax);
		uint64_t acc = 0;

		for (int cpu = 0; cpu < ncpus; cpu++) {
			uint64_t v;

			/* memcpy: the kernel's buffer carries no alignment promise for us */
			memcpy(&v, base + (size_t)cpu * stride + f * 8, sizeof(v));
			if (take_max)
				acc = v > acc ? v : acc;
			else
				acc += v;
		}
		memcpy((unsigned char *)out + f * 8, &acc, sizeof(acc));
	}
}
