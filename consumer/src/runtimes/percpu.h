/*
 * percpu.h: merging the values of per-CPU BPF maps.
 *
 * A lookup in a per-CPU map returns one copy of the value per possible CPU,
 * each copy padded to a multiple of 8 bytes. vmtrace's values are structs
 * of uint64_t counters: most add up across CPUs, a few (maxima) do not.
 */
#ifndef VMTRACE_PERCPU_H
#define VMTRACE_PERCPU_H

#include <stddef.h>
#include <stdint.h>

/* Bytes between two CPUs' copies of a value of value_size bytes. */
size_t vt_percpu_stride(size_t value_size);

/* out = the sum over ncpus copies at percpu, field by field, of the
 * value_size / 8 whole uint64_t fields of a value (copies sit
 * vt_percpu_stride(value_size) apart); fields listed in max_offsets (byte
 * offsets, nmax of them) take the maximum instead. */
void vt_percpu_merge(const void *percpu, size_t value_size, int ncpus, void *out,
		     const size_t *max_offsets, size_t nmax);

#endif /* VMTRACE_PERCPU_H */
