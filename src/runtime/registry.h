/*
 * The run-time view of the variant table. registry.c, images.c and kinds.h
 * (the enums of kinds, families and GEMM shape classes) are written by the
 * generator (gen/) from gen/kinds.c and gen/variants.c; this header is the
 * contract between that generated data and the runtime.
 */
#ifndef MGPU_SRC_REGISTRY_H
#define MGPU_SRC_REGISTRY_H

#include <stddef.h>

#include "kinds.h" /* generated into the build directory */

/* dtype of a variant's A and B, or ANY when the kernel takes it at run time */
#define MGPU_VARIANT_ANY_DTYPE (-1)
/* operand layout of a variant, or ANY */
#define MGPU_VARIANT_ANY_LAYOUT (-1)

/* The typed fields of each family (enum mgpu_variant_family). */
struct mgpu_gemm_variant {
    int a_kmajor, b_kmajor;     /* 0/1, or MGPU_VARIANT_ANY_LAYOUT */
    int tile_m, tile_n, tile_k; /* output tile; K extent of one stage (elements) */
    int stages;
    int cluster_m, cluster_n;   /* CTAs per cluster along M and N (1 x 1: no cluster) */
    int b_dtype;                /* mgpu_dtype of B (differs from dtype for mixed fp8 pairs), or ANY */
    enum mgpu_gemm_shape_class shape_class; /* the problems the planner sends here */
};

struct mgpu_attention_variant {
    int head_dim;               /* depth of Q K^T, width of V and O */
    int block_m, block_n;       /* query rows and keys per tile */
    int stages;                 /* K and V buffers */
};

struct mgpu_gather_variant {
    int index_type;             /* mgpu_abi_index_type (gather_abi.h) */
};

struct mgpu_helper_variant {
    int per_thread;             /* elements one thread moves at a time */
};

struct mgpu_variant {
    const char *name;       /* the kernel's extern "C" entry */
    enum mgpu_kernel_kind kind;
    enum mgpu_variant_family family; /* which member of the union below */
    int cc_major, cc_minor; /* exact compute capability the image runs on */
    int image;              /* index into mgpu_images */
    int threads;
    int smem_bytes;         /* dynamic shared memory per block */
    int cluster;            /* CTAs per cluster at launch (1: no cluster) */
    int dtype;              /* mgpu_dtype (GEMM: of A), or MGPU_VARIANT_ANY_DTYPE */
    union {
        struct mgpu_gemm_variant gemm;
        struct mgpu_attention_variant attention;
        struct mgpu_gather_variant gather;
        struct mgpu_helper_variant helper;
    };
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
