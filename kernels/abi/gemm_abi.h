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
 * src/gemm/gemm.c: one rank-3 map per operand, dimensions {contiguous, strided,
 * batch}); the portable kernel reads them through the raw pointers below.
 *
 * Operand "majorness" seen from the kernel:
 *   A, trans_a == 0: element (i, l) at a[i + l * lda]  -> M-major ("MN-major")
 *   A, trans_a == 1: element (i, l) at a[l + i * lda]  -> K-major
 *   B, trans_b == 0: element (l, j) at b[l + j * ldb]  -> K-major
 *   B, trans_b == 1: element (l, j) at b[j + l * ldb]  -> N-major ("MN-major")
 */
#ifndef MGPU_KERNELS_ABI_GEMM_ABI_H
#define MGPU_KERNELS_ABI_GEMM_ABI_H

#include <stdint.h>

#include "abi_fn.h"

/* Element type codes. They equal the public mgpu_dtype values (checked in src/). */
enum mgpu_abi_dtype {
    MGPU_ABI_F16 = 0,
    MGPU_ABI_BF16 = 1,
    MGPU_ABI_F32 = 2,
    MGPU_ABI_E4M3 = 3,
    MGPU_ABI_E5M2 = 4,
};

/* Epilogue of every GEMM kernel, in this order (common/numeric.cuh):
 *   v = alpha * scale_a * scale_b * acc  (+ beta * C)  (+ bias)
 *   v = activation(v);  D = scale_d * v                                    */
enum mgpu_abi_activation {
    MGPU_ABI_ACT_NONE = 0,
    MGPU_ABI_ACT_RELU = 1,
    MGPU_ABI_ACT_GELU = 2, /* tanh approximation */
};

enum mgpu_abi_bias_mode {
    MGPU_ABI_BIAS_PER_ROW = 0,    /* bias[i] for row i of D (length m) */
    MGPU_ABI_BIAS_PER_COLUMN = 1, /* bias[j] for column j of D (length n) */
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

    /* Persistent kernels (sm_90a and sm_100a; the runtime zeroes what a
     * kernel does not use). */
    int32_t batch_count;  /* batches in this launch */
    int32_t band;         /* tile rows (of tile_m) per band of the grouped tile order */
    int32_t splits;       /* K is cut into this many slices (1: no split-K) */
    int32_t c_tma;        /* 1: D leaves through the C tensor map (TMA store); 0: direct stores */
    int32_t a_broadcast, b_broadcast; /* 1: every batch reads batch 0 of that operand */
    /* Split-K (splits > 1): each unit parks its fp32 partial tile in
     * `workspace` (slot [tile][split][consumer], in the accumulator fragment
     * order of hopper/gemm_sm90_persistent.cuh; sm_100a: [tile][split][epilogue
     * warp], blackwell/gemm_sm100_epilogue.cuh); the last of a tile's units to
     * arrive (counted in split_counters[tile][consumer], which are 0 between
     * launches: that unit resets its counter) sums the slots in split order
     * and stores D. */
    uint64_t workspace;
    uint64_t split_counters; /* int32 each */

    /* Scales and epilogue (the persistent sm_90a and sm_100a kernels and the
     * portable kernel). */
    uint64_t scale_a, scale_b, scale_d; /* device addresses of one float each; 0: 1.0 */
    uint64_t bias;        /* device address of the bias vector; 0: none */
    int64_t bias_batch_stride; /* in elements; batch b reads bias + b * bias_batch_stride */
    int32_t bias_dtype;   /* enum mgpu_abi_dtype: F32 or c_dtype */
    int32_t bias_mode;    /* enum mgpu_abi_bias_mode */
    int32_t activation;   /* enum mgpu_abi_activation */
    int32_t b_dtype;      /* enum mgpu_abi_dtype of B (portable kernel; ab_dtype is A's) */
    /* Debugging only (MGPU_DEBUG_FP8_NO_PROMOTION): the persistent sm90
     * kernel sums each fp8 unit in one tensor-core chain, without the fp32
     * promotion of every k-tile (tests show the accuracy it loses). */
    int32_t fp8_no_promotion;
    /* 1: the units beyond the last full wave of the grid are shared out
     * along K over every CTA, their partials summed in a fixed order through
     * `workspace` and `split_counters` (splits == 1; the sm_90a persistent
     * kernel's 16-bit cooperative rows with two consumer warpgroups:
     * hopper/gemm_sm90_tail_split.cuh). */
    int32_t tail_split;
};

/* 8 KiB epilogue buffers per consumer warpgroup of a persistent Hopper GEMM
 * (one per 64 columns of tile_n): two, so that a chunk is staged while the
 * previous one's TMA store still reads; one where tile_n is 192 (three
 * consumers), whose 4 stages of (192 + 192) rows would not fit with two. */
MGPU_ABI_FN int mgpu_gemm_sm90_epi_bufs(int tile_n)
{
    return tile_n > 128 ? 1 : 2;
}

/* Dynamic shared memory of a persistent Hopper GEMM variant, as the runtime
 * launches it: `stages` A and B tiles (tile_m + tile_n rows of k_row_bytes,
 * one 128-byte swizzle row of K), the epilogue buffers of every consumer
 * warpgroup (64 columns of tile_n each), 1 KiB for rounding the base up to
 * the 1 KiB alignment 128-byte swizzling needs, and 1 KiB kept for the
 * barriers. The generated units check the kernel's own count against it. */
MGPU_ABI_FN int mgpu_gemm_sm90_smem_bytes(int tile_m, int tile_n, int k_row_bytes, int stages)
{
    return stages * (tile_m + tile_n) * k_row_bytes + (tile_n / 64) * mgpu_gemm_sm90_epi_bufs(tile_n) * 8192 + 2048;
}

/* The same for the persistent Blackwell GEMM (blackwell/gemm_sm100_persistent.cuh):
 * `stages` of this CTA's part of the A tile (tile_m / ctas rows: a CTA pair
 * splits it) and its B tile (tile_n rows), k_row_bytes per row (one 128-byte
 * swizzle row: 64 16-bit or 128 fp8 elements of K); 2 x 4 KiB store buffers
 * for each of the 4 epilogue warps; 1 KiB of alignment slack (the barriers
 * are static shared memory). */
MGPU_ABI_FN int mgpu_gemm_sm100_smem_bytes(int tile_m, int tile_n, int k_row_bytes, int stages, int ctas)
{
    return stages * (tile_m / ctas + tile_n) * k_row_bytes + 4 * 2 * 4096 + 1024;
}

/* The split-K tail (hopper/gemm_sm90_tail_split.cuh) of `units` units over
 * `grid` CTAs (clusters) of `k_tiles` k-tiles each: the units past the last
 * full wave, or 0 where no wave is partial, where a CTA's range of the tail
 * would hold no k-tile, or where the ranges' 32-bit arithmetic (length x
 * grid) would not fit. The runtime's plan and the kernel both take it from
 * here. Bounded: units % grid < grid <= the SM count, k_tiles < 2^26. */
MGPU_ABI_FN int64_t mgpu_gemm_tail_tiles(int64_t units, int64_t grid, int64_t k_tiles)
{
    return grid >= 1 && units > grid && (units % grid) * k_tiles >= grid &&
                   (units % grid) * k_tiles * grid < ((int64_t)1 << 31)
               ? units % grid
               : 0;
}
/* Split counters of a tail tile per CTA of a cluster: two per consumer
 * warpgroup (arrived, parked). */
#define MGPU_GEMM_TAIL_COUNTERS 4

/* Arguments of the copy that packs an operand TMA cannot read (odd leading
 * dimension or batch stride, pointer not 16-byte aligned) into an aligned
 * workspace: `batch` matrices of `cols` columns of `rows` contiguous
 * elements of elem_bytes (2: fp16/bf16, 1: fp8) bytes. dst columns are
 * ld_dst (16 bytes' worth of elements times some integer) apart; the
 * padding rows are written with zeros. */
struct mgpu_gemm_pack_args {
    uint64_t src, dst;
    int64_t rows, cols, batch;
    int64_t ld_src, stride_src; /* in elements */
    int64_t ld_dst, stride_dst; /* in elements */
    int32_t elem_bytes;         /* 1 or 2 */
};

#endif
