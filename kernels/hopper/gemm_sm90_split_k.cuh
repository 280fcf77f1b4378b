/*
 * Split-K combine of the persistent Hopper GEMM: when a tile's K is cut into
 * `splits` work units, each unit parks its fp32 partial in the workspace and
 * the last of them to arrive sums all partials, in split order, before the
 * epilogue. One launch, no reduction kernel, and the same bits whichever unit
 * finishes last. Workspace layout and counters: abi/gemm_abi.h.
 */
#pragma once

#include <stdint.h>

#include "abi/gemm_abi.h"
#include "common/barrier.cuh"
#include "common/tile_scheduler.cuh"

namespace mgpu {
namespace sm90 {
namespace persistent {

/* A consumer thread's accumulators as a partial slot's float4s in fragment
 * order (float4 q of thread t at slot[q * 128 + t]: coalesced), past L1:
 * park_partial writes them, take_partial reads float4s g .. g + kBatch - 1
 * back into acc (kAdd: added to it). The split-K combine and the split-K
 * tail (gemm_sm90_tail_split.cuh) share them. */
template <int N>
__device__ __forceinline__ void park_partial(const float (&acc)[N], float4 *slot)
{
#pragma unroll
    for (int q = 0; q < N / 4; ++q)
        __stcg(slot + q * 128, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
}

template <int kBatch, bool kAdd, int N>
__device__ __forceinline__ void take_partial(float (&acc)[N], const float4 *slot, int g)
{
#pragma unroll
    for (int q = g; q < g + kBatch; ++q) {
        const float4 v = __ldcg(slot + q * 128);
        if constexpr (kAdd) {
            acc[4 * q] += v.x;
            acc[4 * q + 1] += v.y;
            acc[4 * q + 2] += v.z;
            acc[4 * q + 3] += v.w;
        } else {
            acc[4 * q] = v.x;
            acc[4 * q + 1] = v.y;
            acc[4 * q + 2] = v.z;
            acc[4 * q + 3] = v.w;
        }
    }
}

/* Split-K: parks this unit's partial of 64-column part `part` of the tile
 * (held by the warpgroup that syncs on `barrier_id`) and
 * returns true when it was the last of the tile's `splits` units to arrive,
 * with acc then holding the sum of all of them, added in split order 0, 1, ...
 * whichever unit arrives last (bitwise reproducible). The slots are written
 * and read as float4s in fragment order: float4 q of thread t at
 * slot + 4 * (q * 128 + t), coalesced. Arrival follows the release / acquire
 * pattern: the warpgroup's stores, a warpgroup barrier, then one thread's
 * fenced atomic; the last arriver fences again before the warpgroup reads. */
template <class Cfg>
__device__ __forceinline__ bool combine_splits(float (&acc)[Cfg::kBM / 2], const mgpu_gemm_args &args,
                                               const GemmTileScheduler &sched, const GemmTile &t, int part,
                                               int barrier_id, volatile int *last_flag)
{
    constexpr int kQuads = Cfg::kBM / 8; /* float4s per thread */
    constexpr int64_t kSlotFloats = 128 * Cfg::kBM / 2;
    /* float4 loads in flight per thread: 8, or 4 where tile_m is not a multiple of 64 (224 rows) */
    constexpr int kLoadBatch = kQuads % 8 == 0 ? 8 : 4;
    static_assert(kQuads % kLoadBatch == 0, "whole load batches");
    const int tid = threadIdx.x % 128;
    const int64_t tiles_n = static_cast<int64_t>(sched.cols) * sched.cluster_n;
    const int64_t tile_id = (static_cast<int64_t>(t.batch) * sched.rows * sched.cluster_m + t.m_tile) * tiles_n + t.n_tile;
    float4 *slots = reinterpret_cast<float4 *>(args.workspace) +
                    (tile_id * args.splits * Cfg::kConsumers + part) * (kSlotFloats / 4) + tid;
    const int64_t split_step = Cfg::kConsumers * (kSlotFloats / 4); /* float4s between two splits' slots */

    park_partial(acc, slots + t.split * split_step);
    named_barrier_sync(barrier_id, 128);
    if (tid == 0) {
        int *counter = reinterpret_cast<int *>(args.split_counters) + tile_id * Cfg::kConsumers + part;
        __threadfence();
        const bool last = atomicAdd(counter, 1) == args.splits - 1;
        if (last) {
            *counter = 0; /* for the next launch: every other unit of this tile has arrived */
            __threadfence();
        }
        *last_flag = last;
    }
    named_barrier_sync(barrier_id, 128);
    if (!*last_flag)
        return false;
    /* Sum in split order; this unit's own partial is read back like the
     * others. kLoadBatch float4s at a time, the splits in a loop that is not
     * unrolled: the compiler cannot then hoist every slot's loads at once,
     * which would need as many registers again as the accumulators. */
#pragma unroll
    for (int g = 0; g < kQuads; g += kLoadBatch) {
        take_partial<kLoadBatch, false>(acc, slots, g);
#pragma unroll 1
        for (int s = 1; s < args.splits; ++s)
            take_partial<kLoadBatch, true>(acc, slots + s * split_step, g);
    }
    return true;
}

} // namespace persistent
} // namespace sm90
} // namespace mgpu
