/*
 * The contract between the runtime (src/) and every GEMM kernel (kernels/).
 *
 * This header is plain C so that both the C11 runtime and the CUDA C++ kernels
 * include it; the struct is passed by value as a __grid_constant__ kernel
 * parameter, so its layout is the ABI. Everything is column-major, as in BLAS:
 *
 *     D = alpha * op(A) * op(B) + beta * C,   op(A) is m x k, op(B) is k x n,
 *
 * with D written over C (C is read only when beta != 0). The tensor-core kernels
 * read A and B through two TMA tensor maps built by the runtime (see
 * src/gemm.c: one rank-3 map per operand, dimensions {contiguous, strided,
 * batch}); the portable kernel reads them through the raw pointers below.
 *
 * Operand "majorness" seen from the kernel:
 *   A, trans_a == 0: element (i, l) at a[i + l * lda]  -> M-major ("MN-major")
 *   A, trans_a == 1: element (i, l) at a[l + i * lda]  -> K-major
 *   B, trans_b == 0: element (l, j) at b[l + j * ldb]  -> K-major
 *   B, trans_b == 1: element (l, j) at b[j + l * ldb]  -> N-major ("MN-major")
 */
#ifndef MGPU_KERNELS_COMMON_GEMM_ABI_H
#define MGPU_KERNELS_COMMON_GEMM_ABI_H

#include <stdint.h>

/* Element type codes. They equal the public mgpu_dtype values (checked in src/). */
enum mgpu_abi_dtype {
    MGPU_ABI_F16 = 0,
    MGPU_ABI_BF16 = 1,
    MGPU_ABI_F32 = 2,
};

struct mgpu_gemm_args {
    int32_t m, n, k;
    int32_t batch_base;   /* batch index of blockIdx.z == 0 (launches are split at 65535) */
    float alpha, beta;
    int32_t c_dtype;      /* enum mgpu_abi_dtype of C and D */
    int32_t ab_dtype;     /* enum mgpu_abi_dtype of A and B (portable kernel only) */
    int32_t trans_a, trans_b; /* portable kernel only; tensor-core variants fix them */
    uint64_t c;           /* device address of C / D */
    int64_t ldc, stride_c;  /* in elements */
    uint64_t a, b;        /* device addresses of A and B (portable kernel only) */
    int64_t lda, ldb, stride_a, stride_b; /* in elements (portable kernel only) */

    /* Persistent sm90 kernel, split-K reduction (the Blackwell and the first
     * sm90 kernel ignore these; the runtime zeroes what a kernel does not use). */
    int32_t batch_count;  /* batches in this launch */
    int32_t band;         /* tile rows (of tile_m) per band of the grouped tile order */
    int32_t splits;       /* K is cut into this many slices (1: no split-K) */
    int32_t c_tma;        /* 1: D leaves through the C tensor map (TMA store); 0: direct stores */
    int32_t a_broadcast, b_broadcast; /* 1: every batch reads batch 0 of that operand */
    uint64_t workspace;   /* split-K partials, fp32, [batch][split][n][ws_ld] */
    int64_t ws_ld;        /* in elements, a multiple of 4 */
};

/* Arguments of the copy that packs an operand TMA cannot read (odd leading
 * dimension or batch stride, pointer not 16-byte aligned) into an aligned
 * workspace: `batch` matrices of `cols` columns of `rows` contiguous 16-bit
 * elements. dst columns are ld_dst (a multiple of 8) apart; the padding rows
 * are written with zeros. */
struct mgpu_gemm_pack_args {
    uint64_t src, dst;
    int64_t rows, cols, batch;
    int64_t ld_src, stride_src; /* in elements */
    int64_t ld_dst, stride_dst; /* in elements */
};

#endif
