/*
 * GEMM for Blackwell (sm_100a): TMA -> shared memory -> tcgen05.mma -> tensor
 * memory -> registers -> global. One CTA of 128 threads computes one kBM x kBN
 * tile of D = alpha * op(A) * op(B) + beta * C (column-major, BLAS semantics, see
 * abi/gemm_abi.h). This is steps 0-1 of reference/003 (the Blackwell matmul
 * tutorial): TMEM accumulator, single-thread MMA issue, warp specialisation.
 *
 * NOT RUN ON BLACKWELL HARDWARE: no machine here has an sm_100 GPU. This kernel
 * has been compiled and its SASS checked (UTCHMMA, UTMALDG, LDTM, tensor memory
 * alloc) only; the descriptor encodings follow the PTX ISA tables.
 *
 * Schedule (kStages-deep ring of A/B stages in shared memory, BK = 64):
 *
 *   warp 0, one lane   PRODUCER  for each k-block kb (stage s = kb % kStages):
 *                                  wait empty[s] (skipped on the first lap)
 *                                  arrive_expect_tx(full[s], A+B stage bytes)
 *                                  TMA A and B boxes -> stage s, completing on full[s]
 *   warp 1             allocates kBN TMEM columns (fp32 accumulator, 128 lanes)
 *   warp 1, one lane   MMA       for each k-block: wait full[s]; 4 x tcgen05.mma
 *                                  (M=128, N=kBN, K=16) into TMEM;
 *                                  tcgen05.commit -> empty[s] (stage free once
 *                                  those MMAs have read it)
 *                                after the last k-block: tcgen05.commit -> acc_ready
 *   all 4 warps        EPILOGUE  wait acc_ready; warp w reads TMEM lanes
 *                                  32w..32w+31 (= tile rows) with tcgen05.ld, 32
 *                                  columns at a time, and stores alpha*acc + beta*C
 *                                  straight to global (each column store is
 *                                  coalesced across the warp's 32 rows), clipped
 *                                  at m and n. C is read only when beta != 0.
 *   warp 1             frees the TMEM columns after everyone has finished reading.
 *
 * Barriers (all in shared memory, one arrival each):
 *   full[s]    TMA transaction bytes of stage s have landed   (producer -> MMA)
 *   empty[s]   the MMAs that read stage s have completed     (MMA -> producer)
 *   acc_ready  every MMA of the tile has completed           (MMA -> epilogue)
 * Phases: the ring index s and a parity bit that flips each time s wraps.
 *
 * Shared-memory tile formats (both written by TMA with the 128-byte swizzle, tile
 * bases 1024-byte aligned):
 *   K-major operand:  rows x 128 B (one row per M/N index); SBO = 1024 B; the
 *                     j-th K=16 slice starts 32*j bytes into the row.
 *   MN-major operand: rows/64 chunks of 64 K-rows x 128 B (8 KB each, consecutive);
 *                     LBO = 8 KB (chunk stride along M/N), SBO = 1024 B (8 K-rows);
 *                     the j-th K=16 slice starts 2048*j bytes in.
 */
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "abi/gemm_abi.h"
#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"

namespace mgpu {
namespace sm100 {

template <class T, bool kAKMajor_, bool kBKMajor_, int kBM_, int kBN_, int kStages_>
struct GemmConfig {
    using Element = T;
    static constexpr bool kAKMajor = kAKMajor_;
    static constexpr bool kBKMajor = kBKMajor_;
    static constexpr int kBM = kBM_;
    static constexpr int kBN = kBN_;
    static constexpr int kBK = 64;      /* 128 bytes of 16-bit elements: one swizzle row */
    static constexpr int kMmaK = 16;    /* K of one kind::f16 tcgen05.mma */
    static constexpr int kStages = kStages_;
    static constexpr int kThreads = 128; /* 4 warps: producer, MMA, and all four in the epilogue */

    static constexpr int kChunk = 64;   /* MN extent of one MN-major TMA box */
    static constexpr int kChunkBytes = kChunk * kBK * 2;
    static constexpr int kABytes = kBM * kBK * 2; /* per stage */
    static constexpr int kBBytes = kBN * kBK * 2;
    static constexpr int kStageBytes = kABytes + kBBytes;
    static constexpr int kBarrierBytes = (2 * kStages + 1) * 8 + 8; /* full, empty, acc_ready, TMEM slot */
    static constexpr int kAlignSlack = 1024;
    static constexpr int kSmemBytes = kAlignSlack + kStages * kStageBytes + kBarrierBytes;
    static constexpr uint32_t kTmemCols = kBN; /* fp32 accumulator: one column per N */

    static_assert(sizeof(T) == 2, "16-bit inputs only");
    static_assert(kBM == 128, "one M = 128 MMA per tile (TMEM lane = tile row)");
    static_assert(kBN == 128 || kBN == 256, "kBN is 128 or 256");
    static_assert(kStages >= 3, "at least 3 stages");
    static_assert(kSmemBytes <= 232448, "over the sm_100 opt-in shared memory limit");
    static_assert(kTmemCols >= 32 && kTmemCols <= 512 && (kTmemCols & (kTmemCols - 1)) == 0,
                  "TMEM allocations are powers of two in [32, 512]");
};

namespace detail {

/* Producer: one thread of warp 0 streams A and B k-blocks into the ring. */
template <class Cfg>
__device__ __forceinline__ void load_operands(const CUtensorMap *tma_a, const CUtensorMap *tma_b,
                                              uint8_t *smem_a, uint8_t *smem_b, uint64_t *full,
                                              uint64_t *empty, int m0, int n0, int batch, int num_kb)
{
    int s = 0;
    uint32_t phase = 0;
    for (int kb = 0; kb < num_kb; ++kb) {
        if (kb >= Cfg::kStages)
            mbar_wait(&empty[s], phase ^ 1); /* the MMAs of the previous lap released it */
        mbar_arrive_expect_tx(&full[s], Cfg::kStageBytes);
        const int k0 = kb * Cfg::kBK;
        uint8_t *a = smem_a + s * Cfg::kABytes;
        uint8_t *b = smem_b + s * Cfg::kBBytes;
        if constexpr (Cfg::kAKMajor) {
            tma_load_3d(a, tma_a, &full[s], k0, m0, batch);
        } else {
#pragma unroll
            for (int i = 0; i < Cfg::kBM / Cfg::kChunk; ++i)
                tma_load_3d(a + i * Cfg::kChunkBytes, tma_a, &full[s], m0 + i * Cfg::kChunk, k0, batch);
        }
        if constexpr (Cfg::kBKMajor) {
            tma_load_3d(b, tma_b, &full[s], k0, n0, batch);
        } else {
#pragma unroll
            for (int i = 0; i < Cfg::kBN / Cfg::kChunk; ++i)
                tma_load_3d(b + i * Cfg::kChunkBytes, tma_b, &full[s], n0 + i * Cfg::kChunk, k0, batch);
        }
        if (++s == Cfg::kStages) {
            s = 0;
            phase ^= 1;
        }
    }
}

template <bool kKMajor, int kChunkBytes>
__device__ __forceinline__ uint64_t operand_desc(uint32_t tile_addr)
{
    if constexpr (kKMajor)
        return make_smem_desc_kmajor_sw128(tile_addr);
    else
        return make_smem_desc_mnmajor_sw128(tile_addr, kChunkBytes);
}

/* MMA issuer: one thread of warp 1 turns each landed stage into BK/16 MMAs
 * accumulating into TMEM, and hands the stage back through tcgen05.commit. */
template <class Cfg>
__device__ __forceinline__ void issue_mmas(uint8_t *smem_a, uint8_t *smem_b, uint64_t *full,
                                           uint64_t *empty, uint64_t *acc_ready, uint32_t tmem_acc,
                                           int num_kb)
{
    constexpr uint32_t kIdesc = make_idesc_f16_f32acc<typename Cfg::Element, Cfg::kBM, Cfg::kBN,
                                                      Cfg::kAKMajor, Cfg::kBKMajor>();
    /* Advancing the start address by `bytes` adds bytes >> 4 to the low field. */
    constexpr uint64_t kAStep = k16_step_bytes<Cfg::kAKMajor>() >> 4;
    constexpr uint64_t kBStep = k16_step_bytes<Cfg::kBKMajor>() >> 4;

    int s = 0;
    uint32_t phase = 0;
    for (int kb = 0; kb < num_kb; ++kb) {
        mbar_wait(&full[s], phase);
        ptx::tcgen05_fence_after_thread_sync();
        const uint64_t a_desc =
            operand_desc<Cfg::kAKMajor, Cfg::kChunkBytes>(smem_u32(smem_a + s * Cfg::kABytes));
        const uint64_t b_desc =
            operand_desc<Cfg::kBKMajor, Cfg::kChunkBytes>(smem_u32(smem_b + s * Cfg::kBBytes));
#pragma unroll
        for (int j = 0; j < Cfg::kBK / Cfg::kMmaK; ++j) {
            ptx::tcgen05_mma(ptx::kind_f16, ptx::cta_group_1, tmem_acc, a_desc + j * kAStep,
                             b_desc + j * kBStep, kIdesc, kb > 0 || j > 0);
        }
        ptx::tcgen05_commit(ptx::cta_group_1, &empty[s]);
        if (++s == Cfg::kStages) {
            s = 0;
            phase ^= 1;
        }
    }
    ptx::tcgen05_commit(ptx::cta_group_1, acc_ready);
}

__device__ __forceinline__ float load_c(const float *p) { return *p; }
__device__ __forceinline__ float load_c(const __half *p) { return __half2float(*p); }
__device__ __forceinline__ float load_c(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store_d(float *p, float v) { *p = v; }
__device__ __forceinline__ void store_d(__half *p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_d(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

/* Epilogue for one C/D element type: thread (warp w, lane l) owns tile row
 * 32w + l, i.e. TMEM lane 32w + l, and walks the tile's columns 32 at a time. */
template <class Cfg, class OutT>
__device__ __forceinline__ void store_tile(uint32_t tmem_acc, const mgpu_gemm_args &args, int m0,
                                           int n0, int batch)
{
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int row = m0 + warp * 32 + lane;
    const bool row_ok = row < args.m;
    const bool read_c = args.beta != 0.0f;
    OutT *const c_row = reinterpret_cast<OutT *>(args.c) + static_cast<int64_t>(batch) * args.stride_c +
                        (row_ok ? row : 0);

    for (int col = 0; col < Cfg::kBN; col += 32) {
        if (n0 + col >= args.n) /* uniform across the CTA */
            break;
        uint32_t acc[32];
        ptx::tcgen05_ld_32x32b(acc, tmem_addr(tmem_acc, warp * 32, col));
        ptx::tcgen05_wait_ld();
        if (row_ok) {
            const int n_left = args.n - (n0 + col);
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                if (j < n_left) {
                    OutT *p = c_row + static_cast<int64_t>(n0 + col + j) * args.ldc;
                    float v = args.alpha * __uint_as_float(acc[j]);
                    if (read_c)
                        v += args.beta * load_c(p);
                    store_d(p, v);
                }
            }
        }
    }
}

} // namespace detail

template <class Cfg>
__device__ __forceinline__ void gemm(const CUtensorMap *tma_a, const CUtensorMap *tma_b,
                                     const mgpu_gemm_args &args)
{
    /* Declared 16-byte aligned on purpose: a larger declared alignment would let
     * the compiler fold away the rounding below. The runtime passes kSmemBytes,
     * which includes kAlignSlack, so rounding the base up to 1024 always fits. */
    extern __shared__ __align__(16) uint8_t smem_raw[];
    const uint32_t raw_addr = smem_u32(smem_raw);
    uint8_t *const smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
    uint8_t *const smem_a = smem;
    uint8_t *const smem_b = smem_a + Cfg::kStages * Cfg::kABytes;
    uint64_t *const full = reinterpret_cast<uint64_t *>(smem_b + Cfg::kStages * Cfg::kBBytes);
    uint64_t *const empty = full + Cfg::kStages;
    uint64_t *const acc_ready = empty + Cfg::kStages;
    uint32_t *const tmem_slot = reinterpret_cast<uint32_t *>(acc_ready + 1);

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int m0 = blockIdx.x * Cfg::kBM;
    const int n0 = blockIdx.y * Cfg::kBN;
    const int batch = blockIdx.z + args.batch_base;
    const int num_kb = (args.k + Cfg::kBK - 1) / Cfg::kBK;

    /* ---- setup: barriers (thread 0), TMEM (warp 1) ---- */
    if (threadIdx.x == 0) {
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 1);
        }
        mbar_init(acc_ready, 1);
        mbar_fence_init();
        tma_prefetch_map(tma_a);
        tma_prefetch_map(tma_b);
    }
    const uint32_t tmem_cols = Cfg::kTmemCols; /* by value: the wrapper takes a reference */
    if (warp == 1) {
        ptx::tcgen05_alloc(ptx::cta_group_1, tmem_slot, tmem_cols);
        ptx::tcgen05_relinquish_alloc_permit(ptx::cta_group_1);
    }
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t tmem_acc = *tmem_slot;

    /* ---- main loop: warp-specialised ---- */
    if (warp == 0) {
        if (lane == 0)
            detail::load_operands<Cfg>(tma_a, tma_b, smem_a, smem_b, full, empty, m0, n0, batch, num_kb);
        __syncwarp();
    } else if (warp == 1) {
        if (lane == 0)
            detail::issue_mmas<Cfg>(smem_a, smem_b, full, empty, acc_ready, tmem_acc, num_kb);
        __syncwarp();
    }

    /* ---- epilogue: all four warps ---- */
    mbar_wait(acc_ready, 0);
    ptx::tcgen05_fence_after_thread_sync();
    switch (args.c_dtype) {
    case MGPU_ABI_F32:
        detail::store_tile<Cfg, float>(tmem_acc, args, m0, n0, batch);
        break;
    case MGPU_ABI_BF16:
        detail::store_tile<Cfg, __nv_bfloat16>(tmem_acc, args, m0, n0, batch);
        break;
    case MGPU_ABI_F16:
    default:
        detail::store_tile<Cfg, __half>(tmem_acc, args, m0, n0, batch);
        break;
    }

    /* ---- teardown: free TMEM once every warp's loads have completed ---- */
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (warp == 1) {
        ptx::tcgen05_fence_after_thread_sync();
        ptx::tcgen05_dealloc(ptx::cta_group_1, tmem_acc, tmem_cols);
    }
}

} // namespace sm100
} // namespace mgpu
