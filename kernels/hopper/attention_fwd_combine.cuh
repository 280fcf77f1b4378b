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
 * A row's splits are shared by W = mgpu_attention_fwd_merge_warps(num_splits,
 * merge_splits_per_warp) warps of one CTA (abi/attention_abi.h: up to 8 or,
 * as the runtime chooses, 16 splits a warp), warp w taking the contiguous splits
 * [w * per, (w + 1) * per), per = ceil(num_splits / W). The pass is a chain
 * of global-memory latencies, so it keeps every load of a step in flight:
 *   1. each warp loads all of the row's split LSEs at once (lane l: splits
 *      l, l + 32, ...), finds the row's LSE with shuffle reductions and
 *      leaves its splits' weights exp(LSE_s - LSE) in shared memory;
 *   2. each warp loads the O_s of up to kBatch = 8 of its splits at once
 *      (the first 8 already beside the LSEs of step 1; a warp of 9 to 16
 *      splits loads the rest in a second round) and adds them
 *      weighted, in split order (a split without keys, LSE_s =
 *      -infinity, weighs 0 and its O_s is never added);
 *   3. with W > 1 the warps' sums meet in shared memory and the row's first
 *      warp adds them in warp order.
 * Lane l owns columns 4 l + 128 i (head dims are multiples of 32, so each
 * lane moves whole float4s). The order of every sum is fixed by num_splits
 * and merge_splits_per_warp: the same bits every run. Where its CTAs fit beside the main grid
 * the runtime launches this kernel for programmatic dependent launch: they
 * may be scheduled while the main kernel runs (every main CTA signals at its
 * start), and wait for that grid's completion before their first load.
 *
 * The merge of one row is merge_row, which the main kernel also runs where
 * the runtime has the last split of each work tile merge the tile's rows
 * itself (split_counters, hopper/attention_fwd_epilogue.cuh,
 * attn_fwd_merge_splits): its two consumer warpgroups are the 8 warps, its
 * loads of the partials go through L2, the arithmetic is this one.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_abi.h"
#include "common/grid_dependency.cuh"

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

/* Shared memory of one merge of the 8 warps of a CTA (the combine kernel's,
 * or the main kernel's consumers reusing a free K stage, attn_fwd_merge_splits
 * in hopper/attention_fwd_epilogue.cuh): each warp's split weights, and its
 * partial sums where several warps share a row. */
struct MergeSmem {
    float4 part[kThreads / 32][2 * 32];
    float weight[kThreads / 32][MGPU_ATTENTION_FWD_MAX_SPLITS];
};

/* Loads of the partials: kL2 (the main kernel's last split of a tile,
 * after its acquire) reads them from L2, never from a possibly stale L1;
 * the combine kernel, a later grid, through the read-only path. */
template <bool kL2>
__device__ __forceinline__ float4 load_partial4(const float *p)
{
    return kL2 ? __ldcg(reinterpret_cast<const float4 *>(p)) : __ldg(reinterpret_cast<const float4 *>(p));
}

template <bool kL2>
__device__ __forceinline__ float load_partial(const float *p)
{
    return kL2 ? __ldcg(p) : *p;
}

/* The partials of one row in the handle's workspace (abi/attention_abi.h,
 * "Split keys"): split s's LSE and four of its O columns from `col`. A row
 * past the end (live false) reads row 0's. */
template <bool kL2>
struct GlobalPartials {
    const float *lse_s, *o_s;
    int64_t split_lse, split_o;
    __device__ __forceinline__ GlobalPartials(const mgpu_attention_fwd_args &a, int64_t row, bool live)
        : lse_s(reinterpret_cast<const float *>(a.lse_partial) + (live ? row : 0)),
          o_s(reinterpret_cast<const float *>(a.o_partial) + (live ? row : 0) * a.head_dim),
          split_lse(a.partial_rows), split_o(a.partial_rows * a.head_dim)
    {
    }
    __device__ __forceinline__ float lse(int s) const { return load_partial<kL2>(lse_s + s * split_lse); }
    __device__ __forceinline__ float4 o4(int s, int col) const { return load_partial4<kL2>(o_s + s * split_o + col); }
};

/* Merges the splits of one row (its LSE index `row`; live false: a row past
 * the end, whose loads read row 0 and which stores nothing) into O and LSE.
 * Called by all 8 warps of the merge together, each with its own row: the
 * W = mgpu_attention_fwd_merge_warps(num_splits, merge_splits_per_warp)
 * warps of a row are consecutive (warp w of the row: warp % W), and with
 * W > 1 `sync` (a barrier of the 8 warps) is called once. kPasses:
 * 128-column passes of the head dim (1 up to 128, else 2). The order of
 * every sum is fixed by num_splits and merge_splits_per_warp alone: the
 * combine kernel and the main kernel's merge give the same bits. */
template <typename T, int kPasses, class Partials, class Sync>
__device__ __forceinline__ void merge_row(const mgpu_attention_fwd_args &a, int64_t row, bool live, int warp, int lane,
                                          MergeSmem &sm, Sync sync, const Partials &partials)
{
    static_assert(kThreads == MGPU_ATTENTION_FWD_COMBINE_THREADS, "combine threads differ from the ABI");
    constexpr int kLseLoads = (MGPU_ATTENTION_FWD_MAX_SPLITS + 31) / 32;
    /* O loads in flight per lane and pass: a warp of 9 to 16 splits takes
     * two rounds (all 16 at once, predicated, measured slower on the rows
     * whose warps have at most 8: H100, decision 052) */
    constexpr int kBatch = 8;
    static_assert(kPasses <= 2, "head dims up to 256");

    const int splits = a.num_splits;
    const int warps_per_row = mgpu_attention_fwd_merge_warps(splits, a.merge_splits_per_warp);
    const int w = warp % warps_per_row;
    const int per = (splits + warps_per_row - 1) / warps_per_row;
    const int s_begin = w * per, s_end = s_begin + per < splits ? s_begin + per : splits;
    int col[kPasses];
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
        col[p] = 4 * lane + p * kColsPerPass < a.head_dim ? 4 * lane + p * kColsPerPass : 0;
    /* Loads past the warp's splits or the head dim read a valid place (its
     * last split, column 0) and weigh 0: no predicate splits the batch. The
     * first batch is loaded before the LSEs are reduced (its loads do not
     * depend on them): one latency of memory for both. */
    float4 v[kBatch][kPasses];
    auto load_batch = [&](int s0) {
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const int s = s0 + b < s_end ? s0 + b : s_end - 1;
#pragma unroll
            for (int p = 0; p < kPasses; ++p)
                v[b][p] = partials.o4(s, col[p]);
        }
    };
    load_batch(s_begin);

    /* 1. The row's LSE over all splits, and this warp's weights. */
    float l[kLseLoads];
#pragma unroll
    for (int j = 0; j < kLseLoads; ++j) {
        const int s = lane + 32 * j;
        l[j] = live && s < splits ? partials.lse(s) : -INFINITY;
    }
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < kLseLoads; ++j)
        mx = fmaxf(mx, l[j]);
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kLseLoads; ++j)
        sum += mx == -INFINITY ? 0.f : __expf(l[j] - mx);
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const bool empty = !(sum > 0.f);
    const float lse = empty ? INFINITY : mx + __logf(sum);
#pragma unroll
    for (int j = 0; j < kLseLoads; ++j)
        sm.weight[warp][lane + 32 * j] = l[j] == -INFINITY || empty ? 0.f : __expf(l[j] - lse);
    __syncwarp();

    /* 2. This warp's splits, kBatch at a time. */
    float4 acc[kPasses];
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
        acc[p] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (live && !empty) {
        for (int s0 = s_begin; s0 < s_end; s0 += kBatch) {
            if (s0 != s_begin)
                load_batch(s0);
#pragma unroll
            for (int b = 0; b < kBatch; ++b) {
                const float wgt = s0 + b < s_end ? sm.weight[warp][s0 + b] : 0.f;
#pragma unroll
                for (int p = 0; p < kPasses; ++p) {
                    /* a select, not a product: O_s of a split without keys is never added */
                    acc[p].x = wgt != 0.f ? fmaf(wgt, v[b][p].x, acc[p].x) : acc[p].x;
                    acc[p].y = wgt != 0.f ? fmaf(wgt, v[b][p].y, acc[p].y) : acc[p].y;
                    acc[p].z = wgt != 0.f ? fmaf(wgt, v[b][p].z, acc[p].z) : acc[p].z;
                    acc[p].w = wgt != 0.f ? fmaf(wgt, v[b][p].w, acc[p].w) : acc[p].w;
                }
            }
        }
    }

    /* 3. The warps of the row meet. */
    if (warps_per_row > 1) {
#pragma unroll
        for (int p = 0; p < kPasses; ++p)
            sm.part[warp][lane + 32 * p] = acc[p];
        sync();
        if (w != 0)
            return;
        for (int u = 1; u < warps_per_row; ++u)
#pragma unroll
            for (int p = 0; p < kPasses; ++p) {
                const float4 q = sm.part[warp + u][lane + 32 * p];
                acc[p].x += q.x;
                acc[p].y += q.y;
                acc[p].z += q.z;
                acc[p].w += q.w;
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
    for (int p = 0; p < kPasses; ++p) {
        const int c = 4 * lane + p * kColsPerPass;
        if (c < a.head_dim)
            *reinterpret_cast<uint2 *>(o_row + c * static_cast<int64_t>(sizeof(T))) = pack4<T>(acc[p]);
    }
    if (a.lse != 0 && lane == 0)
        reinterpret_cast<float *>(a.lse)[row] = lse;
}

/* The combine kernel's rows: CTA c merges rows c * (8 / W) ... (W warps a row). */
template <typename T, int kPasses>
__device__ __forceinline__ void combine_rows(const mgpu_attention_fwd_args &a, MergeSmem &sm)
{
    constexpr int kWarps = kThreads / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int warps_per_row = mgpu_attention_fwd_merge_warps(a.num_splits, a.merge_splits_per_warp);
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarps / warps_per_row) + warp / warps_per_row;
    const bool live = row < a.partial_rows;
    merge_row<T, kPasses>(a, row, live, warp, lane, sm, [] { __syncthreads(); }, GlobalPartials<false>(a, row, live));
}

template <typename T>
__device__ __forceinline__ void combine(const mgpu_attention_fwd_args &a)
{
    /* Launched for programmatic dependent launch behind the main kernel where
     * the plan says so (a no-op otherwise): the partials are read only once
     * that grid has completed. */
    griddep_wait();
    __shared__ MergeSmem sm;
    if (a.head_dim > kColsPerPass)
        combine_rows<T, 2>(a, sm);
    else
        combine_rows<T, 1>(a, sm);
}

} // namespace attn_fwd_combine
} // namespace mgpu
