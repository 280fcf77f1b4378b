/*
 * Hopper (sm_90a) flash-attention forward with fp8 (e4m3) Q, K and V, fp32
 * softmax and a 16-bit O (FlashAttention-3's fp8 path). Contract with the
 * runtime: abi/attention_fwd_fp8_abi.h.
 *
 * The schedule is the 16-bit kernel's (attention_fwd_sm90.cuh): the same
 * producer thread (attn_fwd_producer of attention_fwd_mainloop.cuh: Q, then
 * K and V per key block, TMA), two consumer warpgroups of 64 query rows in
 * ping-pong, the same tile scheduler, mask, online softmax and epilogue.
 * What differs:
 *
 *   - S = Q K^T is m64n128k32 e4m3 wgmma, both operands K-major as loaded.
 *   - O += P V needs V K-major too (fp8 wgmma has no transpose), i.e. V^T
 *     with the keys contiguous. Two warps of the producer warpgroup
 *     (kTransposeWarps) transpose each V block in shared memory into a third
 *     ring of buffers (vt) as soon as it lands: V (v_full) -> registers ->
 *     byte permutes -> V^T (vt_full); the raw V buffer is released at once
 *     (v_empty), V^T once both consumers' P V completed (vt_empty).
 *   - P goes from the fp32 S fragment to the fp8 A fragment of m64nNk32
 *     without any exchange between threads: thread (row, quad lane q) holds
 *     keys 8j + 2q + {0, 1}; the A fragment wants, per register, four
 *     consecutive K indices 4q + {0..3} of a 16-key half. The transpose
 *     therefore stores V's keys permuted within each group of 16: K index
 *     4q + e holds key 2q + (e & 1) + 8 (e >> 1), exactly the keys the
 *     thread has (the sum over keys does not care about their order).
 *   - P = exp2(s * scale - max + 8): probabilities up to 256, which e4m3
 *     (max 448) holds with 3 mantissa bits down to 2^-6 * 2^-8 of the row
 *     maximum (OnlineSoftmax's kMaxOffsetLog2).
 *   - Descales: softmax_scale * q_descale * k_descale folds into the exp2
 *     scale (into the soft-cap's pre-scale with a soft-cap), v_descale into
 *     the final normalisation of O. Factors are read per tile (per batch
 *     and KV head, or one per tensor).
 *
 * Transpose, per key block of 128 keys x 128 dims (16 KiB), in 4 passes of
 * each of the two warps. Lane l owns the K-index group 4l .. 4l + 3 of V^T,
 * i.e. keys r_i = 16 (l / 4) + 2 (l % 4) + (i & 1) + 8 (i >> 1), i = 0..3,
 * and in pass p the 16 dims of chunk dc = ((l % 8 + p) % 8) ^ (2 (l % 4)):
 * four 16-byte loads (rows r_i, chunk dc), four 4 x 4 byte transposes
 * (8 PRMT each), sixteen 4-byte stores (rows dc * 16 + m of V^T, bytes
 * 4l .. 4l + 3). Over the 8 passes of the two warps every (lane, chunk)
 * pair occurs once. With the 128-byte swizzle (16-byte chunk c of row r at
 * c ^ (r % 8)) the 8 lanes of each quarter warp load 8 distinct chunk
 * positions and the 32 lanes of each store hit 32 distinct banks.
 *
 * Shared memory: 2 Q buffers of 32 KiB (fp8 Q uses the first 16 KiB; the
 * epilogue stages the 16-bit O over both), 3 stages each of K, V and V^T
 * (16 KiB each): 208 KiB. Three stages rather than two: H100, B=4 H=16
 * S=4096, causal 502-514 -> 570 TFLOP/s, GQA 32/8 causal 479-556 -> 589,
 * non-causal within the run-to-run spread (docs/performance.md, "Attention
 * forward, fp8").
 *
 * kVtInWorkspace (the V^T twin, ATTENTION_FWD_FP8_VT_SM90): a pre-pass
 * (attention_fwd_fp8_transpose_v.cuh) has written V^T, keys permuted as
 * above, into the workspace (abi/attention_fwd_fp8_abi.h, "V^T from the
 * workspace"); the producer thread loads V^T tiles into the v ring through
 * the V map (block n at row v_tile_row(n)) exactly as it loads K, and the
 * consumers read them there (v_full / v_empty, 8 consumer-warp arrivals).
 * No transposing warps, no raw V ring: 2 Q buffers and 4 stages of K and
 * V^T, 192 KiB; registers 24 (producer warpgroup) + 240 (consumers) as in
 * the 16-bit kernel. H100, B=4 S=4096 H=16: 639-647 -> 754-764 TFLOP/s
 * non-causal, 563-582 -> 640-647 causal, the pre-pass included.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_abi.h"
#include "abi/attention_fwd_fp8_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/shared_memory.cuh"
#include "hopper/attention_fwd_epilogue.cuh"
#include "hopper/attention_fwd_fp8_transpose_v.cuh"
#include "hopper/attention_fwd_mainloop.cuh"
#include "hopper/attention_fwd_mask.cuh"
#include "hopper/attention_fwd_softmax.cuh"
#include "hopper/attention_fwd_tile_scheduler.cuh"
#include "hopper/warpgroup.cuh"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {

/* The field names are those the shared producer (attn_fwd_producer) and
 * epilogue (attn_fwd_epilogue) read: T, kElementBytes and kSwizzleElems
 * describe the 16-bit O they stage; kDimBlocks, kQTileBytes and kKVTileBytes
 * the fp8 tiles they load (one 128-byte box per row). */
template <typename OutT, int kHeadDim_, bool kVtInWorkspace_ = false>
struct AttnFwdFp8Config {
    using T = OutT; /* O */
    using In = __nv_fp8_e4m3;
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16 output");
    static constexpr int kElementBytes = 2; /* of O */

    static constexpr int kHeadDim = kHeadDim_;
    static_assert(kHeadDim == MGPU_ATTENTION_FWD_FP8_HEAD_DIM, "fp8 forward: head dim 128");
    static constexpr int kBlockM = MGPU_ATTENTION_FWD_BLOCK_M;
    static constexpr int kBlockN = MGPU_ATTENTION_FWD_FP8_BLOCK_N;
    /* V^T loaded from the workspace (the pre-pass wrote it) instead of
     * transposed here: no transposing warps, no raw V ring (v holds V^T). */
    static constexpr bool kVtInWorkspace = kVtInWorkspace_;
    static constexpr int kStages = kVtInWorkspace ? MGPU_ATTENTION_FWD_FP8_VT_STAGES : MGPU_ATTENTION_FWD_FP8_STAGES;
    static constexpr int kQStages = MGPU_ATTENTION_FWD_FP8_Q_STAGES;
    static constexpr bool kLazyRescale = false;
    static constexpr int kPolyExp2Every = 0;
    static constexpr int kMaxOffsetLog2 = 8;

    static constexpr int kSwizzleBytes = 128;
    static constexpr int kSwizzleElems = kSwizzleBytes / kElementBytes; /* O columns per swizzle row */
    static constexpr int kRowBytes = MGPU_ATTENTION_FWD_FP8_ROW_BYTES;  /* one fp8 head-dim row */
    static_assert(kRowBytes == kHeadDim && kRowBytes == kSwizzleBytes, "one swizzle row per fp8 row");
    static constexpr int kDimBlocks = 1;
    static constexpr int kWgmmaKBytes = 32; /* k32 of 8-bit elements */
    static constexpr int kQkSteps = kHeadDim / kWgmmaKBytes;
    static constexpr int kPvSteps = kBlockN / kWgmmaKBytes;
    static_assert(kBlockN == 128, "V^T rows are one swizzle row of keys");

    static constexpr int kWarpgroupThreads = 128;
    static constexpr int kConsumerWarpgroups = 2;
    static constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
    static constexpr int kConsumerWarps = kConsumerWarpgroups * kWarpgroupThreads / 32;
    static constexpr int kRowsPerConsumer = kBlockM / kConsumerWarpgroups;
    static_assert(kRowsPerConsumer == 64, "one wgmma M per consumer warpgroup");
    /* Warps 1 .. kTransposeWarps of the producer warpgroup transpose V. */
    static constexpr int kTransposeWarps = kVtInWorkspace ? 0 : 2;
    static constexpr int kTransposePasses = kVtInWorkspace ? 0 : 8 / kTransposeWarps;

    /* 128 * 56 + 256 * 224 = 64512, the 384 x 168 registers of the launch:
     * the transposing warps hold 16 loaded words, the permuted ones and
     * addresses (40 spilled); the consumers hold O, S and P (64 + 64 + 16).
     * Without transposing warps the producer is one thread: 24 + 240 as in
     * the 16-bit kernel. */
    static constexpr int kProducerRegisters = kVtInWorkspace ? 24 : 56;
    static constexpr int kConsumerRegisters = kVtInWorkspace ? 240 : 224;

    static constexpr int kQBlockBytes = kBlockM * kSwizzleBytes; /* fp8 Q tile; one 64-column block of O */
    static constexpr int kKVBlockBytes = kBlockN * kSwizzleBytes;
    static constexpr int kQTileBytes = kQBlockBytes;
    static constexpr int kKVTileBytes = kKVBlockBytes;
    static constexpr int kQBufferBytes = kBlockM * MGPU_ATTENTION_FWD_FP8_O_ROW_BYTES;
    static_assert(kQBufferBytes == 2 * kQBlockBytes, "a Q buffer stages the 16-bit O");

    struct alignas(kSwizzleAtomBytes) StorageTransposing {
        uint8_t q[kQStages][kQBufferBytes];
        uint8_t k[kStages][kKVTileBytes];
        uint8_t v[kStages][kKVTileBytes];
        uint8_t vt[kStages][kKVTileBytes];
        int q_tile[kQStages];
        uint64_t q_full[kQStages];
        uint64_t q_empty[kQStages];
        uint64_t k_full[kStages];
        uint64_t k_empty[kStages];
        uint64_t v_full[kStages];
        uint64_t v_empty[kStages];
        uint64_t vt_full[kStages];
        uint64_t vt_empty[kStages];
    };
    /* kVtInWorkspace: v holds V^T tiles as loaded. */
    struct alignas(kSwizzleAtomBytes) StorageVtLoaded {
        uint8_t q[kQStages][kQBufferBytes];
        uint8_t k[kStages][kKVTileBytes];
        uint8_t v[kStages][kKVTileBytes];
        int q_tile[kQStages];
        uint64_t q_full[kQStages];
        uint64_t q_empty[kQStages];
        uint64_t k_full[kStages];
        uint64_t k_empty[kStages];
        uint64_t v_full[kStages];
        uint64_t v_empty[kStages];
    };
    using SharedStorage = std::conditional_t<kVtInWorkspace, StorageVtLoaded, StorageTransposing>;
    static constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage)) + kSwizzleAtomBytes;
    static_assert(kSmemBytes <= MGPU_ATTENTION_FWD_SMEM_LIMIT, "fits a Hopper CTA");

    /* The V tile's row coordinate of key block n (the producer's
     * produce_kv): K's, or with V^T in the workspace the block's rows there
     * (abi/attention_fwd_fp8_abi.h, base(b) + n blocks of 128 rows). */
    static __device__ __forceinline__ int v_tile_row(const mgpu_attention_fwd_args &a, const AttnFwdWork &w, int n)
    {
        if constexpr (!kVtInWorkspace)
            return w.k_offset + n * kBlockN;
        const int base =
            a.cu_seqlens_k != 0 ? static_cast<int>(static_cast<uint32_t>(w.k_offset) / kBlockN) + w.batch : 0;
        return (base + n) * kBlockN;
    }

    static constexpr int kBarrierTurnFirst = 1;
    static constexpr int kBarrierEpilogueFirst = 3;
};

/* Four fp32 values -> one register of four e4m3 values, x0 in the low byte. */
__device__ __forceinline__ uint32_t pack4_e4m3(float x0, float x1, float x2, float x3)
{
    uint32_t r;
    asm("{\n.reg .b16 lo, hi;\n"
        "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
        "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
        "mov.b32 %0, {lo, hi};\n}\n"
        : "=r"(r)
        : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
    return r;
}

/* Probabilities (fp32 accumulator layout) -> the e4m3 A fragments of
 * O += P V in the permuted key order described above. */
template <class Cfg>
__device__ __forceinline__ void convert_p_fp8(uint32_t (&pr)[Cfg::kBlockN / 8], const float (&s)[Cfg::kBlockN / 2])
{
#pragma unroll
    for (int kk = 0; kk < Cfg::kPvSteps; ++kk) {
        const int b = 16 * kk;
        pr[4 * kk + 0] = pack4_e4m3(s[b + 0], s[b + 1], s[b + 4], s[b + 5]);
        pr[4 * kk + 1] = pack4_e4m3(s[b + 2], s[b + 3], s[b + 6], s[b + 7]);
        pr[4 * kk + 2] = pack4_e4m3(s[b + 8], s[b + 9], s[b + 12], s[b + 13]);
        pr[4 * kk + 3] = pack4_e4m3(s[b + 10], s[b + 11], s[b + 14], s[b + 15]);
    }
}

/* S = Q K^T (fp8): both operands K-major, 32 bytes of the head dim per step. */
template <class Cfg>
__device__ __forceinline__ void issue_qk_fp8(float (&s)[Cfg::kBlockN / 2], uint32_t q_rows, uint32_t k_tile)
{
    /* Each step's descriptors: the tiles' low words plus a constant. */
    const uint32_t q_lo = wgmma_desc_lo(q_rows, 16), k_lo = wgmma_desc_lo(k_tile, 16);
    wgmma_fence_operands(s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::kQkSteps; ++kk) {
        const uint64_t da = wgmma_desc_join(q_lo + ((kk * Cfg::kWgmmaKBytes) >> 4), kSwizzleAtomBytes);
        const uint64_t db = wgmma_desc_join(k_lo + ((kk * Cfg::kWgmmaKBytes) >> 4), kSwizzleAtomBytes);
        wgmma_ss_fp8<typename Cfg::In, typename Cfg::In>(s, da, db, kk > 0);
    }
    wgmma_commit_group();
    wgmma_fence_operands(s);
}

/* O += P V (fp8): P from registers, B = V^T K-major (rows: dims; bytes: keys). */
template <class Cfg>
__device__ __forceinline__ void issue_pv_fp8(float (&o)[Cfg::kHeadDim / 2], uint32_t (&pr)[Cfg::kBlockN / 8],
                                             uint32_t vt_tile, bool accumulate)
{
    const uint32_t vt_lo = wgmma_desc_lo(vt_tile, 16);
    wgmma_fence_operands(o);
    wgmma_fence_operands(pr);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::kPvSteps; ++kk) {
        const uint64_t db = wgmma_desc_join(vt_lo + ((kk * Cfg::kWgmmaKBytes) >> 4), kSwizzleAtomBytes);
        const uint32_t a[4] = {pr[4 * kk + 0], pr[4 * kk + 1], pr[4 * kk + 2], pr[4 * kk + 3]};
        wgmma_rs_fp8<typename Cfg::In, typename Cfg::In>(o, a, db, (accumulate || kk > 0) ? 1 : 0);
    }
    wgmma_commit_group();
    wgmma_fence_operands(o);
    wgmma_fence_operands(pr);
}

/* One warp's share of the transpose of a V tile into V^T (see above). */
template <class Cfg>
__device__ __forceinline__ void transpose_v_block(uint32_t src, uint32_t dst, int warp, int lane)
{
    const int group = lane / 4, quad = lane % 4;
    const int row0 = 16 * group + 2 * quad; /* keys row0 + {0, 1, 8, 9} */
#pragma unroll 1
    for (int pass = 0; pass < Cfg::kTransposePasses; ++pass) {
        const int p = warp * Cfg::kTransposePasses + pass;
        const int dc = ((lane % 8 + p) % 8) ^ (2 * quad);
        uint32_t w[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = row0 + (i & 1) + 8 * (i >> 1);
            const uint4 x = ld_shared_u128(src + row * Cfg::kSwizzleBytes + ((dc ^ (row % 8)) * 16));
            w[i][0] = x.x;
            w[i][1] = x.y;
            w[i][2] = x.z;
            w[i][3] = x.w;
        }
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            uint32_t out[4];
            attn_fp8_vt::transpose_bytes_4x4(w, m, out);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int d = dc * 16 + 4 * m + k;
                st_shared_u32(dst + d * Cfg::kSwizzleBytes + ((group ^ (d % 8)) * 16) + 4 * quad, out[k]);
            }
        }
    }
}

/* The transposing warps: follow the tiles the producer publishes (each warp
 * arrives on the Q buffer's q_empty once it has read the tile index) and
 * transpose every V block of each. */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_fp8_transposer(const mgpu_attention_fwd_args &a,
                                                        typename Cfg::SharedStorage &smem,
                                                        const AttnTileScheduler<> &scheduler, int warp)
{
    const int lane = static_cast<int>(threadIdx.x) % 32;
    int kv_iter = 0, q_iter = 0;
    for (;;) {
        const int q_stage = q_iter % Cfg::kQStages;
        const int t = attn_fwd_next_tile<Cfg>(smem, q_stage, q_iter);
        __syncwarp();
        if (lane == 0)
            mbar_arrive(&smem.q_empty[q_stage]);
        if (t < 0)
            break;
        const AttnFwdWork w = attn_fwd_work<Cfg>(a, scheduler.decode(t));
        const int count = w.n_block_end - w.n_block_begin;
        for (int i = 0; i < count; ++i, ++kv_iter) {
            const int stage = kv_iter % Cfg::kStages;
            const uint32_t phase = (kv_iter / Cfg::kStages) & 1;
            mbar_wait(&smem.v_full[stage], phase);
            mbar_wait(&smem.vt_empty[stage], phase ^ 1);
            transpose_v_block<Cfg>(smem_u32(smem.v[stage]), smem_u32(smem.vt[stage]), warp, lane);
            /* Generic reads of V and writes of V^T before the next TMA write
             * and the consumers' wgmma reads (async proxy). */
            fence_smem_to_async();
            __syncwarp();
            if (lane == 0) {
                mbar_arrive(&smem.v_empty[stage]);
                mbar_arrive(&smem.vt_full[stage]);
            }
        }
        ++q_iter;
    }
}

/* A descale factor of (batch, KV head); 1 without an array. */
__device__ __forceinline__ float attn_descale(uint64_t array, const mgpu_attention_fwd_args &a, int batch, int head_kv)
{
    if (array == 0)
        return 1.f;
    return __ldg(reinterpret_cast<const float *>(array) + static_cast<int64_t>(batch) * a.descale_batch_stride +
                 static_cast<int64_t>(head_kv) * a.descale_head_stride);
}

template <class Cfg>
using Fp8Softmax = OnlineSoftmax<Cfg::kBlockN, Cfg::kLazyRescale, Cfg::kPolyExp2Every, Cfg::kMaxOffsetLog2>;

/* The key loop of one tile (count >= 1 blocks, the first at global iteration
 * kv_iter): attn_fwd_consumer_tile's schedule with fp8 GEMMs and V^T. */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_fp8_consumer_tile(const mgpu_attention_fwd_args &a,
                                                           typename Cfg::SharedStorage &smem, const AttnFwdWork &w,
                                                           int consumer, int kv_iter, int q_stage,
                                                           float (&o)[Cfg::kHeadDim / 2], Fp8Softmax<Cfg> &softmax)
{
    const int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    const int count = w.n_block_end - w.n_block_begin;
    const int row_base = consumer * Cfg::kRowsPerConsumer;

    float s[Cfg::kBlockN / 2];
    uint32_t pr[Cfg::kBlockN / 8];
    float correction[2];

    /* q_descale * k_descale scales the raw scores: into the exp2 scale, or
     * with a soft-cap into its pre-scale (the scale then applies to the
     * capped score as in the 16-bit kernel). */
    const float qk_descale = attn_descale(a.q_descale, a, w.batch, w.head_kv) *
                             attn_descale(a.k_descale, a, w.batch, w.head_kv);
    const bool capped = a.softcap > 0.f;
    const float scale = capped ? a.scale_log2 : a.scale_log2 * qk_descale;

    const int row_lo = w.q_row0 + row_base / w.row_div;
    const int row_hi = w.q_row0 + (row_base + Cfg::kRowsPerConsumer - 1) / w.row_div;
    auto needs_mask = [&](int n) {
        const int k0 = n * Cfg::kBlockN, k1 = k0 + Cfg::kBlockN;
        return k1 > w.mask.key_end(row_lo) || k0 < w.mask.key_begin(row_hi);
    };
    auto scores_to_probs = [&](int n) {
        if (capped)
            apply_softcap(s, a.softmax_scale / a.softcap * qk_descale, a.softcap / a.softmax_scale);
        if (needs_mask(n))
            apply_mask<Cfg::kBlockN>(s, w.mask, w.q_row0, row_base, w.row_div, n * Cfg::kBlockN, thread);
        softmax.update(s, scale, correction);
    };

    const uint32_t q_rows = smem_u32(smem.q[q_stage]) + consumer * Cfg::kRowsPerConsumer * Cfg::kSwizzleBytes;
    auto k_tile = [&](int g) { return smem_u32(smem.k[stage_of<Cfg>(g)]); };
    uint64_t *vt_full, *vt_empty;
    uint8_t(*vt)[Cfg::kKVTileBytes];
    if constexpr (Cfg::kVtInWorkspace) {
        vt_full = smem.v_full;
        vt_empty = smem.v_empty;
        vt = smem.v;
    } else {
        vt_full = smem.vt_full;
        vt_empty = smem.vt_empty;
        vt = smem.vt;
    }
    auto vt_tile = [&](int g) { return smem_u32(vt[stage_of<Cfg>(g)]); };
    attn_fwd_key_loop<Cfg>(
        smem, vt_full, vt_empty, consumer, kv_iter, count, w.n_block_end, s, o,
        [&](int g) { issue_qk_fp8<Cfg>(s, q_rows, k_tile(g)); },
        [&](int g, bool accumulate) { issue_pv_fp8<Cfg>(o, pr, vt_tile(g), accumulate); }, scores_to_probs,
        [&] { scale_rows(o, correction); }, [&] { convert_p_fp8<Cfg>(pr, s); });
}

template <class Cfg>
__device__ __forceinline__ void attn_fwd_fp8_consumer(const mgpu_attention_fwd_args &a,
                                                      typename Cfg::SharedStorage &smem,
                                                      const AttnTileScheduler<> &scheduler, int consumer)
{
    constexpr int kTurnThreads = Cfg::kConsumerWarpgroups * Cfg::kWarpgroupThreads;
    if (consumer == 1)
        named_barrier_arrive(Cfg::kBarrierTurnFirst + 0, kTurnThreads);

    int kv_iter = 0, q_iter = 0;
    for (;;) {
        const int q_stage = q_iter % Cfg::kQStages;
        const int t = attn_fwd_next_tile<Cfg>(smem, q_stage, q_iter);
        if (t < 0)
            break;
        const AttnFwdWork w = attn_fwd_work<Cfg>(a, scheduler.decode(t));
        const int count = w.n_block_end - w.n_block_begin;
        float o[Cfg::kHeadDim / 2];
#pragma unroll
        for (int i = 0; i < Cfg::kHeadDim / 2; ++i)
            o[i] = 0.f;
        Fp8Softmax<Cfg> softmax;
        softmax.init();

        if (count > 0)
            attn_fwd_fp8_consumer_tile<Cfg>(a, smem, w, consumer, kv_iter, q_stage, o, softmax);

        float o_scale[2], lse[2];
        softmax.finalize(o_scale, lse);
        int tile = t;
        asm volatile("" : "+r"(tile));
        const AttnFwdWork we = attn_fwd_work<Cfg>(a, scheduler.decode(tile));
        const float v_descale = attn_descale(a.v_descale, a, we.batch, we.head_kv);
        o_scale[0] *= v_descale;
        o_scale[1] *= v_descale;
        scale_rows(o, o_scale);
        attn_fwd_epilogue<Cfg>(a, smem, we, consumer, q_stage, o, lse);
        kv_iter += count;
        ++q_iter;
    }
}

template <class Cfg>
__device__ __forceinline__ void attention_fwd_fp8(const mgpu_attention_fwd_params &p)
{
    using Smem = typename Cfg::SharedStorage;
    extern __shared__ uint8_t attn_smem_raw[];
    const uintptr_t base = reinterpret_cast<uintptr_t>(attn_smem_raw);
    Smem &smem = *reinterpret_cast<Smem *>((base + kSwizzleAtomBytes - 1) & ~uintptr_t(kSwizzleAtomBytes - 1));

    const AttnTileScheduler<> scheduler(p.args);
    if (threadIdx.x == 0) {
        tma_prefetch_map(&p.tmap_q);
        tma_prefetch_map(&p.tmap_k);
        tma_prefetch_map(&p.tmap_v);
        for (int s = 0; s < Cfg::kQStages; ++s) {
            mbar_init(&smem.q_full[s], 1);
            /* the consumers after their epilogue, the transposers once they read the tile */
            mbar_init(&smem.q_empty[s], Cfg::kConsumerWarps + Cfg::kTransposeWarps);
        }
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&smem.k_full[s], 1);
            mbar_init(&smem.v_full[s], 1);
            mbar_init(&smem.k_empty[s], Cfg::kConsumerWarps);
            if constexpr (Cfg::kVtInWorkspace) {
                mbar_init(&smem.v_empty[s], Cfg::kConsumerWarps);
            } else {
                mbar_init(&smem.v_empty[s], Cfg::kTransposeWarps);
                mbar_init(&smem.vt_full[s], Cfg::kTransposeWarps);
                mbar_init(&smem.vt_empty[s], Cfg::kConsumerWarps);
            }
        }
        mbar_fence_init();
    }
    __syncthreads();

    const int warpgroup = static_cast<int>(threadIdx.x) / Cfg::kWarpgroupThreads;
    if (warpgroup == 0) {
        setmaxnreg_dec<Cfg::kProducerRegisters>();
        const int warp = static_cast<int>(threadIdx.x) / 32;
        if (threadIdx.x == 0)
            attn_fwd_producer<Cfg>(p, smem, scheduler);
        else if constexpr (Cfg::kTransposeWarps > 0)
            if (warp >= 1 && warp <= Cfg::kTransposeWarps)
                attn_fwd_fp8_transposer<Cfg>(p.args, smem, scheduler, warp - 1);
    } else {
        setmaxnreg_inc<Cfg::kConsumerRegisters>();
        attn_fwd_fp8_consumer<Cfg>(p.args, smem, scheduler, warpgroup - 1);
    }
}

} // namespace sm90
} // namespace mgpu
