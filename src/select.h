/*
 * The pure half of the runtime: argument validation and variant selection.
 * Nothing here touches a device or the driver, so tests run it on any
 * machine with made-up device capabilities.
 */
#ifndef MGPU_SRC_SELECT_H
#define MGPU_SRC_SELECT_H

#include <stdint.h>

#include "mgpukernels.h"
#include "registry.h"

struct mgpu_device_caps {
    int cc_major, cc_minor;
    int sm_count;
    int max_smem_per_block; /* opt-in limit, bytes */
};

/* One GEMM call, as the public functions received it. */
struct mgpu_gemm_problem {
    int transa, transb;          /* mgpu_operation values */
    int64_t m, n, k, batch;
    int a_dtype, b_dtype, c_dtype;
    uintptr_t a, b, c;           /* device addresses */
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
    const float *alpha, *beta;
    /* mgpu_gemm_ex only (zero from the BLAS-style calls): */
    uintptr_t scale_a, scale_b, scale_d; /* device addresses of one float each; 0: 1.0 */
    uintptr_t bias;              /* device address of the bias vector; 0: none */
    int bias_dtype, bias_mode;   /* mgpu_dtype, mgpu_bias_mode */
    int64_t bias_stride;         /* elements between the biases of consecutive batches */
    int activation;              /* mgpu_activation */
};

/* Fills *p from a descriptor of mgpu_gemm_ex (alpha and beta point into it).
 * SUCCESS, or NULL_POINTER / INVALID_VALUE (struct_size) with the message set. */
mgpu_status mgpu_gemm_problem_from_desc(const mgpu_gemm_desc *desc, struct mgpu_gemm_problem *p);

/* SUCCESS when the call is valid, else the status with its message set. */
mgpu_status mgpu_gemm_validate(const struct mgpu_gemm_problem *p);

/* 1 for MGPU_DTYPE_E4M3 and MGPU_DTYPE_E5M2. */
int mgpu_dtype_is_fp8(int dtype);

/* Bytes of one element of an mgpu_dtype (4, 2 or 1). */
int mgpu_dtype_size(int dtype);

/* 1 when the call asks for more than D = alpha * op(A) op(B) + beta * C on
 * 16-bit inputs: fp8 operands, a scale, a bias or an activation. Only the
 * compute capability 9.0 kernels (persistent, split-K reduction, portable)
 * do these. */
int mgpu_gemm_needs_extensions(const struct mgpu_gemm_problem *p);

/* 1 when A and B can be read through TMA: 16-byte aligned bases, leading
 * dimensions and batch strides multiples of 16 bytes, no broadcast batch, k > 0. */
int mgpu_gemm_tma_eligible(const struct mgpu_gemm_problem *p);

/* Split counters a handle keeps for the persistent kernel's split-K (one per
 * output tile and 64-column consumer warpgroup); a plan whose tiles need more
 * runs without split-K. */
#define MGPU_SPLIT_COUNTERS 4096

/* How one GEMM call runs: the persistent kernel, possibly behind an operand
 * pack (all on the handle's stream). */
struct mgpu_gemm_plan {
    int variant;          /* the GEMM kernel: index into mgpu_variants */
    int splits;           /* K slices (1: no split-K; > 1: partials summed in the kernel) */
    int pack_variant;     /* the operand copy, or -1 */
    int pack_a, pack_b;   /* 1: that operand is copied into an aligned workspace first */
    int64_t grid;         /* CTAs of the persistent launch (a multiple of the cluster size) */
    int band;             /* (cluster) tile rows per band of the persistent kernel's tile order */
    const char *shape_class; /* why: for MGPU_LOG */
};

/* Settings that override the heuristic (MGPU_FORCE_VARIANT,
 * MGPU_FORCE_SPLIT_K, MGPU_FORCE_BAND); zero / NULL fields leave it alone. */
struct mgpu_gemm_force {
    const char *variant; /* a variant's entry name */
    int splits;          /* split-K factor, clamped to [1, number of k-tiles] */
    int band;            /* band width in (cluster) tile rows, clamped to [1, tile rows] */
};

/* The full plan for a valid problem on a device; `forced` (may be NULL) fixes
 * what it names: the variant (see mgpu_select_gemm), the split-K factor of
 * the persistent kernel (k-tiles are 64-wide for 16-bit inputs, 128-wide for
 * fp8) and its band width. Returns 0, or -1 with *status (and the message)
 * set. */
int mgpu_plan_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                   const struct mgpu_gemm_force *forced, struct mgpu_gemm_plan *plan, mgpu_status *status);

/* 1 when D can leave through a TMA store: C 16-byte aligned, m, ldc (and for
 * batches stride_c) multiples of 16 bytes. */
int mgpu_gemm_c_tma_eligible(const struct mgpu_gemm_problem *p);

/* Picks the variant for a valid problem on a device. `force` (may be NULL)
 * names a variant to use instead, as MGPU_FORCE_VARIANT does. Returns the
 * index into mgpu_variants, or -1 with *status (and the message) set to
 * ARCH_MISMATCH (nothing for this compute capability) or NOT_SUPPORTED
 * (including fp8 / scales / bias / activation on devices other than 9.0). */
int mgpu_select_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                     const char *force, mgpu_status *status);

#endif
