/*
 * mgpu_gather, mgpu_scatter_add and mgpu_check_index_errors: check the
 * handle, validate, select and plan (gather_plan.c), encode gather4's map
 * over the source table, launch on the handle's stream.
 *
 * The error word is one int32 of the handle's counters, allocated and zeroed
 * with the handle. Kernels only OR bits into it (gather_abi.h); the check
 * call waits for the stream, reads the word and zeroes it again, in stream
 * order.
 */
#include <string.h>

#include "gather_plan.h"
#include "runtime.h"

_Static_assert(sizeof(CUtensorMap) == sizeof(mgpu_abi_tensor_map), "the ABI's tensor map must be a CUtensorMap");
_Static_assert((int)MGPU_INDEX_I32 == (int)MGPU_ABI_INDEX_I32 && (int)MGPU_INDEX_I64 == (int)MGPU_ABI_INDEX_I64,
               "kernel index type codes must equal the public ones");

#define ERROR_WORD_BYTES sizeof(int32_t)

static const char *index_name(int index_type)
{
    return index_type == MGPU_INDEX_I64 ? "i64" : "i32";
}

static mgpu_status run(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gather_problem *p)
{
    if (mgpu_gather_problem_empty(p))
        return MGPU_STATUS_SUCCESS;
    mgpu_status s;
    const char *force = mgpu_env()->force_variant;
    const int variant = mgpu_select_gather(p, &h->caps, force, &s);
    if (variant < 0)
        return s;
    const struct mgpu_variant *v = &mgpu_variants[variant];
    struct mgpu_gather_plan plan;
    mgpu_gather_make_plan(p, v, &h->caps, mgpu_handle_counter(h, MGPU_COUNTERS_INDEX_ERROR), &plan);
    if (mgpu_log_enabled())
        mgpu_log("%s n=%lld table_rows=%lld row_bytes=%lld elem=%d %s src_stride=%lld dst_stride=%lld%s: %s%s "
                 "grid=%u",
                 p->op == MGPU_GATHER_OP_GATHER ? "gather" : "scatter_add", (long long)p->n_indices,
                 (long long)p->table_rows, (long long)p->row_bytes, p->elem_size, index_name(p->index_type),
                 (long long)p->src_stride, (long long)p->dst_stride, p->sorted ? " sorted" : "", v->name,
                 force && strcmp(force, v->name) == 0 ? " (forced)" : "", plan.grid);

    mgpu_gather4_args args4;
    void *params[1] = {&plan.args};
    if (v->kind == MGPU_KIND_GATHER4) {
        memset(&args4, 0, sizeof args4);
        CUtensorMap map;
        s = mgpu_encode_tensor_map(d, &plan.table_map, "gather4 table", &map);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
        memcpy(&args4.src_map, &map, sizeof map);
        args4.common = plan.args;
        args4.box_bytes = plan.box_bytes;
        args4.map_elem_bytes = plan.map_elem_bytes;
        params[0] = &args4;
    }
    return mgpu_launch(h, d, variant, plan.grid, 1, 1, params);
}

/* Handle first, then the descriptor of the one operation given. */
static mgpu_status enter_and_run(mgpu_handle *handle, enum mgpu_gather_op op, const mgpu_gather_desc *gather,
                                 const mgpu_scatter_add_desc *scatter)
{
    const struct mgpu_driver *d;
    struct mgpu_gather_problem p;
    mgpu_status s = mgpu_handle_enter(handle, &d);
    if (s == MGPU_STATUS_SUCCESS)
        s = op == MGPU_GATHER_OP_GATHER ? mgpu_gather_validate(gather, &p) : mgpu_scatter_add_validate(scatter, &p);
    return s == MGPU_STATUS_SUCCESS ? run(handle, d, &p) : s;
}

mgpu_status mgpu_gather(mgpu_handle *handle, const mgpu_gather_desc *desc)
{
    return enter_and_run(handle, MGPU_GATHER_OP_GATHER, desc, NULL);
}

mgpu_status mgpu_scatter_add(mgpu_handle *handle, const mgpu_scatter_add_desc *desc)
{
    return enter_and_run(handle, MGPU_GATHER_OP_SCATTER_ADD, NULL, desc);
}

mgpu_status mgpu_check_index_errors(mgpu_handle *h)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    const CUdeviceptr word = mgpu_handle_counter(h, MGPU_COUNTERS_INDEX_ERROR);
    CUresult r = d->cuStreamSynchronize(h->stream);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuStreamSynchronize (earlier work on the handle's stream failed)");
    int32_t bits = 0;
    r = d->cuMemcpyDtoHAsync(&bits, word, ERROR_WORD_BYTES, h->stream);
    if (r == CUDA_SUCCESS)
        r = d->cuStreamSynchronize(h->stream);
    if (r == CUDA_SUCCESS && bits)
        r = d->cuMemsetD32Async(word, 0, 1, h->stream);
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
