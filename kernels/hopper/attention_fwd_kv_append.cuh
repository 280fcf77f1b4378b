/*
 * KV-cache append (abi/attention_abi.h, "KV-cache append"): new K and V rows
 * copied into the pages of a paged cache (or the rows of a contiguous one) at
 * each sequence's current length, so that a decode step can append its token
 * and attend over the cache. One thread per 16-byte vector (8 16-bit
 * elements); vectors run head-dim fastest, then head, row, sequence, and K
 * before V, so a warp writes whole rows.
 */
#pragma once

#include <stdint.h>

#include "abi/attention_abi.h"

namespace mgpu {
namespace kv_append {

constexpr int kVecElems = 8;

__device__ __forceinline__ void append(const mgpu_kv_cache_append_args &a)
{
    const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= a.vectors)
        return;
    const int vecs_per_row = a.head_dim / kVecElems;
    const int64_t half = a.vectors / 2;
    const bool is_v = idx >= half;
    int64_t r = is_v ? idx - half : idx;
    const int c = static_cast<int>(r % vecs_per_row);
    r /= vecs_per_row;
    const int h = static_cast<int>(r % a.heads_kv);
    r /= a.heads_kv;
    const int j = static_cast<int>(r % a.seqlen_new);
    const int b = static_cast<int>(r / a.seqlen_new);

    const int pos = reinterpret_cast<const int32_t *>(a.cache_seqlens)[b] + j;
    if (pos < 0)
        return;
    const int page_index = pos / a.page_size;
    int page = b;
    if (a.block_table != 0) {
        if (page_index >= a.block_table_stride)
            return;
        page = reinterpret_cast<const int32_t *>(a.block_table)[static_cast<int64_t>(b) * a.block_table_stride +
                                                                page_index];
    } else if (page_index > 0) {
        return;
    }
    const int64_t *ns = is_v ? a.v_new_strides : a.k_new_strides;
    const int64_t *cs = is_v ? a.v_cache_strides : a.k_cache_strides;
    const uint16_t *src = reinterpret_cast<const uint16_t *>(is_v ? a.v_new : a.k_new) + b * ns[0] + j * ns[1] +
                          h * ns[2] + c * kVecElems;
    uint16_t *dst = reinterpret_cast<uint16_t *>(is_v ? a.v_cache : a.k_cache) + page * cs[0] +
                    (pos % a.page_size) * cs[1] + h * cs[2] + c * kVecElems;
    *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
}

} // namespace kv_append
} // namespace mgpu
