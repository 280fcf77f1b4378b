/*
 * The variant table: every kernel the library ships, as data.
 *
 * The generator (gen/main.c) turns this one table into everything that must
 * agree with it: the CUDA translation unit of each group of variants, the
 * run-time registry the selection code searches, and docs/variants.md. A
 * "group" is the unit of compilation and of embedding: all variants of one
 * kernel family for one target architecture, compiled into one cubin.
 */
#ifndef MGPU_GEN_VARIANTS_H
#define MGPU_GEN_VARIANTS_H

enum gen_arch {
    GEN_SM90A,   /* compute capability 9.0, -gencode=arch=compute_90a,code=sm_90a */
    GEN_SM100A,  /* compute capability 10.0, -gencode=arch=compute_100a,code=sm_100a */
    GEN_ARCH_COUNT
};

/* How a variant is built and launched; the runtime has one launcher per kind. */
enum gen_kind {
    GEN_GEMM_SM100_PERSISTENT, /* kernels/blackwell/gemm_sm100_persistent.cuh: tcgen05, TMEM, CTA pairs */
    GEN_GEMM_PORTABLE,   /* kernels/portable/gemm_portable.cuh: any alignment, any k */
    /* kernels/portable/gather_portable.cuh (built for each arch): */
    GEN_GATHER_NARROW,      /* 16-byte aligned rows <= 512 B, several rows per warp */
    GEN_GATHER_WIDE,        /* 16-byte aligned rows of any length, 4 KiB chunks per warp */
    GEN_GATHER_UNALIGNED,   /* any alignment, one warp per row */
    GEN_SCATTER_ADD,        /* atomic dst[index[i]] += src[i] */
    GEN_SCATTER_ADD_SORTED, /* deterministic, for sorted indices */
    GEN_GATHER4,            /* kernels/blackwell/gather_sm100.cuh: TMA tile::gather4 */
    GEN_GEMM_SM90_PERSISTENT, /* kernels/hopper/gemm_sm90_persistent.cuh: persistent, TMA store, clusters */
    GEN_GEMM_PACK,            /* kernels/portable/gemm_pack.cuh: copies an operand TMA cannot read */
    /* kernels/hopper/attention_fwd_sm90.cuh: FA3-style forward; tile_m x tile_n is
     * the query x key block, tile_k the head dim (the depth of Q K^T) */
    GEN_ATTENTION_FWD_SM90,
    /* attention backward: kernels/hopper/attention_bwd_prepost.cuh (D = rowsum(dO * O),
     * scratch zeroing; dQ conversion and GQA sums, per dtype, head dim at run time) */
    GEN_ATTENTION_BWD_PRE_SM90,
    GEN_ATTENTION_BWD_POST_SM90,
    /* kernels/hopper/attention_bwd_sm90.cuh: FA3-style backward main kernel; tile_m x tile_n
     * is the query x key block (kernels/abi/attention_bwd_abi.h's tile table), tile_k the head dim */
    GEN_ATTENTION_BWD_SM90,
};

/* Element types; the first five equal the public mgpu_dtype values. */
enum gen_dtype { GEN_F16, GEN_BF16, GEN_F32, GEN_E4M3, GEN_E5M2, GEN_ANY_DTYPE };

/* B's element type where it differs from A's (mixed fp8 pairs); SAME (the
 * zero every row gets unless it says otherwise) means B's type is `dtype`. */
enum gen_b_dtype { GEN_B_SAME = 0, GEN_B_E4M3, GEN_B_E5M2 };

/* Index element type of gather / scatter variants; GEMM rows have none. */
enum gen_index { GEN_NO_INDEX, GEN_I32, GEN_I64 };

struct gen_variant {
    enum gen_kind kind;
    enum gen_arch arch;
    enum gen_dtype dtype;      /* A and B element type; ANY: chosen at run time */
    int a_kmajor, b_kmajor;    /* operand layouts the variant is compiled for (-1: any) */
    int tile_m, tile_n, tile_k;
    int stages;
    int threads;
    enum gen_index index_type; /* gather / scatter; GEN_NO_INDEX for GEMM */
    int cluster_m, cluster_n;  /* persistent GEMM: CTAs per cluster along M and N (0: no cluster) */
    enum gen_b_dtype b_dtype;  /* GEMM: B's element type when it is not `dtype` */
};

extern const struct gen_variant gen_variants[];
extern const int gen_variant_count;

struct gen_arch_info {
    const char *name;       /* as the Meson option spells it: "sm90a" */
    int cc_major, cc_minor; /* the one compute capability an arch-specific image runs on */
};
extern const struct gen_arch_info gen_archs[GEN_ARCH_COUNT];

/* Derived facts, computed in one place (gen/variants.c). */
const char *gen_group_name(const struct gen_variant *v);  /* "gemm_sm90_ws" */
void gen_entry_name(const struct gen_variant *v, char *buf, unsigned size);
int gen_smem_bytes(const struct gen_variant *v);
enum gen_dtype gen_b_dtype(const struct gen_variant *v);  /* B's element type */
const char *gen_dtype_tag(enum gen_dtype d);              /* "bf16", "e4m3", "any" */
/* The variant's operand types as the docs and entry names spell them:
 * "bf16", "e4m3", or "e4m3xe5m2" for a mixed pair. */
void gen_operand_tag(const struct gen_variant *v, char *buf, unsigned size);

#endif
