/*
 * Row gather for sm_100a with Blackwell's TMA gather4:
 * dst[i,:] = src[index[i],:], four source rows per instruction. The contract
 * (tensor map, box, grid, alignment, error word) is in abi/gather_abi.h.
 *
 * NOT RUN ON HARDWARE: no Blackwell GPU is available here. This kernel is
 * proven only by compilation, by its SASS (UTMALDG.GATHER4 and UBLKCP) and by
 * review against the PTX description of tile::gather4; treat it as unverified
 * until the GPU tests have run on a B200.
 *
 * Schedule. One warp per CTA, several CTAs per SM (smem-bound). Work items are
 * (group of 4 output rows, column chunk of box_bytes); a CTA takes items
 * blockIdx.x, blockIdx.x + gridDim.x, ... Shared memory holds `stages` buffers
 * of 4 x box_bytes (as many as fit in MGPU_GATHER4_DATA_SMEM_BYTES, at most
 * MGPU_GATHER4_MAX_STAGES), each with one `full` mbarrier.
 *
 *   issue(j):  the warp reads the 4 indices of item j (prefetched a batch of 8
 *              items ahead, one index per lane), zero-fills the dst chunks of
 *              out-of-range rows with plain stores, and lane 0 arms full[s]
 *              with 4 x box_bytes and issues one tile::gather4 (bad or absent
 *              rows fetch row 0 and are not stored).
 *   drain(j):  all lanes wait full[s]; lane 0 issues one bulk copy
 *              shared -> global per present, in-range row and commits a bulk
 *              group.
 *   refill:    lane 0 waits until all but the newest bulk group have read
 *              shared memory (so item j-1's buffer is free) and issues item
 *              j + stages - 1 into it.
 *
 * So stages - 1 gathers are in flight while one buffer drains; with 4 CTAs per
 * SM that is >= 4 x 40 KB per SM for wide rows and ~4 x 31 KB for 256-byte rows.
 * The load and the store are both async-proxy operations ordered by the
 * mbarrier and bulk-group waits, so no proxy fence is needed.
 */
#pragma once

#include <stdint.h>

#include "abi/gather_abi.h"
#include "common/async_copy.cuh"

namespace mgpu {
namespace sm100 {
namespace gather4_detail {

constexpr int kWarp = 32;
constexpr int kRows = MGPU_GATHER4_ROWS;
constexpr int kMaxStages = MGPU_GATHER4_MAX_STAGES;
constexpr int kDataBytes = MGPU_GATHER4_DATA_SMEM_BYTES;
constexpr int kAlign = MGPU_GATHER4_SMEM_ALIGN;
constexpr int kVecBytes = MGPU_GATHER_VEC_BYTES;
constexpr int kItemsPerBatch = kWarp / kRows; /* one index per lane */
constexpr uint32_t kFullMask = 0xffffffffu;

static_assert(MGPU_GATHER4_THREADS == kWarp, "gather4 runs one warp per CTA");
static_assert(MGPU_GATHER4_DYNAMIC_SMEM_BYTES == kDataBytes + kAlign,
              "dynamic smem = data buffers + slack for aligning them");
static_assert(kDataBytes / (kRows * MGPU_GATHER4_MAX_BOX_BYTES) >= 2,
              "the pipeline needs two buffers even at the widest box");

/* Per-lane state of one prefetched row: its TMA row coordinate and whether it
 * is present (inside n_indices) and in range. */
struct RowSlot {
    int32_t coord;
    int32_t state;
};
enum : int32_t { kAbsent = 0, kValid = 1, kOutOfRange = 2 };

__device__ __forceinline__ int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <typename Index>
__device__ __forceinline__ RowSlot load_slot(const mgpu_gather_args &c, int64_t row)
{
    if (row >= c.n_indices)
        return {0, kAbsent};
    const int64_t idx = static_cast<int64_t>(__ldg(reinterpret_cast<const Index *>(c.index) + row));
    if (static_cast<uint64_t>(idx) < static_cast<uint64_t>(c.table_rows))
        return {static_cast<int32_t>(idx), kValid};
    return {0, kOutOfRange};
}

} // namespace gather4_detail

template <typename Index>
__device__ __forceinline__ void gather4(const mgpu_gather4_args &a)
{
    using namespace gather4_detail;
    namespace ptx = cuda::ptx;

    __shared__ uint64_t full[kMaxStages];
    __shared__ uint32_t store_mask[kMaxStages]; /* rows of each buffer to store (lane 0 only) */
    extern __shared__ uint8_t smem_raw[];
    uint8_t *buffers = reinterpret_cast<uint8_t *>(
        (reinterpret_cast<uintptr_t>(smem_raw) + kAlign - 1) & ~uintptr_t(kAlign - 1));

    const mgpu_gather_args &c = a.common;
    const int lane = threadIdx.x % kWarp;
    const int64_t box = a.box_bytes;
    const int64_t stage_bytes = cdiv(kRows * box, kAlign) * kAlign;
    const int stages = static_cast<int>(min(int64_t(kMaxStages), kDataBytes / stage_bytes));
    const int64_t chunks = cdiv(c.row_bytes, box);
    const int64_t items = cdiv(c.n_indices, kRows) * chunks;
    const int64_t mine = items > blockIdx.x ? cdiv(items - blockIdx.x, gridDim.x) : 0;
    const uint32_t tx_bytes = static_cast<uint32_t>(kRows * box);

    if (lane == 0) {
        tma_prefetch_map(reinterpret_cast<const CUtensorMap *>(&a.src_map));
        for (int s = 0; s < stages; ++s)
            mbar_init(&full[s], 1);
        mbar_fence_init();
    }
    __syncwarp();

    /* Lane L holds row L % 4 of item (batch * 8 + L / 4). */
    auto load_batch = [&](int64_t batch) {
        const int64_t j = batch * kItemsPerBatch + lane / kRows;
        if (j >= mine)
            return RowSlot{0, kAbsent};
        const int64_t item = blockIdx.x + j * int64_t(gridDim.x);
        return load_slot<Index>(c, (item / chunks) * kRows + lane % kRows);
    };
    RowSlot cur = load_batch(0);
    RowSlot nxt = load_batch(1);

    auto issue = [&](int64_t j) {
        if (j % kItemsPerBatch == 0 && j > 0) {
            cur = nxt;
            nxt = load_batch(j / kItemsPerBatch + 1);
        }
        const int first_lane = int(j % kItemsPerBatch) * kRows;
        const int64_t item = blockIdx.x + j * int64_t(gridDim.x);
        const int64_t group = item / chunks;
        const int64_t chunk = item - group * chunks;
        const int64_t col_off = chunk * box;
        const int64_t len = min(box, c.row_bytes - col_off);
        int32_t coord[kRows];
        uint32_t valid = 0;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            coord[r] = __shfl_sync(kFullMask, cur.coord, first_lane + r);
            const int32_t state = __shfl_sync(kFullMask, cur.state, first_lane + r);
            valid |= uint32_t(state == kValid) << r;
            if (state == kOutOfRange) {
                const int64_t row = group * kRows + r;
                uint8_t *d = reinterpret_cast<uint8_t *>(c.dst) + row * c.dst_stride + col_off;
#pragma unroll 1
                for (int64_t off = int64_t(lane) * kVecBytes; off < len; off += kWarp * kVecBytes)
                    *reinterpret_cast<uint4 *>(d + off) = make_uint4(0, 0, 0, 0);
                if (chunk == 0 && lane == 0)
                    atomicOr(reinterpret_cast<int *>(c.error), MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE);
            }
        }
        if (lane == 0) {
            const int s = int(j % stages);
            store_mask[s] = valid;
            const int32_t coords[1 + kRows] = {int32_t(col_off / a.map_elem_bytes), coord[0], coord[1],
                                               coord[2], coord[3]};
            mbar_arrive_expect_tx(&full[s], tx_bytes);
            ptx::cp_async_bulk_tensor_tile_gather4(ptx::space_shared, ptx::space_global,
                                                   buffers + s * stage_bytes, &a.src_map, coords, &full[s]);
        }
    };

    auto drain = [&](int64_t j) {
        const int s = int(j % stages);
        mbar_wait(&full[s], uint32_t((j / stages) & 1));
        if (lane != 0)
            return;
        const int64_t item = blockIdx.x + j * int64_t(gridDim.x);
        const int64_t group = item / chunks;
        const int64_t col_off = (item - group * chunks) * box;
        const uint32_t len = static_cast<uint32_t>(min(box, c.row_bytes - col_off));
        const uint32_t valid = store_mask[s];
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            if (valid & (1u << r)) {
                uint8_t *d = reinterpret_cast<uint8_t *>(c.dst) + (group * kRows + r) * c.dst_stride + col_off;
                ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, d, buffers + s * stage_bytes + r * box,
                                   len);
            }
        }
        ptx::cp_async_bulk_commit_group();
    };

    const int64_t prologue = min(mine, int64_t(stages - 1));
    for (int64_t j = 0; j < prologue; ++j)
        issue(j);
    for (int64_t j = 0; j < mine; ++j) {
        drain(j);
        const int64_t next = j + stages - 1;
        if (next < mine) {
            if (lane == 0)
                ptx::cp_async_bulk_wait_group_read(ptx::n32_t<1>{}); /* item j-1's buffer is free */
            __syncwarp();
            issue(next);
        }
    }
    if (lane == 0)
        ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
}

} // namespace sm100
} // namespace mgpu
