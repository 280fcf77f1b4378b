/*
 * mgpu_gather, mgpu_scatter_add and mgpu_check_index_errors: validate and
 * select (gather_select.c), make sure the handle's index error word exists,
 * build the kernel arguments (and, for gather4, the TMA tensor map over the
 * source table), launch on the handle's stream.
 *
 * The error word is one int32 of device memory per handle, allocated with
 * cuMemAlloc by the first gather / scatter_add on the handle and zeroed on its
 * stream. Kernels only OR bits into it (gather_abi.h); the check call waits
 * for the stream, reads the word and zeroes it again, in stream order.
 */
#include <stdlib.h>
#include <string.h>

#include "gather_select.h"
#include "internal.h"

_Static_assert(sizeof(CUtensorMap) == sizeof(mgpu_abi_tensor_map), "the ABI's tensor map must be a CUtensorMap");
_Static_assert((int)MGPU_INDEX_I32 == (int)MGPU_ABI_INDEX_I32 && (int)MGPU_INDEX_I64 == (int)MGPU_ABI_INDEX_I64,
               "kernel index type codes must equal the public ones");

#define ERROR_WORD_BYTES sizeof(int32_t)

static mgpu_status error_word(mgpu_handle *h, const struct mgpu_driver *d, CUdeviceptr *out)
{
    if (!h->index_error_word) {
        CUdeviceptr word;
        CUresult r = d->cuMemAlloc(&word, ERROR_WORD_BYTES);
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, "cuMemAlloc(index error word)");
        r = d->cuMemsetD32Async(word, 0, 1, h->stream);
        if (r != CUDA_SUCCESS) {
            d->cuMemFree(word);
            return mgpu_driver_fail(d, r, "cuMemsetD32Async(index error word)");
        }
        h->index_error_word = word;
    }
    *out = h->index_error_word;
    return MGPU_STATUS_SUCCESS;
}

void mgpu_gather_release(mgpu_handle *h)
{
    const struct mgpu_driver *d;
    if (!h->index_error_word || mgpu_driver(&d) != MGPU_STATUS_SUCCESS)
        return;
    /* cuMemFree needs the allocation's context current; restore the caller's after. */
    CUcontext previous = NULL;
    if (d->cuCtxGetCurrent(&previous) == CUDA_SUCCESS && d->cuCtxSetCurrent(h->context) == CUDA_SUCCESS) {
        d->cuMemFree(h->index_error_word);
        d->cuCtxSetCurrent(previous);
    }
    h->index_error_word = 0;
}

/* The rank-2 map of gather_abi.h: the table as {row_bytes / 8, rows} 8-byte
 * units, boxes of {box_bytes / 8, 1}; the bytes are copied verbatim. */
static mgpu_status encode_table_map(const struct mgpu_driver *d, const struct mgpu_gather_problem *p,
                                    const struct mgpu_gather_plan *plan, mgpu_abi_tensor_map *out)
{
    CUtensorMap map;
    const cuuint64_t unit = (cuuint64_t)plan->map_elem_bytes;
    cuuint64_t dims[2] = {(cuuint64_t)p->row_bytes / unit, (cuuint64_t)p->table_rows};
    cuuint64_t strides[1] = {(cuuint64_t)p->src_stride};
    cuuint32_t box[2] = {(cuuint32_t)(plan->box_bytes / plan->map_elem_bytes), 1};
    cuuint32_t elem_strides[2] = {1, 1};
    CUresult r = d->cuTensorMapEncodeTiled(
        &map, unit == sizeof(uint64_t) ? CU_TENSOR_MAP_DATA_TYPE_UINT64 : CU_TENSOR_MAP_DATA_TYPE_UINT32, 2,
        (void *)p->src, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuTensorMapEncodeTiled(gather4 table)");
    memcpy(out, &map, sizeof map);
    return MGPU_STATUS_SUCCESS;
}

static const char *index_name(int index_type)
{
    return index_type == MGPU_INDEX_I64 ? "i64" : "i32";
}

static mgpu_status run(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gather_problem *p)
{
    if (mgpu_gather_problem_empty(p))
        return MGPU_STATUS_SUCCESS;
    mgpu_status s;
    const char *force = getenv("MGPU_FORCE_VARIANT");
    const int variant = mgpu_select_gather(p, &h->caps, force, &s);
    if (variant < 0)
        return s;
    const struct mgpu_variant *v = &mgpu_variants[variant];
    struct mgpu_gather_plan plan;
    mgpu_gather_make_plan(p, v, &h->caps, &plan);
    if (mgpu_log_enabled())
        mgpu_log("%s n=%lld table_rows=%lld row_bytes=%lld elem=%d %s src_stride=%lld dst_stride=%lld%s: %s%s "
                 "grid=%u",
                 p->op == MGPU_GATHER_OP_GATHER ? "gather" : "scatter_add", (long long)p->n_indices,
                 (long long)p->table_rows, (long long)p->row_bytes, p->elem_size, index_name(p->index_type),
                 (long long)p->src_stride, (long long)p->dst_stride, p->sorted ? " sorted" : "", v->name,
                 force && force[0] && strcmp(force, v->name) == 0 ? " (forced)" : "", plan.grid);

    s = error_word(h, d, (CUdeviceptr *)&plan.args.error);
    if (s != MGPU_STATUS_SUCCESS)
        return s;

    mgpu_gather4_args args4;
    void *params[1] = {&plan.args};
    if (v->kind == MGPU_KIND_GATHER4) {
        memset(&args4, 0, sizeof args4);
        s = encode_table_map(d, p, &plan, &args4.src_map);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
        args4.common = plan.args;
        args4.box_bytes = plan.box_bytes;
        args4.map_elem_bytes = plan.map_elem_bytes;
        params[0] = &args4;
    }
    return mgpu_launch(h, d, variant, plan.grid, 1, 1, params);
}

mgpu_status mgpu_gather(mgpu_handle *handle, const mgpu_gather_desc *desc)
{
    const struct mgpu_driver *d;
    struct mgpu_gather_problem p;
    mgpu_status s = mgpu_handle_enter(handle, &d);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_gather_validate(desc, &p);
    return s == MGPU_STATUS_SUCCESS ? run(handle, d, &p) : s;
}

mgpu_status mgpu_scatter_add(mgpu_handle *handle, const mgpu_scatter_add_desc *desc)
{
    const struct mgpu_driver *d;
    struct mgpu_gather_problem p;
    mgpu_status s = mgpu_handle_enter(handle, &d);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_scatter_add_validate(desc, &p);
    return s == MGPU_STATUS_SUCCESS ? run(handle, d, &p) : s;
}

mgpu_status mgpu_check_index_errors(mgpu_handle *h)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS || !h->index_error_word)
        return s;
    CUresult r = d->cuStreamSynchronize(h->stream);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuStreamSynchronize (earlier work on the handle's stream failed)");
    int32_t bits = 0;
    r = d->cuMemcpyDtoHAsync(&bits, h->index_error_word, ERROR_WORD_BYTES, h->stream);
    if (r == CUDA_SUCCESS)
        r = d->cuStreamSynchronize(h->stream);
    if (r == CUDA_SUCCESS && bits)
        r = d->cuMemsetD32Async(h->index_error_word, 0, 1, h->stream);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "reading the index error word");
    if (bits & MGPU_GATHER_ERROR_UNSORTED)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "a MGPU_SCATTER_SORTED scatter_add got indices not sorted ascending; its result is "
                         "undefined%s",
                         bits & MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE ? " (and some index was out of range)" : "");
    if (bits & MGPU_GATHER_ERROR_INDEX_OUT_OF_RANGE)
        return mgpu_fail(MGPU_STATUS_INDEX_OUT_OF_RANGE,
                         "a gather or scatter_add since the last check had an index < 0 or >= the table's rows; "
                         "those gather rows were zero-filled and those scatter rows skipped");
    return MGPU_STATUS_SUCCESS;
}
