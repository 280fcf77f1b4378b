/*
 * Split-K tail of the persistent Hopper GEMM (args.tail_split): the last,
 * partial wave of tiles shared out along K over every CTA of the grid.
 *
 * Without it, `total` units on `grid` CTAs (or clusters) take
 * ceil(total / grid) whole tiles on the busiest CTA: 288 tiles of 256 x 128
 * on 132 SMs run three rounds where 2.2 would do. With it, the units are
 * walked as two parts:
 *   - the full waves, units [0, dp_end) with dp_end = total - tiles and
 *     tiles = total % grid: unit c + i * grid of CTA c, whole K, stored by
 *     the unit that computes it, exactly as without the tail;
 *   - the tail, units [dp_end, total) in the scheduler's order: their
 *     k-tiles, laid end to end (tail tile t holds k-tiles
 *     [t * k_tiles, (t + 1) * k_tiles) of `length` = tiles * k_tiles), are
 *     cut into `grid` ranges [begin(c), begin(c + 1)), begin(c) =
 *     floor(length * c / grid), one per CTA c. A range is shorter than a
 *     tile's K (tiles < grid), so it touches one or two tail tiles: CTA c's
 *     tail pieces 0 and 1 (walk units dp_end + c and dp_end + c + grid).
 * The producer and the consumers of a CTA walk the same pieces (unit()).
 *
 * A tail tile's contributors are the CTAs first..last whose ranges touch it
 * (contributors()); every CTA's range holds at least one k-tile (the walk
 * has no tail unless length >= grid), so each contributes a piece.
 * Contributor c of tail tile t may park its fp32 partial in slot t + c of
 * the workspace: the pairs (t, c) that occur give distinct t + c (ranges
 * are ordered), so there are at most tiles + grid - 1 slots. The combine
 * (combine_tail), per consumer warpgroup and 64-column part of the tile:
 *   arrive: one thread counts the warpgroup in on the tile's arrival
 *     counter; the contributor that arrives last goes on, the others park;
 *   park: the partial to its slot (float4s in fragment order, as split-K's
 *     combine_splits), a warpgroup barrier, then one thread's fenced count
 *     on the tile's parked counter;
 *   the last arriver waits until the other n - 1 contributors have parked
 *     (they have all arrived, so they are running and only write: no CTA
 *     waits for one that has not started), resets both counters for the
 *     next launch and sums the partials in contributor order first..last
 *     in place in its accumulators (its own term from registers when it is
 *     the first or second, else parked and read back like the others): the
 *     same additions in the same order whichever contributor arrives last,
 *     so the result has the same bits from call to call. Then the whole
 *     epilogue, as any unit.
 * Counters: two per tail tile, CTA of the cluster and consumer, in the
 * handle's split counters (zero between launches). Workspace:
 * (tiles + grid - 1) slots of one fp32 tile per CTA of a cluster.
 */
#pragma once

#include <stdint.h>

#include "abi/gemm_abi.h"
#include "common/barrier.cuh"
#include "common/tile_scheduler.cuh"
#include "hopper/gemm_sm90_split_k.cuh"

namespace mgpu {
namespace sm90 {
namespace persistent {

/* This CTA's walk beyond the full waves, worked out once by one thread
 * before the warpgroups part (tail_plan) and read from shared memory where
 * needed: nothing of it is kept in registers across the main loops (the
 * producer runs with kProducerRegs). */
struct GemmTailPlan {
    int64_t dp_end;    /* units of the full waves (all units without a tail) */
    int tiles;         /* tail tiles: 0, no tail */
    int length;        /* k-tiles of the tail tiles, end to end */
    int tile[2];       /* pieces 0 and 1: index among the tail tiles, -1 none */
    int kt0[2], kt1[2]; /* and k-tiles */
};

/* First k-tile (of the tail laid end to end) of CTA c's range. */
__device__ __forceinline__ uint32_t tail_begin(uint32_t length, uint32_t grid, uint32_t c)
{
    return length * c / grid;
}

__device__ __forceinline__ void tail_plan(GemmTailPlan &p, const GemmTileScheduler &sched, bool on, int k_tiles)
{
    const int64_t grid = sched.stride();
    p.tiles = on && sched.splits == 1 ? static_cast<int>(mgpu_gemm_tail_tiles(sched.total, grid, k_tiles)) : 0;
    const bool tail = p.tiles > 0;
    p.dp_end = sched.total - p.tiles;
    p.length = p.tiles * k_tiles;
    p.tile[0] = p.tile[1] = -1;
    if (!tail)
        return;
    const uint32_t g = static_cast<uint32_t>(grid), k = static_cast<uint32_t>(k_tiles);
    const uint32_t length = static_cast<uint32_t>(p.length), c = static_cast<uint32_t>(sched.first());
    const uint32_t b = tail_begin(length, g, c), e = tail_begin(length, g, c + 1);
    for (uint32_t j = 0; j < 2; ++j) {
        const uint32_t tt = b / k + j;
        const uint32_t lo = b > tt * k ? b : tt * k;
        const uint32_t hi = e < (tt + 1) * k ? e : (tt + 1) * k;
        if (hi > lo) {
            p.tile[j] = static_cast<int>(tt);
            p.kt0[j] = static_cast<int>(lo - tt * k);
            p.kt1[j] = static_cast<int>(hi - tt * k);
        }
    }
}

/* Walk unit u of this CTA (sched.first(), + sched.stride(), ...): its tile
 * and k-tiles [kt0, kt1); a tail piece has t.split = -1 - (its index among
 * the tail tiles), a unit of the full waves its K slice (>= 0). False past
 * this CTA's last unit. */
__device__ __forceinline__ bool tail_walk(const GemmTailPlan &p, const GemmTileScheduler &sched, int k_tiles,
                                          int64_t u, GemmTile &t, int &kt0, int &kt1)
{
    const int64_t dp_end = p.dp_end;
    if (u < dp_end) {
        t = sched.tile(u);
        sched.k_range(k_tiles, t.split, kt0, kt1);
        return true;
    }
    const int64_t grid = sched.stride();
    if (u >= dp_end + 2 * grid)
        return false;
    const int j = u >= dp_end + grid ? 1 : 0;
    const int tt = p.tile[j];
    if (tt < 0)
        return false;
    t = sched.tile(dp_end + tt);
    t.split = -1 - tt;
    kt0 = p.kt0[j];
    kt1 = p.kt1[j];
    return true;
}

/* The CTAs (clusters) whose ranges touch tail tile t: first..last (the
 * largest c with tail_begin(c) <= x is ((x + 1) * grid - 1) / length). */
__device__ __forceinline__ void tail_contributors(const GemmTailPlan &p, const GemmTileScheduler &sched,
                                                  int k_tiles, int t, int &first, int &last)
{
    const uint32_t grid = static_cast<uint32_t>(sched.stride()), k = static_cast<uint32_t>(k_tiles);
    const uint32_t length = static_cast<uint32_t>(p.length), x0 = static_cast<uint32_t>(t) * k;
    first = static_cast<int>(((x0 + 1) * grid - 1) / length);
    last = static_cast<int>(((x0 + k) * grid - 1) / length);
}

/* The combine of a tail piece (the file's first comment) for 64-column part
 * `part` of the tile, held by the warpgroup that syncs on `barrier_id`.
 * True when this warpgroup goes on to the epilogue with the whole sum in
 * acc. */
template <class Cfg>
__device__ __forceinline__ bool combine_tail(float (&acc)[Cfg::kBM / 2], const mgpu_gemm_args &args,
                                             const GemmTileScheduler &sched, const GemmTailPlan &plan,
                                             int k_tiles, int tail_tile, int part, int barrier_id)
{
    int first, last;
    tail_contributors(plan, sched, k_tiles, tail_tile, first, last);
    if (first == last)
        return true; /* the whole tile lies in this CTA's range */
    constexpr int kQuads = Cfg::kBM / 8; /* float4s per thread */
    constexpr int64_t kSlotQuads = 128 * kQuads;
    /* float4 loads in flight per thread: 8, or 4 where tile_m is not a multiple of 64 (224 rows) */
    constexpr int kLoadBatch = kQuads % 8 == 0 ? 8 : 4;
    static_assert(kQuads % kLoadBatch == 0, "whole load batches");
    /* the runtime's workspace and counters (gemm_plan.c) are laid out for these */
    static_assert(Cfg::kBN == 128 && Cfg::kConsumers == 2, "slots of tile_m x 128 floats, two consumers");
    static_assert(Cfg::kConsumers * 2 == MGPU_GEMM_TAIL_COUNTERS, "two counters per consumer");
    const int n = last - first + 1;
    const int tid = threadIdx.x % 128;
    const int c = static_cast<int>(sched.first()), rank = static_cast<int>(blockIdx.x % Cfg::kClusterN);
    const int64_t slot_step = static_cast<int64_t>(Cfg::kClusterN) * Cfg::kConsumers * kSlotQuads;
    float4 *base = reinterpret_cast<float4 *>(args.workspace) +
                   (static_cast<int64_t>(rank) * Cfg::kConsumers + part) * kSlotQuads + tid;
    int *counters = reinterpret_cast<int *>(args.split_counters) +
                    ((tail_tile * Cfg::kClusterN + rank) * Cfg::kConsumers + part) * 2;

    bool arrived_last = false;
    if (tid == 0)
        arrived_last = atomicAdd(&counters[0], 1) == n - 1;
    if (!named_barrier_sync_or(barrier_id, 128, arrived_last)) {
        park_partial(acc, base + (tail_tile + c) * slot_step);
        named_barrier_sync(barrier_id, 128);
        if (tid == 0) {
            __threadfence();
            atomicAdd(&counters[1], 1);
        }
        return false;
    }
    if (tid == 0) {
        const volatile int *parked = &counters[1];
        while (*parked < n - 1) {
        }
        __threadfence();
        counters[0] = 0; /* every contributor has arrived and parked: for the next launch */
        counters[1] = 0;
    }
    named_barrier_sync(barrier_id, 128);
    /* The sum in contributor order, ((p0 + p1) + p2) + ..., into acc in
     * place, kLoadBatch float4s of a partial in flight per thread (as
     * combine_splits: no registers beside acc but the loads). This CTA's
     * own term p_own is in acc: own 0 (the usual last arriver, whose piece
     * 1 starts the tile: the others' pieces 0 end earlier) adds p1, p2, ...;
     * own 1 adds p0 first (p1 + p0 has the bits of p0 + p1); a later one
     * parks its term too and sums every slot from p0, as the others would. */
    const int own = c - first;
    const float4 *slots = base + (tail_tile + first) * slot_step;
    if (own >= 2)
        park_partial(acc, base + (tail_tile + c) * slot_step);
    const int from = own == 1 ? 2 : 1;
#pragma unroll
    for (int g = 0; g < kQuads; g += kLoadBatch) {
        if (own >= 2)
            take_partial<kLoadBatch, false>(acc, slots, g);
        else if (own == 1)
            take_partial<kLoadBatch, true>(acc, slots, g);
#pragma unroll 1
        for (int i = from; i < n; ++i)
            take_partial<kLoadBatch, true>(acc, slots + i * slot_step, g);
    }
    return true;
}

} // namespace persistent
} // namespace sm90
} // namespace mgpu
