/*
 * Masking of the Hopper attention forward: which keys each query row may see
 * (causal, sliding window, the end of the keys; the rules of
 * abi/attention_abi.h), and the -infinity that removes the others from an S
 * fragment of one consumer warpgroup (the wgmma accumulator layout of
 * wgmma.cuh: each thread holds two rows, row0 = 16 warp + lane / 4 and
 * row1 = row0 + 8, and two adjacent keys of every 8).
 */
#pragma once

#include <math.h>

namespace mgpu {
namespace sm90 {

/* Which keys of a row are allowed: [lo, hi). The bounds of the mask in
 * attention_abi.h shifted into this row. */
struct AttnMask {
    int seqlen_k;
    int diag;          /* seqlen_k - seqlen_q */
    int window_left;   /* < 0: unbounded */
    int window_right;  /* < 0: unbounded (causal already folded in) */

    __device__ __forceinline__ int key_begin(int row) const
    {
        return window_left < 0 ? 0 : row + diag - window_left;
    }
    __device__ __forceinline__ int key_end(int row) const
    {
        int end = seqlen_k;
        if (window_right >= 0)
            end = min(end, row + diag + window_right + 1);
        return end;
    }

    /* The mask of one sequence from the call's arguments: causal is
     * bottom-right aligned and folds into the right window (at most 0). */
    static __device__ __forceinline__ AttnMask make(int seqlen_q, int seqlen_k, int window_left, int window_right,
                                                    int causal)
    {
        if (causal)
            window_right = window_right < 0 ? 0 : min(window_right, 0);
        return AttnMask{seqlen_k, seqlen_k - seqlen_q, window_left, window_right};
    }
};

/*
 * Sets the disallowed scores of an S fragment to -infinity. Tile row r (of
 * the warpgroup's 64 starting at tile row row_base) is query
 * q_row0 + r / row_div (row_div: the GQA group when packed, else 1); key_base
 * is the first key of the block.
 */
template <int kBlockN>
__device__ __forceinline__ void apply_mask(float (&s)[kBlockN / 2], const AttnMask &mask, int q_row0, int row_base,
                                           int row_div, int key_base, int thread_in_wg)
{
    constexpr int kRowsPerWarp = 16;
    constexpr int kQuadRowHalf = 8;
    const int warp = thread_in_wg / 32, lane = thread_in_wg % 32;
    const int col0 = key_base + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int tile_row = row_base + warp * kRowsPerWarp + lane / 4 + h * kQuadRowHalf;
        const int row = q_row0 + (row_div == 1 ? tile_row : tile_row / row_div);
        /* The bounds relative to this thread's first column, so that each
         * element compares them with its constant offset 8 j + e (no column
         * index in a register). Keys are >= 0: bounds below 0 act as 0. */
        const int lo = max(mask.key_begin(row), 0) - col0, hi = max(mask.key_end(row), 0) - col0;
        if (mask.window_left < 0) {
            /* No left bound (causal, or the end of the keys): one compare. */
#pragma unroll
            for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    if (8 * j + e >= hi)
                        s[4 * j + 2 * h + e] = -INFINITY;
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int k = 8 * j + e;
                    if (k < lo || k >= hi)
                        s[4 * j + 2 * h + e] = -INFINITY;
                }
            }
        }
    }
}

} // namespace sm90
} // namespace mgpu
