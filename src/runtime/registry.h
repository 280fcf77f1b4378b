/*
 * The run-time view of the variant table. registry.c and images.c are written
 * by the generator (gen/) from gen/variants.c; this header is the contract
 * between that generated data and the runtime.
 */
#ifndef MGPU_SRC_REGISTRY_H
#define MGPU_SRC_REGISTRY_H

#include <stddef.h>

enum mgpu_kernel_kind {
    MGPU_KIND_GEMM_SM100_PERSISTENT, /* persistent sm_100a GEMM: tcgen05, TMEM, CTA pairs (A, B, C maps) */
    MGPU_KIND_GEMM_PORTABLE,
    MGPU_KIND_GATHER_NARROW,      /* row gather, 16-byte aligned rows <= 512 B */
    MGPU_KIND_GATHER_WIDE,        /* row gather, 16-byte aligned rows of any length */
    MGPU_KIND_GATHER_UNALIGNED,   /* row gather, any alignment */
    MGPU_KIND_SCATTER_ADD,        /* atomic row scatter-add */
    MGPU_KIND_SCATTER_ADD_SORTED, /* deterministic row scatter-add, sorted indices */
    MGPU_KIND_GATHER4,            /* sm_100a row gather through TMA tile::gather4 */
    MGPU_KIND_GEMM_SM90_PERSISTENT, /* persistent warp-specialized sm_90a GEMM (A, B, C tensor maps) */
    MGPU_KIND_GEMM_PACK,            /* copies an operand into an aligned workspace */
    MGPU_KIND_ATTENTION_FWD_SM90,   /* flash attention forward; tile_k is the head dim */
    MGPU_KIND_ATTENTION_BWD_PRE_SM90,  /* attention backward: rowsum(dO * O), scratch zeroing; head dim at run time */
    MGPU_KIND_ATTENTION_BWD_POST_SM90, /* attention backward: dQ (and GQA dK / dV) to the caller's dtype */
    MGPU_KIND_ATTENTION_BWD_SM90,      /* attention backward main kernel; tile_k is the head dim */
};

/* dtype of a variant's A and B, or ANY when the kernel takes it at run time */
#define MGPU_VARIANT_ANY_DTYPE (-1)
/* operand layout of a variant, or ANY */
#define MGPU_VARIANT_ANY_LAYOUT (-1)

struct mgpu_variant {
    const char *name;       /* the kernel's extern "C" entry */
    enum mgpu_kernel_kind kind;
    int cc_major, cc_minor; /* exact compute capability the image runs on */
    int image;              /* index into mgpu_images */
    int threads;
    int smem_bytes;         /* dynamic shared memory per block */
    int dtype;              /* mgpu_dtype of A and B, or MGPU_VARIANT_ANY_DTYPE */
    int a_kmajor, b_kmajor; /* 0/1, or MGPU_VARIANT_ANY_LAYOUT */
    int tile_m, tile_n, tile_k;
    int stages;
    int index_type;         /* gather / scatter: mgpu_abi_index_type (gather_abi.h); GEMM: -1 */
    int cluster_m, cluster_n; /* CTAs per cluster along M and N (1 x 1: no cluster) */
    int b_dtype;            /* mgpu_dtype of B (differs from dtype for mixed fp8 pairs), or ANY */
};

struct mgpu_image {
    const char *name;            /* the group, e.g. "gemm_sm90_ws" */
    const unsigned char *data;   /* a cubin */
    size_t size;
};

extern const struct mgpu_variant mgpu_variants[];
extern const int mgpu_variant_count;
extern const struct mgpu_image mgpu_images[];
extern const int mgpu_image_count;

#endif
