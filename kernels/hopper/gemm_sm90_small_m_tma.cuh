/*
 * Small-m GEMM (decode), tensor-map ring: the same problem, MMA warps and
 * fragments as the register form (gemm_sm90_small_m.cuh: m <= 16, TN,
 * 16-bit inputs, fp32 accumulation, D^T = B^T A^T on mma.sync m16n8k16,
 * the same permutation of K, the same split-K sum), with B and A brought
 * into shared memory by TMA instead of loaded into registers:
 *
 *   grid (column blocks of kCols columns of D, K slices, batch);
 *   kWarps MMA warps (warp w owns 16 columns of D; kCols = 16 kWarps, 64 or
 *   128) and one producer warp.
 *   A stage is kStageK elements of K (kBoxes boxes of 64, one 128-byte
 *   swizzle row each) of the CTA's kCols columns of B (8 or 16 KiB per box)
 *   and of the 16 rows of A (2 KiB per box), all 128-byte swizzled; kStages
 *   stages in a ring.
 *   Producer (one lane): for each stage of the CTA's K slice, wait for the
 *   slot to be empty, announce the stage's bytes on its full barrier, issue
 *   the tensor-map copies (B with an L2 evict-first hint: each byte is read
 *   once): two instructions per box of K, so the whole ring is in flight
 *   whatever the MMA warps are doing.
 *   MMA warps: wait for the slot to be full, read their fragments for the
 *   stage's 32-element steps (16 bytes per lane and row, as the register
 *   form loads them from global memory), count themselves out on the slot's
 *   empty barrier (kWarps arrivals), run the MMAs.
 *   Columns beyond n, rows beyond m and K beyond k arrive as zeros (the
 *   tensor maps' bounds), so the main loop has no edge tests.
 *
 * Rows (gen/variants.c): 128 columns x 64 of K with 12 stages (217 KiB, one
 * CTA per SM) or 6 (109 KiB, two per SM); 64 columns x 64 with 20 stages
 * (one per SM) or 10 (two); 128 x 128 with 6. The planner's choice:
 * src/gemm/gemm_plan.c, decode_tma_row.
 *
 * Fragment reads without bank conflicts: row r of a 128-byte swizzled box
 * holds its 16-byte chunk j at chunk j ^ (r & 7). A quarter warp (lanes
 * 4g + c, g = 2p, 2p + 1) reads chunks 4 (u % 2) + c of two rows in step
 * u; the lane with g takes column (box row) 16w + perm(g) (and + 8),
 * perm(g) = g / 2 + 4 (g & 1), so the quarter warp's two rows differ in bit 2 of r & 7 and its eight
 * chunks are distinct. A's rows (16, read by every warp) keep their order:
 * two rows of a quarter warp share chunks (two-way), 2 KiB per box.
 *
 * K slices are cut in whole stages (S = gridDim.y slices of ceil(k / kStageK)
 * stages); the slice sum and the epilogue are the register form's
 * (small_m::finish), run by the MMA warps after the producer warp has left.
 *
 * Requirements the runtime checks (src/gemm/gemm_plan.c): those of the
 * register form, and A and B readable by TMA (16-byte aligned bases, leading
 * dimensions and batch strides; a batch stride of 0 is a broadcast operand,
 * args.a_broadcast / b_broadcast, whose map has one batch entry). Tensor
 * maps: dims {k, rows (m or n), batch}, boxes {64, kMaxM or kCols, 1},
 * 128-byte swizzle.
 */
#pragma once

#include "hopper/gemm_sm90_small_m.cuh"

#include "abi/gemm_small_m_abi.h"
#include "common/async_copy.cuh"
#include "common/shared_memory.cuh"

namespace mgpu {
namespace sm90 {

template <class T, int kMBlocks_, int kWarps_, int kStageK_, int kStages_>
struct SmallMTmaGemmConfig {
    using Element = T;
    static constexpr int kMBlocks = kMBlocks_;
    static constexpr int kMaxM = 8 * kMBlocks;
    static constexpr int kWarps = kWarps_;       /* MMA warps */
    static constexpr int kConsumerThreads = 32 * kWarps;
    static constexpr int kThreads = kConsumerThreads + 32; /* and the producer warp */
    static constexpr int kWarpCols = 16;
    static constexpr int kCols = kWarps * kWarpCols;
    static constexpr int kStepK = 32;            /* 4 lanes x 8 elements, as the register form */
    static constexpr int kBoxK = MGPU_GEMM_SMALL_M_TMA_BOX_K;
    static constexpr int kStageK = kStageK_;     /* kBoxes boxes of kBoxK along K */
    static constexpr int kBoxes = kStageK / kBoxK;
    static constexpr int kStepsPerStage = kStageK / kStepK;
    static constexpr int kRowBytes = kBoxK * 2;  /* one 128-byte swizzle row */
    static constexpr int kBoxBBytes = kCols * kRowBytes;
    static constexpr int kBoxABytes = kMaxM * kRowBytes;
    static constexpr int kBBytes = kBoxes * kBoxBBytes; /* B's boxes, then A's */
    static constexpr int kStageBytes = kBoxes * (kBoxBBytes + kBoxABytes);
    static constexpr int kStages = kStages_;
    static constexpr int kSmemBytes = kStages * kStageBytes + 1024; /* + alignment to 1 KiB */
    /* two CTAs per SM where two rings fit (each CTA's share of the 228 KiB,
     * less the 1 KiB the SM keeps per CTA and the static barriers) */
    static constexpr int kMinBlocks = kSmemBytes <= MGPU_GEMM_SMALL_M_TMA_PAIR_SMEM ? 2 : 1;
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "16-bit inputs");
    static_assert(kMBlocks == 2, "m <= 16");
    static_assert(kRowBytes == 128 && kBoxBBytes % 1024 == 0 && kBoxABytes % 1024 == 0, "1 KiB-aligned swizzled boxes");
    static_assert(kStageK % kBoxK == 0 && (kWarps == 4 || kWarps == 8), "whole boxes; 64 or 128 columns");
    static_assert(kStages >= 2, "a ring");
    static_assert(kSmemBytes == mgpu_gemm_small_m_tma_smem_bytes(kMaxM, kCols, kStageK, kStages), "the ABI's count");
};

namespace small_m {

/* L2 policy: lines of B are read once; they go first when L2 needs room. */
__device__ __forceinline__ uint64_t policy_evict_first()
{
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}

/* TMA load of a rank-3 box at {c0, c1, c2} with an L2 cache policy,
 * completing its bytes on bar (tma_load_3d with the hint). */
__device__ __forceinline__ void tma_load_3d_hint(uint32_t dst, const CUtensorMap *map, uint64_t *bar, int32_t c0,
                                                 int32_t c1, int32_t c2, uint64_t policy)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint "
                 "[%0], [%1, {%2, %3, %4}], [%5], %6;"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar)), "l"(policy)
                 : "memory");
}

/* The same without a policy. */
__device__ __forceinline__ void tma_load_3d_u32(uint32_t dst, const CUtensorMap *map, uint64_t *bar, int32_t c0,
                                                int32_t c1, int32_t c2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar))
                 : "memory");
}

} // namespace small_m

template <class Cfg>
__device__ __forceinline__ void gemm_small_m_tma(const CUtensorMap *map_a, const CUtensorMap *map_b,
                                                 const mgpu_gemm_args &args)
{
    using T = typename Cfg::Element;
    constexpr int kMB = Cfg::kMBlocks;
    constexpr int kS = Cfg::kStages;
    extern __shared__ uint8_t small_m_tma_smem[];
    __shared__ uint64_t full[kS], empty[kS];
    const uint32_t ring = (smem_u32(small_m_tma_smem) + 1023u) & ~1023u;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t batch = blockIdx.z;
    const int64_t n_block0 = static_cast<int64_t>(blockIdx.x) * Cfg::kCols;
    const int splits = gridDim.y, split = blockIdx.y;
    /* this CTA's K slice, in whole stages */
    const int stages_k = static_cast<int>((static_cast<int64_t>(args.k) + Cfg::kStageK - 1) / Cfg::kStageK);
    const int t0 = static_cast<int>(static_cast<int64_t>(stages_k) * split / splits);
    const int t1 = static_cast<int>(static_cast<int64_t>(stages_k) * (split + 1) / splits);
    const int stages = t1 - t0;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int i = 0; i < kS; ++i) {
            mbar_init(&full[i], 1);
            mbar_init(&empty[i], Cfg::kWarps);
        }
        mbar_fence_init();
    }
    __syncthreads();

    /* as in the register form: nothing touches global memory before the
     * grids this one depends on have completed */
    griddep_launch_dependents();
    griddep_wait();

    if (warp == Cfg::kWarps) {
        if (lane == 0) {
            tma_prefetch_map(map_b);
            tma_prefetch_map(map_a);
            const uint64_t policy = small_m::policy_evict_first();
            const int32_t col = static_cast<int32_t>(n_block0);
            const int32_t b_batch = args.b_broadcast ? 0 : static_cast<int32_t>(batch);
            const int32_t a_batch = args.a_broadcast ? 0 : static_cast<int32_t>(batch);
            for (int t = 0; t < stages; ++t) {
                const int slot = t % kS;
                if (t >= kS)
                    mbar_wait(&empty[slot], (t / kS - 1) & 1);
                const int32_t k0 = (t0 + t) * Cfg::kStageK;
                const uint32_t dst = ring + slot * Cfg::kStageBytes;
                mbar_arrive_expect_tx(&full[slot], Cfg::kStageBytes);
#pragma unroll
                for (int x = 0; x < Cfg::kBoxes; ++x) {
                    small_m::tma_load_3d_hint(dst + x * Cfg::kBoxBBytes, map_b, &full[slot], k0 + x * Cfg::kBoxK, col,
                                              b_batch, policy);
                    small_m::tma_load_3d_u32(dst + Cfg::kBBytes + x * Cfg::kBoxABytes, map_a, &full[slot],
                                             k0 + x * Cfg::kBoxK, 0, a_batch);
                }
            }
        }
        return;
    }

    const int g = lane / 4, c = lane % 4;
    const int perm = (g >> 1) | ((g & 1) << 2); /* the column's row of the box, mod 8 */
    const int64_t col0 = n_block0 + warp * Cfg::kWarpCols + perm; /* and col0 + 8 */
    /* this lane's rows in a stage: B box rows 16w + perm (+ 8), A rows 8mb + g */
    const uint32_t lo_row = ring + (warp * Cfg::kWarpCols + perm) * Cfg::kRowBytes;
    const uint32_t a_row = ring + Cfg::kBBytes + g * Cfg::kRowBytes;

    float acc[kMB][4];
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
        acc[mb][0] = acc[mb][1] = acc[mb][2] = acc[mb][3] = 0.0f;

    for (int t = 0; t < stages; ++t) {
        const int slot = t % kS;
        const uint32_t off = slot * Cfg::kStageBytes;
        mbar_wait(&full[slot], (t / kS) & 1);
        uint4 bl[Cfg::kStepsPerStage], bh[Cfg::kStepsPerStage], av[Cfg::kStepsPerStage][kMB];
#pragma unroll
        for (int u = 0; u < Cfg::kStepsPerStage; ++u) {
            /* step u: box u / 2, chunks 4 (u % 2) + c */
            const uint32_t b_chunk = static_cast<uint32_t>(((4 * (u % 2) + c) ^ perm) * 16);
            const uint32_t a_chunk = static_cast<uint32_t>(((4 * (u % 2) + c) ^ g) * 16);
            const uint32_t b_at = lo_row + off + (u / 2) * Cfg::kBoxBBytes + b_chunk;
            const uint32_t a_at = a_row + off + (u / 2) * Cfg::kBoxABytes + a_chunk;
            bl[u] = ld_shared_u128(b_at);
            bh[u] = ld_shared_u128(b_at + 8 * Cfg::kRowBytes);
#pragma unroll
            for (int mb = 0; mb < kMB; ++mb)
                av[u][mb] = ld_shared_u128(a_at + 8 * mb * Cfg::kRowBytes);
        }
        __syncwarp();
        if (lane == 0)
            mbar_arrive(&empty[slot]);
        small_m::mma_steps<T>(acc, bl, bh, av);
    }

    small_m::finish<Cfg>(args, acc, batch, n_block0, col0, c, splits, split);
}

} // namespace sm90
} // namespace mgpu
