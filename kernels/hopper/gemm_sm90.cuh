/*
 * Hopper (sm_90a) GEMM: TMA loads into 128-byte-swizzled shared memory, a
 * kStages-deep mbarrier pipeline, wgmma with fp32 accumulators in registers,
 * and an epilogue that writes D = alpha*op(A)*op(B) + beta*C over C
 * (column-major, BLAS conventions: see common/gemm_abi.h).
 *
 * One CTA computes one kBM x kBN tile of one batch, walking K in 64-element
 * (128-byte) steps, one step per pipeline stage.
 *
 * Schedule (kThreads = 384 for kBM = 128):
 *
 *   warpgroup 0, producer (setmaxnreg.dec to kProducerRegs); one thread:
 *     for each k-tile kt, stage s = kt % kStages, round r = kt / kStages:
 *       r > 0: wait empty[s] phase r-1        (consumers are done with the stage)
 *       arrive_expect_tx(full[s], kStageBytes); TMA A and B tiles -> stage s
 *
 *   warpgroups 1..kConsumers, consumers (setmaxnreg.inc to kConsumerRegs);
 *   consumer c owns rows [64c, 64c+64) of the tile and all kBN columns:
 *     for each k-tile kt:
 *       wait full[s] phase r
 *       4 x wgmma m64 n(kBN) k16 from stage s; commit
 *       wgmma.wait_group 1: the batch of k-tile kt-1 is complete, so
 *       lane 0 of each warp arrives on empty[stage of kt-1]
 *     wait_group 0; epilogue straight from the accumulator registers to global.
 *
 * Barriers (static shared memory): full[s] expects 1 arrival + the TMA bytes;
 * empty[s] expects one arrival per consumer warp (4 * kConsumers). The last
 * k-tile's stage is never released: no load waits for it.
 *
 * Shared memory (dynamic, base rounded up to 1024 bytes here): kStages A tiles,
 * then kStages B tiles. K-major operands are TMA boxes of rows x 128 bytes; an
 * M- or N-major operand is loaded as 64-element-wide chunks of 64 K-rows
 * (8 KB each) placed one after the other, which is exactly the MN-major
 * canonical wgmma layout with LBO = 8 KB. Either way consumer c's 64 rows of A
 * start 8 KB * c into the A tile.
 */
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "common/async_copy.cuh"
#include "common/gemm_abi.h"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {

template <class T, bool kAKMajor_, bool kBKMajor_, int kBM_, int kBN_, int kStages_>
struct GemmConfig {
    using Element = T;
    static constexpr bool kAKMajor = kAKMajor_;
    static constexpr bool kBKMajor = kBKMajor_;
    static constexpr int kBM = kBM_;
    static constexpr int kBN = kBN_;
    static constexpr int kBK = 64; /* elements: one 128-byte swizzle row */
    static constexpr int kStages = kStages_;

    static constexpr int kConsumers = kBM / 64; /* consumer warpgroups, m64 each */
    static constexpr int kThreads = 128 * (1 + kConsumers);

    /* Register budgets after setmaxnreg: the producer only issues TMA; each
     * consumer holds kBN/2 fp32 accumulators. 128*40 + 256*232 <= 64K. */
    static constexpr int kProducerRegs = 40;
    static constexpr int kConsumerRegs = 232;

    static constexpr int kATileBytes = kBM * kBK * 2;
    static constexpr int kBTileBytes = kBN * kBK * 2;
    static constexpr int kStageBytes = kATileBytes + kBTileBytes;
    static constexpr int kAlignSlack = 1024;
    static constexpr int kSmemBytes = kStages * kStageBytes + kAlignSlack; /* dynamic */
    static constexpr int kBarrierBytes = 2 * kStages * 8;                 /* static */

    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "f16 or bf16 operands");
    static_assert(kBM == 128, "two consumer warpgroups of m64 (register budgets assume 384 threads)");
    static_assert(kBN == 64 || kBN == 128 || kBN == 256, "kBN must be a wgmma N and a multiple of 64");
    static_assert(kStages >= 3, "at least three stages");
    static_assert(kSmemBytes + kBarrierBytes <= 227 * 1024, "shared memory over the 227 KB per-block limit");
    static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "register file");
};

namespace detail {

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

template <class OutT>
__device__ __forceinline__ float to_float(OutT v)
{
    if constexpr (std::is_same_v<OutT, __half>)
        return __half2float(v);
    else if constexpr (std::is_same_v<OutT, __nv_bfloat16>)
        return __bfloat162float(v);
    else
        return v;
}

template <class OutT>
__device__ __forceinline__ OutT from_float(float v)
{
    if constexpr (std::is_same_v<OutT, __half>)
        return __float2half_rn(v);
    else if constexpr (std::is_same_v<OutT, __nv_bfloat16>)
        return __float2bfloat16_rn(v);
    else
        return v;
}

/* Producer: one thread streams the A and B tiles of every k-tile through the
 * stages. */
template <class Cfg>
__device__ __forceinline__ void produce(const CUtensorMap *tma_a, const CUtensorMap *tma_b, uint8_t *a_tiles,
                                        uint8_t *b_tiles, uint64_t *full, uint64_t *empty, int num_k_tiles,
                                        int m0, int n0, int batch)
{
    tma_prefetch_map(tma_a);
    tma_prefetch_map(tma_b);
    int stage = 0;
    uint32_t phase = 0; /* parity of the current round through the stages */
    for (int kt = 0; kt < num_k_tiles; ++kt) {
        if (kt >= Cfg::kStages)
            mbar_wait(&empty[stage], phase ^ 1); /* consumers released round r-1 */
        mbar_arrive_expect_tx(&full[stage], Cfg::kStageBytes);

        const int k0 = kt * Cfg::kBK;
        uint8_t *a = a_tiles + stage * Cfg::kATileBytes;
        uint8_t *b = b_tiles + stage * Cfg::kBTileBytes;
        if constexpr (Cfg::kAKMajor) {
            tma_load_3d(a, tma_a, &full[stage], k0, m0, batch);
        } else {
#pragma unroll
            for (int i = 0; i < Cfg::kBM / 64; ++i)
                tma_load_3d(a + i * 8192, tma_a, &full[stage], m0 + 64 * i, k0, batch);
        }
        if constexpr (Cfg::kBKMajor) {
            tma_load_3d(b, tma_b, &full[stage], k0, n0, batch);
        } else {
#pragma unroll
            for (int i = 0; i < Cfg::kBN / 64; ++i)
                tma_load_3d(b + i * 8192, tma_b, &full[stage], n0 + 64 * i, k0, batch);
        }

        if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
        }
    }
}

/* Consumer main loop: acc (m64 x kBN of this warpgroup) = sum over k-tiles. */
template <class Cfg>
__device__ __forceinline__ void consume(float (&acc)[Cfg::kBN / 2], uint32_t a_tiles, uint32_t b_tiles,
                                        uint64_t *full, uint64_t *empty, int num_k_tiles, int consumer)
{
    using T = typename Cfg::Element;
    /* K-major: rows are M/N, the k16 slice moves 32 bytes along the row.
     * MN-major: rows are K, the k16 slice moves 16 rows of 128 bytes. */
    constexpr uint32_t kAStep = Cfg::kAKMajor ? 32 : 2048;
    constexpr uint32_t kBStep = Cfg::kBKMajor ? 32 : 2048;
    constexpr uint32_t kALbo = Cfg::kAKMajor ? 16 : 8192;
    constexpr uint32_t kBLbo = Cfg::kBKMajor ? 16 : 8192;
    const bool signals = (threadIdx.x % 32) == 0;

#pragma unroll
    for (int i = 0; i < Cfg::kBN / 2; ++i)
        acc[i] = 0.0f;

    int stage = 0, prev_stage = 0;
    uint32_t phase = 0;
    for (int kt = 0; kt < num_k_tiles; ++kt) {
        mbar_wait(&full[stage], phase);

        const uint64_t desc_a = wgmma_desc(a_tiles + stage * Cfg::kATileBytes + consumer * 8192, kALbo, 1024);
        const uint64_t desc_b = wgmma_desc(b_tiles + stage * Cfg::kBTileBytes, kBLbo, 1024);
        wgmma_fence_operands(acc);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < Cfg::kBK / 16; ++j)
            wgmma_m64_kstep<Cfg::kBN, T, T, !Cfg::kAKMajor, !Cfg::kBKMajor>(
                acc, wgmma_desc_advance(desc_a, j * kAStep), wgmma_desc_advance(desc_b, j * kBStep), 1);
        wgmma_commit_group();
        wgmma_fence_operands(acc);

        /* Keep this k-tile's batch in flight; the previous one is done. */
        wgmma_wait_group<1>();
        wgmma_fence_operands(acc);
        if (kt > 0 && signals)
            mbar_arrive(&empty[prev_stage]);

        prev_stage = stage;
        if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
        }
    }
    wgmma_wait_group<0>();
    wgmma_fence_operands(acc);
}

/* Epilogue: D = alpha * acc (+ beta * C when kReadC), clipped to m x n.
 * Fragment layout: see hopper/wgmma.cuh. */
template <class Cfg, class OutT, bool kReadC>
__device__ __forceinline__ void store_tile(const float (&acc)[Cfg::kBN / 2], const mgpu_gemm_args &args, int row0,
                                           int col0, int batch)
{
    OutT *c = reinterpret_cast<OutT *>(args.c) + static_cast<int64_t>(batch) * args.stride_c;
#pragma unroll
    for (int j = 0; j < Cfg::kBN / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int row = row0 + 8 * h;
                const int col = col0 + 8 * j + e;
                if (row < args.m && col < args.n) {
                    OutT *p = c + static_cast<int64_t>(col) * args.ldc + row;
                    float v = args.alpha * acc[4 * j + 2 * h + e];
                    if constexpr (kReadC)
                        v += args.beta * to_float<OutT>(*p);
                    *p = from_float<OutT>(v);
                }
            }
        }
    }
}

/* C is read only when beta != 0, so NaNs in an unread C never propagate. */
template <class Cfg, class OutT>
__device__ __forceinline__ void epilogue(const float (&acc)[Cfg::kBN / 2], const mgpu_gemm_args &args, int row0,
                                         int col0, int batch)
{
    if (args.beta != 0.0f)
        store_tile<Cfg, OutT, true>(acc, args, row0, col0, batch);
    else
        store_tile<Cfg, OutT, false>(acc, args, row0, col0, batch);
}

} // namespace detail

template <class Cfg>
__device__ __forceinline__ void gemm(const CUtensorMap *tma_a, const CUtensorMap *tma_b, const mgpu_gemm_args &args)
{
    __shared__ alignas(8) uint64_t full[Cfg::kStages];
    __shared__ alignas(8) uint64_t empty[Cfg::kStages];
    extern __shared__ __align__(16) uint8_t mgpu_gemm_smem[];

    /* 128-byte swizzled tiles want 1024-byte alignment; kSmemBytes has the slack. */
    const uint32_t raw = smem_u32(mgpu_gemm_smem);
    uint8_t *a_tiles = mgpu_gemm_smem + (((raw + 1023u) & ~1023u) - raw);
    uint8_t *b_tiles = a_tiles + Cfg::kStages * Cfg::kATileBytes;

    const int warpgroup = threadIdx.x / 128;
    const int num_k_tiles = (args.k + Cfg::kBK - 1) / Cfg::kBK;
    const int batch = static_cast<int>(blockIdx.z) + args.batch_base;
    const int m0 = blockIdx.x * Cfg::kBM;
    const int n0 = blockIdx.y * Cfg::kBN;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 4 * Cfg::kConsumers);
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (warpgroup == 0) {
        detail::setmaxnreg_dec<Cfg::kProducerRegs>();
        if (threadIdx.x == 0)
            detail::produce<Cfg>(tma_a, tma_b, a_tiles, b_tiles, full, empty, num_k_tiles, m0, n0, batch);
        return;
    }

    detail::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int consumer = warpgroup - 1;
    float acc[Cfg::kBN / 2];
    detail::consume<Cfg>(acc, smem_u32(a_tiles), smem_u32(b_tiles), full, empty, num_k_tiles, consumer);

    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int row0 = m0 + 64 * consumer + 16 * warp + lane / 4;
    const int col0 = n0 + 2 * (lane % 4);
    switch (args.c_dtype) {
    case MGPU_ABI_F16:
        detail::epilogue<Cfg, __half>(acc, args, row0, col0, batch);
        break;
    case MGPU_ABI_BF16:
        detail::epilogue<Cfg, __nv_bfloat16>(acc, args, row0, col0, batch);
        break;
    default:
        detail::epilogue<Cfg, float>(acc, args, row0, col0, batch);
        break;
    }
}

} // namespace sm90
} // namespace mgpu
