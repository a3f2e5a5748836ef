/*
 * vmtrace_maps.h: what vmtrace.bpf.c and runtime_vmtrace.c share: map keys,
 * values, the GC event of the ring buffer and the loss counters.
 *
 * Keys hold the target's string pointers, not the strings: the provider's
 * strings are interned (the probe ABI), so a pointer names one string for
 * the life of the process, and hashing 24 bytes is much cheaper than copying
 * and hashing names on every event. Each pointer is read once, when a key
 * holding it first appears, into the `names` map, so names outlive the
 * target; userspace reads from /proc/PID/mem whatever the kernel could not.
 */
#ifndef VMTRACE_MAPS_H
#define VMTRACE_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VT_NAME_MAX 128          /* bytes of a name in the names map, NUL included */
#define VT_LONG_NAME_MAX 4096    /* bytes of a name in the long-name map, NUL included */
#define VT_LONG_NAMES 256        /* names of VT_NAME_MAX bytes or more the kernel keeps */
#define VT_MAX_CPUS 1024         /* bound of the per-CPU loop at gc__end */
#define VT_SIGNALS 65            /* signal numbers 0..64 (VT_MAX_SIGNAL) */
#define VT_LOG2_BUCKETS 64       /* bucket i holds [2^i, 2^(i+1)) ns; 0 goes to bucket 0 */
#define VT_GC_KIND_SLOTS 3       /* kinds 0..2 (VT_GC_KINDS) */

#define VT_GC_RINGBUF_BYTES (256 * 1024)

struct vt_alloc_key {            /* object__alloc: (class, method, site), and the VM stack */
	__u64 klass, method, site;   /* pointers in the target; 0 = NULL */
	__u64 stack;                 /* a key of `stacks`; 0 = no stack taken */
};

struct vt_alloc_val {
	__u64 count;                 /* sum of weights */
	__u64 bytes;                 /* sum of size * weight */
	__u64 samples;               /* probe hits */
};

struct vt_pair_key {             /* method cache resets: (class, method);
				    constant resets: (name, 0); serial incs: (reason, 0);
				    frees: (class, 0) */
	__u64 a, b;
};

struct vt_count_val {
	__u64 count;
	__u64 bytes;                 /* frees only */
};

struct vt_name {
	char s[VT_NAME_MAX];
};

struct vt_long_name {            /* a name too long for struct vt_name */
	char s[VT_LONG_NAME_MAX];
};

struct vt_gc_start {             /* per thread, from gc__begin to gc__end */
	__u64 start_ns;
	__s32 kind;
	__u32 pad;
};

/* What goes through the ring buffer, each with its thread and time, so
 * the report can lay them on a timeline (--format perfetto). */
enum vt_ring_type {
	VT_RING_GC = 1,              /* one collection, at gc__end */
	VT_RING_SIGNAL,              /* a signal handled, at signal__handled */
	VT_RING_METHOD_CACHE_RESET,
	VT_RING_CONSTANT_CACHE_RESET,
};

struct vt_gc_event {             /* one ring buffer record (the name is older than its types) */
	__u32 type;                  /* enum vt_ring_type */
	__u32 tid;                   /* the thread that fired the probe */
	__u64 ts_ns;                 /* bpf_ktime_get_ns(): GC: at gc__begin; others: when fired */
	__s32 kind;                  /* GC kind; signal number */
	__u32 pad;
	__u64 duration_ns;           /* GC pause; signal latency (signal__handled's argument) */
	__u64 heap_bytes;            /* GC: at gc__end. Resets: the class (or name) pointer */
	__u64 alloc_total;           /* GC: allocated bytes (all CPUs) counted up to gc__end.
					method cache resets: the method pointer */
	__u64 serial;                /* resets: the serial argument */
};

struct vt_signal_val {           /* per signal number, per CPU */
	__u64 received, handled;
	__u64 latency_total_ns, latency_max_ns;
	__u64 hist[VT_LOG2_BUCKETS];
};

#define VT_PAUSE_BUCKETS 32         /* log2 of microseconds, as profile_gc.c buckets pauses */

struct vt_stats {                /* per CPU, one entry */
	__u64 alloc_bytes;           /* sum of size * weight, for bytes between collections */
	__u64 gc_collections[4];      /* kinds 0..VT_GC_KIND_SLOTS-1; a power of two for the verifier */
	__u64 last_serial;           /* highest global serial seen (max over CPUs) */
	__u64 bus_dropped_total;     /* highest total_dropped from bus__dropped */
	/* every pause timed, per kind, counted here as well as sent through the
	 * ring: a full ring loses a pause's record, never its count */
	__u64 gc_pauses[4], gc_pause_ns[4];
	__u64 gc_pause_max_ns[4];    /* max over CPUs */
	__u64 gc_pause_hist[4][VT_PAUSE_BUCKETS];
};

/* Batched counts (provider/core/include/vmtrace/batch.h; docs/probes.md): the
 * same layout, in the kernel's types. vmtrace_batch.c checks that
 * both agree. */
#define VT_BATCH_MAGIC 0x42544d56u
#define VT_BATCH_VERSION 2
#define VT_BATCH_MAX_BYTES 16384      /* one bpf_probe_read_user into scratch */
#define VT_BATCH_ALLOC 1
#define VT_BATCH_FREE 2
#define VT_BATCH_STACK 3            /* frames of new stacks (alloc__batch) */
#define VT_BATCH_KINDS 2             /* kinds with counts: ALLOC, FREE */
#define VT_BATCH_REC_V1 48           /* a count record before `stack` was appended */
#define VT_BATCH_LIVE 4              /* live__batch: addresses of the live heap */
#define VT_LIVE_ALLOC 1
#define VT_LIVE_FREE 2
#define VT_LIVE_PAIR_ALLOC 3         /* freed in the same batch: never tracked */
#define VT_LIVE_PAIR_FREE 4          /* its free; addr = the allocation's time */
#define VT_LIVE_TRACK 5              /* a held object handed over: tracked, counted before */
#define VT_LIVE_HELD_FREE 6          /* a held object's free: temporaries only; addr as PAIR_FREE */
#define VT_LIVE_NET 7                /* held objects' change: addr = change, size = its rise */
#define VT_LIVE_KEY 8                /* a key's word-tracked objects' change: addr, size (int64);
					temporaries: weight, time_ns (their bytes) */
#define VT_LIVE_AGES 9               /* an age snapshot: addr = log2 bucket, size = objects;
					weight 1 = its first record */
#define VT_BATCH_ROUND_END 0x1u
#define VT_BATCH_EXIT 0x2u

struct vt_batch_hdr {
	__u32 magic;
	__u16 version, kind;
	__u32 record_size, count, flags, round;
	__u64 lost, request;
	__u64 before;        /* objects the host made before its counting began */
	__u64 unseen_bytes;  /* bytes it allocated while armed but could not count */
};

struct vt_batch_rec {
	__u64 klass, method, site;
	__u64 count, bytes, samples;
	__u64 stack;
};

/* VM stacks (provider/core/include/vmtrace/frames.h; docs/stacks.md): a STACK
 * batch is heads and frames of 24 bytes each. */
#define VT_STACK_MAX_DEPTH 128
#define VT_NATIVE_STACK 0x8000000000000000ull /* a stack id's top bit: a native stack's id below it */
#define VT_NATIVE_DEPTH 127          /* frames of a native stack at most */
#define VT_BOTH_STACK 0x4000000000000000ull /* with VT_NATIVE_STACK: a key of both_stacks */

struct vt_both_stack {           /* --stack both: one allocation's VM and native stacks */
	__u64 vm, native;            /* a key of `stacks`, one of native_stack_traces */
};

struct vt_native_stack {         /* a user stack's instruction pointers, innermost first, 0 after */
	__u64 ip[VT_NATIVE_DEPTH];
};
#define VT_STACK_CUT 0x1u

struct vt_stack_head {
	__u64 id;
	__u32 depth, flags;
	__u64 zero;
};

struct vt_stack_frame {
	__u64 name, file;            /* pointers in the target; 0 = none */
	__s64 line;
};

struct vt_stack_val {                /* a stack as a walk reads it: innermost frame first */
	__u32 depth, flags;
	struct vt_stack_frame f[VT_STACK_MAX_DEPTH];
};

/* The value of `stacks`: where a stack's frames are in stack_frames, an
 * array of every stack's frames one after another (innermost first). A
 * stack is a 16-byte entry, not its 3 KiB of frames: the kernel allocates
 * a hash map's entries one by one, and one that large cost about 12 us
 * (pydoc with its tens of thousands of stacks: a third of its run). */
struct vt_stack_ref {
	__u32 depth, flags;
	__u32 first;                 /* the innermost frame's index in stack_frames */
	__u32 pad;
};
#define VT_STACK_FRAMES_DEFAULT (1u << 21) /* frames of all stacks (48 MiB), with --stack vm */
#define VT_STACK_FRAMES_MAX (1u << 24)     /* ... at most (384 MiB), whatever --map-entries says */

struct vt_live_rec {             /* vmtrace_live_record */
	__u64 addr, klass, method, site;
	__u64 size, weight, time_ns;
	__u32 op, pad;
};

struct vt_batch_buf {            /* a batch copied out of the target */
	char b[VT_BATCH_MAX_BYTES];
};

struct vt_batch_state {          /* one entry per kind, all CPUs */
	__u64 rounds;                /* ROUND_END batches seen */
	__u64 last_request;          /* the request the last round answered */
	__u64 exits;                 /* EXIT batches seen: the target's last round */
	__u64 batches;               /* batches taken in */
};

/* The live heap (--live, docs/live.md): one entry per object allocated and
 * not yet freed, keyed by its address. The key of its allocation leaves
 * room for a stack id. */
#define VT_LIVE_DEFAULT_MAX (1u << 20)
#define VT_LIVE_DEFAULT_TEMP_NS 10000000ull /* 10 ms */

struct vt_live_obj {
	__u64 klass, method, site;   /* as in vt_alloc_key */
	__u64 stack;                 /* a stack id; 0 until stacks exist */
	__u64 size, weight;          /* bytes of the object; allocations it stands for */
	__u64 ts_ns;                 /* bpf_ktime_get_ns() at its allocation */
};

struct vt_live_temp {            /* objects freed within targ_temp_ns, per allocation key */
	__u64 count, bytes;          /* weighted */
};

struct vt_live_key {             /* per allocation key: its objects counted by their word */
	__s64 count, bytes;          /* alive now: a CPU's share may be negative, the sum is not */
};

struct vt_live_ages {            /* the last age snapshot of a process's word-tracked objects */
	__u64 hist[VT_LOG2_BUCKETS]; /* objects by log2 age in ns */
};
#define VT_LIVE_AGES_PROCS 4096  /* processes with a snapshot */

struct vt_live_stats {           /* one entry, all CPUs (atomic adds) */
	__s64 live_bytes;            /* weighted bytes tracked now */
	__u64 peak_bytes, peak_ns;   /* the most live_bytes reached, and when */
	__u64 untracked_frees;       /* frees of objects allocated before tracing (not a loss) */
};

/* Loss counters: (enum, what the report calls it). Anything not counted
 * where it belongs lands in one of these, never nowhere. */
#define VT_LOSS_LIST(X)                                                             \
	X(ALLOC_MAP_FULL, "allocation map full (events; raise --map-entries)")     \
	X(FREE_MAP_FULL, "free map full (events)")                                  \
	X(MCR_MAP_FULL, "method cache reset map full (events)")                    \
	X(CCR_MAP_FULL, "constant cache reset map full (events)")                  \
	X(GSI_MAP_FULL, "global serial map full (events)")                         \
	X(NAMES_MAP_FULL, "name map full (names read from /proc)")                 \
	X(STR_FAULT, "string unreadable in BPF (read from /proc)")                 \
	X(STR_LONG, "name longer than 127 bytes (long-name map)")                  \
	X(UNRESOLVED_FULL, "unresolved name queue full")                           \
	X(STR_UNREADABLE, "string never readable (named <unreadable>)")            \
	X(STR_TRUNCATED, "name cut short (shown ending in ...(truncated))")        \
	X(GC_RINGBUF_FULL, "gc pause ring buffer full (pauses)")                   \
	X(TIMELINE_RINGBUF_FULL, "event ring buffer full (timeline events)")       \
	X(TIMELINE_CAP, "timeline longer than its cap (timeline events)")          \
	X(GC_NO_BEGIN, "gc end without its begin (pause unknown)")                 \
	X(GC_THREAD_MAP_FULL, "gc thread map full (pauses)")                       \
	X(BAD_GC_KIND, "gc kind out of range (collections)")                       \
	X(BAD_SIGNO, "signal number out of range (events)")                        \
	X(BUS_DROPPED, "target's in-process bus dropped (events)")                 \
	X(BATCH_FAULT, "batch unreadable in BPF (batches)")                        \
	X(BATCH_BAD, "batch malformed or of an unknown version (batches)")         \
	X(BATCH_PROVIDER, "provider could not count in its thread table (events)") \
	X(BATCH_UNFLUSHED, "batched counts not flushed at the end (rounds)")       \
	X(STACK_MAP_FULL, "stack map full (stacks)")                               \
	X(STACK_CUT, "stack cut at 128 frames (allocations)")                      \
	X(STACK_MISSING, "stack's frames never arrived (allocations)")             \
	X(NATIVE_STACK_FAIL, "native stack not taken (allocations)")              \
	X(VM_WALK_FAIL, "VM stack not read in BPF (allocations)")                 \
	X(LIVE_MAP_FULL, "live object map full (objects not tracked)")             \
	X(LIVE_TEMP_FULL, "temporary allocation map full (frees)")                 \
	X(LIVE_PROVIDER, "provider could not buffer an address (events)")          \
	X(LIVE_KEYS_FULL, "live key map full (live objects of new keys not counted)") \
	X(LIVE_AGES_FULL, "live age map full (age snapshots not kept)")            \
	X(PROC_FULL, "process table full (events)")                                \
	X(PROC_HIGH_PTR, "pointer above 2^47 in --all (events)")                  \
	X(LIVE_BAD_OP, "live record of a kind this vmtrace does not know (records)") \
	X(BEFORE_COUNTING, "made before counting began (objects)")                  \
	X(UNSEEN_BYTES, "allocated while armed, unseen by the provider (bytes)")

enum vt_loss {
#define VT_X_ENUM(e, s) VT_LOSS_##e,
	VT_LOSS_LIST(VT_X_ENUM)
#undef VT_X_ENUM
	VT_LOSS__COUNT
};

#endif /* VMTRACE_MAPS_H */
