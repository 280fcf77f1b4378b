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
    GEN_GEMM_SM90_TMA,   /* kernels/hopper/gemm_sm90.cuh: TMA + wgmma, warp-specialized */
    GEN_GEMM_SM100_TMA,  /* kernels/blackwell/gemm_sm100.cuh: TMA + tcgen05 + TMEM */
    GEN_GEMM_PORTABLE,   /* kernels/common/gemm_portable.cuh: any alignment, any k */
};

enum gen_dtype { GEN_F16, GEN_BF16, GEN_ANY_DTYPE };

struct gen_variant {
    enum gen_kind kind;
    enum gen_arch arch;
    enum gen_dtype dtype;      /* A and B element type; ANY: chosen at run time */
    int a_kmajor, b_kmajor;    /* operand layouts the variant is compiled for (-1: any) */
    int tile_m, tile_n, tile_k;
    int stages;
    int threads;
};

extern const struct gen_variant gen_variants[];
extern const int gen_variant_count;

struct gen_arch_info {
    const char *name;       /* as the Meson option spells it: "sm90a" */
    int cc_major, cc_minor; /* the one compute capability an arch-specific image runs on */
};
extern const struct gen_arch_info gen_archs[GEN_ARCH_COUNT];

/* Derived facts, computed in one place (gen/variants.c). */
const char *gen_group_name(const struct gen_variant *v);  /* "gemm_sm90" */
void gen_entry_name(const struct gen_variant *v, char *buf, unsigned size);
int gen_smem_bytes(const struct gen_variant *v);

#endif
