/*
 * Row gather and scatter-add with plain loads, stores and reductions:
 * dst[i,:] = src[index[i],:] and dst[index[i],:] += src[i,:]. Written for
 * sm_90a and compiled for sm_100a too (it uses nothing Hopper-only: 16-byte
 * non-coherent loads and sm_90's vector red.global.add), so both architectures
 * have an exact path for every input; sm_100a adds gather4 (blackwell/
 * gather_sm100.cuh) for aligned gathers. The contract (argument struct, what
 * the runtime computes, alignment rules, error word) is in abi/gather_abi.h.
 *
 * A gather is a copy whose source addresses are known only after a load, so
 * speed comes from having enough independent loads in flight to cover the
 * index-load -> data-load latency chain (H100/H200 need roughly 32-64 KB in
 * flight per SM to reach copy bandwidth). There is no shared memory and no
 * pipeline: each lane holds its in-flight data in registers.
 *
 *   gather_narrow     rows <= 512 B: a power-of-two group of lanes per row,
 *                     several rows per warp; each lane loads the indices of
 *                     MGPU_GATHER_NARROW_UNROLL rows, issues that many 16-byte
 *                     loads, then stores them; the next tile's indices are
 *                     loaded while the data loads are in flight.
 *                     256 threads x 8 x 16 B = 32 KB in flight per CTA.
 *   gather_wide       rows > 512 B: a warp copies 4 KB chunks of one row
 *                     (8 x 16-byte loads per lane in flight), prefetching the
 *                     index of its next chunk; 32 KB in flight per CTA.
 *   gather_unaligned  anything not 16-byte aligned: one warp per row, copied in
 *                     the widest unit (8/4/2/1 bytes) that every address and
 *                     stride allows; exact, slower.
 *   scatter_add       atomic: packed 16-byte red.global.add (v4.f32,
 *                     v4.bf16x2, v4.f16x2) when aligned, else 4-byte
 *                     bf16x2/f16x2 pairs, else one element at a time (a
 *                     compare-and-swap loop for 16-bit types: slow).
 *                     Accumulates in the destination's precision.
 *   scatter_add_sorted deterministic, for indices sorted ascending: each run of
 *                     equal indices is summed in fp32 by one lane group and the
 *                     destination row is read and written once.
 *
 * src and dst must not overlap (src is read through the non-coherent path).
 * Out-of-range indices are never dereferenced: the gather writes zeros to the
 * dst row, scatter_add skips the row, and both OR a bit into *args.error.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "abi/gather_abi.h"

namespace mgpu {
namespace portable {
namespace gather_detail {

constexpr int kWarp = 32;
constexpr int kThreads = MGPU_GATHER_THREADS;
constexpr int kWarpsPerCta = kThreads / kWarp;
constexpr int kVecBytes = MGPU_GATHER_VEC_BYTES;
constexpr int kNarrowUnroll = MGPU_GATHER_NARROW_UNROLL;
constexpr int kWideUnroll = MGPU_GATHER_WIDE_UNROLL;
constexpr int64_t kWideChunkBytes = MGPU_GATHER_WIDE_CHUNK_BYTES;
constexpr int kUnalignedUnroll = 4; /* units in flight per lane on the slow path */
constexpr int kScatterUnroll = 4;   /* 16-byte reductions in flight per lane */

static_assert(kWideChunkBytes == int64_t(kWarp) * kWideUnroll * kVecBytes,
              "the ABI's chunk size must match the wide kernel's shape");
static_assert(MGPU_GATHER_NARROW_MAX_ROW_BYTES == kWarp * kVecBytes,
              "a narrow row must fit one 16-byte vector per lane of a warp");

/* 16-byte load of data that is read-only for the kernel's lifetime, not kept
 * in L1 (a gathered row is used once per SM). */
__device__ __forceinline__ uint4 load_vec_nc(const void *p)
{
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

__device__ __forceinline__ void store_vec(void *p, uint4 v)
{
    *static_cast<uint4 *>(p) = v;
}

template <typename Index>
__device__ __forceinline__ int64_t load_index(const mgpu_gather_args &a, int64_t i)
{
    return static_cast<int64_t>(__ldg(reinterpret_cast<const Index *>(a.index) + i));
}

/* One unsigned compare covers both index < 0 and index >= rows. */
__device__ __forceinline__ bool index_in_range(int64_t idx, int64_t rows)
{
    return static_cast<uint64_t>(idx) < static_cast<uint64_t>(rows);
}

__device__ __forceinline__ void report_error(const mgpu_gather_args &a, int bits)
{
    atomicOr(reinterpret_cast<int *>(a.error), bits);
}

__device__ __forceinline__ const char *src_bytes(const mgpu_gather_args &a)
{
    return reinterpret_cast<const char *>(a.src);
}

__device__ __forceinline__ char *dst_bytes(const mgpu_gather_args &a)
{
    return reinterpret_cast<char *>(a.dst);
}

__device__ __forceinline__ int lane_id() { return threadIdx.x % kWarp; }

/* Global warp number and warp count of a 1-D grid of kThreads-thread CTAs. */
__device__ __forceinline__ int64_t global_warp()
{
    return int64_t(blockIdx.x) * kWarpsPerCta + threadIdx.x / kWarp;
}

__device__ __forceinline__ int64_t warps_in_grid()
{
    return int64_t(gridDim.x) * kWarpsPerCta;
}

/* ---- gather, copy units for the unaligned path ---- */

template <int Bytes> struct UnitOf;
template <> struct UnitOf<1> { using type = uint8_t; };
template <> struct UnitOf<2> { using type = uint16_t; };
template <> struct UnitOf<4> { using type = uint32_t; };
template <> struct UnitOf<8> { using type = uint64_t; };

/* One warp per row; lanes stride over the row in units of Unit, kUnalignedUnroll
 * units per lane loaded before any is stored. */
template <typename Index, typename Unit>
__device__ __forceinline__ void gather_rows_by_unit(const mgpu_gather_args &a)
{
    const int lane = lane_id();
    const int64_t units = a.row_bytes / int64_t(sizeof(Unit));
    for (int64_t row = global_warp(); row < a.n_indices; row += warps_in_grid()) {
        const int64_t idx = load_index<Index>(a, row);
        const bool ok = index_in_range(idx, a.table_rows);
        if (!ok && lane == 0)
            report_error(a, MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE);
        const Unit *s = reinterpret_cast<const Unit *>(src_bytes(a) + (ok ? idx : 0) * a.src_stride);
        Unit *d = reinterpret_cast<Unit *>(dst_bytes(a) + row * a.dst_stride);
        for (int64_t u0 = lane; u0 < units; u0 += int64_t(kWarp) * kUnalignedUnroll) {
            Unit v[kUnalignedUnroll];
#pragma unroll
            for (int k = 0; k < kUnalignedUnroll; ++k) {
                const int64_t u = u0 + int64_t(k) * kWarp;
                v[k] = (ok && u < units) ? __ldg(s + u) : Unit(0);
            }
#pragma unroll
            for (int k = 0; k < kUnalignedUnroll; ++k) {
                const int64_t u = u0 + int64_t(k) * kWarp;
                if (u < units)
                    d[u] = v[k];
            }
        }
    }
}

/* ---- scatter_add element helpers ---- */

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }

template <typename Elem> __device__ __forceinline__ Elem from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }

/* Adds 16 bytes of packed values with one relaxed reduction (sm_90). */
template <typename Elem> __device__ __forceinline__ void red_add_vec(void *p, uint4 v);

template <> __device__ __forceinline__ void red_add_vec<float>(void *p, uint4 v)
{
    asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p),
                 "f"(__uint_as_float(v.x)), "f"(__uint_as_float(v.y)), "f"(__uint_as_float(v.z)),
                 "f"(__uint_as_float(v.w))
                 : "memory");
}

template <> __device__ __forceinline__ void red_add_vec<__nv_bfloat16>(void *p, uint4 v)
{
    asm volatile("red.relaxed.gpu.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

template <> __device__ __forceinline__ void red_add_vec<__half>(void *p, uint4 v)
{
    asm volatile("red.relaxed.gpu.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/* Adds one 4-byte pair of 16-bit values (sm_90 has no 16-bit scalar
 * reduction: atomicAdd on one bf16/fp16 becomes a compare-and-swap loop). */
template <typename Elem> __device__ __forceinline__ void red_add_pair(void *p, uint32_t v);

template <> __device__ __forceinline__ void red_add_pair<__nv_bfloat16>(void *p, uint32_t v)
{
    asm volatile("red.relaxed.gpu.global.add.noftz.bf16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <> __device__ __forceinline__ void red_add_pair<__half>(void *p, uint32_t v)
{
    asm volatile("red.relaxed.gpu.global.add.noftz.f16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* A unit of a scatter row: a 16-byte packed vector, a 4-byte pair of 16-bit
 * values, or one element. */
template <typename Elem, int Count> struct alignas(sizeof(Elem) * Count) ElemPack {
    Elem e[Count];
};

template <typename Elem, int Count>
__device__ __forceinline__ void red_add_unit(void *p, const ElemPack<Elem, Count> &v)
{
    constexpr int kBytes = sizeof(ElemPack<Elem, Count>);
    if constexpr (kBytes == kVecBytes) {
        uint4 bits;
        __builtin_memcpy(&bits, &v, sizeof(bits));
        red_add_vec<Elem>(p, bits);
    } else if constexpr (Count == 2 && sizeof(Elem) == 2) {
        uint32_t bits;
        __builtin_memcpy(&bits, &v, sizeof(bits));
        red_add_pair<Elem>(p, bits);
    } else {
        static_assert(Count == 1, "a scatter unit is a vector, a 16-bit pair or one element");
        atomicAdd(static_cast<Elem *>(p), v.e[0]);
    }
}

/* Runs Body<Count> with the unit the runtime chose (args.unit_bytes). */
template <typename Elem, typename Body>
__device__ __forceinline__ void with_scatter_unit(const mgpu_gather_args &a, Body body)
{
    constexpr int kPerVec = kVecBytes / int(sizeof(Elem));
    if (a.unit_bytes == kVecBytes) {
        body(ElemPack<Elem, kPerVec>{});
    } else if constexpr (sizeof(Elem) == 2) {
        if (a.unit_bytes == 2 * int(sizeof(Elem)))
            body(ElemPack<Elem, 2>{});
        else
            body(ElemPack<Elem, 1>{});
    } else {
        body(ElemPack<Elem, 1>{});
    }
}

/* Lane-group geometry shared by the scatter kernels: 2^log2 lanes per row,
 * 32 >> log2 rows per warp, rows numbered across the whole grid. */
struct RowGroups {
    int col;            /* this lane's first unit in its row */
    int lanes_per_row;
    int64_t first_row;  /* this lane group's first row */
    int64_t row_stride; /* rows covered by the whole grid per step */

    __device__ __forceinline__ explicit RowGroups(int log2)
    {
        const int lane = lane_id();
        lanes_per_row = 1 << log2;
        col = lane & (lanes_per_row - 1);
        const int rows_per_warp = kWarp >> log2;
        first_row = global_warp() * rows_per_warp + (lane >> log2);
        row_stride = warps_in_grid() * rows_per_warp;
    }
};

/* Atomic scatter of whole rows in units of Count elements (Count * sizeof(Elem)
 * is 16 on the packed path, Count is 1 on the element path). */
template <typename Index, typename Elem, int Count>
__device__ __forceinline__ void scatter_rows_atomic(const mgpu_gather_args &a)
{
    using Pack = ElemPack<Elem, Count>;
    constexpr int64_t kUnit = sizeof(Pack);
    const RowGroups g(a.lanes_per_row_log2);
    const int64_t units = a.row_bytes / kUnit;
    for (int64_t row = g.first_row; row < a.n_indices; row += g.row_stride) {
        const int64_t idx = load_index<Index>(a, row);
        if (!index_in_range(idx, a.table_rows)) {
            if (g.col == 0)
                report_error(a, MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE);
            continue;
        }
        const char *s = src_bytes(a) + row * a.src_stride;
        char *d = dst_bytes(a) + idx * a.dst_stride;
        for (int64_t u0 = g.col; u0 < units; u0 += int64_t(g.lanes_per_row) * kScatterUnroll) {
            Pack v[kScatterUnroll];
#pragma unroll
            for (int k = 0; k < kScatterUnroll; ++k) {
                const int64_t u = u0 + int64_t(k) * g.lanes_per_row;
                if (u < units)
                    v[k] = *reinterpret_cast<const Pack *>(s + u * kUnit);
            }
#pragma unroll
            for (int k = 0; k < kScatterUnroll; ++k) {
                const int64_t u = u0 + int64_t(k) * g.lanes_per_row;
                if (u < units)
                    red_add_unit(d + u * kUnit, v[k]);
            }
        }
    }
}

/* Deterministic scatter: a lane group owns the row at the head of each run of
 * equal indices, sums the run in fp32 in index order, and writes dst once. */
template <typename Index, typename Elem, int Count>
__device__ __forceinline__ void scatter_rows_sorted(const mgpu_gather_args &a)
{
    using Pack = ElemPack<Elem, Count>;
    constexpr int64_t kUnit = sizeof(Pack);
    const RowGroups g(a.lanes_per_row_log2);
    const int64_t units = a.row_bytes / kUnit;
    for (int64_t head = g.first_row; head < a.n_indices; head += g.row_stride) {
        const int64_t idx = load_index<Index>(a, head);
        if (head > 0) {
            const int64_t prev = load_index<Index>(a, head - 1);
            if (prev == idx)
                continue; /* inside a run: its head's group adds this row */
            if (prev > idx && g.col == 0)
                report_error(a, MGPU_GATHER_ERROR_UNSORTED);
        }
        if (!index_in_range(idx, a.table_rows)) {
            if (g.col == 0)
                report_error(a, MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE);
            continue;
        }
        int64_t end = head + 1;
        while (end < a.n_indices && load_index<Index>(a, end) == idx)
            ++end;
        const int64_t run = end - head;
        Pack *d = reinterpret_cast<Pack *>(dst_bytes(a) + idx * a.dst_stride);
        const char *s = src_bytes(a) + head * a.src_stride;
        for (int64_t u = g.col; u < units; u += g.lanes_per_row) {
            const Pack old = d[u];
            float acc[Count];
#pragma unroll
            for (int e = 0; e < Count; ++e)
                acc[e] = to_f32(old.e[e]);
            const char *p = s + u * kUnit;
            for (int64_t r = 0; r < run; ++r, p += a.src_stride) {
                const Pack v = *reinterpret_cast<const Pack *>(p);
#pragma unroll
                for (int e = 0; e < Count; ++e)
                    acc[e] += to_f32(v.e[e]);
            }
            Pack out;
#pragma unroll
            for (int e = 0; e < Count; ++e)
                out.e[e] = from_f32<Elem>(acc[e]);
            d[u] = out;
        }
    }
}

} // namespace gather_detail

/* Rows of at most 512 bytes, everything 16-byte aligned. */
template <typename Index>
__device__ __forceinline__ void gather_narrow(const mgpu_gather_args &a)
{
    using namespace gather_detail;
    const int log2 = a.lanes_per_row_log2;
    const int lane = lane_id();
    const int col = lane & ((1 << log2) - 1);
    const int rows_per_step = kWarp >> log2;
    const int64_t rows_per_tile = int64_t(rows_per_step) * kNarrowUnroll;
    const int64_t tile_stride = warps_in_grid() * rows_per_tile;
    const int64_t col_off = int64_t(col) * kVecBytes;
    const bool col_active = col_off < a.row_bytes;

    /* This lane's row in step k of a tile starting at `first` is first + k * rows_per_step. */
    int64_t first = global_warp() * rows_per_tile + (lane >> log2);
    Index idx[kNarrowUnroll]; /* kept at the index width: int32 halves the registers */
#pragma unroll
    for (int k = 0; k < kNarrowUnroll; ++k) {
        const int64_t row = first + int64_t(k) * rows_per_step;
        idx[k] = row < a.n_indices ? Index(load_index<Index>(a, row)) : Index(0);
    }
    for (; first < a.n_indices; first += tile_stride) {
        uint4 v[kNarrowUnroll];
#pragma unroll
        for (int k = 0; k < kNarrowUnroll; ++k) {
            const int64_t row = first + int64_t(k) * rows_per_step;
            v[k] = make_uint4(0, 0, 0, 0);
            if (row < a.n_indices && col_active && index_in_range(idx[k], a.table_rows))
                v[k] = load_vec_nc(src_bytes(a) + int64_t(idx[k]) * a.src_stride + col_off);
        }
        /* The next tile's indices travel while this tile's data does. */
        Index next_idx[kNarrowUnroll];
#pragma unroll
        for (int k = 0; k < kNarrowUnroll; ++k) {
            const int64_t row = first + tile_stride + int64_t(k) * rows_per_step;
            next_idx[k] = row < a.n_indices ? Index(load_index<Index>(a, row)) : Index(0);
        }
#pragma unroll
        for (int k = 0; k < kNarrowUnroll; ++k) {
            const int64_t row = first + int64_t(k) * rows_per_step;
            if (row < a.n_indices && col_active) {
                store_vec(dst_bytes(a) + row * a.dst_stride + col_off, v[k]);
                if (col == 0 && !index_in_range(idx[k], a.table_rows))
                    report_error(a, MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE);
            }
            idx[k] = next_idx[k];
        }
    }
}

/* Rows of any length (chosen above 512 bytes), everything 16-byte aligned. */
template <typename Index>
__device__ __forceinline__ void gather_wide(const mgpu_gather_args &a)
{
    using namespace gather_detail;
    const int lane = lane_id();
    const int64_t chunks_per_row = (a.row_bytes + kWideChunkBytes - 1) / kWideChunkBytes;
    const int64_t items = a.n_indices * chunks_per_row;
    const int64_t stride = warps_in_grid();

    int64_t item = global_warp();
    int64_t row = item / chunks_per_row;
    int64_t idx = item < items ? load_index<Index>(a, row) : 0;
    for (; item < items; item += stride) {
        const int64_t chunk = item - row * chunks_per_row;
        const bool ok = index_in_range(idx, a.table_rows);
        const int64_t off0 = chunk * kWideChunkBytes + int64_t(lane) * kVecBytes;
        const char *s = src_bytes(a) + (ok ? idx : 0) * a.src_stride;
        uint4 v[kWideUnroll];
#pragma unroll
        for (int k = 0; k < kWideUnroll; ++k) {
            const int64_t off = off0 + int64_t(k) * kWarp * kVecBytes;
            v[k] = make_uint4(0, 0, 0, 0);
            if (ok && off < a.row_bytes)
                v[k] = load_vec_nc(s + off);
        }
        /* The next item's index travels while this item's data does. */
        const int64_t next_item = item + stride;
        const int64_t next_row = next_item / chunks_per_row;
        const int64_t next_idx = next_item < items ? load_index<Index>(a, next_row) : 0;

        char *d = dst_bytes(a) + row * a.dst_stride;
#pragma unroll
        for (int k = 0; k < kWideUnroll; ++k) {
            const int64_t off = off0 + int64_t(k) * kWarp * kVecBytes;
            if (off < a.row_bytes)
                store_vec(d + off, v[k]);
        }
        if (!ok && chunk == 0 && lane == 0)
            report_error(a, MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE);
        row = next_row;
        idx = next_idx;
    }
}

/* Any alignment: the widest unit that divides every address, stride and the
 * row length (args.unit_bytes, chosen by the runtime). */
template <typename Index>
__device__ __forceinline__ void gather_unaligned(const mgpu_gather_args &a)
{
    using namespace gather_detail;
    switch (a.unit_bytes) {
    case 8:
        gather_rows_by_unit<Index, UnitOf<8>::type>(a);
        break;
    case 4:
        gather_rows_by_unit<Index, UnitOf<4>::type>(a);
        break;
    case 2:
        gather_rows_by_unit<Index, UnitOf<2>::type>(a);
        break;
    default:
        gather_rows_by_unit<Index, UnitOf<1>::type>(a);
        break;
    }
}

/* dst[index[i], :] += src[i, :] with atomics; Elem is float, __nv_bfloat16 or __half. */
template <typename Index, typename Elem>
__device__ __forceinline__ void scatter_add(const mgpu_gather_args &a)
{
    using namespace gather_detail;
    with_scatter_unit<Elem>(a, [&](auto unit) {
        constexpr int kCount = sizeof(unit) / sizeof(Elem);
        scatter_rows_atomic<Index, Elem, kCount>(a);
    });
}

/* Deterministic dst[index[i], :] += src[i, :] for indices sorted ascending. */
template <typename Index, typename Elem>
__device__ __forceinline__ void scatter_add_sorted(const mgpu_gather_args &a)
{
    using namespace gather_detail;
    with_scatter_unit<Elem>(a, [&](auto unit) {
        constexpr int kCount = sizeof(unit) / sizeof(Elem);
        scatter_rows_sorted<Index, Elem, kCount>(a);
    });
}

} // namespace portable
} // namespace mgpu
