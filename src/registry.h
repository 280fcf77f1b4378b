/*
 * The run-time view of the variant table. registry.c and images.c are written
 * by the generator (gen/) from gen/variants.c; this header is the contract
 * between that generated data and the runtime.
 */
#ifndef MGPU_SRC_REGISTRY_H
#define MGPU_SRC_REGISTRY_H

#include <stddef.h>

enum mgpu_kernel_kind {
    MGPU_KIND_GEMM_SM90_TMA,
    MGPU_KIND_GEMM_SM100_TMA,
    MGPU_KIND_GEMM_PORTABLE,
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
};

struct mgpu_image {
    const char *name;            /* the group, e.g. "gemm_sm90" */
    const unsigned char *data;   /* a cubin */
    size_t size;
};

extern const struct mgpu_variant mgpu_variants[];
extern const int mgpu_variant_count;
extern const struct mgpu_image mgpu_images[];
extern const int mgpu_image_count;

#endif
