/*
 * batch.h: the wire format of the batched counting probes (alloc__batch,
 * free__batch; docs/probes.md "Batched counts").
 *
 * While a tracer holds one of these probes' semaphores, libvmtrace counts
 * the matching events in per-thread tables inside the process (no trap per
 * event) and delivers what each table gained since its last delivery through
 * the probe, one batch at a time: arg0 points at a struct vmtrace_batch,
 * arg1 is its length in bytes. A batch is valid only while the probe fires;
 * a tracer copies it (bpf_probe_read_user) there and then.
 *
 * The format is versioned so it can grow: a reader checks magic and
 * version, steps through the records by record_size (a newer record only
 * appends fields, so an older reader reads the prefix it knows), and
 * treats kinds it does not know as not for it.
 */
#ifndef VMTRACE_BATCH_H
#define VMTRACE_BATCH_H

#include <stdint.h>

#define VMTRACE_BATCH_MAGIC 0x42544d56u   /* "VMTB", little-endian */
#define VMTRACE_BATCH_VERSION 2       /* 2: `before`, `unseen_bytes` */
#define VMTRACE_BATCH_MAX_BYTES 16384     /* no batch is longer: one BPF read */

/* What the records of a batch count. */
enum vmtrace_batch_kind {
	VMTRACE_BATCH_ALLOC = 1,          /* object__alloc per (klass, method, site) */
	VMTRACE_BATCH_FREE = 2,           /* object__free per klass (method, site 0) */
	VMTRACE_BATCH_STACK = 3,          /* the frames of new stacks (<vmtrace/frames.h>), through
					     alloc__batch, before the counts that use them */
	VMTRACE_BATCH_LIVE = 4,           /* live__batch: one vmtrace_live_record per event */
};

/* flags of a batch */
#define VMTRACE_BATCH_ROUND_END 0x1u      /* the last batch of a flush of every thread */
#define VMTRACE_BATCH_EXIT 0x2u           /* ... the one the process makes as it exits */

struct vmtrace_batch {
	uint32_t magic;                   /* VMTRACE_BATCH_MAGIC */
	uint16_t version;                 /* VMTRACE_BATCH_VERSION */
	uint16_t kind;                    /* enum vmtrace_batch_kind */
	uint32_t record_size;             /* bytes of one record, >= its v1 size */
	uint32_t count;                   /* records after this header */
	uint32_t flags;                   /* VMTRACE_BATCH_* */
	uint32_t round;                   /* flush round, counted from 1 (0: a thread's own flush) */
	uint64_t lost;                    /* events the provider could not count since the last batch */
	uint64_t request;                 /* ROUND_END: the vmtrace_batch_request the round answers */
	uint64_t before;                  /* objects the host made before its counting began, as the
					     host said since the last batch (vmtrace_batch_before) */
	uint64_t unseen_bytes;            /* bytes the host allocated while counting was armed but
					     could not count, since the last batch
					     (vmtrace_batch_unseen_bytes) */
	/* followed by `count` records of record_size bytes */
};

/* One key's counts gained since its last delivery (v1: 48 bytes; the
 * stack was appended, 56). Keys are the interned string pointers the events
 * carried, and the id of the VM stack they were counted under. */
struct vmtrace_batch_record {
	uint64_t klass, method, site;     /* pointers in the process; 0 = NULL */
	uint64_t count;                   /* sum of weights (1 per event when exact) */
	uint64_t bytes;                   /* sum of size * weight */
	uint64_t samples;                 /* events */
	uint64_t stack;                   /* stack id; 0 = none taken (stacks not armed) */
};

/* A STACK batch's records are 24 bytes each: every stack is one head, then
 * `depth` frames, innermost first. Ids are a 64-bit hash of the frames, so
 * every thread names one stack alike; a stack may be sent more than once. */
struct vmtrace_batch_stack_head {
	uint64_t id;                      /* never 0; the top bit is always clear */
	uint32_t depth;                   /* frames that follow, at most VMTRACE_STACK_MAX_DEPTH */
	uint32_t flags;                   /* VMTRACE_STACK_* */
	uint64_t zero;
};
#define VMTRACE_STACK_CUT 0x1u            /* deeper than VMTRACE_STACK_MAX_DEPTH: the outer frames are missing */

struct vmtrace_batch_frame {
	uint64_t name, file;              /* pointers in the process; 0 = none */
	int64_t line;                     /* 0 = none */
};
#ifdef __cplusplus
static_assert(sizeof(struct vmtrace_batch_stack_head) == sizeof(struct vmtrace_batch_frame),
	      "stack records are of one size");
#else
_Static_assert(sizeof(struct vmtrace_batch_stack_head) == sizeof(struct vmtrace_batch_frame),
	       "stack records are of one size");
#endif

/* One allocation or free with its object's address (v1: 64 bytes), in the
 * order its thread made them. A free carries klass and size, no method or
 * site; time is CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns().
 * The provider holds young objects itself (docs/live.md "Cost"). An
 * allocation it holds has no record: its bytes go into a NET record, the
 * change of live bytes of held objects since the thread's last record that
 * changes them (addr: the change, as int64; size: the highest the running
 * change rose, >= 0; time_ns: when), sent before any such record and at
 * the end of every batch. The free of a held object comes as HELD_FREE,
 * its bytes in a NET, with the allocation's klass, method, site, size and
 * weight and, in addr, the allocation's time: the tracer only counts it as
 * temporary or not. An object that outlives its stay is handed over as
 * TRACK, with its address, key, size, weight and allocation time: the
 * tracer tracks it from then on (its bytes came in a NET), and its free
 * comes as FREE. ALLOC is an allocation the provider could not hold:
 * tracked at once, its bytes added. PAIR_ALLOC and PAIR_FREE, an older
 * provider's pair within one batch, each carry their bytes.
 *
 * Objects that carry a word (vmtrace_alloc_live, docs/live.md "A word per
 * object") have no address records: their bytes come in NET records, and
 * per allocation key a KEY record says what the key's live heap gained
 * since its last KEY (addr: objects, size: bytes, both as int64; weight and
 * time_ns: the temporaries freed, and their bytes). AGES records are a
 * snapshot of those objects by age when the record was made, replacing the
 * last: addr, a log2 bucket of the age in ns; size, the objects; weight 1
 * on the snapshot's first record (one is always sent). */
enum vmtrace_live_op {
	VMTRACE_LIVE_ALLOC = 1,
	VMTRACE_LIVE_FREE = 2,
	VMTRACE_LIVE_PAIR_ALLOC = 3,
	VMTRACE_LIVE_PAIR_FREE = 4,
	VMTRACE_LIVE_TRACK = 5,
	VMTRACE_LIVE_HELD_FREE = 6,
	VMTRACE_LIVE_NET = 7,
	VMTRACE_LIVE_KEY = 8,
	VMTRACE_LIVE_AGES = 9,
};
struct vmtrace_live_record {
	uint64_t addr;
	uint64_t klass, method, site;     /* pointers in the process; 0 = NULL */
	uint64_t size, weight;            /* weight 1, or the sampling weight; a free's is 0 */
	uint64_t time_ns;
	uint32_t op;                      /* enum vmtrace_live_op */
	uint32_t pad;
};

#define VMTRACE_BATCH_MAX_RECORDS \
	((VMTRACE_BATCH_MAX_BYTES - sizeof(struct vmtrace_batch)) / sizeof(struct vmtrace_batch_record))

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A consumer that wants every thread's counts now (before it ends a
 * recording) writes a new value here (through /proc/PID/mem); within a few
 * tens of milliseconds the provider flushes every thread, idle ones too, and
 * ends that round with a VMTRACE_BATCH_ROUND_END batch.          (public)
 */
extern volatile uint64_t vmtrace_batch_request;

/*
 * Deliver every thread's counts now, in a round of their own; with last,
 * as the process's last round (VMTRACE_BATCH_EXIT). libvmtrace makes that
 * last round itself when the process exits through exit(3); a host that
 * ends some other way (_exit, Ruby's exit!, a fatal signal it catches)
 * calls this first, or its last counts never reach the tracer.  (public)
 */
void vmtrace_batch_flush(int last);

/*
 * The host's own count of the objects it made before its counting began
 * (Ruby: GC.stat's total_allocated_objects as its hooks go on), carried by
 * the next batch: what a tracer did not count is a figure in its report,
 * not a silence.                                                 (public)
 */
void vmtrace_batch_before(uint64_t objects);

/*
 * Bytes the host allocated while counting was armed that it could not
 * count (a JVM thread's allocations before its first exact sample), added
 * up and carried by the next batch: a figure of the report.     (public)
 */
void vmtrace_batch_unseen_bytes(uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* VMTRACE_BATCH_H */
