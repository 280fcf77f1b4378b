/*
 * Persistent, warp-specialized Blackwell (sm_100a) GEMM:
 * D = scale_d * act(alpha * scale_a * scale_b * op(A) * op(B) + beta * C + bias)
 * (column-major, BLAS conventions: abi/gemm_abi.h; the epilogue of
 * common/numeric.cuh) for fp16 / bf16 operands of any layout
 * (tcgen05.mma kind::f16) or fp8 e4m3 / e5m2 operands, any pair, both
 * K-major (kind::f8f6f4), fp32 accumulation in tensor memory, fp16 / bf16 /
 * fp32 output. This is the final kernel of reference/003 (the
 * Blackwell matmul tutorial), steps 1-6: warp-specialized TMA and MMA issue,
 * tiled TMA-store epilogue, the 2-CTA collective MMA, a persistent grid, a
 * dedicated epilogue warpgroup on a double-buffered TMEM accumulator, and the
 * planar-snake tile order (common/tile_scheduler.cuh; band chosen per call
 * by src/gemm/gemm_plan.c).
 *
 * NOT RUN ON BLACKWELL HARDWARE: no machine here has an sm_100 GPU. This
 * kernel is compiled, its SASS instruction mix is checked by a test
 * (tests/sass_sm100.sh: UTCHMMA / UTCQMMA, 2-CTA forms, UTMALDG, UTMASTG,
 * LDTM, no local memory), its descriptor encodings are checked at compile time
 * against the PTX ISA tables (gemm_sm100_descriptors.cuh), and its selection
 * is tested with a made-up cc 10.0 device. bench/blackwell_first_run.sh is
 * the first thing to run on a B200.
 *
 * Tiles: a unit is kBM rows (m) x kCtas * kBN columns (n) of D, kBN = 128
 * columns per CTA; kCtas = 2 makes the cluster a CTA pair sharing one
 * tcgen05.mma.cta_group::2 (M = 256, N = kBM), kCtas = 1 a lone CTA
 * (M = 128, N = kBM). The MMA computes D^T: M runs over D's columns (TMEM
 * lanes), N over D's rows (TMEM columns); see gemm_sm100_mainloop.cuh.
 *
 * Schedule (kThreads = 192: six warps; every CTA walks the same units,
 * u = first, first + stride, ...):
 *
 *   warp 0, one lane   TMA       per unit, per k-tile, stage s, parity p:
 *                                  wait empty[s] parity p^1
 *                                  leader: arrive_expect_tx(full[s], kTxBytes)
 *                                  TMA this CTA's B tile (kBN n-rows) and its
 *                                  kBM / kCtas rows of the A tile -> stage s,
 *                                  completing on the leader's full[s]
 *   warp 1             TMEM      allocates 2 x kBM columns (two accumulator
 *                                  slots), frees them at the end
 *   warp 1, one lane   MMA       (leader CTA only) per unit u, slot u % 2:
 *                                  wait acc_empty[slot]
 *                                  per k-tile: wait full[s]; 4 x tcgen05.mma
 *                                  (K = 16, or 32 for fp8: 32 bytes) into the slot; tcgen05.commit ->
 *                                  empty[s] (multicast to both CTAs)
 *                                  tcgen05.commit -> acc_full[slot] (multicast)
 *   warps 2-5          EPILOGUE  per unit: wait acc_full[slot]; TMEM -> regs
 *                                  -> swizzled smem -> TMA store, 32 columns
 *                                  per warp (gemm_sm100_epilogue.cuh); after
 *                                  the last TMEM read arrive on the leader's
 *                                  acc_empty[slot]
 *
 * Split-K (args.splits > 1): units run over (tile, K slice) pairs
 * (common/tile_scheduler.cuh); the TMA and MMA warps take the unit's k-tiles
 * only; the epilogue parks partials and the tile's last unit finishes it
 * (gemm_sm100_epilogue.cuh, split_k).
 *
 * While the epilogue drains slot u % 2, the MMA warp fills slot (u + 1) % 2:
 * the next tile's MMAs overlap this tile's stores (tutorial step 5).
 *
 * Barriers (static shared memory, the same offset in every CTA):
 *   full[s]       1 arrival + kTxBytes      TMA -> MMA (leader's is used)
 *   empty[s]      1 arrival (commit)        MMA -> TMA of both CTAs
 *   acc_full[2]   1 arrival (commit)        MMA -> epilogue of both CTAs
 *   acc_empty[2]  4 x kCtas arrivals        epilogue warps -> MMA (leader's)
 *
 * Shared memory (dynamic, base rounded up to 1024 bytes): kStages A parts,
 * kStages B tiles, then 2 x 4 KB store buffers per epilogue warp. Operand
 * tiles are 128-byte swizzled TMA boxes, K-major (rows x 128 bytes) or
 * M/N-major (64-element chunks of 64 K-rows, 8 KB each), as on Hopper.
 *
 * Files by role: this shell (configuration, setup, the three branches,
 * teardown); gemm_sm100_mainloop.cuh (produce, issue_mmas);
 * gemm_sm100_epilogue.cuh; common/tile_scheduler.cuh (unit order);
 * tcgen05.cuh (descriptors) and gemm_sm100_descriptors.cuh (their checks);
 * cta_pair.cuh (the pair's TMA load and leader barrier).
 */
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

#include "abi/gemm_abi.h"
#include "blackwell/gemm_sm100_descriptors.cuh"
#include "blackwell/gemm_sm100_epilogue.cuh"
#include "blackwell/gemm_sm100_mainloop.cuh"
#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"
#include "common/cluster.cuh"
#include "common/tile_scheduler.cuh"

namespace mgpu {
namespace sm100 {

template <class TA, class TB, bool kAKMajor_, bool kBKMajor_, int kBM_, int kBN_, int kStages_, int kCtas_>
struct PersistentGemmConfig {
    using ElementA = TA;
    using ElementB = TB;
    static constexpr bool kFp8 = kIsFp8Sm100<TA>;
    static constexpr bool kAKMajor = kAKMajor_;
    static constexpr bool kBKMajor = kBKMajor_;
    static constexpr int kBM = kBM_;       /* D rows per unit: the MMA's N */
    static constexpr int kBN = kBN_;       /* D columns per CTA: 128 TMEM lanes */
    static constexpr int kCtas = kCtas_;   /* CTAs per MMA (cluster size): 1 or 2 */
    static constexpr int kStages = kStages_;
    static constexpr int kRowBytes = 128;  /* one 128-byte swizzle row of K per k-tile */
    static constexpr int kBK = kRowBytes / static_cast<int>(sizeof(TA)); /* 64 (16-bit) or 128 (fp8) */
    /* K of one tcgen05.mma: 16 (kind::f16) or 32 (kind::f8f6f4), 32 bytes either way */
    static constexpr int kMmaK = 32 / static_cast<int>(sizeof(TA));
    static constexpr int kKSteps = kBK / kMmaK;
    static constexpr int kMmaM = kBN * kCtas;
    static constexpr int kMmaN = kBM;
    static constexpr int kThreads = 192;   /* TMA warp, MMA warp, epilogue warpgroup */
    static constexpr int kTmaWarp = 0, kMmaWarp = 1, kFirstEpiWarp = 2;

    static constexpr int kChunk = 64;      /* M/N extent of one M/N-major TMA box */
    static constexpr int kChunkBytes = kChunk * kRowBytes; /* 8 KB: the MN-major LBO */
    static constexpr int kARows = kBM / kCtas;              /* A rows this CTA loads per stage */
    static constexpr int kATileBytes = kARows * kRowBytes;
    static constexpr int kBTileBytes = kBN * kRowBytes;
    static constexpr int kStageBytes = kATileBytes + kBTileBytes;
    static constexpr uint32_t kTxBytes = static_cast<uint32_t>(kStageBytes * kCtas); /* both CTAs' loads */
    static constexpr int kAlignSlack = 1024;
    static constexpr int kSmemBytes = kAlignSlack + kStages * kStageBytes + kEpiBytes; /* dynamic */
    static_assert(kSmemBytes == mgpu_gemm_sm100_smem_bytes(kBM, kBN, kRowBytes, kStages, kCtas),
                  "shared memory differs from the ABI formula (abi/gemm_abi.h)");

    static constexpr int kAccCols = kBM;               /* fp32: one TMEM column per D row */
    static constexpr uint32_t kTmemCols = 2 * kAccCols; /* double-buffered accumulator */
    /* the MMA's A operand is the B tile, its B operand the A tile (D^T) */
    static constexpr uint32_t kIdesc = make_gemm_idesc<TA, TB, kAKMajor, kBKMajor, kMmaM, kMmaN, kCtas>();

    static_assert(kFp8 ? kIsFp8Sm100<TB>
                       : (std::is_same_v<TA, TB> && (std::is_same_v<TA, __half> || std::is_same_v<TA, __nv_bfloat16>)),
                  "fp16 or bf16 operands (the same for A and B), or fp8 e4m3 / e5m2 (any pair)");
    static_assert(!kFp8 || (kAKMajor && kBKMajor), "fp8 operands are K-major (TN), as on Hopper");
    static_assert(kKSteps == 4, "four 32-byte K steps per 128-byte k-tile");
    static_assert(kBN == 128, "128 TMEM lanes per CTA: one D column each");
    static_assert(kCtas == 1 || kCtas == 2, "lone CTAs or CTA pairs");
    static_assert(kBM % 64 == 0 && kBM >= 64 && kBM <= 256, "MMA N = kBM: a multiple of 64 up to 256");
    static_assert(kAKMajor ? kARows % 8 == 0 : kARows % kChunk == 0, "whole swizzle atoms / 64-row chunks of A");
    static_assert(kTmemCols >= 32 && kTmemCols <= 512 && (kTmemCols & (kTmemCols - 1)) == 0,
                  "TMEM allocations are powers of two in [32, 512]");
    static_assert(kStages >= 3, "at least three stages");
    static_assert(kATileBytes % 1024 == 0 && kBTileBytes % 1024 == 0,
                  "every stage's tiles start on a 1024-byte swizzle atom (descriptor base offset 0)");
    static_assert(kSmemBytes + 2048 <= 232448, "with the static barriers, over the sm_100 227 KB per-block limit");
    static_assert(check_gemm_descriptors<TA, TB, kAKMajor, kBKMajor, kMmaM, kMmaN, kCtas>(), "descriptor checks");
};

template <class Cfg>
__device__ __forceinline__ void gemm_persistent(const CUtensorMap *tma_a, const CUtensorMap *tma_b,
                                                const CUtensorMap *tma_c, const mgpu_gemm_args &args)
{
    __shared__ alignas(8) uint64_t full[Cfg::kStages];
    __shared__ alignas(8) uint64_t empty[Cfg::kStages];
    __shared__ alignas(8) uint64_t acc_full[2];
    __shared__ alignas(8) uint64_t acc_empty[2];
    __shared__ uint32_t tmem_slot;
    extern __shared__ __align__(16) uint8_t mgpu_gemm_sm100_smem[];

    /* 128-byte swizzled tiles want 1024-byte alignment; kSmemBytes has the
     * slack. The offset is the same in both CTAs of a pair, as the collective
     * MMA needs (one descriptor addresses both CTAs' tiles). */
    const uint32_t raw = smem_u32(mgpu_gemm_sm100_smem);
    uint8_t *a_tiles = mgpu_gemm_sm100_smem + (((raw + 1023u) & ~1023u) - raw);
    uint8_t *b_tiles = a_tiles + Cfg::kStages * Cfg::kATileBytes;
    uint8_t *epi_bufs = b_tiles + Cfg::kStages * Cfg::kBTileBytes;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t rank = Cfg::kCtas > 1 ? cluster_rank() : 0;
    const bool leader = Cfg::kCtas == 1 || rank % 2 == 0;
    const GemmTileScheduler sched(args.m, args.n, args.batch_count, Cfg::kBM, Cfg::kBN, 1, Cfg::kCtas, args.band,
                                  args.splits);

    /* ---- setup: barriers (thread 0), TMEM (the MMA warp of every CTA) ---- */
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 1);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            mbar_init(&acc_full[i], 1);
            mbar_init(&acc_empty[i], kEpiWarps * Cfg::kCtas);
        }
        mbar_fence_init();
    }
    const uint32_t tmem_cols = Cfg::kTmemCols; /* by value: the wrappers take a reference */
    if (warp == Cfg::kMmaWarp) {
        if constexpr (Cfg::kCtas == 1) {
            ptx::tcgen05_alloc(ptx::cta_group_1, &tmem_slot, tmem_cols);
            ptx::tcgen05_relinquish_alloc_permit(ptx::cta_group_1);
        } else {
            ptx::tcgen05_alloc(ptx::cta_group_2, &tmem_slot, tmem_cols);
            ptx::tcgen05_relinquish_alloc_permit(ptx::cta_group_2);
        }
    }
    ptx::tcgen05_fence_before_thread_sync();
    if constexpr (Cfg::kCtas > 1)
        cluster_sync();
    else
        __syncthreads();
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t tmem_base = tmem_slot;

    /* ---- the three roles ---- */
    if (warp == Cfg::kTmaWarp) {
        if (lane == 0)
            persistent::produce<Cfg>(tma_a, tma_b, a_tiles, b_tiles, full, empty, sched, args, rank);
    } else if (warp == Cfg::kMmaWarp) {
        if (lane == 0 && leader)
            persistent::issue_mmas<Cfg>(a_tiles, b_tiles, full, empty, acc_full, acc_empty, tmem_base, sched, args);
    } else {
        epilogue<Cfg>(tmem_base, acc_full, acc_empty, tma_c, epi_bufs, sched, args, rank);
    }
    __syncwarp();

    /* ---- teardown: no CTA of a pair leaves (or frees TMEM) while its peer's
     * MMAs may still write its tensor memory or arrive on its barriers ---- */
    ptx::tcgen05_fence_before_thread_sync();
    if constexpr (Cfg::kCtas > 1)
        cluster_sync();
    else
        __syncthreads();
    if (warp == Cfg::kMmaWarp) {
        ptx::tcgen05_fence_after_thread_sync();
        if constexpr (Cfg::kCtas == 1)
            ptx::tcgen05_dealloc(ptx::cta_group_1, tmem_base, tmem_cols);
        else
            ptx::tcgen05_dealloc(ptx::cta_group_2, tmem_base, tmem_cols);
    }
}

} // namespace sm100
} // namespace mgpu
