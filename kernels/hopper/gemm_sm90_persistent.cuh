/*
 * Persistent, warp-specialized Hopper (sm_90a) GEMM: D = epilogue(op(A)*op(B))
 * with the epilogue of common/numeric.cuh (alpha, operand and output scales,
 * beta * C, bias, ReLU / GELU; column-major, BLAS conventions:
 * abi/gemm_abi.h), optionally split along K. Operands are fp16 / bf16 (any
 * layout) or fp8 e4m3 / e5m2 (both K-major: cuBLAS's "TN").
 *
 * The grid is at most one CTA per SM (or one cluster per two SMs); each CTA
 * walks work units (tile_m x tile_n tiles of D, per batch and K slice) in the
 * order of common/tile_scheduler.cuh. The tensor cores compute D^T: the wgmma
 * M side is D's columns (B's n), the wgmma N side is D's rows (A's m), so the
 * accumulator pairs are contiguous in column-major D and the epilogue
 * (gemm_sm90_epilogue.cuh) writes 16-byte granules.
 *
 * Schedule (kThreads = 384: one producer and two consumer warpgroups; 192 x
 * 192 tiles have three consumers, 512 threads, and one epilogue buffer each):
 *
 *   producer warpgroup (setmaxnreg.dec to kProducerRegs), one thread:
 *     for each unit, for each k-tile of its K slice, stage s, round parity p:
 *       wait empty[s] parity p^1      (every consumer warp of the cluster is done with s)
 *       arrive_expect_tx(full[s], kStageBytes)
 *       TMA B tile (n0.., 64 k) -> stage s;  TMA A tile (m0.., 64 k) -> stage s
 *       (2-CTA cluster along N: each CTA loads half the A tile and multicasts it
 *        to both CTAs; the two CTAs' tiles share m0)
 *   consumer warpgroups c = 0 .. kConsumers - 1 (setmaxnreg.inc to kConsumerRegs); consumer c
 *   owns D columns [n0 + 64c, n0 + 64c + 64) and all tile_m rows of the unit:
 *     16-bit: for each unit, for each k-tile:
 *       wait full[s] parity p; 4 x wgmma m64 n(tile_m) k16 (B slice x A tile),
 *       the unit's first one overwriting acc (scale-d 0: no zeroing); commit
 *       (the batch's descriptor low words are carried from the previous
 *       k-tile: between the wait and the first wgmma only the fences, the
 *       words' moves into uniform registers and their join remain)
 *       wait_group 1 -> the previous k-tile's stage is free: its warps arrive on empty
 *     after the last k-tile's batch is issued, the next unit's tile and
 *     k-tiles are worked out (integer divisions) while the tensor cores
 *     finish it; wait_group 0, release the last stage (the producer is
 *     already filling the stages with the next unit's k-tiles), then the
 *     epilogue: TMA stores that drain while the next unit's main loop runs.
 *     (The tensor cores idle from the unit's last wgmma to the next unit's
 *     first: everything on that path is per-tile cost, which weighs most
 *     when K is short, e.g. strided batches of 1024^3;
 *     docs/decisions/026-gemm-batched-per-tile-cost.md.)
 *     split-K: before the epilogue the unit parks its fp32 partial in the
 *     workspace and counts itself in; only the tile's last unit to arrive
 *     goes on, with the slots summed in split order (combine_splits), to the
 *     epilogue. One launch, no reduction kernel, and the same bits whichever
 *     unit finishes last.
 *     split-K tail (args.tail_split; 16-bit cooperative rows with two
 *     consumers): the units past the last full wave of the grid are cut
 *     along K into one range per CTA, each CTA's one or two pieces walked
 *     after its whole units; a piece's partial is summed with the others of
 *     its tile in a fixed order by whichever contributor arrives last
 *     (gemm_sm90_tail_split.cuh), which then runs the epilogue.
 *     fp8 (two-level accumulation): the tensor cores sum an fp8 wgmma chain at
 *     reduced precision, so each k-tile (kPromoteKTiles = 1) runs its
 *     4 x wgmma m64 n(tile_m) k32 into a second register set `part` (the
 *     chain's first wgmma overwrites it); with the chain issued, the
 *     consumer frees the previous k-tile's stage, waits for the next
 *     k-tile's full barrier, then wait_group 0, then acc += part in fp32.
 *     The other consumer warpgroup's wgmma keeps the tensor cores busy
 *     meanwhile. The chain's descriptors are low words carried from stage
 *     to stage (from the shared-memory symbol and a warp-uniform consumer
 *     index), so no address arithmetic lies between one chain's wait and
 *     the next chain's issue.
 *     (A promotion overlapped with this warpgroup's own next chain, with
 *     a chain of an earlier k-tile still pending while its registers are
 *     read, makes ptxas serialize every wgmma of the kernel: ptxas info
 *     C7514, checked by tests/sass_sm90.sh; the variants measured are in
 *     docs/decisions/018-gemm-fused-epilogue-cooperative.md and
 *     docs/decisions/034-fp8-gemm-promotion-schedules.md.)
 *     MGPU_DEBUG_FP8_NO_PROMOTION (args.fp8_no_promotion) sums the whole unit
 *     in one chain: a debugging switch that shows what the promotion buys.
 *
 * Barriers: full[s] (1 arrival + the stage's TMA bytes), empty[s] (one arrival
 * per consumer warp of each CTA of the cluster). Stages and parities run on
 * across units, so the pipeline never drains between tiles.
 *
 * Shared memory (dynamic, base rounded up to 1024 bytes): kStages A tiles,
 * kStages B tiles, then 2 x 8 KB epilogue buffers per consumer. Operand tiles
 * are 128-byte-swizzled TMA boxes: a K-major operand is
 * rows x 128 bytes (64 16-bit or 128 fp8 elements of K); an M/N-major one
 * (16-bit only) is 64-element-wide chunks of 64 K-rows (8 KB each), the
 * MN-major canonical wgmma layout with LBO = 8 KB. A k-tile is one 128-byte
 * row of K whatever the element size, so both kinds share the layout.
 *
 * The 64-column tiles (kBN == 64, small m: more CTAs streaming B) have one
 * consumer warpgroup (256 threads) and no register reallocation.
 *
 * That is the cooperative schedule. With kPingPong each consumer warpgroup
 * owns whole 128 x 128 tiles instead and the two take turns on the tensor
 * cores (gemm_sm90_pingpong.cuh); the producer and the barriers are the same.
 *
 * Files by role: this shell (configuration, barriers, the two branches);
 * gemm_sm90_mainloop.cuh (produce, consume, consume_fp8);
 * gemm_sm90_pingpong.cuh (the ping-pong consumers);
 * gemm_sm90_split_k.cuh (combine_splits); gemm_sm90_tail_split.cuh (the
 * split-K tail's walk and combine); gemm_sm90_epilogue.cuh (fused
 * epilogue, TMA or direct stores); common/tile_scheduler.cuh (unit order and
 * K slices); wgmma.cuh (the tensor-core instructions).
 */
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

#include "abi/gemm_abi.h"
#include "common/async_copy.cuh"
#include "common/cluster.cuh"
#include "common/grid_dependency.cuh"
#include "common/tile_scheduler.cuh"
#include "hopper/gemm_sm90_epilogue.cuh"
#include "hopper/gemm_sm90_mainloop.cuh"
#include "hopper/gemm_sm90_pingpong.cuh"
#include "hopper/gemm_sm90_split_k.cuh"
#include "hopper/gemm_sm90_tail_split.cuh"
#include "hopper/warpgroup.cuh"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {

/* Schedules of the consumer warpgroups (gen/variants.h, enum gen_gemm_schedule). */
constexpr int kScheduleCooperative = 0; /* both consumers on each tile (entry names _ws_) */
constexpr int kSchedulePingPong = 1;    /* a whole tile per consumer, in turns (_pp_) */

template <class TA, class TB, bool kAKMajor_, bool kBKMajor_, int kBM_, int kBN_, int kStages_, int kClusterN_,
          int kSchedule_ = kScheduleCooperative>
struct PersistentGemmConfig {
    using ElementA = TA;
    using ElementB = TB;
    static constexpr bool kFp8 = kIsFp8<TA>;
    static constexpr bool kAKMajor = kAKMajor_;
    static constexpr bool kBKMajor = kBKMajor_;
    static constexpr int kBM = kBM_; /* D rows per tile: the wgmma N (16-bit: any multiple of 16 up to 256) */
    static constexpr int kBN = kBN_; /* D columns per tile: 64 per consumer warpgroup (1 to 3 of them) */
    static constexpr int kRowBytes = 128; /* one 128-byte swizzle row of K per k-tile */
    static constexpr int kBK = kRowBytes / static_cast<int>(sizeof(TA)); /* elements: 64 (16-bit), 128 (fp8) */
    static constexpr int kKSteps = kRowBytes / kWgmmaKBytes; /* wgmma instructions per k-tile */
    /* fp8: k-tiles whose wgmma chain the tensor cores sum (at reduced
     * precision) before it is added into the fp32 accumulator. One k-tile is
     * 128 elements of K (4 k32 steps) per chain, so the error of the total
     * does not grow with K (tests/test_gemm_fp8_gpu.c checks K = 16384
     * against an fp32 reference). consume_fp8 is written for 1 (longer
     * chains measured slower and less accurate: decision 006). */
    static constexpr int kPromoteKTiles = 1;
    static constexpr int kStages = kStages_;
    static constexpr int kClusterN = kClusterN_; /* CTAs per cluster, along N; they share the A tile */

    /* Schedule: cooperative (kScheduleCooperative: both consumer warpgroups
     * share each tile, 64 columns each) or ping-pong (kSchedulePingPong: each
     * consumer warpgroup owns whole tiles, gemm_sm90_pingpong.cuh). */
    static constexpr bool kPingPong = kSchedule_ == kSchedulePingPong;
    static constexpr int kConsumers = kBN / 64; /* consumer warpgroups; 64-column parts of a tile */
    static constexpr int kThreads = 128 * (1 + kConsumers);
    /* Arrivals that free a stage: every warp of the warpgroup(s) that read
     * it, in every CTA of the cluster (multicast writes each CTA's stage). */
    static constexpr int kEmptyArrivals = 4 * (kPingPong ? 1 : kConsumers) * kClusterN;
    /* Register budgets after setmaxnreg: the producer only issues TMA; each
     * consumer thread holds 128 fp32 accumulators at most (cooperative:
     * kBM / 2, fp8 twice that, the promoted sum and the running chain;
     * ping-pong: kBM / 2 for each of the tile's two 64-column parts). The
     * consumers share what the producer leaves of the register file, in
     * setmaxnreg's steps of 8: 232 each for two, 152 for three (192 x 192
     * tiles, 96 accumulators each). */
    static constexpr int kProducerRegs = 40;
    static constexpr int kConsumerRegs = (65536 / 128 - kProducerRegs) / kConsumers / 8 * 8 < 232
                                             ? (65536 / 128 - kProducerRegs) / kConsumers / 8 * 8
                                             : 232;
    /* With one consumer warpgroup (kBN == 64: 256 threads) every thread may
     * hold 255 registers as launched: no register reallocation. */
    static constexpr bool kSetMaxNReg = kConsumers > 1;
    /* The split-K tail (args.tail_split, gemm_sm90_tail_split.cuh): 16-bit
     * cooperative rows with two consumer warpgroups. The other rows walk
     * the units as before (the runtime never sets it for them). */
    static constexpr bool kTailSplit = !kFp8 && !kPingPong && kConsumers == 2;

    static constexpr int kChunkBytes = 64 * kRowBytes; /* one 64-row box of 64 k (MN-major, 16-bit): 8 KB */
    static constexpr int kATileBytes = kBM * kRowBytes;
    static constexpr int kBTileBytes = kBN * kRowBytes;
    static constexpr int kStageBytes = kATileBytes + kBTileBytes;
    static constexpr int kAPartRows = kBM / kClusterN; /* A rows each CTA of a cluster loads */
    static constexpr int kEpiBufsPer = mgpu_gemm_sm90_epi_bufs(kBN); /* per consumer (abi/gemm_abi.h) */
    static constexpr int kEpiBytes = kConsumers * kEpiBufsPer * kEpiBufBytes;
    static constexpr int kAlignSlack = 1024;
    static constexpr int kSmemBytes = kStages * kStageBytes + kEpiBytes + kAlignSlack; /* dynamic */

    static_assert(kFp8 ? kIsFp8<TB> : (std::is_same_v<TA, TB> && (std::is_same_v<TA, __half> ||
                                                                    std::is_same_v<TA, __nv_bfloat16>)),
                  "f16 or bf16 operands of one type, or fp8 operands");
    static_assert(!kFp8 || (kAKMajor && kBKMajor), "fp8 operands must both be K-major (TN)");
    static_assert(kBN == 128 || (kBN == 64 && !kPingPong) || (kBN == 192 && !kPingPong && !kFp8 && kBM == 192),
                  "two consumer warpgroups of m64 (384 threads), one (256 threads, cooperative only) or three "
                  "(512 threads: 16-bit cooperative 192 x 192 tiles)");
    static_assert(!kPingPong || (!kFp8 && kBM == 128), "ping-pong: 16-bit 128 x 128 tiles per warpgroup");
    static_assert(kFp8 ? (kBM == 128 || kBM == 192)
                       : (kBM >= 64 && kBM <= 256 && kBM % 16 == 0 && (kBM % 64 == 0 || (kBN == 128 && !kPingPong))),
                  "tile_m must be a wgmma N: 64..256, a multiple of 16 (16-bit; other than 64, 128, 192, 256 only "
                  "for the cooperative 128-column tiles, and the wgmma shape instantiated in wgmma.cuh); 128 or 192 "
                  "(fp8: two register sets)");
    static_assert(kSchedule_ == kScheduleCooperative || kSchedule_ == kSchedulePingPong, "schedule");
    static_assert(kPromoteKTiles >= 1, "promote at least every k-tile");
    static_assert(kStages >= 4, "at least four stages");
    static_assert(kClusterN == 1 || kClusterN == 2, "clusters of one or two CTAs");
    static_assert(kAKMajor || kBM % 64 == 0, "M-major A is loaded in 64-row chunks: tile_m a multiple of 64");
    static_assert(kAKMajor ? kAPartRows % 8 == 0 : kAPartRows % 64 == 0,
                  "each CTA of a cluster loads whole swizzle atoms (K-major) or 64-row chunks (M-major) of A");
    static_assert(kSmemBytes + 2 * kStages * 8 <= 227 * 1024, "shared memory over the 227 KB per-block limit");
    static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "register file");
};

namespace persistent {

template <class Cfg, class OutT>
__device__ __forceinline__ void store_tile(float (&acc)[Cfg::kBM / 2], const mgpu_gemm_args &args,
                                           const GemmScales &scales, const CUtensorMap *tma_c, uint8_t *bufs, int &buf,
                                           int row0, int col0, int batch, int consumer)
{
    GemmEpilogue ep(args, scales);
    ep.select_batch(batch);
    /* the epilogue's first step per combination of conditions (more code)
     * on the 16-bit rows of two consumers; 192 x 192 (three consumers, 128
     * registers) and fp8 spill with it (docs/decisions/065) */
    constexpr bool kSplit = !Cfg::kFp8 && Cfg::kConsumers < 3;
    sm90::store_tile<Cfg::kBM, OutT, true, Cfg::kEpiBufsPer, kSplit>(acc, args, ep, tma_c, bufs, buf, row0, col0,
                                                                      batch, 1 + consumer);
}

/* Consumer warpgroup `consumer` of the cooperative schedule: its 64 columns
 * of every unit of the CTA, main loop to stores. */
template <class Cfg>
__device__ __forceinline__ void consumer_units(uint8_t *a_tiles, uint8_t *b_tiles, uint8_t *epi_bufs, uint64_t *full,
                                               uint64_t *empty, const GemmTileScheduler &sched,
                                               const CUtensorMap *tma_c, const mgpu_gemm_args &args, int consumer,
                                               const GemmTailPlan *tail_plan)
{
    const int num_k_tiles = (args.k + Cfg::kBK - 1) / Cfg::kBK;
    uint8_t *bufs = epi_bufs + consumer * Cfg::kEpiBufsPer * kEpiBufBytes;
    int stage = 0, buf = 0;
    uint32_t phase = 0;
    float acc[Cfg::kBM / 2];
    [[maybe_unused]] float part[Cfg::kFp8 ? Cfg::kBM / 2 : 1];
    const GemmScales scales(args);
    __shared__ int last_flags[Cfg::kConsumers];
    const auto store_unit = [&](const GemmTile &tile) {
        const int row0 = tile.m_tile * Cfg::kBM;
        const int col0 = tile.n_tile * Cfg::kBN + 64 * consumer;
        switch (args.c_dtype) {
        case MGPU_ABI_F16:
            persistent::store_tile<Cfg, __half>(acc, args, scales, tma_c, bufs, buf, row0, col0, tile.batch, consumer);
            break;
        case MGPU_ABI_BF16:
            persistent::store_tile<Cfg, __nv_bfloat16>(acc, args, scales, tma_c, bufs, buf, row0, col0, tile.batch,
                                                       consumer);
            break;
        default:
            persistent::store_tile<Cfg, float>(acc, args, scales, tma_c, bufs, buf, row0, col0, tile.batch, consumer);
            break;
        }
    };
    /* The unit's tile and k-tiles; those of the next unit are worked out
     * while the tensor cores finish this unit's last k-tile (16-bit main
     * loop), not between its epilogue and the next main loop. With a split-K
     * tail the walk goes on past the full waves into this CTA's tail pieces
     * (tail_walk, gemm_sm90_tail_split.cuh). */
    const auto walk = [&](int64_t u, GemmTile &t, int &kt0, int &kt1) -> bool {
        if constexpr (Cfg::kTailSplit) {
            return tail_walk(*tail_plan, sched, num_k_tiles, u, t, kt0, kt1);
        } else {
            if (u >= sched.total)
                return false;
            t = sched.tile(u);
            sched.k_range(num_k_tiles, t.split, kt0, kt1);
            return true;
        }
    };
    /* true: this consumer stores the tile; false: parked, another unit stores it */
    const auto combine = [&](const GemmTile &tile) -> bool {
        if constexpr (Cfg::kTailSplit) {
            if (tile.split < 0) /* a tail piece */
                return persistent::combine_tail<Cfg>(acc, args, sched, *tail_plan, num_k_tiles, -1 - tile.split,
                                                     consumer, 1 + consumer);
        }
        return args.splits <= 1 ||
               persistent::combine_splits<Cfg>(acc, args, sched, tile, consumer, 1 + consumer, &last_flags[consumer]);
    };
    /* Three consumers (192 x 192 tiles) are compiled to 128 registers a
     * thread (512 threads): the next unit's coordinates would not stay in
     * registers through the epilogue, so they are worked out after it. */
    constexpr bool kNextUnderDrain = Cfg::kConsumers < 3;
    int64_t u = sched.first();
    GemmTile t{};
    int kt0 = 0, kt1 = 0;
    bool valid = walk(u, t, kt0, kt1);
    while (valid) {
        const int64_t u_next = u + sched.stride();
        GemmTile t_next = t;
        int next_kt0 = 0, next_kt1 = 0;
        bool next_valid = false;
        const auto next_unit = [&]() { next_valid = walk(u_next, t_next, next_kt0, next_kt1); };
        if (Cfg::kFp8 && args.fp8_no_promotion) { /* debug: one tensor-core chain over the whole K slice */
            persistent::consume<Cfg>(acc, smem_u32(a_tiles), smem_u32(b_tiles), full, empty, kt0, kt1, consumer, stage,
                                     phase);
            next_unit();
        } else if constexpr (Cfg::kFp8) {
            persistent::consume_fp8<Cfg>(acc, part, full, empty, kt0, kt1, consumer, stage, phase);
            next_unit();
        } else if constexpr (kNextUnderDrain) {
            persistent::consume<Cfg>(acc, smem_u32(a_tiles), smem_u32(b_tiles), full, empty, kt0, kt1, consumer,
                                     stage, phase, next_unit);
        } else {
            persistent::consume<Cfg>(acc, smem_u32(a_tiles), smem_u32(b_tiles), full, empty, kt0, kt1, consumer,
                                     stage, phase);
        }
        if (combine(t))
            store_unit(t);
        if constexpr (!Cfg::kFp8 && !kNextUnderDrain)
            next_unit();
        u = u_next;
        t = t_next;
        kt0 = next_kt0;
        kt1 = next_kt1;
        valid = next_valid;
    }
    if ((threadIdx.x % 128) == 0)
        tma_store_drain();
}

} // namespace persistent

template <class Cfg>
__device__ __forceinline__ void gemm_persistent(const CUtensorMap *tma_a, const CUtensorMap *tma_b,
                                                const CUtensorMap *tma_c, const mgpu_gemm_args &args)
{
    __shared__ alignas(8) uint64_t full[Cfg::kStages];
    __shared__ alignas(8) uint64_t empty[Cfg::kStages];

    /* The tiles from a 1024-byte boundary (gemm_tiles_u32); the offset is the
     * same in every CTA, as multicast needs. */
    const uint32_t raw = smem_u32(persistent::mgpu_gemm_ws_smem);
    uint8_t *a_tiles = persistent::mgpu_gemm_ws_smem + (persistent::gemm_tiles_u32() - raw);
    uint8_t *b_tiles = a_tiles + Cfg::kStages * Cfg::kATileBytes;
    uint8_t *epi_bufs = b_tiles + Cfg::kStages * Cfg::kBTileBytes;

    const int warpgroup = threadIdx.x / 128;
    const GemmTileScheduler sched(args.m, args.n, args.batch_count, Cfg::kBM, Cfg::kBN, 1, Cfg::kClusterN,
                                  args.band, args.splits);

    /* The split-K tail's walk of this CTA (gemm_sm90_tail_split.cuh), for
     * the rows that have it; a scheduler-only computation, ahead of the wait
     * below like the barriers. */
    persistent::GemmTailPlan *tail_plan = nullptr;
    if constexpr (Cfg::kTailSplit) {
        __shared__ persistent::GemmTailPlan tail_plan_smem;
        tail_plan = &tail_plan_smem;
        if (threadIdx.x == 32)
            persistent::tail_plan(*tail_plan, sched, args.tail_split != 0, (args.k + Cfg::kBK - 1) / Cfg::kBK);
    }
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], Cfg::kEmptyArrivals);
        }
        mbar_fence_init();
    }
    /* Programmatic dependent launch (src/gemm/gemm.c): the next grid of the
     * stream may be scheduled now (its CTAs only take SMs this grid leaves
     * free, and wait as below), and nothing of this grid reads or writes
     * global memory before the grids it depends on have completed. Without
     * the launch attribute both are no-ops. */
    griddep_launch_dependents();
    griddep_wait();
    if constexpr (Cfg::kClusterN > 1)
        cluster_sync();
    else
        __syncthreads();

    if (warpgroup == 0) {
        if constexpr (Cfg::kSetMaxNReg)
            setmaxnreg_dec<Cfg::kProducerRegs>();
        if (threadIdx.x == 0)
            persistent::produce<Cfg>(tma_a, tma_b, a_tiles, b_tiles, full, empty, sched, args, tail_plan);
    } else {
        if constexpr (Cfg::kSetMaxNReg)
            setmaxnreg_inc<Cfg::kConsumerRegs>();
        const int consumer = warpgroup - 1;
        if constexpr (Cfg::kPingPong)
            pingpong::consumer_units<Cfg>(a_tiles, b_tiles, epi_bufs, full, empty, sched, tma_c, args, consumer);
        else
            persistent::consumer_units<Cfg>(a_tiles, b_tiles, epi_bufs, full, empty, sched, tma_c, args, consumer,
                                             tail_plan);
    }
    /* No CTA of a cluster leaves while its peer may still multicast into it
     * or arrive on its barriers. */
    if constexpr (Cfg::kClusterN > 1)
        cluster_sync();
}

} // namespace sm90
} // namespace mgpu
