/*
 * Main loops of the persistent Hopper GEMM (gemm_sm90_persistent.cuh states
 * the schedule): the producer thread's TMA loop over the work units and their
 * k-tiles, and one consumer warpgroup's wgmma loop over one unit's k-tiles,
 * for 16-bit operands (consume) and for fp8 with two-level accumulation
 * (consume_fp8). Stage s of the kStages-deep ring is guarded by full[s]
 * (producer -> consumers: the TMA bytes have landed) and empty[s] (consumers
 * -> producers: every consumer warp of every CTA of the cluster has finished
 * reading it); stage and phase run on across units.
 *
 * The tensor cores compute D^T: the wgmma A operand is B's 64-column slice of
 * this consumer (rows n), the wgmma B operand is the A tile (rows m). Every
 * operand tile is a stack of 128-byte swizzled rows (K-major) or of 64-element
 * chunks of 64 K-rows (MN-major, 16-bit only); Cfg says which.
 */
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "abi/gemm_abi.h"
#include "common/async_copy.cuh"
#include "common/cluster.cuh"
#include "common/tile_scheduler.cuh"
#include "hopper/gemm_sm90_tail_split.cuh"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {
namespace persistent {

template <class Cfg>
__device__ __forceinline__ void produce(const CUtensorMap *tma_a, const CUtensorMap *tma_b, uint8_t *a_tiles,
                                        uint8_t *b_tiles, uint64_t *full, uint64_t *empty,
                                        const GemmTileScheduler &sched, const mgpu_gemm_args &args,
                                        const GemmTailPlan *tail_plan)
{
    tma_prefetch_map(tma_a);
    tma_prefetch_map(tma_b);
    const int num_k_tiles = (args.k + Cfg::kBK - 1) / Cfg::kBK;
    const uint32_t rank = Cfg::kClusterN > 1 ? cluster_rank() : 0;
    int stage = 0;
    uint32_t phase = 0; /* parity of the current round through the stages */
    /* One unit's k-tiles [kt0, kt1) of tile t into the stage ring. */
    const auto load_unit = [&](const GemmTile &t, int kt0, int kt1) {
        const int m0 = t.m_tile * Cfg::kBM, n0 = t.n_tile * Cfg::kBN;
        const int a_batch = args.a_broadcast ? 0 : t.batch, b_batch = args.b_broadcast ? 0 : t.batch;
        for (int kt = kt0; kt < kt1; ++kt) {
            mbar_wait(&empty[stage], phase ^ 1);
            mbar_arrive_expect_tx(&full[stage], Cfg::kStageBytes);
            const int k0 = kt * Cfg::kBK;
            uint8_t *a = a_tiles + stage * Cfg::kATileBytes;
            uint8_t *b = b_tiles + stage * Cfg::kBTileBytes;
            if constexpr (Cfg::kBKMajor) {
                tma_load_3d(b, tma_b, &full[stage], k0, n0, b_batch);
            } else {
#pragma unroll
                for (int i = 0; i < Cfg::kBN / 64; ++i)
                    tma_load_3d(b + i * Cfg::kChunkBytes, tma_b, &full[stage], n0 + 64 * i, k0, b_batch);
            }
            if constexpr (Cfg::kClusterN == 1) {
                if constexpr (Cfg::kAKMajor) {
                    tma_load_3d(a, tma_a, &full[stage], k0, m0, a_batch);
                } else {
#pragma unroll
                    for (int i = 0; i < Cfg::kBM / 64; ++i)
                        tma_load_3d(a + i * Cfg::kChunkBytes, tma_a, &full[stage], m0 + 64 * i, k0, a_batch);
                }
            } else {
                /* This CTA's part of the shared A tile, to both CTAs of the cluster. */
                constexpr uint16_t kAllCtas = (1u << Cfg::kClusterN) - 1;
                const int row0 = static_cast<int>(rank) * Cfg::kAPartRows;
                if constexpr (Cfg::kAKMajor) {
                    tma_load_3d_multicast(a + row0 * 128, tma_a, &full[stage], k0, m0 + row0, a_batch, kAllCtas);
                } else {
#pragma unroll
                    for (int i = 0; i < Cfg::kAPartRows / 64; ++i)
                        tma_load_3d_multicast(a + (row0 / 64 + i) * Cfg::kChunkBytes, tma_a, &full[stage],
                                              m0 + row0 + 64 * i, k0, a_batch, kAllCtas);
                }
            }
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
    };
    if constexpr (Cfg::kTailSplit) { /* the walk of the consumers (tail_walk) */
        const GemmTailPlan &tail = *tail_plan;
        for (int64_t u = sched.first(); u < tail.dp_end; u += sched.stride()) {
            const GemmTile t = sched.tile(u);
            int kt0, kt1;
            sched.k_range(num_k_tiles, t.split, kt0, kt1);
            load_unit(t, kt0, kt1);
        }
#pragma unroll 1
        for (int j = 0; j < 2 && tail.tile[j] >= 0; ++j)
            load_unit(sched.tile(tail.dp_end + tail.tile[j]), tail.kt0[j], tail.kt1[j]);
    } else { /* the same loads, the units of every CTA in turn */
        for (int64_t u = sched.first(); u < sched.total; u += sched.stride()) {
            const GemmTile t = sched.tile(u);
            int kt0, kt1;
            sched.k_range(num_k_tiles, t.split, kt0, kt1);
            load_unit(t, kt0, kt1);
        }
    }
}

/* Lane 0 of each consumer warp: this warp is done reading stage `s` (in
 * every CTA of the cluster, whose producers multicast into it). */
template <class Cfg>
__device__ __forceinline__ void release_stage(uint64_t *empty, int s)
{
#pragma unroll
    for (int r = 0; r < Cfg::kClusterN; ++r) {
        if constexpr (Cfg::kClusterN == 1)
            mbar_arrive(&empty[s]);
        else
            mbar_arrive_cluster(&empty[s], r);
    }
}

/* Issues one k-tile's wgmma batch of consumer warpgroup `consumer` from stage
 * `stage` into d and commits it as one group. wgmma A = B's slice (rows n),
 * wgmma B = the A tile (rows m). K-major: the next k-step starts 32 bytes
 * further along the row; MN-major (16-bit only): 16 rows of 128 bytes
 * further. The batch's first instruction adds to d when `accumulate`, else
 * overwrites it. */
template <class Cfg>
__device__ __forceinline__ void issue_ktile(float (&d)[Cfg::kBM / 2], uint32_t a_tiles, uint32_t b_tiles, int stage,
                                            int consumer, bool accumulate)
{
    using TA = typename Cfg::ElementA;
    using TB = typename Cfg::ElementB;
    constexpr uint32_t kBStep = Cfg::kBKMajor ? kWgmmaKBytes : 2048;
    constexpr uint32_t kAStep = Cfg::kAKMajor ? kWgmmaKBytes : 2048;
    constexpr uint32_t kBLbo = Cfg::kBKMajor ? 16 : Cfg::kChunkBytes; /* K-major: unused (16 by convention) */
    constexpr uint32_t kALbo = Cfg::kAKMajor ? 16 : Cfg::kChunkBytes;
    constexpr uint32_t kSbo = kSwizzleAtomBytes; /* 8 rows of 128 bytes */
    const uint64_t desc_b = wgmma_desc(b_tiles + stage * Cfg::kBTileBytes + consumer * Cfg::kChunkBytes, kBLbo, kSbo);
    const uint64_t desc_a = wgmma_desc(a_tiles + stage * Cfg::kATileBytes, kALbo, kSbo);
    wgmma_fence_operands(d);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < Cfg::kKSteps; ++j)
        wgmma_m64_kstep<Cfg::kBM, TB, TA, !Cfg::kBKMajor, !Cfg::kAKMajor>(
            d, wgmma_desc_advance(desc_b, j * kBStep), wgmma_desc_advance(desc_a, j * kAStep),
            j > 0 || accumulate ? 1u : 0u);
    wgmma_commit_group();
    wgmma_fence_operands(d);
}

/* The descriptor low words (wgmma_desc_lo) of one k-tile's batch: the A tile
 * of a stage and this consumer's slice of its B tile. consume and consume_fp8
 * carry them from stage to stage, so that a k-tile's descriptors are in
 * registers before the wait for its data. */
struct DescLo {
    uint32_t a, b;
};

/* The next stage of the ring: its index, its round's parity, and the low
 * words moved on by one tile (back to the first stage's at the wrap). */
template <class Cfg>
__device__ __forceinline__ void next_stage(int &stage, uint32_t &phase, DescLo &lo)
{
    constexpr uint32_t kALoStage = Cfg::kATileBytes >> 4, kBLoStage = Cfg::kBTileBytes >> 4;
    if (++stage == Cfg::kStages) {
        stage = 0;
        phase ^= 1;
        lo.a -= (Cfg::kStages - 1) * kALoStage;
        lo.b -= (Cfg::kStages - 1) * kBLoStage;
    } else {
        lo.a += kALoStage;
        lo.b += kBLoStage;
    }
}

template <class Cfg>
__device__ __forceinline__ DescLo desc_lo(uint32_t a_tiles, uint32_t b_tiles, int consumer, int stage)
{
    constexpr uint32_t kBLbo = Cfg::kBKMajor ? 16 : Cfg::kChunkBytes; /* K-major: unused (16 by convention) */
    constexpr uint32_t kALbo = Cfg::kAKMajor ? 16 : Cfg::kChunkBytes;
    const uint32_t c = static_cast<uint32_t>(consumer), s = static_cast<uint32_t>(stage);
    return {wgmma_desc_lo(a_tiles + s * Cfg::kATileBytes, kALbo),
            wgmma_desc_lo(b_tiles + s * Cfg::kBTileBytes + c * Cfg::kChunkBytes, kBLbo)};
}

/* issue_ktile from the stage's low words: the k-step j adds its offset in
 * 16-byte units (K-major 32 bytes, MN-major 2048) and joins the constant high
 * word (SBO, swizzle); the same descriptors as issue_ktile. */
template <class Cfg>
__device__ __forceinline__ void issue_ktile_lo(float (&d)[Cfg::kBM / 2], const DescLo &lo, bool accumulate)
{
    using TA = typename Cfg::ElementA;
    using TB = typename Cfg::ElementB;
    constexpr uint32_t kBStep = (Cfg::kBKMajor ? kWgmmaKBytes : 2048) >> 4;
    constexpr uint32_t kAStep = (Cfg::kAKMajor ? kWgmmaKBytes : 2048) >> 4;
    wgmma_fence_operands(d);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < Cfg::kKSteps; ++j)
        wgmma_m64_kstep<Cfg::kBM, TB, TA, !Cfg::kBKMajor, !Cfg::kAKMajor>(
            d, wgmma_desc_join(lo.b + j * kBStep, kSwizzleAtomBytes),
            wgmma_desc_join(lo.a + j * kAStep, kSwizzleAtomBytes), j > 0 || accumulate ? 1u : 0u);
    wgmma_commit_group();
    wgmma_fence_operands(d);
}

/* The dynamic shared memory of the persistent kernel, and the address of its
 * first A tile: the base rounded up to 1024 bytes (128-byte swizzled tiles;
 * kSmemBytes has the slack), then kStages A tiles, kStages B tiles and the
 * epilogue buffers (gemm_persistent). */
extern __shared__ __align__(16) uint8_t mgpu_gemm_ws_smem[];

__device__ __forceinline__ uint32_t gemm_tiles_u32()
{
    return (smem_u32(mgpu_gemm_ws_smem) + 1023u) & ~1023u;
}

/* fp8 k-tile batches (consume_fp8) from descriptor low words (wgmma_desc_lo):
 * those of the A tile and of this consumer's B slice in the unit's first
 * stage are worked out once per unit (the consumer index broadcast from lane
 * 0), consume_fp8 moves them on by one stage per k-tile, and a batch adds 32
 * bytes (two 16-byte units) per k-step and joins the constant high word. The
 * compiler keeps the low words in general registers (two moves into uniform
 * registers per wgmma), but no address arithmetic is left between the wait
 * for one chain and the next chain's first wgmma:
 * docs/decisions/034-fp8-gemm-promotion-schedules.md. */
template <class Cfg>
__device__ __forceinline__ DescLo fp8_desc_lo(int consumer, int stage)
{
    static_assert(Cfg::kFp8 && Cfg::kAKMajor && Cfg::kBKMajor, "fp8 operands, both K-major");
    /* The operand tiles' shared-memory addresses from the dynamic shared
     * memory symbol itself rather than from the generic tile pointers. */
    const uint32_t a_tiles = gemm_tiles_u32();
    const uint32_t b_tiles = a_tiles + Cfg::kStages * Cfg::kATileBytes;
    const uint32_t c = static_cast<uint32_t>(consumer), s = static_cast<uint32_t>(stage);
    return {wgmma_desc_lo(a_tiles + s * Cfg::kATileBytes, 16),
            wgmma_desc_lo(b_tiles + s * Cfg::kBTileBytes + c * Cfg::kChunkBytes, 16)};
}

template <class Cfg>
__device__ __forceinline__ void issue_ktile_fp8(float (&d)[Cfg::kBM / 2], const DescLo &lo)
{
    using TA = typename Cfg::ElementA;
    using TB = typename Cfg::ElementB;
    wgmma_fence_operands(d);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < Cfg::kKSteps; ++j)
        wgmma_m64_kstep<Cfg::kBM, TB, TA, false, false>(
            d, wgmma_desc_join(lo.b + j * (kWgmmaKBytes >> 4), kSwizzleAtomBytes),
            wgmma_desc_join(lo.a + j * (kWgmmaKBytes >> 4), kSwizzleAtomBytes), j > 0 ? 1u : 0u);
    wgmma_commit_group();
    wgmma_fence_operands(d);
}

/* No work between the last wgmma batch's issue and its completion. */
struct NoHook {
    __device__ __forceinline__ void operator()() const {}
};

/* One unit's main loop for consumer warpgroup `consumer`: acc (D^T slice,
 * 64 columns x kBM rows) = sum over the unit's k-tiles (the first k-tile's
 * batch overwrites acc). before_drain() runs once the last batch is issued,
 * while the tensor cores still work on it (the caller's set-up of its next
 * unit). */
template <class Cfg, class Hook = NoHook>
__device__ __forceinline__ void consume(float (&acc)[Cfg::kBM / 2], uint32_t a_tiles, uint32_t b_tiles,
                                        uint64_t *full, uint64_t *empty, int kt0, int kt1, int consumer,
                                        int &stage, uint32_t &phase, const Hook &before_drain = Hook{})
{
    const bool signals = (threadIdx.x % 32) == 0;

    if (kt1 <= kt0) { /* no k-tile: nothing overwrites acc */
#pragma unroll
        for (int i = 0; i < Cfg::kBM / 2; ++i)
            acc[i] = 0.0f;
    }

    int prev_stage = stage;
    if constexpr (Cfg::kFp8) { /* the fp8 entries' debugging loop (args.fp8_no_promotion) */
        for (int kt = kt0; kt < kt1; ++kt) {
            mbar_wait(&full[stage], phase);
            issue_ktile<Cfg>(acc, a_tiles, b_tiles, stage, consumer, kt > kt0);

            /* Keep this k-tile's batch in flight; the previous one is done. */
            wgmma_wait_group<1>();
            wgmma_fence_operands(acc);
            if (kt > kt0 && signals)
                release_stage<Cfg>(empty, prev_stage);
            prev_stage = stage;
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
    } else {
        /* The k-tile's descriptor low words are carried from the previous
         * k-tile (one add each), so that between the wait for its data and
         * the batch's first wgmma only the fences, the moves into uniform
         * registers and the join with the constant high word remain. The
         * empty asm keeps the words formed before the wait (the compiler
         * cannot re-derive them from the stage after it); nvcc 13.0 emits
         * the same SASS without it. */
        DescLo lo = desc_lo<Cfg>(a_tiles, b_tiles, consumer, stage);
        for (int kt = kt0; kt < kt1; ++kt) {
            asm volatile("" : "+r"(lo.a), "+r"(lo.b));
            mbar_wait(&full[stage], phase);
            issue_ktile_lo<Cfg>(acc, lo, kt > kt0);

            /* Keep this k-tile's batch in flight; the previous one is done. */
            wgmma_wait_group<1>();
            wgmma_fence_operands(acc);
            if (kt > kt0 && signals)
                release_stage<Cfg>(empty, prev_stage);
            prev_stage = stage;
            next_stage<Cfg>(stage, phase, lo);
        }
    }
    before_drain();
    wgmma_wait_group<0>();
    wgmma_fence_operands(acc);
    if (signals)
        release_stage<Cfg>(empty, prev_stage);
}

/* The fp8 main loop (two-level accumulation, gemm_sm90_persistent.cuh): acc =
 * sum over the unit's k-tiles of part, each k-tile's part summed by one wgmma
 * chain (kPromoteKTiles == 1). Once a chain is issued, the warpgroup frees
 * the previous k-tile's stage (its batch has completed), moves the descriptor
 * words on to the next stage, waits for the next k-tile's data (the full
 * barrier's latency runs under the chain), then for the chain, and adds part
 * into acc; from there to the next chain's first wgmma there is no address
 * arithmetic. The unit's last stage is freed after the loop. */
template <class Cfg>
__device__ __forceinline__ void consume_fp8(float (&acc)[Cfg::kBM / 2], float (&part)[Cfg::kBM / 2],
                                            uint64_t *full, uint64_t *empty, int kt0, int kt1, int consumer,
                                            int &stage, uint32_t &phase)
{
    static_assert(Cfg::kPromoteKTiles == 1, "a promotion after every k-tile's chain");
    const bool signals = (threadIdx.x % 32) == 0;
    const int n = kt1 - kt0;
    int s = stage;
    uint32_t ph = phase;
    DescLo lo = fp8_desc_lo<Cfg>(__shfl_sync(0xffffffffu, consumer, 0), s);

#pragma unroll
    for (int i = 0; i < Cfg::kBM / 2; ++i)
        acc[i] = 0.0f;

    if (n > 0)
        mbar_wait(&full[s], ph);
    int issued = s;
    for (int i = 0; i < n; ++i) {
        issue_ktile_fp8<Cfg>(part, lo);
        /* The previous k-tile's stage, off the path from the wait for this
         * chain to the next chain's issue. */
        if (i > 0 && signals)
            release_stage<Cfg>(empty, issued);
        issued = s;
        next_stage<Cfg>(s, ph, lo);
        if (i + 1 < n)
            mbar_wait(&full[s], ph);
        wgmma_wait_group<0>();
        wgmma_fence_operands(part);
#pragma unroll
        for (int r = 0; r < Cfg::kBM / 2; ++r)
            acc[r] += part[r];
    }
    if (n > 0 && signals)
        release_stage<Cfg>(empty, issued);
    stage = s;
    phase = ph;
}

} // namespace persistent
} // namespace sm90
} // namespace mgpu
