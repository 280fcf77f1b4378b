/*
 * Ping-pong consumers of the persistent Hopper GEMM (gemm_sm90_persistent.cuh
 * has the shell, the producer and the cooperative consumers): each consumer
 * warpgroup owns whole tiles of D, and the two take turns on the tensor
 * cores, so that one runs its epilogue (split-K combine, fused bias and
 * activation, stores) while the other issues wgmma.
 *
 * Tiles are kBM x 128 (kBM = 128: D rows, the wgmma N); a warpgroup computes
 * its tile as two m64 parts (D columns n0 .. n0 + 63 and n0 + 64 .. n0 + 127,
 * two accumulator sets of kBM / 2 floats). The CTA's units (common/
 * tile_scheduler.cuh: first, first + stride, ...) alternate between the
 * consumers: consumer c takes the units of even (c = 0) or odd (c = 1)
 * position. The producer thread is the cooperative one: it loads every
 * unit's k-tiles in unit order into the shared stage ring, and the consumer
 * whose unit it is reads them (empty[s] counts that warpgroup's 4 warps per
 * CTA of the cluster). Each consumer walks the ring's stage / phase over the
 * other's units too (their k-tile counts are known from the scheduler).
 *
 * Order (named barriers kOrderBarrier + c, 256 threads: the waiting
 * warpgroup syncs, the other arrives):
 *
 *   consumer c, for each of its units:
 *     wait for its turn (not before consumer 0's first unit)
 *     main loop: for each k-tile: wait full[s]; 2 x 4 wgmma m64 n(kBM) k16;
 *       commit; wait_group 1 -> release the previous k-tile's stage
 *     pass the turn (if the other has a next unit): the other's first
 *       wgmma batch queues behind this one's last
 *     wait_group 0, release the last stage
 *     [split-K combine of both parts]; epilogue of both parts (TMA stores)
 *
 * The main loops never overlap, so each unit's wgmma stream is one warpgroup
 * issuing back to back; the epilogue of one tile runs under the main loop of
 * the next.
 */
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "abi/gemm_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/cluster.cuh"
#include "common/numeric.cuh"
#include "common/tile_scheduler.cuh"
#include "hopper/gemm_sm90_epilogue.cuh"
#include "hopper/gemm_sm90_mainloop.cuh"
#include "hopper/gemm_sm90_split_k.cuh"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {
namespace pingpong {

/* Named barrier ids: 1 + c is consumer c's own (epilogue, split-K), kOrderBarrier + c its turn. */
constexpr int kOrderBarrier = 3;
constexpr int kTurnThreads = 256; /* the two consumer warpgroups */

/* Moves the ring position n k-tiles on. */
template <class Cfg>
__device__ __forceinline__ void advance(int &stage, uint32_t &phase, int n)
{
    int wraps = n / Cfg::kStages;
    stage += n - wraps * Cfg::kStages;
    if (stage >= Cfg::kStages) {
        stage -= Cfg::kStages;
        ++wraps;
    }
    phase ^= static_cast<uint32_t>(wraps & 1);
}

/* The k-tiles unit u reads (0 past the last unit). */
__device__ __forceinline__ int unit_k_tiles(const GemmTileScheduler &sched, int64_t u, int num_k_tiles)
{
    if (u >= sched.total)
        return 0;
    const GemmTile t = sched.tile(u);
    int kt0, kt1;
    sched.k_range(num_k_tiles, t.split, kt0, kt1);
    return kt1 - kt0;
}

/* One k-tile's wgmma batch for both 64-column parts of the tile, from stage
 * `stage`, committed as one group (layouts as persistent::issue_ktile). */
template <class Cfg>
__device__ __forceinline__ void issue_ktile(float (&d0)[Cfg::kBM / 2], float (&d1)[Cfg::kBM / 2], uint32_t a_tiles,
                                            uint32_t b_tiles, int stage)
{
    using TA = typename Cfg::ElementA;
    using TB = typename Cfg::ElementB;
    constexpr uint32_t kBStep = Cfg::kBKMajor ? kWgmmaKBytes : 2048;
    constexpr uint32_t kAStep = Cfg::kAKMajor ? kWgmmaKBytes : 2048;
    constexpr uint32_t kBLbo = Cfg::kBKMajor ? 16 : Cfg::kChunkBytes;
    constexpr uint32_t kALbo = Cfg::kAKMajor ? 16 : Cfg::kChunkBytes;
    constexpr uint32_t kSbo = kSwizzleAtomBytes;
    const uint64_t desc_b0 = wgmma_desc(b_tiles + stage * Cfg::kBTileBytes, kBLbo, kSbo);
    const uint64_t desc_b1 = wgmma_desc(b_tiles + stage * Cfg::kBTileBytes + Cfg::kChunkBytes, kBLbo, kSbo);
    const uint64_t desc_a = wgmma_desc(a_tiles + stage * Cfg::kATileBytes, kALbo, kSbo);
    wgmma_fence_operands(d0);
    wgmma_fence_operands(d1);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < Cfg::kKSteps; ++j) {
        const uint64_t a = wgmma_desc_advance(desc_a, j * kAStep);
        wgmma_m64_kstep<Cfg::kBM, TB, TA, !Cfg::kBKMajor, !Cfg::kAKMajor>(d0, wgmma_desc_advance(desc_b0, j * kBStep),
                                                                          a, 1u);
        wgmma_m64_kstep<Cfg::kBM, TB, TA, !Cfg::kBKMajor, !Cfg::kAKMajor>(d1, wgmma_desc_advance(desc_b1, j * kBStep),
                                                                          a, 1u);
    }
    wgmma_commit_group();
    wgmma_fence_operands(d0);
    wgmma_fence_operands(d1);
}

/* One unit's main loop; passes the turn to the other consumer (barrier
 * `turn_to`, when >= 0) as soon as its last batch is issued. */
template <class Cfg>
__device__ __forceinline__ void consume(float (&acc0)[Cfg::kBM / 2], float (&acc1)[Cfg::kBM / 2], uint32_t a_tiles,
                                        uint32_t b_tiles, uint64_t *full, uint64_t *empty, int kt0, int kt1,
                                        int &stage, uint32_t &phase, int turn_to)
{
    const bool signals = (threadIdx.x % 32) == 0;
#pragma unroll
    for (int i = 0; i < Cfg::kBM / 2; ++i) {
        acc0[i] = 0.0f;
        acc1[i] = 0.0f;
    }
    int prev_stage = stage;
    for (int kt = kt0; kt < kt1; ++kt) {
        mbar_wait(&full[stage], phase);
        issue_ktile<Cfg>(acc0, acc1, a_tiles, b_tiles, stage);
        /* Keep this k-tile's batch in flight; the previous one is done. */
        wgmma_wait_group<1>();
        wgmma_fence_operands(acc0);
        wgmma_fence_operands(acc1);
        if (kt > kt0 && signals)
            persistent::release_stage<Cfg>(empty, prev_stage);
        prev_stage = stage;
        if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
        }
    }
    if (turn_to >= 0)
        named_barrier_arrive(turn_to, kTurnThreads);
    wgmma_wait_group<0>();
    wgmma_fence_operands(acc0);
    wgmma_fence_operands(acc1);
    if (signals)
        persistent::release_stage<Cfg>(empty, prev_stage);
}

template <class Cfg, class OutT>
__device__ __forceinline__ void store_part(float (&acc)[Cfg::kBM / 2], const mgpu_gemm_args &args,
                                           const GemmEpilogue &ep, const CUtensorMap *tma_c, uint8_t *bufs, int &buf,
                                           int row0, int col0, int out, int consumer)
{
    sm90::store_tile<Cfg::kBM, OutT, false>(acc, args, ep, tma_c, bufs, buf, row0, col0, out, 1 + consumer);
}

template <class Cfg>
__device__ __forceinline__ void store_part_any(float (&acc)[Cfg::kBM / 2], const mgpu_gemm_args &args,
                                               const GemmEpilogue &ep, const CUtensorMap *tma_c, uint8_t *bufs,
                                               int &buf, int row0, int col0, int out, int consumer)
{
    switch (args.c_dtype) {
    case MGPU_ABI_F16:
        store_part<Cfg, __half>(acc, args, ep, tma_c, bufs, buf, row0, col0, out, consumer);
        break;
    case MGPU_ABI_BF16:
        store_part<Cfg, __nv_bfloat16>(acc, args, ep, tma_c, bufs, buf, row0, col0, out, consumer);
        break;
    default:
        store_part<Cfg, float>(acc, args, ep, tma_c, bufs, buf, row0, col0, out, consumer);
        break;
    }
}

/* Consumer warpgroup `consumer` (0 or 1) of the ping-pong schedule: all its
 * units, main loop to stores. */
template <class Cfg>
__device__ __forceinline__ void consumer_units(uint8_t *a_tiles, uint8_t *b_tiles, uint8_t *epi_bufs, uint64_t *full,
                                               uint64_t *empty, const GemmTileScheduler &sched,
                                               const CUtensorMap *tma_c, const mgpu_gemm_args &args, int consumer)
{
    static_assert(Cfg::kPingPong && Cfg::kConsumers == 2, "two ping-pong consumers");
    __shared__ int last_flags[2];
    const int num_k_tiles = (args.k + Cfg::kBK - 1) / Cfg::kBK;
    const int64_t stride = sched.stride();
    uint8_t *bufs = epi_bufs + consumer * kEpiBufs * kEpiBufBytes;
    const GemmScales scales(args);
    int stage = 0, buf = 0;
    uint32_t phase = 0;
    float acc0[Cfg::kBM / 2], acc1[Cfg::kBM / 2];
    int64_t u = sched.first();
    if (consumer == 1) {
        advance<Cfg>(stage, phase, unit_k_tiles(sched, u, num_k_tiles)); /* consumer 0's first unit */
        u += stride;
    }
    for (bool first = true; u < sched.total; u += 2 * stride, first = false) {
        const GemmTile t = sched.tile(u);
        int kt0, kt1;
        sched.k_range(num_k_tiles, t.split, kt0, kt1);
        if (consumer == 1 || !first)
            named_barrier_sync(kOrderBarrier + consumer, kTurnThreads); /* the other's main loop is issued */
        const bool other_next = u + stride < sched.total;
        consume<Cfg>(acc0, acc1, smem_u32(a_tiles), smem_u32(b_tiles), full, empty, kt0, kt1, stage, phase,
                     other_next ? kOrderBarrier + (1 - consumer) : -1);
        if (other_next)
            advance<Cfg>(stage, phase, unit_k_tiles(sched, u + stride, num_k_tiles)); /* the other's unit */

        bool store0 = true, store1 = true;
        if (args.splits > 1) {
            store0 = persistent::combine_splits<Cfg>(acc0, args, sched, t, 0, 1 + consumer, &last_flags[consumer]);
            store1 = persistent::combine_splits<Cfg>(acc1, args, sched, t, 1, 1 + consumer, &last_flags[consumer]);
        }
        GemmEpilogue ep(args, scales);
        ep.select_batch(t.batch);
        const int row0 = t.m_tile * Cfg::kBM;
        const int col0 = t.n_tile * Cfg::kBN;
        if (store0)
            store_part_any<Cfg>(acc0, args, ep, tma_c, bufs, buf, row0, col0, t.batch, consumer);
        if (store1)
            store_part_any<Cfg>(acc1, args, ep, tma_c, bufs, buf, row0, col0 + 64, t.batch, consumer);
    }
    if ((threadIdx.x % 128) == 0)
        tma_store_drain();
}

} // namespace pingpong
} // namespace sm90
} // namespace mgpu
