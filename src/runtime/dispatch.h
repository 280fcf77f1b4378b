/*
 * The small, pure header of the dispatch layer: what every operation's
 * planner needs and nothing that touches a device. Device capabilities,
 * dtype helpers, checked size arithmetic, the environment switches, the one
 * registry lookup, and tensor maps described as plain numbers (the runtime
 * encodes them, src/runtime/launch.c). Planning files include this header
 * and their operation's ABI header only, so tests run them on any machine
 * with made-up devices.
 */
#ifndef MGPU_SRC_RUNTIME_DISPATCH_H
#define MGPU_SRC_RUNTIME_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "mgpukernels.h"
#include "registry.h"

/* ---- status.c: every failure ends in mgpu_fail (status + per-thread message) */
mgpu_status mgpu_fail(mgpu_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* MGPU_LOG: one line to stderr, "mgpu: ..." */
int mgpu_log_enabled(void);
void mgpu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the device a handle is bound to */
struct mgpu_device_caps {
    int cc_major, cc_minor;
    int sm_count;
    int max_smem_per_block; /* opt-in limit, bytes */
    int dram_gbps;          /* peak DRAM bandwidth, GB/s, from the memory clock and bus width; 0 unknown */
};

/* ---- the int32 counters a handle owns, allocated and zeroed at mgpu_create.
 * Kernels leave them at zero (each launch resets what it counted), so
 * launches in stream order share them, which is why one handle's calls must
 * not run concurrently. */
/* The largest y and z extents of a launch grid. */
#define MGPU_MAX_GRID_YZ 65535
#define MGPU_SPLIT_COUNTERS 4096 /* GEMM split-K: one per output tile and 64-column consumer; more: no split-K */
#define MGPU_COUNTERS_SPLIT_K 0
/* attention forward calls whose splits merge in the main kernel: one per work
 * tile, the same counters (a handle's calls run in stream order) */
#define MGPU_COUNTERS_ATTENTION_SPLITS MGPU_COUNTERS_SPLIT_K
#define MGPU_COUNTERS_ATTENTION MGPU_SPLIT_COUNTERS             /* attention's dynamic tile counters, 2 */
#define MGPU_COUNTERS_INDEX_ERROR (MGPU_COUNTERS_ATTENTION + 2) /* the gather / scatter error word, 1 */
#define MGPU_HANDLE_COUNTERS (MGPU_COUNTERS_INDEX_ERROR + 1)

/* ---- dtypes (dispatch.c) */
int mgpu_dtype_known(int dtype);   /* an mgpu_dtype value */
int mgpu_dtype_is_fp8(int dtype);  /* E4M3 or E5M2 */
int mgpu_dtype_size(int dtype);    /* bytes of one element: 4, 2 or 1; 0 for an unknown value */
const char *mgpu_dtype_name(int dtype); /* "bf16", ...; "?" for an unknown value */

/* ---- checked arithmetic on user sizes: 1 and *out set, or 0 on overflow */
static inline int mgpu_mul_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline int mgpu_add_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline int mgpu_mul3_ok(int64_t a, int64_t b, int64_t c, int64_t *out)
{
    int64_t ab;
    return mgpu_mul_ok(a, b, &ab) && mgpu_mul_ok(ab, c, out);
}

/* Bytes from the first byte of item 0 to the last byte of item count - 1,
 * items `stride` bytes apart and `item` bytes long (0 for count == 0). */
static inline int mgpu_span_ok(int64_t count, int64_t stride, int64_t item, int64_t *out)
{
    if (count <= 0) {
        *out = 0;
        return 1;
    }
    int64_t last;
    return mgpu_mul_ok(count - 1, stride, &last) && mgpu_add_ok(last, item, out);
}

/* ceil(a / b) for a >= 0, b > 0; never overflows. */
static inline int64_t mgpu_cdiv(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* x rounded up to a multiple of `to` (> 0), or 0 and no change on overflow. */
static inline int mgpu_round_up_ok(int64_t x, int64_t to, int64_t *out)
{
    return mgpu_mul_ok(mgpu_cdiv(x, to), to, out);
}

/* ---- environment switches, read once per process (dispatch.c) */
struct mgpu_env {
    int log;                   /* MGPU_LOG set and not "0" */
    const char *force_variant; /* MGPU_FORCE_VARIANT, or NULL */
    int force_split_k;         /* MGPU_FORCE_SPLIT_K, 0 when unset */
    int force_band;            /* MGPU_FORCE_BAND, 0 when unset */
    int force_schedule;        /* MGPU_FORCE_SCHEDULE: 1 "cooperative", 2 "pingpong", 0 otherwise */
    int debug_fp8_no_promotion; /* MGPU_DEBUG_FP8_NO_PROMOTION set and not "0" (tests only) */
    int force_pack_gqa;        /* MGPU_FORCE_PACK_GQA: 1 ("1"), -1 ("0"), 0 when unset */
    int force_num_splits;      /* MGPU_FORCE_NUM_SPLITS (attention key splits), 0 when unset */
    int force_paged_gather;    /* MGPU_FORCE_PAGED_GATHER: 1 ("1"), -1 ("0"), 0 when unset */
    int force_split_merge;     /* MGPU_FORCE_SPLIT_MERGE: 1 ("1", in the main kernel), -1 ("0", the combine
                                  kernel), 0 when unset */
    int force_bwd_pair_group;  /* MGPU_FORCE_BWD_PAIR_GROUP (attention backward grid order), 0 when unset */
    int force_bwd_keys_down;   /* MGPU_FORCE_BWD_KEYS_DOWN: 1 ("1"), -1 ("0"), 0 when unset (the planner's choice) */
    int attention_pdl;         /* MGPU_ATTENTION_PDL: 1 ("1"), -1 ("0"), 0 when unset (the planner's choice) */
    int gemm_pdl;              /* MGPU_GEMM_PDL: 1 ("1"), -1 ("0"), 0 when unset (the plan's choice) */
    int attention_decode_entry; /* MGPU_ATTENTION_DECODE_ENTRY: 1 ("1"), -1 ("0"), 0 when unset (the planner's
                                   choice) */
    int force_tail_split;      /* MGPU_FORCE_TAIL_SPLIT: 1 ("1"), -1 ("0"), 0 when unset (the plan's choice) */
    int attention_decode64;    /* MGPU_ATTENTION_DECODE64: 1 ("1"), -1 ("0"), 0 when unset (the planner's choice) */
    int attention_decode64_short; /* MGPU_ATTENTION_DECODE64_SHORT: the same, for its 64-row key blocks */
    int attention_merge16;     /* MGPU_ATTENTION_MERGE16: 1 ("1"), -1 ("0"), 0 when unset (the planner's choice) */
    int attention_split_fill;  /* MGPU_ATTENTION_SPLIT_FILL: 1 ("1"), -1 ("0": off), 0 when unset (the rule) */
    int attention_wide;        /* MGPU_ATTENTION_WIDE: 1 ("1"), -1 ("0"), 0 when unset (the planner's choice) */
};
/* Reads the switches above from the environment into *env (the library
 * does so once per process); a forced variant name is copied into
 * `variant` (variant_size bytes). */
void mgpu_env_parse(struct mgpu_env *env, char *variant, size_t variant_size);
const struct mgpu_env *mgpu_env(void);
/* Replaces the switches for the rest of the process (tests that force
 * several plans in one process); NULL goes back to the environment's. */
void mgpu_env_override(const struct mgpu_env *env);

/* ---- the registry lookup every operation uses (dispatch.c) */
struct mgpu_lookup {
    const char *what;                        /* the operation, for messages: "GEMM", "gather", ... */
    int (*of_op)(enum mgpu_kernel_kind kind); /* the kinds of this operation */
    const struct mgpu_device_caps *caps;
    const char *force;                       /* a forced variant name, or NULL */
    /* 0: the variant cannot do this call; > 0: it can, larger is preferred
     * (ties: the first in table order). Called for variants of the op and
     * device only. */
    int (*fits)(const struct mgpu_variant *v, const void *ctx);
    const void *ctx;
    /* Non-NULL: this device cannot do the call at all; NOT_SUPPORTED with
     * this text (after the ARCH_MISMATCH check). */
    const char *refusal;
};

/* 1 when v runs on the device: its exact compute capability and shared memory. */
int mgpu_variant_on_device(const struct mgpu_variant *v, const struct mgpu_device_caps *caps);

/* In this order:
 *   no variant of the op for the device's compute capability -> ARCH_MISMATCH;
 *   q->refusal                                                -> NOT_SUPPORTED;
 *   q->force names a variant of the op and device: that one when it fits,
 *     else NOT_SUPPORTED (a name of another op or device is ignored);
 *   the fitting variant of highest preference, else NOT_SUPPORTED.
 * Returns the index into mgpu_variants (*forced says whether the name chose
 * it; may be NULL), or -1 with *status and the message set. */
int mgpu_registry_lookup(const struct mgpu_lookup *q, int *forced, mgpu_status *status);

/* ---- tensor maps as plain numbers; launch.c encodes them */
enum mgpu_map_type { MGPU_MAP_F16, MGPU_MAP_BF16, MGPU_MAP_F32, MGPU_MAP_U8, MGPU_MAP_U32, MGPU_MAP_U64 };
#define MGPU_MAP_MAX_RANK 5
struct mgpu_tensor_map_desc {
    enum mgpu_map_type type;
    int rank;
    uint64_t base;
    uint64_t dims[MGPU_MAP_MAX_RANK];             /* elements, innermost first */
    uint64_t byte_strides[MGPU_MAP_MAX_RANK - 1]; /* of dims 1 .. rank - 1 */
    uint32_t box[MGPU_MAP_MAX_RANK];
    int swizzle_128b;   /* 1: 128-byte swizzle, 0: none */
    int l2_promote;     /* L2 promotion of a missed line: 0 (none), 128, else 256 bytes */
};

/* The map element type of an mgpu_dtype (fp8 as UINT8: the kernels know the format). */
enum mgpu_map_type mgpu_map_type_of(int dtype);

#endif
