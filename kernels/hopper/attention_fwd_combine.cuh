/*
 * The combine pass of the split-key attention forward (abi/attention_abi.h,
 * "Split keys"): the main kernel left, per split s and row r (indexed as the
 * LSE), a normalised fp32 O_s[r] and its LSE_s[r] (-infinity: no keys in
 * that split). Here
 *     LSE[r] = log(sum_s exp(LSE_s[r]))
 *     O[r]   = sum_s exp(LSE_s[r] - LSE[r]) O_s[r]
 * summed in split order 0, 1, ... (the same bits every run), O rounded to T
 * and stored in the caller's strides, LSE written when asked for. Rows whose
 * splits are all empty get O = 0 and LSE = +infinity, as the unsplit kernel.
 *
 * One warp per row, 8 rows per 256-thread CTA; lane l owns columns
 * 4 l + 128 i (head dims are multiples of 32, so each lane moves whole
 * float4s). The split LSEs are read by every lane (one broadcast load each).
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_abi.h"

namespace mgpu {
namespace attn_fwd_combine {

constexpr int kThreads = 256; /* the generated units check it against gen/variants.c */
constexpr int kRowsPerCta = kThreads / 32;
constexpr int kColsPerPass = 128; /* 32 lanes x 4 floats */

template <typename T>
__device__ __forceinline__ uint2 pack4(float4 v)
{
    uint2 r;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
        r.x = *reinterpret_cast<uint32_t *>(&a);
        r.y = *reinterpret_cast<uint32_t *>(&b);
    } else {
        __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
        r.x = *reinterpret_cast<uint32_t *>(&a);
        r.y = *reinterpret_cast<uint32_t *>(&b);
    }
    return r;
}

template <typename T>
__device__ __forceinline__ void combine(const mgpu_attention_fwd_args &a)
{
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerCta + static_cast<int>(threadIdx.x) / 32;
    if (row >= a.partial_rows)
        return;
    const float *lse_s = reinterpret_cast<const float *>(a.lse_partial) + row;
    const float *o_s = reinterpret_cast<const float *>(a.o_partial) + row * a.head_dim;
    const int64_t split_lse = a.partial_rows, split_o = a.partial_rows * a.head_dim;

    float mx = -INFINITY;
    for (int s = 0; s < a.num_splits; ++s)
        mx = fmaxf(mx, lse_s[s * split_lse]);
    float sum = 0.f;
    if (mx != -INFINITY)
        for (int s = 0; s < a.num_splits; ++s)
            sum += __expf(lse_s[s * split_lse] - mx);
    const bool empty = !(sum > 0.f);
    const float lse = empty ? INFINITY : mx + __logf(sum);

    /* Where the row lives: the LSE index is b * lse_batch_stride + h *
     * lse_head_stride + (packed) query row; varlen has lse_batch_stride 0. */
    const int64_t per_head = a.lse_head_stride;
    const int64_t per_batch = a.lse_batch_stride > 0 ? a.lse_batch_stride : per_head * a.heads_q;
    const int64_t b = row / per_batch, h = (row % per_batch) / per_head, i = row % per_head;
    uint8_t *o_row = reinterpret_cast<uint8_t *>(a.o) +
                     (b * a.o_batch_stride + i * a.o_seq_stride + h * a.o_head_stride) * static_cast<int64_t>(sizeof(T));
    for (int c = 4 * lane; c < a.head_dim; c += kColsPerPass) {
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        if (!empty) {
            for (int s = 0; s < a.num_splits; ++s) {
                const float l = lse_s[s * split_lse];
                if (l == -INFINITY)
                    continue;
                const float wgt = __expf(l - lse);
                const float4 v = *reinterpret_cast<const float4 *>(o_s + s * split_o + c);
                acc.x += wgt * v.x;
                acc.y += wgt * v.y;
                acc.z += wgt * v.z;
                acc.w += wgt * v.w;
            }
        }
        *reinterpret_cast<uint2 *>(o_row + c * static_cast<int64_t>(sizeof(T))) = pack4<T>(acc);
    }
    if (a.lse != 0 && lane == 0)
        reinterpret_cast<float *>(a.lse)[row] = lse;
}

} // namespace attn_fwd_combine
} // namespace mgpu
