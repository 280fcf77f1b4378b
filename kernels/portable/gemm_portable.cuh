/*
 * The portable GEMM: correct for every input the public API accepts, whatever
 * its alignment, leading dimensions, batch strides or k (k == 0 included).
 *
 * It runs for k == 0 (D = epilogue(beta * C)), on compute capability 10.0
 * for inputs TMA cannot read (a pointer not 16-byte aligned, a leading
 * dimension or batch stride not a multiple of 16 bytes, a broadcast batch),
 * and as a forced variant (MGPU_FORCE_VARIANT) that checks the others. It
 * reads fp16, bf16 and fp8 operands of any layout and applies the whole
 * epilogue of common/numeric.cuh (scales, bias, activation).
 *
 * It is a plain shared-memory tiled kernel: each block computes a
 * kBM x kBN tile of D; per step of kBK, the block's threads copy an
 * element-wise (any stride) slice of op(A) and op(B) into shared memory as
 * fp32, then each thread accumulates a 4 x 4 sub-tile with fp32 FMAs. It is
 * slow by design and never chosen when a tensor-core variant applies.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "abi/gemm_abi.h"
#include "common/numeric.cuh"

namespace mgpu {

template <int BM, int BN, int BK>
struct PortableGemmConfig {
    static constexpr int kBM = BM, kBN = BN, kBK = BK;
    static constexpr int kMicro = 4; /* each thread owns a 4 x 4 sub-tile */
    static constexpr int kThreads = (BM / kMicro) * (BN / kMicro);
    static_assert(BM % kMicro == 0 && BN % kMicro == 0, "tile must split into 4x4 sub-tiles");
};

template <class Cfg>
__device__ void gemm_portable(const mgpu_gemm_args &args)
{
    constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, U = Cfg::kMicro;
    __shared__ float a_tile[BK][BM + 1];
    __shared__ float b_tile[BK][BN + 1];

    const int64_t batch = static_cast<int64_t>(blockIdx.z) + args.batch_base;
    const int64_t m0 = static_cast<int64_t>(blockIdx.x) * BM;
    const int64_t n0 = static_cast<int64_t>(blockIdx.y) * BN;
    const uint64_t a = args.a + static_cast<uint64_t>(batch * args.stride_a) * abi_dtype_bytes(args.ab_dtype);
    const uint64_t b = args.b + static_cast<uint64_t>(batch * args.stride_b) * abi_dtype_bytes(args.b_dtype);
    const int tid = threadIdx.x;
    const int tm = (tid % (BM / U)) * U; /* this thread's rows within the tile */
    const int tn = (tid / (BM / U)) * U; /* and columns */

    float acc[U][U] = {};
    for (int64_t k0 = 0; k0 < args.k; k0 += BK) {
        for (int e = tid; e < BK * BM; e += Cfg::kThreads) {
            const int l = e / BM, i = e % BM; /* consecutive threads walk rows: coalesced for N */
            const int64_t gi = m0 + i, gl = k0 + l;
            float v = 0.0f;
            if (gi < args.m && gl < args.k)
                v = load_as_float(a, args.ab_dtype, args.trans_a ? gl + gi * args.lda : gi + gl * args.lda);
            a_tile[l][i] = v;
        }
        for (int e = tid; e < BK * BN; e += Cfg::kThreads) {
            const int j = e / BK, l = e % BK; /* consecutive threads walk k: coalesced for N */
            const int64_t gj = n0 + j, gl = k0 + l;
            float v = 0.0f;
            if (gj < args.n && gl < args.k)
                v = load_as_float(b, args.b_dtype, args.trans_b ? gj + gl * args.ldb : gl + gj * args.ldb);
            b_tile[l][j] = v;
        }
        __syncthreads();
#pragma unroll 4
        for (int l = 0; l < BK; l++) {
            float av[U], bv[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                av[u] = a_tile[l][tm + u];
                bv[u] = b_tile[l][tn + u];
            }
#pragma unroll
            for (int r = 0; r < U; r++)
#pragma unroll
                for (int c = 0; c < U; c++)
                    acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
        }
        __syncthreads();
    }

    const int64_t c_offset = batch * args.stride_c;
    GemmEpilogue ep(args);
    ep.select_batch(batch);
#pragma unroll
    for (int c = 0; c < U; c++) {
        const int64_t j = n0 + tn + c;
#pragma unroll
        for (int r = 0; r < U; r++) {
            const int64_t i = m0 + tm + r;
            if (i < args.m && j < args.n)
                epilogue_store(args, ep, c_offset + i + j * args.ldc, acc[r][c], i, j);
        }
    }
}

} // namespace mgpu
