/*
 * Second half of a split-K GEMM: D = epilogue(sum over the K slices of the
 * fp32 partials), the whole epilogue of common/numeric.cuh (alpha and the
 * operand scales, beta * C, bias, activation, output scale), converted to
 * C's dtype.
 *
 * The GEMM kernel wrote the partial product of slice s of batch b to
 * workspace[((b * splits + s) * n + j) * ws_ld + i] (column-major, ws_ld a
 * multiple of 4). Each thread owns four consecutive rows of one column: it
 * reads them as one float4 from every slice, adds the slices in order
 * 0, 1, ..., splits - 1 and writes four elements of D. The order is fixed, so
 * the result is bitwise the same on every run (no atomics).
 */
#pragma once

#include <stdint.h>

#include "common/gemm_abi.h"
#include "common/numeric.cuh"

namespace mgpu {

constexpr int kSplitKRows = 4; /* rows per thread: one float4 */

template <int kThreads>
__device__ __forceinline__ void gemm_splitk_reduce(const mgpu_gemm_args &args)
{
    const int64_t quads = (args.m + kSplitKRows - 1) / kSplitKRows;
    const int64_t total = quads * args.n * args.batch_count;
    const float *ws = reinterpret_cast<const float *>(args.workspace);
    const int64_t slice = static_cast<int64_t>(args.n) * args.ws_ld;
    const GemmEpilogue ep0(args);
    for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < total;
         idx += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t q = idx % quads, rest = idx / quads;
        const int64_t j = rest % args.n, b = rest / args.n;
        const float *p = ws + b * args.splits * slice + j * args.ws_ld + q * kSplitKRows;
        float4 sum = *reinterpret_cast<const float4 *>(p);
        for (int s = 1; s < args.splits; ++s) {
            const float4 v = *reinterpret_cast<const float4 *>(p + s * slice);
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        const float vals[kSplitKRows] = {sum.x, sum.y, sum.z, sum.w};
        const int64_t batch = b + args.batch_base;
        const int64_t base = batch * args.stride_c + j * args.ldc + q * kSplitKRows;
        GemmEpilogue ep = ep0;
        ep.select_batch(batch);
#pragma unroll
        for (int e = 0; e < kSplitKRows; ++e)
            if (q * kSplitKRows + e < args.m)
                epilogue_store(args, ep, base + e, vals[e], q * kSplitKRows + e, j);
    }
}

} // namespace mgpu
