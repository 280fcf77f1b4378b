/*
 * The small-m (decode) GEMM's tensor-map ring (hopper/gemm_sm90_small_m_tma.cuh):
 * its dynamic shared memory, which the generator (gen/kinds.c) gives the
 * variant rows and the kernel checks its own layout against. The kernel's
 * arguments are those of every GEMM kernel (gemm_abi.h) after the tensor
 * maps of A and B.
 */
#ifndef MGPU_KERNELS_ABI_GEMM_SMALL_M_ABI_H
#define MGPU_KERNELS_ABI_GEMM_SMALL_M_ABI_H

#include "abi_fn.h"

/* Elements of K per box: one 128-byte swizzle row of 16-bit elements. */
#define MGPU_GEMM_SMALL_M_TMA_BOX_K 64

/* Rings of at most this many bytes run two CTAs per SM (twice this plus the
 * static barriers and the per-CTA reserve within the SM's 228 KiB); larger
 * ones one. The kernel's launch bounds and the planner's CTA slots both
 * follow it. */
#define MGPU_GEMM_SMALL_M_TMA_PAIR_SMEM (113 * 1024)

/* `stages` stages of tile_k elements of K (a multiple of
 * MGPU_GEMM_SMALL_M_TMA_BOX_K) of the tile_n columns of B and the tile_m rows
 * of A, and 1 KiB for rounding the ring's base up to the 1 KiB alignment of
 * 128-byte swizzling (the barriers are static shared memory). */
MGPU_ABI_FN int mgpu_gemm_small_m_tma_smem_bytes(int tile_m, int tile_n, int tile_k, int stages)
{
    return stages * (tile_n + tile_m) * tile_k * 2 + 1024;
}

#endif
