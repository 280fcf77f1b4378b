/*
 * Blackwell (sm_100a) flash-attention forward, FlashAttention-4 style: the
 * kernel shell (configuration, shared memory, barriers, roles, teardown).
 *
 * NOT RUN ON BLACKWELL HARDWARE: no machine here has an sm_100 GPU. This
 * kernel is compiled, its SASS instruction mix is checked by a test
 * (tests/sass_sm100.sh: UTCHMMA, LDTM / STTM, UTMALDG, no local memory), its
 * descriptors are checked at compile time against the PTX ISA tables
 * (attention_fwd_sm100_descriptors.cuh), and its selection is tested with a
 * made-up cc 10.0 device. bench/blackwell_first_run.sh runs its GPU tests
 * first on a B200.
 *
 * Same call as the Hopper forward: struct mgpu_attention_fwd_params of
 * abi/attention_abi.h (its "Blackwell" paragraph: tiles, threads, grid). All
 * features: causal / sliding-window masks, soft-cap, GQA / MQA, varlen, LSE,
 * head dims 64, 96, 128, 192, 256, fp16 / bf16; for serving, per-sequence
 * key counts (seqused_k) and paged K/V caches (block_table). Not the
 * decode planning of the Hopper kernel (GQA packing, key splits: the
 * runtime sets pack_gqa 0, num_splits 1) and not fp8.
 *
 * Work: one CTA per work tile (kBlockM query rows of one head of one
 * sequence, decoded by the Hopper tile scheduler from blockIdx.x), split into
 * kQTiles Q tiles of 128 rows that share every K / V block.
 *
 * Tensor memory (512 columns allocated by the MMA warp): per Q tile q an S
 * block (kBlockN fp32 columns, P written back over its first kBlockN / 2
 * columns as packed 16-bit pairs) and an O accumulator (head-dim columns):
 *   O_0 | O_1 | S_0 | S_1      kQTiles * (kHeadDim + kBlockN) <= 512
 * head dims 64..128: 2 tiles, kBlockN 128 (d 128: exactly 512 columns);
 * 192: 2 tiles, kBlockN 64 (512); 256: O alone takes 256 columns per tile,
 * so one tile, kBlockN 64 (320 of 512). No head dim needs O split in halves.
 *
 * Warps (kThreads = 128 (kQTiles + 2)):
 *   warpgroups 0 .. kQTiles-1   softmax of Q tile q (one row per thread)
 *   warpgroup kQTiles           correction (O rescale, normalisation, store, LSE)
 *   warpgroup kQTiles + 1       warp 0: TMA (one lane; the whole warp with a
 *                               paged cache); warp 1: TMEM allocation and the
 *                               MMA (one lane); warps 2, 3 idle
 * With two Q tiles the register file is split by setmaxnreg: softmax 192,
 * correction 80, TMA / MMA 48 (128 x (2 x 192 + 80 + 48) = 65536).
 *
 * Barriers (count: who arrives):
 *   q_full            1 + Q bytes         TMA -> MMA
 *   k_full / v_full   1 + tile bytes      TMA -> MMA, per stage
 *   k_empty / v_empty 1 (tcgen05.commit)  MMA -> TMA, per stage
 *   s_full[q]         1 (commit)          MMA -> softmax q: S_q is in TMEM
 *   scale_ready[q]    4 (softmax warps)   softmax q -> correction: factors in scale[q][]
 *   p_full[q]         8 (4 softmax + 4 correction warps)
 *                                         -> MMA: P_q stored, O_q rescaled
 *   o_done[q]         1 (commit)          MMA -> correction (and the MMA thread): P V done
 *   final_ready[q]    4 (softmax warps)   softmax q -> correction: row sum, max
 * Every barrier completes once per key block (final_ready and q_full once),
 * so its parity is the block index & 1; the protocol never lets a barrier
 * run two phases ahead of a waiter (each arrival needs the previous phase
 * consumed, see the files of the roles).
 *
 * Files by role: this shell; attention_fwd_sm100_pipeline.cuh (TMA, MMA);
 * attention_fwd_sm100_softmax.cuh (softmax, correction);
 * attention_fwd_sm100_descriptors.cuh (descriptor checks); tcgen05.cuh.
 * Shared with the Hopper kernel (architecture-neutral): AttnMask
 * (hopper/attention_fwd_mask.cuh), the tile decode and per-tile work
 * (hopper/attention_fwd_tile_scheduler.cuh: seqused_k sets the sequence's
 * key count there), ex2 / tanh (hopper/attention_fwd_softmax.cuh), the
 * paged K/V loop of the producer warp (sm90::produce_kv_paged) and the
 * zeroing of V rows past a cached sequence (sm90::zero_rows,
 * hopper/attention_fwd_mainloop.cuh).
 */
#pragma once

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_abi.h"
#include "blackwell/attention_fwd_sm100_descriptors.cuh"
#include "blackwell/attention_fwd_sm100_pipeline.cuh"
#include "blackwell/attention_fwd_sm100_softmax.cuh"
#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"
#include "hopper/attention_fwd_tile_scheduler.cuh"
#include "hopper/warpgroup.cuh"

namespace mgpu {
namespace sm100 {

template <typename Element, int kHeadDim_>
struct AttnFwdSm100Config {
    using T = Element;
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16");
    static constexpr int kElementBytes = 2;

    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kBlockM = MGPU_ATTENTION_FWD_SM100_BLOCK_M(kHeadDim);
    static constexpr int kBlockN = MGPU_ATTENTION_FWD_SM100_BLOCK_N(kHeadDim);
    static constexpr int kStages = MGPU_ATTENTION_FWD_SM100_STAGES;
    static constexpr int kTileRows = 128; /* MMA M, TMEM lanes, threads of a softmax warpgroup */
    static constexpr int kQTiles = kBlockM / kTileRows;
    static_assert(kQTiles == 1 || kQTiles == 2, "one or two Q tiles");

    static constexpr int kSwizzleBytes = MGPU_ATTENTION_FWD_SWIZZLE_ROW_BYTES;
    static constexpr int kSwizzleElems = MGPU_ATTENTION_FWD_SWIZZLE_ROW_ELEMS;
    static constexpr int kDimBlocks = (kHeadDim + kSwizzleElems - 1) / kSwizzleElems;
    static constexpr int kMmaK = 16; /* K of one kind::f16 tcgen05.mma */
    static constexpr int kQkSteps = kHeadDim / kMmaK;
    static constexpr int kPvSteps = kBlockN / kMmaK;
    static_assert(kHeadDim % kMmaK == 0 && kBlockN % kMmaK == 0, "MMA K is 16");
    static_assert(kHeadDim % 16 == 0 && kHeadDim >= 16 && kHeadDim <= 256, "O: M = 128 needs N % 16 == 0, N <= 256");
    static_assert(kBlockN % 32 == 0 && kBlockN <= 256, "S: N <= 256, read 32 columns at a time");

    /* Column block of a tile: rows x 128 bytes, 128-byte swizzled (TMA boxes). */
    static constexpr int kQBlockBytes = kBlockM * kSwizzleBytes;
    static constexpr int kKVBlockBytes = kBlockN * kSwizzleBytes;
    static constexpr int kQTileBytes = kDimBlocks * kQBlockBytes;
    static constexpr int kKVTileBytes = kDimBlocks * kKVBlockBytes;
    static constexpr int kQSubTileBytes = kTileRows * kSwizzleBytes; /* Q tile q inside a dim block */
    static constexpr int kSwizzleAtom = 1024;
    static_assert(kKVBlockBytes % kSwizzleAtom == 0 && kQSubTileBytes % kSwizzleAtom == 0,
                  "every operand starts on a swizzle atom (descriptor base offset 0)");

    /* Tensor memory columns. */
    static constexpr uint32_t kTmemCols = 512;
    static_assert(kQTiles * (kHeadDim + kBlockN) <= static_cast<int>(kTmemCols), "S and O of every Q tile fit TMEM");
    static __device__ __forceinline__ constexpr uint32_t o_col(int q) { return static_cast<uint32_t>(q * kHeadDim); }
    static __device__ __forceinline__ constexpr uint32_t s_col(int q)
    {
        return static_cast<uint32_t>(kQTiles * kHeadDim + q * kBlockN);
    }

    static constexpr uint32_t kIdescQK = make_idesc_f16_f32acc<T, kTileRows, kBlockN, true, true>();
    static constexpr uint32_t kIdescPV = make_idesc_f16_f32acc<T, kTileRows, kHeadDim, true, false>();
    static_assert(check_attention_descriptors<T, kBlockN, kHeadDim, kKVBlockBytes>(), "descriptor checks");

    /* Warps. */
    static constexpr int kWarpgroupThreads = 128;
    static constexpr int kCorrectionWarpgroup = kQTiles;
    static constexpr int kTmaWarp = 4 * (kQTiles + 1);
    static constexpr int kMmaWarp = kTmaWarp + 1;
    static constexpr int kThreads = kWarpgroupThreads * (kQTiles + 2);
    static_assert(kThreads == MGPU_ATTENTION_FWD_SM100_THREADS(kHeadDim), "threads differ from the ABI");
    /* Score chunks of 32 keys a softmax thread keeps in registers between
     * its two passes (the rest it reads from TMEM again). */
    static constexpr int kSoftmaxKeepChunks = kBlockN / 32 > 2 ? 2 : kBlockN / 32;
    static constexpr int kSoftmaxRegisters = 192, kCorrectionRegisters = 80, kPipeRegisters = 48;
    static_assert(kQTiles == 1 ||
                      kWarpgroupThreads * (kQTiles * kSoftmaxRegisters + kCorrectionRegisters + kPipeRegisters) <= 65536,
                  "register split fits the register file");

    struct alignas(kSwizzleAtom) SharedStorage {
        uint8_t q[kQTileBytes];
        uint8_t k[kStages][kKVTileBytes];
        uint8_t v[kStages][kKVTileBytes];
        float scale[kQTiles][kTileRows];     /* per block: O correction factor of each row */
        float final_sum[kQTiles][kTileRows]; /* after the last block: row sum (base-2 exponentials) */
        float final_max[kQTiles][kTileRows]; /* and the (scaled, base-2) maximum it refers to */
        uint64_t q_full;
        uint64_t k_full[kStages], k_empty[kStages];
        uint64_t v_full[kStages], v_empty[kStages];
        uint64_t s_full[kQTiles], p_full[kQTiles], o_done[kQTiles];
        uint64_t scale_ready[kQTiles], final_ready[kQTiles];
        uint32_t tmem_base;
    };
    static constexpr int kSmemBytes = mgpu_attention_fwd_sm100_smem_bytes(kBlockM, kBlockN, kHeadDim, kStages);
    static_assert(static_cast<int>(sizeof(SharedStorage)) + kSwizzleAtom <= kSmemBytes,
                  "shared storage exceeds the ABI formula (abi/attention_abi.h)");
    static_assert(kSmemBytes <= 232448, "over the sm_100 227 KB per-block limit");
};

template <class Cfg>
__device__ __forceinline__ void attention_fwd(const mgpu_attention_fwd_params &p)
{
    namespace ptx = cuda::ptx;
    using Smem = typename Cfg::SharedStorage;
    extern __shared__ uint8_t attn_sm100_smem_raw[];
    const uintptr_t base = reinterpret_cast<uintptr_t>(attn_sm100_smem_raw);
    Smem &smem = *reinterpret_cast<Smem *>((base + Cfg::kSwizzleAtom - 1) & ~uintptr_t(Cfg::kSwizzleAtom - 1));

    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int warpgroup = warp / 4;
    const sm90::AttnTileScheduler<Cfg::kBlockM> scheduler(p.args);
    const sm90::AttnFwdWork w = sm90::attn_fwd_work<Cfg>(p.args, scheduler.decode(static_cast<int>(blockIdx.x)));
    if (!sm90::attn_fwd_tile_active(w, Cfg::kBlockM))
        return; /* varlen: past this sequence's end (uniform over the CTA, before any barrier) */

    if (threadIdx.x == 0) {
        mbar_init(&smem.q_full, 1);
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&smem.k_full[s], 1);
            mbar_init(&smem.v_full[s], 1);
            mbar_init(&smem.k_empty[s], 1);
            mbar_init(&smem.v_empty[s], 1);
        }
        for (int q = 0; q < Cfg::kQTiles; ++q) {
            mbar_init(&smem.s_full[q], 1);
            mbar_init(&smem.o_done[q], 1);
            mbar_init(&smem.p_full[q], 8);
            mbar_init(&smem.scale_ready[q], 4);
            mbar_init(&smem.final_ready[q], 4);
        }
        mbar_fence_init();
    }
    const uint32_t tmem_cols = Cfg::kTmemCols; /* by value: the wrappers take a reference */
    if (warp == Cfg::kMmaWarp) {
        ptx::tcgen05_alloc(ptx::cta_group_1, &smem.tmem_base, tmem_cols);
        ptx::tcgen05_relinquish_alloc_permit(ptx::cta_group_1);
    }
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t tmem = smem.tmem_base;

    if (warpgroup < Cfg::kQTiles) {
        if constexpr (Cfg::kQTiles > 1)
            sm90::setmaxnreg_inc<Cfg::kSoftmaxRegisters>();
        attn_fwd_softmax<Cfg>(p.args, smem, tmem, w, warpgroup);
    } else if (warpgroup == Cfg::kCorrectionWarpgroup) {
        if constexpr (Cfg::kQTiles > 1)
            sm90::setmaxnreg_dec<Cfg::kCorrectionRegisters>();
        attn_fwd_correction<Cfg>(p.args, smem, tmem, w);
    } else {
        if constexpr (Cfg::kQTiles > 1)
            sm90::setmaxnreg_dec<Cfg::kPipeRegisters>();
        if (warp == Cfg::kTmaWarp && p.args.block_table != 0)
            attn_fwd_tma_paged<Cfg>(p, smem, w); /* the whole warp looks up the pages */
        else if (warp == Cfg::kTmaWarp && lane == 0)
            attn_fwd_tma<Cfg>(p, smem, w);
        else if (warp == Cfg::kMmaWarp && lane == 0)
            attn_fwd_mma<Cfg>(smem, tmem, w);
    }
    __syncwarp();

    /* The correction warpgroup has waited for the last P V: every MMA is done. */
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (warp == Cfg::kMmaWarp) {
        ptx::tcgen05_fence_after_thread_sync();
        ptx::tcgen05_dealloc(ptx::cta_group_1, tmem, tmem_cols);
    }
}

} // namespace sm100
} // namespace mgpu
