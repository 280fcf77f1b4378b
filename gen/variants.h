/*
 * The variant table: every kernel the library ships, as data.
 *
 * The generator (gen/main.c) turns this one table into everything that must
 * agree with it: the CUDA translation unit of each group of variants, the
 * run-time registry the selection code searches, and docs/variants.md. A
 * "group" is the unit of compilation and of embedding: all variants of one
 * kernel family for one target architecture, compiled into one cubin. How
 * each kind of variant becomes code is gen/kinds.c.
 */
#ifndef MGPU_GEN_VARIANTS_H
#define MGPU_GEN_VARIANTS_H

#include "kinds.h"

enum gen_arch {
    GEN_SM90A,   /* compute capability 9.0, -gencode=arch=compute_90a,code=sm_90a */
    GEN_SM100A,  /* compute capability 10.0, -gencode=arch=compute_100a,code=sm_100a */
    GEN_ARCH_COUNT
};

/* Element types; the first five equal the public mgpu_dtype values. */
enum gen_dtype { GEN_F16, GEN_BF16, GEN_F32, GEN_E4M3, GEN_E5M2, GEN_ANY_DTYPE };

/* B's element type where it differs from A's (mixed fp8 pairs); SAME (the
 * zero every row gets unless it says otherwise) means B's type is `dtype`. */
enum gen_b_dtype { GEN_B_SAME = 0, GEN_B_E4M3, GEN_B_E5M2 };

/* Index element type of gather / scatter variants (the ABI's
 * mgpu_abi_index_type values). */
enum gen_index { GEN_I32, GEN_I64 };

/* The problem shapes a GEMM variant serves: the planner (src/gemm/gemm_plan.c)
 * picks the class for a call, the table says which rows serve it. */
enum gen_gemm_class {
    GEN_GEMM_ANY_SHAPE,     /* one variant per dtype and layout serves every shape */
    GEN_GEMM_TINY_M,        /* 16-bit m <= 64, or small m with moderate k: 64-row tiles */
    GEN_GEMM_SMALL_M,       /* m <= 128: 128-row tiles */
    GEN_GEMM_LARGE,         /* larger m: the largest tile, one CTA per tile */
    GEN_GEMM_LARGE_CLUSTER, /* the largest tile in 2-CTA clusters (A multicast) */
    GEN_GEMM_DECODE,        /* m <= tile_m, K-major operands: the small-m (decode) kernel */
    GEN_GEMM_LARGE_PINGPONG, /* larger m, ping-pong consumers (a whole tile per warpgroup) */
    GEN_GEMM_LARGE_PINGPONG_CLUSTER, /* the same in 2-CTA clusters (A multicast) */
    GEN_GEMM_LARGE_192,     /* 16-bit larger m: 192 x 128 tiles, one CTA per tile (fewer, fuller waves) */
    GEN_GEMM_LARGE_192_CLUSTER, /* the same in 2-CTA clusters (A multicast; K-major A only) */
    GEN_GEMM_WIDE_192,      /* 16-bit, K-major A: 192 x 192 tiles, three consumer warpgroups */
    GEN_GEMM_WIDE_192_CLUSTER, /* the same in 2-CTA clusters (A multicast) */
    GEN_GEMM_WAVE,          /* 16-bit larger m: tile_m x 128 tiles of other wgmma N for whole waves, one CTA per tile */
    GEN_GEMM_WAVE_CLUSTER,  /* the same in 2-CTA clusters (A multicast; K-major A only) */
    GEN_GEMM_CLASS_COUNT
};
/* The names the generated header gives the classes: MGPU_GEMM_<name>. */
extern const char *const gen_gemm_class_names[GEN_GEMM_CLASS_COUNT];

/* How the consumer warpgroups of a persistent sm_90a GEMM share the work:
 * cooperative (both on each tile; entry names _ws_) or ping-pong (each on
 * its own tiles, in turns on the tensor cores; entry names _pp_). The value
 * is the kernel's schedule template argument. */
enum gen_gemm_schedule { GEN_SCHEDULE_COOPERATIVE = 0, GEN_SCHEDULE_PINGPONG = 1 };

struct gen_gemm {
    int a_kmajor, b_kmajor;     /* operand layouts the variant is compiled for (-1: any) */
    int tile_m, tile_n, tile_k; /* output tile and the K extent of one stage, in elements */
    int stages;
    int cluster_m, cluster_n;   /* CTAs per cluster along M and N (0: no cluster) */
    enum gen_b_dtype b_dtype;   /* B's element type when it is not `dtype` */
    enum gen_gemm_class shape;  /* the shapes the planner sends here */
    enum gen_gemm_schedule schedule; /* sm_90a persistent only; 0 (cooperative) elsewhere */
};

struct gen_attention {
    int head_dim;               /* the depth of Q K^T and the width of V and O */
    int block_m, block_n;       /* query rows and keys per tile */
    int stages;                 /* K and V buffers */
};

struct gen_gather {
    enum gen_index index;
};

struct gen_helper {
    int per_thread;             /* elements one thread moves at a time */
};

struct gen_variant {
    enum gen_kind kind;
    enum gen_arch arch;
    enum gen_dtype dtype;       /* element type (GEMM: A's); ANY: chosen at run time */
    int threads;
    union {                     /* which one: gen_kinds[kind].family */
        struct gen_gemm gemm;
        struct gen_attention attention;
        struct gen_gather gather;
        struct gen_helper helper;
    };
};

extern const struct gen_variant gen_variants[];
extern const int gen_variant_count;

struct gen_arch_info {
    const char *name;       /* as the Meson option spells it: "sm90a" */
    const char *tag;        /* as entry and group names spell it: "sm90" */
    int cc_major, cc_minor; /* the one compute capability an arch-specific image runs on */
};
extern const struct gen_arch_info gen_archs[GEN_ARCH_COUNT];

static inline enum gen_family gen_family_of(const struct gen_variant *v)
{
    return gen_kinds[v->kind].family;
}

const char *gen_dtype_tag(enum gen_dtype d);              /* "bf16", "e4m3", "any" */
enum gen_dtype gen_b_dtype(const struct gen_variant *v);  /* B's element type (GEMM) */

#endif
