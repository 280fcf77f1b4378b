/*
 * Online softmax of the Hopper attention forward, on the register fragments of
 * one consumer warpgroup (64 query rows x kBlockN keys); the mask is
 * attention_fwd_mask.cuh.
 *
 * Each thread holds two rows (row0 = 16 warp + lane / 4 and row1 = row0 + 8) and
 * kBlockN / 4 columns of each, in the wgmma accumulator layout described in
 * wgmma.cuh; the four threads of a quad share a row, so row maxima are
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

/*
 * 2^x on the FMA pipe, for a share of the exponentials when the MUFU unit (16
 * ex2 per clock per SM, a quarter of the FMA rate) would otherwise bound the
 * softmax. x = j + f with j = round(x) and f in [-1/2, 1/2]: the rounding
 * constant 1.5 * 2^23 leaves j in the low mantissa bits of t, 2^f is a cubic
 * (relative error 1.0e-4, below the 16-bit rounding of P), and j is added to
 * the exponent field. Inputs are clamped to -127: -infinity (masked) gives
 * exactly 0 (j = -127, f = 0), and every x in [-127, 0] gives a non-negative
 * result (the exponent field never goes below 0). Valid for x < 128.
 */
__device__ __forceinline__ float poly_exp2(float x)
{
    constexpr float kRoundToInt = 12582912.f; /* 1.5 * 2^23 */
    constexpr float kMinExponent = -127.f;
    constexpr int kMantissaBits = 23;
    constexpr float kC1 = 0.6932829022407532f, kC2 = 0.2422110140323639f, kC3 = 0.05500897765159607f;
    x = fmaxf(x, kMinExponent);
    const float t = __fadd_rn(x, kRoundToInt);
    const float j = __fsub_rn(t, kRoundToInt);
    const float f = __fsub_rn(x, j);
    const float p = fmaf(fmaf(fmaf(kC3, f, kC2), f, kC1), f, 1.f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << kMantissaBits));
}

__device__ __forceinline__ float fast_tanh(float x)
{
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Soft-cap: s <- post * tanh(s * pre). */
template <int kN>
__device__ __forceinline__ void apply_softcap(float (&s)[kN], float pre, float post)
{
#pragma unroll
    for (int i = 0; i < kN; ++i)
        s[i] = post * fast_tanh(s[i] * pre);
}

/*
 * kLazyRescale: the running maximum is raised only when a block's maximum
 * exceeds it by more than kRescaleSlackLog2 (in base 2); otherwise the stale
 * maximum is kept, the correction is exactly 1 and the caller may skip the O
 * rescale. Exact: O, the row sum and the LSE all refer to the maximum actually
 * used; probabilities grow to at most 2^kRescaleSlackLog2, far inside the
 * 16-bit P and the fp32 accumulators.
 * kPolyExp2Every: when > 0, every kPolyExp2Every-th group of 8 columns takes
 * its exponentials from poly_exp2 (FMA pipe) instead of ex2 (MUFU).
 * kMaxOffsetLog2: the probabilities are exp2(s * scale - max + offset), up
 * to 2^offset instead of 1 (the fp8 forward: e4m3 P keeps its 3 mantissa
 * bits for probabilities down to 2^(offset - 6) instead of 2^-6); O and the
 * row sum carry the same factor, the LSE is corrected in finalize().
 */
constexpr float kRescaleSlackLog2 = 8.f;

template <int kBlockN, bool kLazyRescale = false, int kPolyExp2Every = 0, int kMaxOffsetLog2 = 0>
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
            float block_max = fmaxf(s[2 * h], s[2 * h + 1]);
#pragma unroll
            for (int j = 1; j < kBlockN / 8; ++j)
                block_max = fmaxf(block_max, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, 1));
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, 2));
            float new_max = fmaxf(row_max[h], block_max * scale);
            if constexpr (kLazyRescale) {
                /* -inf + slack stays -inf: the first allowed key always raises it. */
                if (!(new_max > row_max[h] + kRescaleSlackLog2))
                    new_max = row_max[h];
            }
            /* A row with no allowed key so far keeps -inf; subtract 0 instead so
             * that exp2(-inf - (-inf)) never produces NaN. */
            const float max_used = new_max == -INFINITY ? 0.f : new_max;
            correction[h] = new_max == row_max[h] ? 1.f : fast_exp2(row_max[h] - max_used);
            row_max[h] = new_max;
            const float max_shifted = max_used - static_cast<float>(kMaxOffsetLog2);
#pragma unroll
            for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float &x = s[4 * j + 2 * h + e];
                    const float arg = fmaf(x, scale, -max_shifted);
                    if constexpr (kPolyExp2Every > 0) {
                        x = j % kPolyExp2Every == kPolyExp2Every - 1 ? poly_exp2(arg) : fast_exp2(arg);
                    } else {
                        x = fast_exp2(arg);
                    }
                }
            }
            /* The row sum: four partial sums (short dependency chains), the
             * first seeded with the rescaled running sum (one FFMA instead
             * of an FMUL and a final add). */
            constexpr int kParts = 4;
            static_assert(kBlockN / 4 >= kParts, "a partial sum per part");
            float part[kParts];
#pragma unroll
            for (int q = 0; q < kParts; ++q) {
                const int i = q; /* this thread's i-th value of row h */
                part[q] = s[4 * (i / 2) + 2 * h + i % 2];
            }
            part[0] = fmaf(row_sum[h], correction[h], part[0]);
#pragma unroll
            for (int i = kParts; i < kBlockN / 4; ++i)
                part[i % kParts] += s[4 * (i / 2) + 2 * h + i % 2];
            row_sum[h] = (part[0] + part[1]) + (part[2] + part[3]);
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
            lse[h] = empty ? INFINITY : (row_max[h] - static_cast<float>(kMaxOffsetLog2) + __log2f(sum)) * kLn2;
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
