/*
 * The contract between the runtime (src/) and the row gather / scatter-add
 * kernels (kernels/portable/gather_portable.cuh, compiled for sm_90a and sm_100a,
 * and kernels/blackwell/gather_sm100.cuh).
 *
 * Plain C, included by the C11 runtime and by the CUDA C++ kernels; the structs
 * are passed by value as `const __grid_constant__` kernel parameters, so their
 * layout is the ABI. The kernels move bytes, not elements: every size and
 * stride below is in bytes, so one gather kernel serves every element size.
 *
 *     gather:      dst[i, :]         = src[index[i], :]      0 <= i < n_indices
 *     scatter_add: dst[index[i], :] += src[i, :]             0 <= i < n_indices
 *
 * "table" is the side that is indexed: src for gather, dst for scatter_add.
 *
 * Out-of-range indices (index < 0 or index >= table_rows) are defined:
 *   gather      - the kernel never reads the table for that row; it writes
 *                 zeros to dst[i, :] and ORs MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE
 *                 into the error word;
 *   scatter_add - row i is skipped (dst untouched) and the same bit is ORed in.
 * The error word is one int32 in device memory whose address is `error`. The
 * runtime owns it (one per handle), zeroes it when the handle is made and after
 * each check, and a check call (after the stream is synchronised) copies it to
 * the host: any non-zero bit becomes MGPU_STATUS_INDEX_OUT_OF_RANGE (or, for
 * MGPU_GATHER_ERROR_UNSORTED, the "indices not sorted" status of the sorted
 * scatter). Kernels only ever OR bits in (atomicOr), never clear them.
 *
 * ---------------------------------------------------------------------------
 * What the runtime computes per variant. Threads are 1-D; grids are 1-D in x;
 * every kernel walks its work with a grid-stride loop, so ANY grid.x >= 1 is
 * correct and the formulas below only choose how much runs at once. Never
 * launch with n_indices == 0 (there is nothing to do). `vec16` below means:
 * src, dst, src_stride, dst_stride and row_bytes are all multiples of 16.
 * Write ceil(a / b) as cdiv(a, b).
 *
 * portable/gather_portable.cuh, built for sm_90a and sm_100a (plain loads/stores
 * and atomics only)
 *
 *   gather_narrow<Index>   256 threads, 0 dynamic smem
 *     requires vec16 and row_bytes <= MGPU_GATHER_NARROW_MAX_ROW_BYTES (512).
 *     lanes_per_row_log2 = log2 of the smallest power of two >= row_bytes / 16
 *     (0..5). A warp covers 32 >> lanes_per_row_log2 rows per step and
 *     MGPU_GATHER_NARROW_UNROLL steps per tile:
 *       rows_per_tile = (32 >> lanes_per_row_log2) * MGPU_GATHER_NARROW_UNROLL
 *       grid.x = min(cdiv(cdiv(n_indices, rows_per_tile), 256 / 32), MGPU_GATHER_GRID_MAX)
 *
 *   gather_wide<Index>     256 threads, 0 dynamic smem
 *     requires vec16 (any row_bytes; chosen for row_bytes > 512). A warp copies
 *     one chunk of MGPU_GATHER_WIDE_CHUNK_BYTES (4096) of one row at a time:
 *       items  = n_indices * cdiv(row_bytes, MGPU_GATHER_WIDE_CHUNK_BYTES)
 *       grid.x = min(cdiv(items, 256 / 32), MGPU_GATHER_GRID_MAX)
 *
 *   gather_unaligned<Index> 256 threads, 0 dynamic smem
 *     any alignment. unit_bytes = the largest of 8, 4, 2, 1 that divides src,
 *     dst, src_stride, dst_stride and row_bytes. One warp per row:
 *       grid.x = min(cdiv(n_indices, 256 / 32), MGPU_GATHER_GRID_MAX)
 *
 *   scatter_add<Index, Elem>        256 threads, 0 dynamic smem (Elem: float,
 *   __nv_bfloat16, __half). Atomic; accumulates in the destination's precision;
 *   the order of additions (and so the rounding of bf16/fp16 and even fp32
 *   sums over duplicate indices) is not deterministic.
 *   scatter_add_sorted<Index, Elem> 256 threads, 0 dynamic smem. Deterministic:
 *   requires index[] sorted ascending (duplicates adjacent); each destination
 *   row is read once, the run of equal indices is summed in fp32 in index order,
 *   and written once (one rounding). A descending pair sets
 *   MGPU_GATHER_ERROR_UNSORTED (the result is then undefined). One lane group
 *   walks a whole run, so a run of r duplicates costs r row reads serially.
 *     Both: src, dst, strides and row_bytes must be multiples of sizeof(Elem)
 *     (always true for real tensors; otherwise reject the call).
 *     unit_bytes = 16 when vec16 holds (packed 16-byte loads and reductions);
 *     else, for 16-bit Elem, 4 when src, dst, strides and row_bytes are all
 *     multiples of 4 (bf16x2 / f16x2 pairs); else sizeof(Elem) (one element
 *     at a time; for 16-bit types a compare-and-swap loop, slow).
 *     lanes_per_row_log2 = log2 of the smallest power of two >= row_bytes /
 *     unit_bytes, capped at 5 (wider rows loop within the 32 lanes).
 *       rows_per_cta = (256 / 32) * (32 >> lanes_per_row_log2)
 *       grid.x = min(cdiv(n_indices, rows_per_cta), MGPU_GATHER_GRID_MAX)
 *     dtype = the enum mgpu_abi_dtype of Elem (informative; the template
 *     argument fixes it).
 *
 * sm_100a
 *
 *   gather4<Index>  MGPU_GATHER4_THREADS (32) threads,
 *                   MGPU_GATHER4_DYNAMIC_SMEM_BYTES dynamic smem (set
 *                   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_MEMORY_SIZE once).
 *     requires vec16, 1 <= table_rows <= INT32_MAX, and the src map below.
 *     (table_rows == 0 with n_indices > 0: every index is out of range, so the
 *     runtime memsets the dst rows to zero and reports the error itself.)
 *     Tensor map `src_map`, built with cuTensorMapEncodeTiled:
 *       dataType      CU_TENSOR_MAP_DATA_TYPE_UINT32 (map_elem_bytes = 4) or
 *                     CU_TENSOR_MAP_DATA_TYPE_UINT64 (map_elem_bytes = 8);
 *                     the bytes are copied verbatim, whatever the user's dtype
 *       rank          2
 *       globalAddress src
 *       globalDim     { row_bytes / map_elem_bytes, table_rows }
 *       globalStrides { src_stride }            (the rank-1 stride, in bytes)
 *       boxDim        { box_elems, 1 } with box_elems = min(256, row_bytes / map_elem_bytes)
 *                     (gather4 always fetches 4 rows of one box each)
 *       elementStrides{ 1, 1 }
 *       interleave    NONE, swizzle NONE, l2Promotion L2_256B, oobFill NONE
 *     box_bytes = box_elems * map_elem_bytes (a multiple of 16, <= 2048).
 *       items  = cdiv(n_indices, 4) * cdiv(row_bytes, box_bytes)
 *       grid.x = min(items, sm_count * MGPU_GATHER4_CTAS_PER_SM)
 *     Unaligned inputs on sm_100a use gather_unaligned (compiled for sm_100a).
 */
#ifndef MGPU_KERNELS_ABI_GATHER_ABI_H
#define MGPU_KERNELS_ABI_GATHER_ABI_H

#include <stdint.h>

#ifdef __cplusplus
#define MGPU_ABI_ALIGNAS(n) alignas(n)
#else
#define MGPU_ABI_ALIGNAS(n) _Alignas(n)
#endif

/* Bits ORed into the device-side error word. */
enum mgpu_gather_error_bits {
    MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE = 1,
    MGPU_GATHER_ERROR_UNSORTED = 2, /* scatter_add_sorted only */
};

/* Index type codes (the Index template argument of each entry). */
enum mgpu_abi_index_type {
    MGPU_ABI_INDEX_I32 = 0,
    MGPU_ABI_INDEX_I64 = 1,
};

/* Shape constants shared by the runtime's formulas and the kernels. */
enum mgpu_gather_constants {
    MGPU_GATHER_THREADS = 256,            /* every portable gather / scatter entry */
    MGPU_GATHER_VEC_BYTES = 16,           /* one LDG.128 / STG.128 */
    MGPU_GATHER_NARROW_MAX_ROW_BYTES = 512, /* 32 lanes x 16 bytes */
    MGPU_GATHER_NARROW_UNROLL = 8,        /* rows in flight per lane */
    MGPU_GATHER_WIDE_UNROLL = 8,          /* vectors in flight per lane */
    MGPU_GATHER_WIDE_CHUNK_BYTES = 32 * 8 * 16, /* warp x unroll x vector = 4096 */
    MGPU_GATHER_GRID_MAX = 0x7fffffff,    /* grid.x limit */
    MGPU_GATHER4_THREADS = 32,
    MGPU_GATHER4_ROWS = 4,                /* rows per tile::gather4 */
    MGPU_GATHER4_MAX_BOX_BYTES = 2048,    /* 256 elements of 8 bytes */
    MGPU_GATHER4_DATA_SMEM_BYTES = 48 * 1024,
    MGPU_GATHER4_SMEM_ALIGN = 128,        /* TMA destination alignment */
    MGPU_GATHER4_DYNAMIC_SMEM_BYTES = 48 * 1024 + 128,
    MGPU_GATHER4_MAX_STAGES = 32,
    MGPU_GATHER4_CTAS_PER_SM = 4,         /* 228 KB smem / ~49 KB per CTA */
};

/* The parameters of every portable entry (and the common part of gather4). */
typedef struct mgpu_gather_args {
    uint64_t src;          /* device address of src row 0 */
    uint64_t dst;          /* device address of dst row 0 */
    uint64_t index;        /* device address of n_indices int32 or int64 */
    uint64_t error;        /* device address of the handle's int32 error word */
    int64_t n_indices;     /* gather: dst rows; scatter_add: src rows */
    int64_t table_rows;    /* rows of the indexed side (gather: src, scatter: dst) */
    int64_t row_bytes;     /* bytes per row copied / added (> 0) */
    int64_t src_stride;    /* bytes from one src row to the next */
    int64_t dst_stride;    /* bytes from one dst row to the next */
    int32_t lanes_per_row_log2; /* gather_narrow, scatter_add(_sorted) */
    int32_t unit_bytes;    /* gather_unaligned: 1/2/4/8; scatter: 16, 4 or sizeof(Elem) */
    int32_t dtype;         /* scatter_add(_sorted): enum mgpu_abi_dtype (gemm_abi.h) */
    int32_t reserved;      /* zero */
} mgpu_gather_args;

/* An opaque CUtensorMap (128 bytes, 64-byte aligned), so that this header
 * needs no <cuda.h>; the runtime copies the encoded map in byte for byte. */
typedef struct mgpu_abi_tensor_map {
    MGPU_ABI_ALIGNAS(64) uint64_t opaque[16];
} mgpu_abi_tensor_map;

/* The parameters of the sm_100a gather4 entries. */
typedef struct mgpu_gather4_args {
    mgpu_abi_tensor_map src_map; /* see the top comment */
    mgpu_gather_args common;     /* src unused by the kernel (the map has it) */
    int32_t box_bytes;           /* box_elems * map_elem_bytes */
    int32_t map_elem_bytes;      /* 4 or 8 */
} mgpu_gather4_args;

#endif
