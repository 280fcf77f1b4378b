/*
 * The copy in front of the TMA GEMM for operands TMA cannot read: a leading
 * dimension or batch stride that is not a multiple of 16 bytes, or a base
 * pointer that is not 16-byte aligned (8191 x 8191 matrices, a view offset by
 * one element, fp8 operands with an odd k). It copies the operand into a
 * workspace whose columns start 16-byte aligned (ld_dst a multiple of 16
 * bytes' worth of elements), and the GEMM then runs on the copy at full speed.
 *
 * Each thread writes one 16-byte group (8 fp16/bf16 or 16 fp8 elements) of
 * one column with a single vector store, reading the source elements one by
 * one (consecutive threads read consecutive groups, so the loads coalesce).
 * Padding rows between `rows` and ld_dst are written as zeros; the GEMM's
 * tensor maps never read them.
 */
#pragma once

#include <stdint.h>

#include "abi/gemm_abi.h"

namespace mgpu {

constexpr int kPackBytes = 16; /* one vector store */

template <int kThreads, class E>
__device__ __forceinline__ void gemm_pack_elements(const mgpu_gemm_pack_args &p)
{
    constexpr int kGroup = kPackBytes / static_cast<int>(sizeof(E));
    const int64_t groups = p.ld_dst / kGroup;
    const int64_t total = groups * p.cols * p.batch;
    const E *src = reinterpret_cast<const E *>(p.src);
    E *dst = reinterpret_cast<E *>(p.dst);
    for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < total;
         idx += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t g = idx % groups, rest = idx / groups;
        const int64_t col = rest % p.cols, b = rest / p.cols;
        const E *s = src + b * p.stride_src + col * p.ld_src;
        const int64_t r0 = g * kGroup;
        uint32_t words[kPackBytes / 4];
#pragma unroll
        for (int w = 0; w < kPackBytes / 4; ++w) {
            uint32_t word = 0;
#pragma unroll
            for (int e = 0; e < 4 / static_cast<int>(sizeof(E)); ++e) {
                const int64_t r = r0 + w * (4 / static_cast<int>(sizeof(E))) + e;
                const uint32_t v = r < p.rows ? s[r] : 0;
                word |= v << (8 * sizeof(E) * e);
            }
            words[w] = word;
        }
        *reinterpret_cast<uint4 *>(dst + b * p.stride_dst + col * p.ld_dst + r0) =
            make_uint4(words[0], words[1], words[2], words[3]);
    }
}

template <int kThreads>
__device__ __forceinline__ void gemm_pack(const mgpu_gemm_pack_args &p)
{
    if (p.elem_bytes == 1)
        gemm_pack_elements<kThreads, uint8_t>(p);
    else
        gemm_pack_elements<kThreads, uint16_t>(p);
}

} // namespace mgpu
