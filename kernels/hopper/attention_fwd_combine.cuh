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
 * A row's splits are shared by W = mgpu_attention_fwd_combine_warps(num_splits)
 * warps of one CTA (abi/attention_abi.h), warp w taking the contiguous splits
 * [w * per, (w + 1) * per), per = ceil(num_splits / W): every warp first finds
 * the row's LSE from all split LSEs (lane l reads splits l, l + 32, ...;
 * shuffle reductions), then sums its splits' weighted O four splits at a time
 * (their loads in flight together); with W > 1 the warps' sums meet in
 * shared memory and the row's first warp adds them in warp order. Lane l owns
 * columns 4 l + 128 i (head dims are multiples of 32, so each lane moves
 * whole float4s). The order of every sum is fixed by num_splits alone.
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
    static_assert(kThreads == MGPU_ATTENTION_FWD_COMBINE_THREADS, "combine threads differ from the ABI");
    constexpr int kWarps = kThreads / 32;
    constexpr int kMaxCols = 256;
    __shared__ float4 part[kWarps][kMaxCols / 4];

    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int splits = a.num_splits;
    const int warps_per_row = mgpu_attention_fwd_combine_warps(splits);
    const int w = warp % warps_per_row;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarps / warps_per_row) + warp / warps_per_row;
    const bool live = row < a.partial_rows;
    const int64_t split_lse = a.partial_rows, split_o = a.partial_rows * a.head_dim;
    const float *lse_s = reinterpret_cast<const float *>(a.lse_partial) + (live ? row : 0);
    const float *o_s = reinterpret_cast<const float *>(a.o_partial) + (live ? row : 0) * a.head_dim;

    /* The row's LSE over all splits (each lane: splits lane, lane + 32, ...). */
    float mx = -INFINITY;
    for (int s = lane; s < splits; s += 32)
        mx = fmaxf(mx, lse_s[s * split_lse]);
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
    if (mx != -INFINITY)
        for (int s = lane; s < splits; s += 32)
            sum += __expf(lse_s[s * split_lse] - mx);
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const bool empty = !(sum > 0.f);
    const float lse = empty ? INFINITY : mx + __logf(sum);

    /* This warp's splits, weighted (a split without keys weighs nothing, and
     * its O is not read into the sum). */
    const int per = (splits + warps_per_row - 1) / warps_per_row;
    const int s_begin = w * per, s_end = s_begin + per < splits ? s_begin + per : splits;
    float4 acc[kMaxCols / kColsPerPass];
#pragma unroll
    for (int i = 0; i < kMaxCols / kColsPerPass; ++i)
        acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (live && !empty) {
#pragma unroll 4
        for (int s = s_begin; s < s_end; ++s) {
            const float l = lse_s[s * split_lse];
            const float wgt = l == -INFINITY ? 0.f : __expf(l - lse);
#pragma unroll
            for (int i = 0; i < kMaxCols / kColsPerPass; ++i) {
                const int c = 4 * lane + i * kColsPerPass;
                if (c < a.head_dim && wgt != 0.f) {
                    const float4 v = *reinterpret_cast<const float4 *>(o_s + s * split_o + c);
                    acc[i].x += wgt * v.x;
                    acc[i].y += wgt * v.y;
                    acc[i].z += wgt * v.z;
                    acc[i].w += wgt * v.w;
                }
            }
        }
    }
    if (warps_per_row > 1) {
#pragma unroll
        for (int i = 0; i < kMaxCols / kColsPerPass; ++i)
            part[warp][lane + 32 * i] = acc[i];
        __syncthreads();
        if (w != 0)
            return;
        for (int v = 1; v < warps_per_row; ++v)
#pragma unroll
            for (int i = 0; i < kMaxCols / kColsPerPass; ++i) {
                const float4 p = part[warp + v][lane + 32 * i];
                acc[i].x += p.x;
                acc[i].y += p.y;
                acc[i].z += p.z;
                acc[i].w += p.w;
            }
    }
    if (!live)
        return;

    /* Where the row lives: the LSE index is b * lse_batch_stride + h *
     * lse_head_stride + (packed) query row; varlen has lse_batch_stride 0. */
    const int64_t per_head = a.lse_head_stride;
    const int64_t per_batch = a.lse_batch_stride > 0 ? a.lse_batch_stride : per_head * a.heads_q;
    const int64_t b = row / per_batch, h = (row % per_batch) / per_head, i = row % per_head;
    uint8_t *o_row = reinterpret_cast<uint8_t *>(a.o) +
                     (b * a.o_batch_stride + i * a.o_seq_stride + h * a.o_head_stride) * static_cast<int64_t>(sizeof(T));
#pragma unroll
    for (int p = 0; p < kMaxCols / kColsPerPass; ++p) {
        const int c = 4 * lane + p * kColsPerPass;
        if (c < a.head_dim)
            *reinterpret_cast<uint2 *>(o_row + c * static_cast<int64_t>(sizeof(T))) = pack4<T>(acc[p]);
    }
    if (a.lse != 0 && lane == 0)
        reinterpret_cast<float *>(a.lse)[row] = lse;
}

} // namespace attn_fwd_combine
} // namespace mgpu
