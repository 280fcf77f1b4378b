/*
 * Validation, variant selection and launch planning for mgpu_gather and
 * mgpu_scatter_add (see gather_select.h). Pure functions of the call and
 * the device's capabilities.
 *
 * Selection, first that applies:
 *   gather       gather4 (sm_100a only: 16-byte aligned, 1 <= src_rows < 2^31)
 *                narrow  (16-byte aligned, rows <= 512 bytes)
 *                wide    (16-byte aligned)
 *                unaligned (anything)
 *   scatter_add  the atomic or sorted kernel of the call's dtype
 * each in the variant of the call's index type and of the device's exact
 * compute capability. Grids and per-kernel arguments follow the formulas in
 * kernels/abi/gather_abi.h.
 */
#include "gather_plan.h"

#include <string.h>

/* Sizes, row counts and strides beyond this cannot describe real memory;
 * refusing them keeps every byte offset within int64. */
#define MAX_EXTENT ((int64_t)1 << 48)
/* The most bytes one matrix may span (first to last byte). */
#define MAX_SPAN ((int64_t)1 << 56)
/* TMA limits that gather4's tensor map must respect. */
#define TMA_MAX_STRIDE ((int64_t)1 << 40)
#define TMA_MAX_DIM ((int64_t)1 << 32)
#define TMA_MAP_ELEM_BYTES 8 /* the map's unit: row_bytes is a multiple of 16 on this path */
#define TMA_MAX_BOX_ELEMS (MGPU_GATHER4_MAX_BOX_BYTES / TMA_MAP_ELEM_BYTES)
#define WARP 32
#define WARPS_PER_CTA (MGPU_GATHER_THREADS / WARP)
#define MAX_LANES_LOG2 5 /* a lane group is at most one warp */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int index_bytes(int index_type)
{
    return index_type == MGPU_INDEX_I64 ? 8 : 4;
}

static int ranges_overlap(uintptr_t a, int64_t a_len, uintptr_t b, int64_t b_len)
{
    if (a_len == 0 || b_len == 0)
        return 0;
    return a < b + (uintptr_t)b_len && b < a + (uintptr_t)a_len;
}

/* The checks gather and scatter_add share, on the byte-level problem. */
static mgpu_status validate_common(const struct mgpu_gather_problem *p, int64_t row_elems, const char *table_name,
                                   const char *table_rows_name)
{
    if (p->index_type != MGPU_INDEX_I32 && p->index_type != MGPU_INDEX_I64)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "index_type is %d; it must be MGPU_INDEX_I32 or MGPU_INDEX_I64",
                         p->index_type);
    if (p->n_indices < 0 || row_elems < 0 || p->table_rows < 0)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "n_indices, row_elems and %s must be >= 0 (got %lld, %lld, %lld)",
                         table_rows_name, (long long)p->n_indices, (long long)row_elems, (long long)p->table_rows);
    if (p->n_indices > MAX_EXTENT || row_elems > MAX_EXTENT || p->table_rows > MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "n_indices, row_elems and %s must be <= 2^48 (got %lld, %lld, %lld)",
                         table_rows_name, (long long)p->n_indices, (long long)row_elems, (long long)p->table_rows);
    if (mgpu_gather_problem_empty(p))
        return MGPU_STATUS_SUCCESS; /* nothing is read or written, whatever the strides */
    if (p->src_stride < p->row_bytes || p->dst_stride < p->row_bytes)
        return mgpu_fail(MGPU_STATUS_INVALID_LD,
                         "row strides must be at least one row (%lld bytes): src_row_stride = %lld, "
                         "dst_row_stride = %lld",
                         (long long)p->row_bytes, (long long)p->src_stride, (long long)p->dst_stride);
    if (p->src_stride > MAX_EXTENT || p->dst_stride > MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "row strides must be <= 2^48 bytes (got %lld, %lld)",
                         (long long)p->src_stride, (long long)p->dst_stride);
    const int gather = p->op == MGPU_GATHER_OP_GATHER;
    const int64_t src_rows = gather ? p->table_rows : p->n_indices;
    const int64_t dst_rows = gather ? p->n_indices : p->table_rows;
    int64_t src_span, dst_span;
    if (!mgpu_span_ok(src_rows, p->src_stride, p->row_bytes, &src_span) || src_span > MAX_SPAN ||
        !mgpu_span_ok(dst_rows, p->dst_stride, p->row_bytes, &dst_span) || dst_span > MAX_SPAN)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "src or dst would span more than 2^56 bytes");

    if (!p->index)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "index is NULL");
    if (gather ? !p->dst : !p->src)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "%s is NULL", gather ? "dst" : "src");
    if (p->table_rows > 0 && !(gather ? p->src : p->dst))
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "%s is NULL but %s = %lld", table_name, table_rows_name,
                         (long long)p->table_rows);
    if (p->index % (uintptr_t)index_bytes(p->index_type))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "index (%#llx) is not aligned to its %d-byte elements",
                         (unsigned long long)p->index, index_bytes(p->index_type));
    const int64_t index_span = p->n_indices * index_bytes(p->index_type);
    if (ranges_overlap(p->src, src_span, p->dst, dst_span))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "src [%#llx, +%lld bytes) and dst [%#llx, +%lld bytes) overlap; they must be disjoint",
                         (unsigned long long)p->src, (long long)src_span, (unsigned long long)p->dst,
                         (long long)dst_span);
    if (ranges_overlap(p->index, index_span, p->src, src_span) || ranges_overlap(p->index, index_span, p->dst, dst_span))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "index overlaps %s; it must be disjoint from src and dst",
                         ranges_overlap(p->index, index_span, p->src, src_span) ? "src" : "dst");
    return MGPU_STATUS_SUCCESS;
}

int mgpu_gather_problem_empty(const struct mgpu_gather_problem *p)
{
    return p->n_indices == 0 || p->row_bytes == 0;
}

mgpu_status mgpu_gather_validate(const mgpu_gather_desc *desc, struct mgpu_gather_problem *out)
{
    if (!desc)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    if (desc->struct_size != sizeof *desc)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_GATHER_DESC_INIT",
                         desc->struct_size, sizeof *desc);
    const int es = desc->elem_size;
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "elem_size is %d; it must be 1, 2, 4 or 8 bytes", es);
    const int64_t row_elems = desc->row_elems;
    *out = (struct mgpu_gather_problem){
        .op = MGPU_GATHER_OP_GATHER,
        .src = (uintptr_t)desc->src, .dst = (uintptr_t)desc->dst, .index = (uintptr_t)desc->index,
        .index_type = (int)desc->index_type,
        .n_indices = desc->n_indices, .table_rows = desc->src_rows,
        .row_bytes = row_elems >= 0 && row_elems <= MAX_EXTENT ? row_elems * es : 0,
        .src_stride = desc->src_row_stride, .dst_stride = desc->dst_row_stride,
        .elem_size = es, .dtype = -1,
    };
    return validate_common(out, row_elems, "src", "src_rows");
}

static int scatter_dtype_size(int dtype)
{
    return dtype == MGPU_DTYPE_F32 || dtype == MGPU_DTYPE_BF16 || dtype == MGPU_DTYPE_F16 ? mgpu_dtype_size(dtype) : 0;
}

mgpu_status mgpu_scatter_add_validate(const mgpu_scatter_add_desc *desc, struct mgpu_gather_problem *out)
{
    if (!desc)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    if (desc->struct_size != sizeof *desc)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_SCATTER_ADD_DESC_INIT",
                         desc->struct_size, sizeof *desc);
    const int es = scatter_dtype_size((int)desc->dtype);
    if (!es)
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE,
                         "dtype is %d; scatter_add takes MGPU_DTYPE_F32, MGPU_DTYPE_BF16 or MGPU_DTYPE_F16",
                         (int)desc->dtype);
    if (desc->mode != MGPU_SCATTER_ATOMIC && desc->mode != MGPU_SCATTER_SORTED)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "mode is %d; it must be MGPU_SCATTER_ATOMIC or MGPU_SCATTER_SORTED",
                         (int)desc->mode);
    const int64_t row_elems = desc->row_elems;
    *out = (struct mgpu_gather_problem){
        .op = MGPU_GATHER_OP_SCATTER_ADD,
        .src = (uintptr_t)desc->src, .dst = (uintptr_t)desc->dst, .index = (uintptr_t)desc->index,
        .index_type = (int)desc->index_type,
        .n_indices = desc->n_indices, .table_rows = desc->dst_rows,
        .row_bytes = row_elems >= 0 && row_elems <= MAX_EXTENT ? row_elems * es : 0,
        .src_stride = desc->src_row_stride, .dst_stride = desc->dst_row_stride,
        .elem_size = es, .dtype = (int)desc->dtype, .sorted = desc->mode == MGPU_SCATTER_SORTED,
    };
    mgpu_status s = validate_common(out, row_elems, "dst", "dst_rows");
    if (s != MGPU_STATUS_SUCCESS || mgpu_gather_problem_empty(out))
        return s;
    if ((out->src | out->dst | (uintptr_t)out->src_stride | (uintptr_t)out->dst_stride) % (uintptr_t)es)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "src, dst and both row strides must be multiples of the %d-byte element size", es);
    return MGPU_STATUS_SUCCESS;
}

int mgpu_gather_vec16(const struct mgpu_gather_problem *p)
{
    const uint64_t all = (uint64_t)p->src | (uint64_t)p->dst | (uint64_t)p->src_stride | (uint64_t)p->dst_stride |
                         (uint64_t)p->row_bytes;
    return all % MGPU_GATHER_VEC_BYTES == 0;
}

static int is_gather_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_GATHER_NARROW || k == MGPU_KIND_GATHER_WIDE || k == MGPU_KIND_GATHER_UNALIGNED ||
           k == MGPU_KIND_GATHER4;
}

static int is_scatter_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_SCATTER_ADD || k == MGPU_KIND_SCATTER_ADD_SORTED;
}

static int gather4_ok(const struct mgpu_gather_problem *p)
{
    return mgpu_gather_vec16(p) && p->table_rows >= 1 && p->table_rows <= INT32_MAX &&
           p->src_stride < TMA_MAX_STRIDE && p->row_bytes / TMA_MAP_ELEM_BYTES <= TMA_MAX_DIM;
}

/* 0 when variant v (of the op and the device) cannot do problem p; else
 * its preference, fastest first: gather4, narrow, wide, unaligned (the
 * scatter kinds are told apart by the mode). */
static int gather_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_gather_problem *p = ctx;
    if (v->gather.index_type != p->index_type)
        return 0;
    switch (v->kind) {
    case MGPU_KIND_GATHER4: return gather4_ok(p) ? 4 : 0;
    case MGPU_KIND_GATHER_NARROW: return mgpu_gather_vec16(p) && p->row_bytes <= MGPU_GATHER_NARROW_MAX_ROW_BYTES ? 3 : 0;
    case MGPU_KIND_GATHER_WIDE: return mgpu_gather_vec16(p) ? 2 : 0;
    case MGPU_KIND_GATHER_UNALIGNED: return 1;
    case MGPU_KIND_SCATTER_ADD: return !p->sorted && v->dtype == p->dtype;
    case MGPU_KIND_SCATTER_ADD_SORTED: return p->sorted && v->dtype == p->dtype;
    default: return 0;
    }
}

int mgpu_select_gather(const struct mgpu_gather_problem *p, const struct mgpu_device_caps *caps, const char *force,
                       mgpu_status *status)
{
    const int gather = p->op == MGPU_GATHER_OP_GATHER;
    const struct mgpu_lookup q = {
        .what = gather ? "gather" : "scatter_add", .of_op = gather ? is_gather_kind : is_scatter_kind,
        .caps = caps, .force = force, .fits = gather_fits, .ctx = p,
    };
    return mgpu_registry_lookup(&q, NULL, status);
}

/* log2 of the smallest power of two >= units, capped at a whole warp. */
static int lanes_log2(int64_t units)
{
    int l = 0;
    while (l < MAX_LANES_LOG2 && ((int64_t)1 << l) < units)
        l++;
    return l;
}

static unsigned grid_of(int64_t ctas)
{
    return (unsigned)(ctas < 1 ? 1 : min64(ctas, MGPU_GATHER_GRID_MAX));
}

void mgpu_gather_make_plan(const struct mgpu_gather_problem *p, const struct mgpu_variant *v,
                           const struct mgpu_device_caps *caps, uint64_t error_word, struct mgpu_gather_plan *out)
{
    memset(out, 0, sizeof *out);
    mgpu_gather_args *a = &out->args;
    a->error = error_word;
    a->src = p->src;
    a->dst = p->dst;
    a->index = p->index;
    a->n_indices = p->n_indices;
    a->table_rows = p->table_rows;
    a->row_bytes = p->row_bytes;
    a->src_stride = p->src_stride;
    a->dst_stride = p->dst_stride;
    a->dtype = p->dtype;
    const int64_t n = p->n_indices;
    const uint64_t all = (uint64_t)p->src | (uint64_t)p->dst | (uint64_t)p->src_stride | (uint64_t)p->dst_stride |
                         (uint64_t)p->row_bytes;
    switch (v->kind) {
    case MGPU_KIND_GATHER_NARROW: {
        a->lanes_per_row_log2 = lanes_log2(p->row_bytes / MGPU_GATHER_VEC_BYTES);
        const int64_t rows_per_tile = (int64_t)(WARP >> a->lanes_per_row_log2) * MGPU_GATHER_NARROW_UNROLL;
        out->grid = grid_of(mgpu_cdiv(mgpu_cdiv(n, rows_per_tile), WARPS_PER_CTA));
        break;
    }
    case MGPU_KIND_GATHER_WIDE:
        out->grid = grid_of(mgpu_cdiv(n * mgpu_cdiv(p->row_bytes, MGPU_GATHER_WIDE_CHUNK_BYTES), WARPS_PER_CTA));
        break;
    case MGPU_KIND_GATHER_UNALIGNED:
        a->unit_bytes = all % 8 == 0 ? 8 : all % 4 == 0 ? 4 : all % 2 == 0 ? 2 : 1;
        out->grid = grid_of(mgpu_cdiv(n, WARPS_PER_CTA));
        break;
    case MGPU_KIND_SCATTER_ADD:
    case MGPU_KIND_SCATTER_ADD_SORTED: {
        const int pair = 2 * p->elem_size;
        if (all % MGPU_GATHER_VEC_BYTES == 0)
            a->unit_bytes = MGPU_GATHER_VEC_BYTES;
        else if (p->elem_size == 2 && all % (uint64_t)pair == 0)
            a->unit_bytes = pair;
        else
            a->unit_bytes = p->elem_size;
        a->lanes_per_row_log2 = lanes_log2(p->row_bytes / a->unit_bytes);
        const int64_t rows_per_cta = (int64_t)WARPS_PER_CTA * (WARP >> a->lanes_per_row_log2);
        out->grid = grid_of(mgpu_cdiv(n, rows_per_cta));
        break;
    }
    case MGPU_KIND_GATHER4: {
        out->map_elem_bytes = TMA_MAP_ELEM_BYTES;
        const int64_t box_elems = min64(TMA_MAX_BOX_ELEMS, p->row_bytes / TMA_MAP_ELEM_BYTES);
        out->box_bytes = (int)(box_elems * TMA_MAP_ELEM_BYTES);
        const int64_t items = mgpu_cdiv(n, MGPU_GATHER4_ROWS) * mgpu_cdiv(p->row_bytes, out->box_bytes);
        out->grid = grid_of(min64(items, (int64_t)caps->sm_count * MGPU_GATHER4_CTAS_PER_SM));
        /* the table as {row_bytes / 8, rows} 8-byte units, boxes of
         * {box_bytes / 8, 1} (gather_abi.h); the bytes are copied verbatim */
        struct mgpu_tensor_map_desc *m = &out->table_map;
        m->type = MGPU_MAP_U64;
        m->rank = 2;
        m->base = p->src;
        m->dims[0] = (uint64_t)(p->row_bytes / TMA_MAP_ELEM_BYTES);
        m->dims[1] = (uint64_t)p->table_rows;
        m->byte_strides[0] = (uint64_t)p->src_stride;
        m->box[0] = (uint32_t)(out->box_bytes / TMA_MAP_ELEM_BYTES);
        m->box[1] = 1;
        m->l2_promote = 256;
        break;
    }
    default:
        break;
    }
}
