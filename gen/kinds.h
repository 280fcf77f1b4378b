/*
 * The table of kernel kinds: how each kind of variant is built and launched.
 *
 * A kind is one kernel template with one launch signature. Its row says
 * everything the generator needs to turn a variant row (gen/variants.c) into
 * code: the kernel header its unit includes, the group (cubin) it compiles
 * into, its entry name, the unit text of one variant, and its dynamic shared
 * memory (a function of the ABI headers, which the kernels include too). The
 * generator also writes the run-time enum of kinds (kinds.h in the build
 * directory) from this table, so a new kind is one enum value and one row
 * here, plus its variant rows.
 *
 * Templates substitute @key@ fields of a variant (gen/main.c, expand()):
 *   every variant: i (row index), name (entry), group, threads, smem, arch
 *                  (sm90 / sm100), dtype (tag: bf16), type (CUDA type)
 *   GEMM:          operands (bf16, e4m3xe5m2), b_type, layout (tn), a_kmajor,
 *                  b_kmajor (C++ bools), tile_m, tile_n, tile_k, stages,
 *                  schedule (ws / pp: entry names), schedule_id (the kernel's int),
 *                  cluster (CTAs), cluster_n
 *   attention:     head_dim, block_m, block_n, stages
 *   gather:        index (i32 / i64), index_type (int32_t / int64_t)
 *   helper:        per_thread
 */
#ifndef MGPU_GEN_KINDS_H
#define MGPU_GEN_KINDS_H

/* Which typed fields a variant row fills (struct gen_variant's union). */
enum gen_family {
    GEN_FAMILY_GEMM,      /* struct gen_gemm */
    GEN_FAMILY_ATTENTION, /* struct gen_attention */
    GEN_FAMILY_GATHER,    /* struct gen_gather */
    GEN_FAMILY_HELPER,    /* struct gen_helper: a copy kernel beside an operation */
    GEN_FAMILY_COUNT
};
/* The names the generated header gives the families: MGPU_FAMILY_<name>. */
extern const char *const gen_family_names[GEN_FAMILY_COUNT];

/* One value per row of gen_kinds[]; the run-time enum is MGPU_KIND_<name>. */
enum gen_kind {
    GEN_GEMM_SM100_PERSISTENT,
    GEN_GEMM_PORTABLE,
    GEN_GATHER_NARROW,
    GEN_GATHER_WIDE,
    GEN_GATHER_UNALIGNED,
    GEN_SCATTER_ADD,
    GEN_SCATTER_ADD_SORTED,
    GEN_GATHER4,
    GEN_GEMM_SM90_PERSISTENT,
    GEN_GEMM_PACK,
    GEN_ATTENTION_FWD_SM90,
    GEN_ATTENTION_BWD_PRE,
    GEN_ATTENTION_BWD_POST,
    GEN_ATTENTION_BWD_SM90,
    GEN_ATTENTION_FWD_SM100,
    GEN_GEMM_SMALL_M_SM90,
    GEN_ATTENTION_FWD_COMBINE_SM90,
    GEN_KV_CACHE_APPEND,
    GEN_ATTENTION_FWD_FP8_SM90,
    GEN_ATTENTION_BWD_SM100,
    GEN_ATTENTION_FWD_DECODE_SM90,
    GEN_ATTENTION_FWD_FP8_VT_SM90,
    GEN_ATTENTION_FWD_FP8_TRANSPOSE_V_SM90,
    GEN_ATTENTION_FWD_DECODE64_SM90,
    GEN_GEMM_SMALL_M_TMA_SM90,
    GEN_ATTENTION_FWD_WIDE_SM90,
    GEN_KIND_COUNT
};

struct gen_variant;

struct gen_kind_info {
    const char *name;       /* run-time enum: MGPU_KIND_<name> */
    const char *doc;        /* its comment in the generated header */
    enum gen_family family;
    const char *header;     /* the kernel header a unit includes, under kernels/ */
    const char *group;      /* template: the group (one cubin per group and arch) */
    const char *entry;      /* template: the extern "C" entry name */
    const char *unit;       /* template: the unit text of one variant */
    int (*smem_bytes)(const struct gen_variant *v); /* dynamic shared memory */
    /* optional: NULL, or a message when the row disagrees with the ABI */
    const char *(*check)(const struct gen_variant *v);
};

extern const struct gen_kind_info gen_kinds[GEN_KIND_COUNT];

#endif
