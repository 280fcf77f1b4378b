/*
 * Blackwell (sm_100a) flash-attention backward, FlashAttention-4 style: the
 * kernel shell (configuration, shared memory, tensor memory, barriers,
 * roles, teardown).
 *
 * NOT RUN ON BLACKWELL HARDWARE: no machine here has an sm_100 GPU. This
 * kernel is compiled, its SASS instruction mix is checked by a test
 * (tests/sass_sm100_attention_bwd.sh: UTCHMMA with shared-memory and
 * tensor-memory A operands, UTMALDG, LDTM / STTM, no local memory), its
 * descriptors are checked at compile time against the PTX ISA tables
 * (attention_bwd_sm100_descriptors.cuh), and its selection is tested with a
 * made-up cc 10.0 device. bench/blackwell_first_run.sh runs its GPU test
 * first on a B200.
 *
 * Same call as the Hopper backward: struct mgpu_attention_bwd_params of
 * abi/attention_bwd_abi.h, the same tile table (block_m = 64 queries;
 * block_n = 128 keys for head dims 64, 96, 128, 64 for 192 and 256), the
 * same scratch layout, tensor-map boxes and preprocess / postprocess
 * (hopper/attention_bwd_prepost.cuh is architecture-neutral and compiled for
 * sm_100a too).
 *
 * Work: one CTA per (128 keys, query head h, sequence b), key blocks fastest
 * in blockIdx.x; it walks the query blocks the mask leaves from the last to
 * the first, as the Hopper kernel does, so the deterministic mode's turns are
 * the same. Head dims 64..128: the 128 keys are the ABI's key block.
 *
 * Head dims 192 and 256: split head dim. dK and dV of 128 keys would take
 * 2 x d tensor-memory columns beside S^T, dP^T and dQ^T (192 + 2d > 512), and
 * an M = 64 layout (64 keys, the ABI's block_n) is one this library has never
 * used and nothing here could check. So a CTA still takes 128 keys (the
 * ABI's key blocks 2k and 2k + 1; K and V arrive as two 64-row boxes) and
 * kSlices = 2 CTAs share them: slice 0 owns head-dim columns [0, 128) of dK,
 * dV and dQ, slice 1 [128, d) (64 columns for d = 192, 128 for 256). Each
 * computes S^T = K Q^T and dP^T = V dO^T over the full head dim (P^T and
 * dS^T need it), then dV[:, slice] += P^T dO[:, slice], dK[:, slice] +=
 * dS^T Q[:, slice] and dQ^T[slice] = K[:, slice]^T dS^T. The grid is the
 * ABI's exception (mgpu_attention_bwd_sm100_ctas: round_up(n_blocks, 2) CTAs
 * per query head, slice fastest: blockIdx.x = ((b * heads_q + h) * key
 * blocks of 128 + k) * 2 + slice). Cost: S^T and dP^T are computed by both
 * slices, 7 instead of 5 (d x 128 x 64)-sized GEMM units per query block
 * (S^T and dP^T twice, dV, dK, dQ once over all slices): 40% more tensor
 * work (7 1/3 at d = 192, whose second slice's dQ^T keeps M = 128 for 64
 * head-dim rows). Faster later: M = 64 MMAs with two accumulators in the two lane
 * halves, or 2-CTA (cta_group::2) MMAs over 256 keys, each without the
 * recomputation. Shared memory: K, V (128 x d each), one Q and one dO
 * stage (64 x d) and two dS^T buffers are 176 KiB at d = 192 and 224 KiB at
 * d = 256, inside the ABI's 183 296 / 232 448 bytes (mgpu_attention_bwd_smem_
 * bytes), so these head dims keep kStages = 1 (the MMA schedule without
 * overlap across query blocks: attention_bwd_sm100_pipeline.cuh).
 * Deterministic mode: the two slices add disjoint columns, so the dq /
 * dkv semaphores count both (wg_turn_acquire / wg_turn_release): each
 * column still receives its adds in key-block (dQ) or query-head (dK, dV)
 * order, and every wait points at CTAs with a smaller index.
 *
 * Tensor memory (512 columns allocated by the MMA warp; lane = key of the
 * block for everything but dQ^T, whose lane is the head-dim column of the
 * slice); w = the slice's width (d for d <= 128, else at most 128):
 *   S^T   [0, 64)            fp32 scores, 64 queries; P^T written back over
 *                            its first 32 columns (16-bit pairs)
 *   dP^T  [64, 128)          fp32; dS^T written back over its first 32
 *   dQ^T  [128, 192)         fp32, lane = head-dim column, 64 queries
 *   dV    [192, 192 + w)     fp32 accumulator over all query blocks
 *   dK    [192 + w, 192 + 2w)
 * w = 128 uses 448 columns.
 *
 * Warps (384 threads, the ABI's MGPU_ATTENTION_BWD_THREADS):
 *   warpgroup 0   compute: thread t owns key t (TMEM lane t): P^T, dS^T per
 *                 query block; at the end dK, dV (the slice) out of tensor
 *                 memory
 *   warpgroup 1   dQ: thread t owns head-dim column slice start + t of
 *                 dQ^T; per query block it reads its 64 values and adds
 *                 them into dq_accum
 *   warpgroup 2   warp 8: TMA (one lane, the Hopper producer's loop);
 *                 warp 9: TMEM allocation and the MMA (one lane);
 *                 warps 10, 11 idle
 *
 * Barriers (count: who arrives), each completing once per query block i
 * (parity i & 1) unless said otherwise:
 *   kv_full             1 + K, V bytes   TMA -> MMA (once)
 *   q_full / do_full[s] 1 + bytes        TMA -> MMA, compute (lse, dpsum rows)
 *   q_empty / do_empty  1 (commit)       MMA -> TMA: stage s no longer read
 *   s_full              1 (commit)       MMA -> compute: S^T in TMEM
 *   dp_full             1 (commit)       MMA -> compute: dP^T in TMEM
 *   p_full              4 (warps)        compute -> MMA: P^T in TMEM
 *   ds_full             4 (warps)        compute -> MMA: dS^T in TMEM and in ds[i % 2]
 *   dv_done / dk_done   1 (commit)       MMA -> MMA: P^T / dS^T read (their
 *                                        columns may be overwritten)
 *   dq_full             1 (commit)       MMA -> dQ: dQ^T in TMEM
 *   dq_empty            4 (warps)        dQ -> MMA: dQ^T read out
 *   kv_done             1 (commit)       MMA -> compute: every MMA done (once)
 * (stage s = i % kStages: two stages for d <= 128, one for 192 / 256, whose
 * q_full / do_full / q_empty / do_empty then also complete once per block.)
 * No barrier runs two phases ahead of a waiter (attention_bwd_sm100_pipeline.cuh
 * gives the argument per barrier, for both stage counts).
 *
 * Files by role: this shell; attention_bwd_sm100_pipeline.cuh (MMA warp;
 * the TMA warp is sm90::attn_bwd_producer, architecture-neutral, with the
 * lse / dpsum rows on the Q / dO stage barriers);
 * attention_bwd_sm100_compute.cuh (compute and dQ warpgroups);
 * attention_bwd_sm100_descriptors.cuh (descriptor checks); tcgen05.cuh.
 * Shared with the Hopper backward: AttnBwdWork / attn_bwd_work_at (the CTA's
 * work and mask interval algebra), attn_bwd_first_n_block (deterministic
 * turns, in units of this kernel's 128 keys), the producer (K / V boxes of
 * kKVBoxRows rows), the red / acquire / release helpers.
 */
#pragma once

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_bwd_abi.h"
#include "blackwell/attention_bwd_sm100_descriptors.cuh"
#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"
#include "hopper/attention_bwd_sm90.cuh" /* AttnBwdWork, attn_bwd_work_at, attn_bwd_producer */

namespace mgpu {
namespace sm100 {

template <typename Element, int kHeadDim_>
struct AttnBwdSm100Config {
    using T = Element;
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16");
    static constexpr int kElementBytes = 2;

    static constexpr int kHeadDim = kHeadDim_;
    static_assert(kHeadDim == 64 || kHeadDim == 96 || kHeadDim == 128 || kHeadDim == 192 || kHeadDim == 256,
                  "sm_100a attention backward head dims: 64, 96, 128, 192, 256");
    /* The ABI's tile table (shared with Hopper: same scratch, same pre/post,
     * same tensor-map boxes); gen/ checks the registry against these two. */
    static constexpr int kAbiBlockN = sm90::AttnBwdTile<kHeadDim>::kBlockN;
    static constexpr int kAbiStages = sm90::AttnBwdTile<kHeadDim>::kStages;
    /* This kernel's tiles: 64 queries per block, 128 keys per CTA (one per
     * TMEM lane) for every head dim, i.e. two ABI key blocks of 64 for head
     * dims 192 / 256; those split the head dim of dK, dV, dQ into kSlices
     * slices of at most kSliceCols columns, one per CTA, and keep one Q / dO
     * stage (the shared memory the ABI gives them: see SharedStorage). */
    static constexpr int kBlockM = sm90::AttnBwdTile<kHeadDim>::kBlockM;
    static constexpr int kBlockN = 128;
    static constexpr int kKVBoxRows = kAbiBlockN; /* rows of one K / V tensor-map box */
    static constexpr int kSlices = kHeadDim > 128 ? 2 : 1;
    static constexpr int kSliceCols = kHeadDim > 128 ? 128 : kHeadDim;          /* slices 0 .. kSlices - 2 */
    static constexpr int kLastSliceCols = kHeadDim - (kSlices - 1) * kSliceCols; /* 64 for d = 192 */
    static constexpr int kStages = kHeadDim > 128 ? 1 : 2;
    static_assert(kBlockM == 64 && kAbiStages == 2 && (kAbiBlockN == kBlockN || 2 * kAbiBlockN == kBlockN),
                  "tiles of the tensor-memory plan below");
    static_assert(kSlices == 1 || (kSlices == 2 && kBlockN / kAbiBlockN == 2),
                  "the ABI's mgpu_attention_bwd_sm100_ctas: 2 slices per 2 key blocks");
    static_assert(kLastSliceCols > 0 && kLastSliceCols <= kSliceCols &&
                      (kSlices == 1 || (kSliceCols % 64 == 0 && kLastSliceCols % 64 == 0)),
                  "slices of whole 64-column blocks");

    static constexpr int kSwizzleBytes = 128;
    static constexpr int kSwizzleElems = kSwizzleBytes / kElementBytes;
    static constexpr int kAtomBytes = 1024; /* 8 swizzled rows */
    static constexpr int kDimBlocks = (kHeadDim + kSwizzleElems - 1) / kSwizzleElems;
    static constexpr int kMmaK = 16; /* K of one kind::f16 tcgen05.mma */
    static_assert(kHeadDim % kMmaK == 0 && kBlockM % kMmaK == 0 && kBlockN % kMmaK == 0, "MMA K is 16");
    static_assert(kBlockM * kElementBytes == kSwizzleBytes, "one dS^T row (64 queries) is one swizzle row");

    /* Threads: 3 warpgroups (the ABI's count). */
    static constexpr int kWarpgroupThreads = 128;
    static constexpr int kThreads = 3 * kWarpgroupThreads;
    static_assert(kThreads == MGPU_ATTENTION_BWD_THREADS, "ABI thread count");
    static constexpr int kComputeWarpgroup = 0, kDqWarpgroup = 1;
    static constexpr int kTmaWarp = 8, kMmaWarp = 9;
    static_assert(kBlockN == kWarpgroupThreads, "one compute thread per key (TMEM lane)");

    /* Tile bytes (the Hopper producer's names). */
    static constexpr int kQBlockBytes = kBlockM * kSwizzleBytes;  /* one 64-column block of Q / dO */
    static constexpr int kKVBlockBytes = kBlockN * kSwizzleBytes; /* of K / V */
    static constexpr int kQTileBytes = kDimBlocks * kQBlockBytes;
    static constexpr int kKVTileBytes = kDimBlocks * kKVBlockBytes;
    static constexpr int kDsBytes = kBlockN * kBlockM * kElementBytes; /* [key][query], 128-byte rows */
    static constexpr int kRowBytes = kBlockM * 4;                      /* lse_log2 / dpsum of one block */
    static constexpr int kMmaStepBytesMN = kMmaK * kSwizzleBytes;      /* 16 rows of an MN-major operand */
    static constexpr int kMmaStepBytesK = kMmaK * kElementBytes;       /* 16 columns of a K-major one */
    static_assert(kRowBytes % 16 == 0, "bulk copies move multiples of 16 bytes");
    static_assert(kQBlockBytes % kAtomBytes == 0 && kKVBlockBytes % kAtomBytes == 0 && kDsBytes % kAtomBytes == 0,
                  "every operand starts on a swizzle atom (descriptor base offset 0)");

    /* dQ^T = K^T dS^T of a slice has M = 128 head-dim rows: the K tile read
     * MN-major from the slice's first column needs two 64-column blocks. For
     * d = 96 the second block's columns 96..127 are TMA's zero fill; for
     * d = 64 and for the second slice of d = 192 (columns 128..191) it is the
     * V tile behind K (SharedStorage keeps v right after k): those TMEM lanes
     * hold values nobody reads. */
    static constexpr int kDqtM = 128;
    static constexpr int kSliceBlocks = kDqtM / kSwizzleElems; /* 64-column blocks from a slice's start */
    static_assert(kSliceCols % 32 == 0 && kLastSliceCols % 32 == 0 && kSliceCols <= kDqtM,
                  "dQ^T lanes: warps of 32 head-dim columns");

    /* Tensor memory columns (dV, dK: the CTA's slice, at most 128 columns). */
    static constexpr uint32_t kTmemCols = 512;
    static constexpr uint32_t kColS = 0, kColDP = 64, kColDQ = 128;
    static constexpr uint32_t kColDV = 192, kColDK = 192 + kSliceCols;
    static_assert(kColDP == kColS + kBlockM && kColDQ == kColDP + kBlockM && kColDV == kColDQ + kBlockM,
                  "S^T, dP^T, dQ^T: 64 fp32 columns each (one per query)");
    static_assert(kColDK + kSliceCols <= kTmemCols, "S^T, dP^T, dQ^T, dV, dK fit the 512 columns");

    static constexpr uint32_t kIdescST = make_idesc_f16_f32acc<T, kBlockN, kBlockM, true, true>();
    static constexpr uint32_t kIdescKV = make_idesc_f16_f32acc<T, kBlockN, kSliceCols, true, false>();
    static constexpr uint32_t kIdescKVLast = make_idesc_f16_f32acc<T, kBlockN, kLastSliceCols, true, false>();
    static constexpr uint32_t kIdescDQT = make_idesc_f16_f32acc<T, kDqtM, kBlockM, false, false>();
    static_assert(check_attention_bwd_descriptors<T, kSliceCols, kQBlockBytes, kKVBlockBytes, kDsBytes>() &&
                      check_attention_bwd_descriptors<T, kLastSliceCols, kQBlockBytes, kKVBlockBytes, kDsBytes>(),
                  "descriptor checks");

    struct alignas(kAtomBytes) SharedStorage {
        uint8_t k[kKVTileBytes];
        uint8_t v[kKVTileBytes]; /* right after k: dQ^T of d = 64 / 192 reads past k (see kDqtM) */
        uint8_t q[kStages][kQTileBytes];
        uint8_t dout[kStages][kQTileBytes];
        uint8_t ds[2][kDsBytes];
        float lse[kStages][kBlockM];
        float dpsum[kStages][kBlockM];
        uint64_t kv_full;
        uint64_t q_full[kStages], q_empty[kStages];
        uint64_t do_full[kStages], do_empty[kStages];
        uint64_t s_full, dp_full, p_full, ds_full;
        uint64_t dv_done, dk_done, dq_full, dq_empty, kv_done;
        uint32_t tmem_base;
    };
    static_assert(offsetof(SharedStorage, v) == offsetof(SharedStorage, k) + kKVTileBytes, "v right after k");
    static_assert(kDimBlocks % kSliceBlocks == 0 || offsetof(SharedStorage, v) + kKVBlockBytes <= sizeof(SharedStorage),
                  "the d = 64 / 192 dQ^T A operand stays inside the storage");
    static constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage)) + kAtomBytes;
    /* The generated unit checks kSmemBytes <= mgpu_attention_bwd_smem_bytes(kHeadDim)
     * (the ABI formula, not constexpr here) with the number gen/ wrote into it. */
    static_assert(kSmemBytes <= 232448, "over the sm_100 227 KB per-block limit");
};

/* The CTA's head-dim slice of dK, dV and dQ: columns [col0, col0 + cols). */
struct BwdSlice {
    int index;
    int col0;
    int cols;
};

template <class Cfg>
__device__ __forceinline__ BwdSlice bwd_slice(int index)
{
    BwdSlice s;
    s.index = index;
    s.col0 = index * Cfg::kSliceCols;
    s.cols = index == Cfg::kSlices - 1 ? Cfg::kLastSliceCols : Cfg::kSliceCols;
    return s;
}

/* Named barrier ids (0 is __syncthreads). */
enum AttnBwdSm100Barrier : int {
    kBwd100BarrierDq = 1,  /* the dQ warpgroup's deterministic turn */
    kBwd100BarrierDkv = 2, /* the compute warpgroup's deterministic GQA turn */
};

} // namespace sm100
} // namespace mgpu

#include "blackwell/attention_bwd_sm100_compute.cuh"
#include "blackwell/attention_bwd_sm100_pipeline.cuh"

namespace mgpu {
namespace sm100 {

template <class Cfg>
__device__ __forceinline__ void attention_bwd(const mgpu_attention_bwd_params &p)
{
    namespace ptx = cuda::ptx;
    using Smem = typename Cfg::SharedStorage;
    extern __shared__ uint8_t attn_bwd_sm100_smem_raw[];
    const uintptr_t base = reinterpret_cast<uintptr_t>(attn_bwd_sm100_smem_raw);
    Smem &smem = *reinterpret_cast<Smem *>((base + Cfg::kAtomBytes - 1) & ~uintptr_t(Cfg::kAtomBytes - 1));

    /* The CTA: slice fastest, then 128-key block, query head, sequence (the
     * ABI's grid for this kernel, mgpu_attention_bwd_sm100_ctas); the
     * key-side scratch rows start at multiples of the ABI's block_n. */
    const int x = static_cast<int>(blockIdx.x);
    const int key_blocks = (p.args.n_blocks + Cfg::kBlockN / Cfg::kAbiBlockN - 1) / (Cfg::kBlockN / Cfg::kAbiBlockN);
    const int tile = x / Cfg::kSlices;
    const sm90::AttnBwdWork w = sm90::attn_bwd_work_at<Cfg, Cfg::kAbiBlockN>(
        p.args, tile % key_blocks, (tile / key_blocks) % p.args.heads_q, tile / (key_blocks * p.args.heads_q));
    const BwdSlice slice = bwd_slice<Cfg>(x % Cfg::kSlices);
    /* Key blocks past this sequence's end (varlen): nothing to compute or
     * write (uniform over the CTA, before any barrier). */
    if (w.n_block * Cfg::kBlockN >= w.seqlen_k)
        return;

    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int warpgroup = warp / 4;
    if (threadIdx.x == 0) {
        tma_prefetch_map(&p.tmap_q);
        tma_prefetch_map(&p.tmap_k);
        tma_prefetch_map(&p.tmap_v);
        tma_prefetch_map(&p.tmap_do);
        mbar_init(&smem.kv_full, 1);
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&smem.q_full[s], 1);
            mbar_init(&smem.do_full[s], 1);
            mbar_init(&smem.q_empty[s], 1);
            mbar_init(&smem.do_empty[s], 1);
        }
        mbar_init(&smem.s_full, 1);
        mbar_init(&smem.dp_full, 1);
        mbar_init(&smem.p_full, 4);
        mbar_init(&smem.ds_full, 4);
        mbar_init(&smem.dv_done, 1);
        mbar_init(&smem.dk_done, 1);
        mbar_init(&smem.dq_full, 1);
        mbar_init(&smem.dq_empty, 4);
        mbar_init(&smem.kv_done, 1);
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

    if (warpgroup == Cfg::kComputeWarpgroup) {
        attn_bwd_sm100_compute<Cfg>(p.args, smem, tmem, w, slice);
    } else if (warpgroup == Cfg::kDqWarpgroup) {
        attn_bwd_sm100_dq<Cfg>(p.args, smem, tmem, w, slice);
    } else {
        if (warp == Cfg::kTmaWarp && lane == 0)
            sm90::attn_bwd_producer<Cfg, true>(p, smem, w); /* lse / dpsum rows on q_full / do_full */
        else if (warp == Cfg::kMmaWarp && lane == 0)
            attn_bwd_sm100_mma<Cfg>(smem, tmem, w, slice);
    }
    __syncwarp();

    /* The compute warpgroup has waited for kv_done (the last MMA) and the dQ
     * warpgroup for the last dq_full: no MMA is in flight. */
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (warp == Cfg::kMmaWarp) {
        ptx::tcgen05_fence_after_thread_sync();
        ptx::tcgen05_dealloc(ptx::cta_group_1, tmem, tmem_cols);
    }
}

} // namespace sm100
} // namespace mgpu
