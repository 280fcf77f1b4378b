/*
 * Online softmax and masking of the Hopper attention forward, on the register
 * fragments of one consumer warpgroup (64 query rows x kBlockN keys).
 *
 * Each thread holds two rows (row0 = 16 warp + lane / 4 and row1 = row0 + 8) and
 * kBlockN / 4 columns of each, in the wgmma accumulator layout described in
 * wgmma_attention.cuh; the four threads of a quad share a row, so row maxima are
 * reduced with two shuffles. Row sums stay per-thread partial until finalize().
 *
 * Everything is in base 2: scores are multiplied by scale_log2 = softmax_scale *
 * log2(e) (fused into the exponent's FFMA), exponentials are ex2.approx, and
 * the row maximum is kept already scaled. With a soft-cap, raw scores are first
 * mapped to (softcap / softmax_scale) * tanh(score * softmax_scale / softcap),
 * so that the same multiplication by scale_log2 yields
 * softcap * log2(e) * tanh(score * softmax_scale / softcap).
 */
#pragma once

#include <math.h>
#include <stdint.h>

namespace mgpu {
namespace sm90 {

__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float fast_tanh(float x)
{
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

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
};

/*
 * Sets the disallowed scores of an S fragment to -infinity. row_base is the
 * first query row of the warpgroup's 64, key_base the first key of the block.
 */
template <int kBlockN>
__device__ __forceinline__ void apply_mask(float (&s)[kBlockN / 2], const AttnMask &mask, int row_base,
                                           int key_base, int thread_in_wg)
{
    constexpr int kRowsPerWarp = 16;
    constexpr int kQuadRowHalf = 8;
    const int warp = thread_in_wg / 32, lane = thread_in_wg % 32;
    const int col0 = key_base + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = row_base + warp * kRowsPerWarp + lane / 4 + h * kQuadRowHalf;
        const int lo = mask.key_begin(row), hi = mask.key_end(row);
#pragma unroll
        for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = col0 + 8 * j + e;
                if (col < lo || col >= hi)
                    s[4 * j + 2 * h + e] = -INFINITY;
            }
        }
    }
}

/* Soft-cap: s <- post * tanh(s * pre). */
template <int kN>
__device__ __forceinline__ void apply_softcap(float (&s)[kN], float pre, float post)
{
#pragma unroll
    for (int i = 0; i < kN; ++i)
        s[i] = post * fast_tanh(s[i] * pre);
}

template <int kBlockN>
struct OnlineSoftmax {
    float row_max[2];   /* scaled (base-2) running maximum, -inf before any key */
    float row_sum[2];   /* this thread's partial sum of exponentials */

    __device__ __forceinline__ void init()
    {
        row_max[0] = row_max[1] = -INFINITY;
        row_sum[0] = row_sum[1] = 0.f;
    }

    /*
     * Folds one block of scores into the running statistics: s becomes the
     * unnormalised probabilities exp2(s * scale - max); correction[h] is the
     * factor the O rows accumulated so far must be multiplied by.
     */
    __device__ __forceinline__ void update(float (&s)[kBlockN / 2], float scale, float (&correction)[2])
    {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float block_max = -INFINITY;
#pragma unroll
            for (int j = 0; j < kBlockN / 8; ++j)
                block_max = fmaxf(block_max, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, 1));
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, 2));
            const float new_max = fmaxf(row_max[h], block_max * scale);
            /* A row with no allowed key so far keeps -inf; subtract 0 instead so
             * that exp2(-inf - (-inf)) never produces NaN. */
            const float max_used = new_max == -INFINITY ? 0.f : new_max;
            correction[h] = fast_exp2(row_max[h] - max_used);
            row_max[h] = new_max;
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float &x = s[4 * j + 2 * h + e];
                    x = fast_exp2(fmaf(x, scale, -max_used));
                    sum += x;
                }
            }
            row_sum[h] = row_sum[h] * correction[h] + sum;
        }
    }

    /*
     * Completes the row sums across the quad. Returns per row the factor that
     * normalises O (0 for a row without keys) and the natural-log LSE
     * (+infinity for a row without keys).
     */
    __device__ __forceinline__ void finalize(float (&o_scale)[2], float (&lse)[2])
    {
        constexpr float kLn2 = 0.69314718055994530942f;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = row_sum[h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const bool empty = !(sum > 0.f);
            o_scale[h] = empty ? 0.f : 1.f / sum;
            lse[h] = empty ? INFINITY : (row_max[h] + __log2f(sum)) * kLn2;
        }
    }
};

/* Multiplies the rows of an O accumulator fragment (head_dim / 2 floats). */
template <int kN>
__device__ __forceinline__ void scale_rows(float (&o)[kN], const float (&factor)[2])
{
#pragma unroll
    for (int j = 0; j < kN / 4; ++j) {
        o[4 * j + 0] *= factor[0];
        o[4 * j + 1] *= factor[0];
        o[4 * j + 2] *= factor[1];
        o[4 * j + 3] *= factor[1];
    }
}

} // namespace sm90
} // namespace mgpu
