/*
 * The copy in front of the TMA GEMM for operands TMA cannot read: a leading
 * dimension or batch stride that is not a multiple of 16 bytes, or a base
 * pointer that is not 16-byte aligned (8191 x 8191 matrices, a view offset by
 * one element). It copies the operand into a workspace whose columns start
 * 16-byte aligned (ld_dst a multiple of 8 elements), and the GEMM then runs
 * on the copy at full speed.
 *
 * Each thread writes one 16-byte group of 8 elements of one column with a
 * single vector store, reading the 8 source elements with 2-byte loads
 * (consecutive threads read consecutive groups, so the loads coalesce).
 * Padding rows between `rows` and ld_dst are written as zeros; the GEMM's
 * tensor maps never read them.
 */
#pragma once

#include <stdint.h>

#include "common/gemm_abi.h"

namespace mgpu {

constexpr int kPackGroup = 8; /* 16-bit elements per 16-byte store */

template <int kThreads>
__device__ __forceinline__ void gemm_pack(const mgpu_gemm_pack_args &p)
{
    const int64_t groups = p.ld_dst / kPackGroup;
    const int64_t total = groups * p.cols * p.batch;
    const uint16_t *src = reinterpret_cast<const uint16_t *>(p.src);
    uint16_t *dst = reinterpret_cast<uint16_t *>(p.dst);
    for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < total;
         idx += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t g = idx % groups, rest = idx / groups;
        const int64_t col = rest % p.cols, b = rest / p.cols;
        const uint16_t *s = src + b * p.stride_src + col * p.ld_src;
        const int64_t r0 = g * kPackGroup;
        uint16_t v[kPackGroup];
#pragma unroll
        for (int e = 0; e < kPackGroup; ++e)
            v[e] = r0 + e < p.rows ? s[r0 + e] : 0;
        uint4 out;
        out.x = v[0] | (static_cast<uint32_t>(v[1]) << 16);
        out.y = v[2] | (static_cast<uint32_t>(v[3]) << 16);
        out.z = v[4] | (static_cast<uint32_t>(v[5]) << 16);
        out.w = v[6] | (static_cast<uint32_t>(v[7]) << 16);
        *reinterpret_cast<uint4 *>(dst + b * p.stride_dst + col * p.ld_dst + r0) = out;
    }
}

} // namespace mgpu
