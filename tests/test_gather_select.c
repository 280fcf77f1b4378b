/*
 * mgpu_gather / mgpu_scatter_add on the CPU: descriptor validation (every
 * status and the message), variant selection with made-up devices (Hopper
 * 9.0, Blackwell 10.0, Ampere 8.0), MGPU_FORCE_VARIANT handling, and the
 * launch plans (grid and kernel arguments) against the formulas of
 * kernels/abi/gather_abi.h. No device is needed.
 */
#include <string.h>

#include "check.h"
#include "gather_plan.h"

static const struct mgpu_device_caps hopper = {9, 0, 132, 232448, 0};
static const struct mgpu_device_caps blackwell = {10, 0, 148, 232448, 0};
static const struct mgpu_device_caps ampere = {8, 0, 108, 166912, 0};

#define SRC_BASE ((uintptr_t)0x7f0000000000)
#define DST_BASE ((uintptr_t)0x7f1000000000)
#define IDX_BASE ((uintptr_t)0x7f2000000000)

static int has_cc(int major, int minor)
{
    for (int i = 0; i < mgpu_variant_count; i++)
        if (mgpu_variants[i].cc_major == major && mgpu_variants[i].cc_minor == minor)
            return 1;
    return 0;
}

static mgpu_gather_desc gather_desc(int64_t row_elems, int elem_size, int64_t n, int64_t rows)
{
    mgpu_gather_desc d = MGPU_GATHER_DESC_INIT;
    d.src = (const void *)SRC_BASE;
    d.dst = (void *)DST_BASE;
    d.index = (const void *)IDX_BASE;
    d.src_rows = rows;
    d.n_indices = n;
    d.row_elems = row_elems;
    d.elem_size = elem_size;
    d.src_row_stride = row_elems * elem_size;
    d.dst_row_stride = row_elems * elem_size;
    return d;
}

static mgpu_scatter_add_desc scatter_desc(int64_t row_elems, mgpu_dtype dtype, int64_t n, int64_t rows)
{
    const int es = dtype == MGPU_DTYPE_F32 ? 4 : 2;
    mgpu_scatter_add_desc d = MGPU_SCATTER_ADD_DESC_INIT;
    d.src = (const void *)SRC_BASE;
    d.dst = (void *)DST_BASE;
    d.index = (const void *)IDX_BASE;
    d.dst_rows = rows;
    d.n_indices = n;
    d.row_elems = row_elems;
    d.dtype = dtype;
    d.src_row_stride = row_elems * es;
    d.dst_row_stride = row_elems * es;
    return d;
}

static void check_gather_validation(void)
{
    struct mgpu_gather_problem p;
    mgpu_gather_desc d = gather_desc(64, 4, 1000, 5000);
    CHECK_STATUS(mgpu_gather_validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(p.row_bytes == 256 && p.table_rows == 5000 && p.n_indices == 1000, "problem not filled in");
    CHECK_STATUS(mgpu_gather_validate(NULL, &p), MGPU_STATUS_NULL_POINTER);

    mgpu_gather_desc e = d;
    e.struct_size = sizeof e - 8;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    CHECK(strstr(mgpu_last_error_message(), "struct_size") != NULL, "message: %s", mgpu_last_error_message());
    const int bad_sizes[] = {0, 3, 5, 16, -1};
    for (int i = 0; i < 5; i++) {
        e = d;
        e.elem_size = bad_sizes[i];
        CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    }
    e = d;
    e.index_type = (mgpu_index_type)7;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d;
    e.n_indices = -1;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_SIZE);
    e = d;
    e.row_elems = -5;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_SIZE);
    e = d;
    e.src_rows = -1;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_SIZE);
    e = d;
    e.n_indices = (int64_t)1 << 50;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_SIZE);
    e = d;
    e.src_row_stride = 255;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_LD);
    CHECK(strstr(mgpu_last_error_message(), "256") != NULL, "message: %s", mgpu_last_error_message());
    e = d;
    e.dst_row_stride = -256;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_LD);
    e = d;
    e.src_row_stride = (int64_t)1 << 47;
    e.src_rows = (int64_t)1 << 20; /* spans 2^67 bytes */
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_SIZE);

    e = d;
    e.index = NULL;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_NULL_POINTER);
    e = d;
    e.dst = NULL;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_NULL_POINTER);
    e = d;
    e.src = NULL;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_NULL_POINTER);
    e.src_rows = 0; /* nothing can be read: src may be NULL */
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_SUCCESS);
    e = d;
    e.index = (const void *)(IDX_BASE + 2);
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);

    /* empty calls need no pointers */
    e = d;
    e.n_indices = 0;
    e.src = e.dst = NULL;
    e.index = NULL;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_gather_problem_empty(&p), "n_indices == 0 is empty");
    e = d;
    e.row_elems = 0;
    e.src = e.dst = NULL;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_gather_problem_empty(&p), "row_elems == 0 is empty");

    /* overlaps: dst inside src, index inside dst, index inside src */
    e = d;
    e.dst = (void *)(SRC_BASE + 4096);
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    CHECK(strstr(mgpu_last_error_message(), "overlap") != NULL, "message: %s", mgpu_last_error_message());
    e = d;
    e.index = (const void *)(DST_BASE + 256 * 999);
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d;
    e.index = (const void *)(SRC_BASE + 256 * 4999 + 252);
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d; /* adjacent is fine */
    e.dst = (void *)(SRC_BASE + 256 * 5000);
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_SUCCESS);
    e = d; /* any byte alignment is accepted for gathers */
    e.src = (const void *)(SRC_BASE + 3);
    e.src_row_stride = 257;
    CHECK_STATUS(mgpu_gather_validate(&e, &p), MGPU_STATUS_SUCCESS);
}

static void check_scatter_validation(void)
{
    struct mgpu_gather_problem p;
    mgpu_scatter_add_desc d = scatter_desc(64, MGPU_DTYPE_BF16, 1000, 50);
    CHECK_STATUS(mgpu_scatter_add_validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(p.row_bytes == 128 && p.elem_size == 2 && p.dtype == MGPU_DTYPE_BF16 && !p.sorted, "problem not filled in");
    CHECK_STATUS(mgpu_scatter_add_validate(NULL, &p), MGPU_STATUS_NULL_POINTER);
    mgpu_scatter_add_desc e = d;
    e.struct_size = 0;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d;
    e.dtype = (mgpu_dtype)9;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_UNSUPPORTED_DTYPE);
    e = d;
    e.mode = (mgpu_scatter_mode)5;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d;
    e.mode = MGPU_SCATTER_SORTED;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_SUCCESS);
    CHECK(p.sorted, "sorted mode lost");
    e = d;
    e.dst = (void *)(DST_BASE + 1); /* not a whole bf16 */
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d;
    e.src_row_stride = 129;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d;
    e.dst_row_stride = 100;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_INVALID_LD);
    e = d;
    e.src = NULL;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_NULL_POINTER);
    e = d;
    e.dst = NULL;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_NULL_POINTER);
    e.dst_rows = 0;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_SUCCESS);
    e = d;
    e.src = (const void *)(DST_BASE + 64);
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_INVALID_VALUE);
    e = d;
    e.n_indices = -3;
    CHECK_STATUS(mgpu_scatter_add_validate(&e, &p), MGPU_STATUS_INVALID_SIZE);
}

static const struct mgpu_variant *pick_gather(const mgpu_gather_desc *d, const struct mgpu_device_caps *caps,
                                              const char *force, mgpu_status *status)
{
    struct mgpu_gather_problem p;
    *status = mgpu_gather_validate(d, &p);
    if (*status != MGPU_STATUS_SUCCESS)
        return NULL;
    const int i = mgpu_select_gather(&p, caps, force, status);
    return i < 0 ? NULL : &mgpu_variants[i];
}

static void expect_gather(const mgpu_gather_desc *d, const struct mgpu_device_caps *caps, const char *force,
                          enum mgpu_kernel_kind kind, const char *what)
{
    mgpu_status s;
    const struct mgpu_variant *v = pick_gather(d, caps, force, &s);
    CHECK(v && v->kind == kind, "cc %d.%d %s: got %s (%s)", caps->cc_major, caps->cc_minor, what,
          v ? v->name : mgpu_status_string(s), mgpu_last_error_message());
    if (!v)
        return;
    CHECK(v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor, "%s: wrong arch", v->name);
    CHECK(v->gather.index_type == (int)d->index_type, "%s: wrong index type", v->name);
}

static void check_gather_selection(void)
{
    for (int it = 0; it < 2; it++) {
        const mgpu_index_type index_type = it ? MGPU_INDEX_I64 : MGPU_INDEX_I32;
        mgpu_gather_desc narrow = gather_desc(128, 2, 1 << 16, 1 << 20); /* 256 B */
        narrow.index_type = index_type;
        mgpu_gather_desc wide = narrow;
        wide.row_elems = 7168; /* 14 KiB */
        wide.src_row_stride = wide.dst_row_stride = 7168 * 2;
        mgpu_gather_desc odd = narrow;
        odd.row_elems = 7; /* 14 bytes: not a multiple of 16 */
        odd.src_row_stride = odd.dst_row_stride = 14;
        mgpu_gather_desc offset = narrow;
        offset.src = (const void *)(SRC_BASE + 8);
        mgpu_gather_desc empty_table = narrow;
        empty_table.src_rows = 0;
        mgpu_gather_desc huge_table = narrow;
        huge_table.src_rows = (int64_t)INT32_MAX + 1;
        huge_table.dst = (void *)(SRC_BASE + ((int64_t)1 << 40));
        huge_table.index = (const void *)(SRC_BASE + ((int64_t)1 << 41));

        if (has_cc(9, 0)) {
            expect_gather(&narrow, &hopper, NULL, MGPU_KIND_GATHER_NARROW, "256-byte rows");
            expect_gather(&wide, &hopper, NULL, MGPU_KIND_GATHER_WIDE, "14 KiB rows");
            expect_gather(&odd, &hopper, NULL, MGPU_KIND_GATHER_UNALIGNED, "14-byte rows");
            expect_gather(&offset, &hopper, NULL, MGPU_KIND_GATHER_UNALIGNED, "src + 8 bytes");
            expect_gather(&empty_table, &hopper, NULL, MGPU_KIND_GATHER_NARROW, "no src rows");
        }
        if (has_cc(10, 0)) {
            /* gather4 wherever TMA can read the table, the portable kernels elsewhere */
            expect_gather(&narrow, &blackwell, NULL, MGPU_KIND_GATHER4, "256-byte rows");
            expect_gather(&wide, &blackwell, NULL, MGPU_KIND_GATHER4, "14 KiB rows");
            expect_gather(&odd, &blackwell, NULL, MGPU_KIND_GATHER_UNALIGNED, "14-byte rows");
            expect_gather(&offset, &blackwell, NULL, MGPU_KIND_GATHER_UNALIGNED, "src + 8 bytes");
            expect_gather(&empty_table, &blackwell, NULL, MGPU_KIND_GATHER_NARROW, "no src rows");
            expect_gather(&huge_table, &blackwell, NULL, MGPU_KIND_GATHER_NARROW, "2^31 src rows");
            struct mgpu_device_caps small = blackwell;
            small.max_smem_per_block = MGPU_GATHER4_DYNAMIC_SMEM_BYTES - 1;
            expect_gather(&narrow, &small, NULL, MGPU_KIND_GATHER_NARROW, "too little smem for gather4");
        }
        mgpu_status s;
        CHECK(!pick_gather(&narrow, &ampere, NULL, &s) && s == MGPU_STATUS_ARCH_MISMATCH, "cc 8.0: %s",
              mgpu_status_string(s));
        const struct mgpu_device_caps cc103 = {10, 3, 148, 232448, 0};
        CHECK(!pick_gather(&narrow, &cc103, NULL, &s) && s == MGPU_STATUS_ARCH_MISMATCH, "cc 10.3: %s",
              mgpu_status_string(s));
    }
}

static void check_force(void)
{
    if (!has_cc(9, 0))
        return;
    mgpu_status s;
    mgpu_gather_desc narrow = gather_desc(128, 2, 1000, 5000);
    mgpu_gather_desc wide = gather_desc(1024, 4, 1000, 5000);
    expect_gather(&narrow, &hopper, "mgpu_gather_unaligned_sm90_i32", MGPU_KIND_GATHER_UNALIGNED, "forced unaligned");
    expect_gather(&narrow, &hopper, "mgpu_gather_wide_sm90_i32", MGPU_KIND_GATHER_WIDE, "forced wide");
    CHECK(!pick_gather(&wide, &hopper, "mgpu_gather_narrow_sm90_i32", &s) && s == MGPU_STATUS_NOT_SUPPORTED,
          "narrow forced on 4 KiB rows: %s", mgpu_status_string(s));
    CHECK(!pick_gather(&narrow, &hopper, "mgpu_gather_narrow_sm90_i64", &s) && s == MGPU_STATUS_NOT_SUPPORTED,
          "i64 variant forced on i32 indices: %s", mgpu_status_string(s));
    /* a name meant for another operation (or device) does not affect gathers */
    expect_gather(&narrow, &hopper, "mgpu_gemm_portable_sm90_64x64", MGPU_KIND_GATHER_NARROW, "GEMM name forced");
    expect_gather(&narrow, &hopper, "mgpu_scatter_add_sm90_f32_i32", MGPU_KIND_GATHER_NARROW, "scatter name forced");
    expect_gather(&narrow, &hopper, "mgpu_gather4_sm100_i32", MGPU_KIND_GATHER_NARROW, "sm100 name forced");
}

static void check_scatter_selection(void)
{
    const mgpu_dtype dtypes[3] = {MGPU_DTYPE_F32, MGPU_DTYPE_BF16, MGPU_DTYPE_F16};
    const struct mgpu_device_caps *devs[2] = {&hopper, &blackwell};
    for (int dv = 0; dv < 2; dv++) {
        if (!has_cc(devs[dv]->cc_major, devs[dv]->cc_minor))
            continue;
        for (int t = 0; t < 3; t++)
            for (int sorted = 0; sorted < 2; sorted++)
                for (int it = 0; it < 2; it++) {
                    mgpu_scatter_add_desc d = scatter_desc(100, dtypes[t], 1000, 50);
                    d.mode = sorted ? MGPU_SCATTER_SORTED : MGPU_SCATTER_ATOMIC;
                    d.index_type = it ? MGPU_INDEX_I64 : MGPU_INDEX_I32;
                    struct mgpu_gather_problem p;
                    CHECK_STATUS(mgpu_scatter_add_validate(&d, &p), MGPU_STATUS_SUCCESS);
                    mgpu_status s = MGPU_STATUS_SUCCESS;
                    const int i = mgpu_select_gather(&p, devs[dv], NULL, &s);
                    const struct mgpu_variant *v = i < 0 ? NULL : &mgpu_variants[i];
                    CHECK(v && v->kind == (sorted ? MGPU_KIND_SCATTER_ADD_SORTED : MGPU_KIND_SCATTER_ADD) &&
                              v->dtype == (int)dtypes[t] && v->gather.index_type == it &&
                              v->cc_major == devs[dv]->cc_major,
                          "scatter dtype %d sorted %d i%d on cc %d: %s", dtypes[t], sorted, it ? 64 : 32,
                          devs[dv]->cc_major, v ? v->name : mgpu_status_string(s));
                }
    }
    mgpu_scatter_add_desc d = scatter_desc(100, MGPU_DTYPE_F32, 1000, 50);
    struct mgpu_gather_problem p;
    CHECK_STATUS(mgpu_scatter_add_validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_status s = MGPU_STATUS_SUCCESS;
    CHECK(mgpu_select_gather(&p, &ampere, NULL, &s) < 0 && s == MGPU_STATUS_ARCH_MISMATCH, "scatter on cc 8.0");
    if (has_cc(9, 0)) {
        s = MGPU_STATUS_SUCCESS;
        CHECK(mgpu_select_gather(&p, &hopper, "mgpu_scatter_add_sorted_sm90_f32_i32", &s) < 0 &&
                  s == MGPU_STATUS_NOT_SUPPORTED,
              "sorted kernel forced on an atomic call: %s", mgpu_status_string(s));
    }
}

static struct mgpu_gather_plan plan_for(const struct mgpu_gather_problem *p, const struct mgpu_device_caps *caps)
{
    struct mgpu_gather_plan plan;
    memset(&plan, 0xff, sizeof plan);
    mgpu_status s = MGPU_STATUS_SUCCESS;
    const int i = mgpu_select_gather(p, caps, NULL, &s);
    CHECK(i >= 0, "no variant: %s", mgpu_last_error_message());
    if (i >= 0)
        mgpu_gather_make_plan(p, &mgpu_variants[i], caps, 0x7e0000000000, &plan);
    return plan;
}

static void check_plans(void)
{
    struct mgpu_gather_problem p;
    if (has_cc(9, 0)) {
        /* 256-byte rows: 16 lanes per row, 2 rows per warp step, 8 steps: 16 rows per warp tile */
        mgpu_gather_desc d = gather_desc(64, 4, 1 << 20, 1 << 22);
        mgpu_gather_validate(&d, &p);
        struct mgpu_gather_plan plan = plan_for(&p, &hopper);
        CHECK(plan.args.lanes_per_row_log2 == 4, "lanes log2 %d", plan.args.lanes_per_row_log2);
        CHECK(plan.grid == (1u << 20) / 16 / 8, "narrow grid %u", plan.grid);
        CHECK(plan.args.n_indices == 1 << 20 && plan.args.row_bytes == 256 && plan.args.table_rows == 1 << 22 &&
                  plan.args.src == SRC_BASE && plan.args.dst == DST_BASE && plan.args.index == IDX_BASE &&
                  plan.args.reserved == 0,
              "arguments not copied");
        /* 16-byte rows: one lane per row */
        d = gather_desc(2, 8, 1000, 10);
        mgpu_gather_validate(&d, &p);
        plan = plan_for(&p, &hopper);
        CHECK(plan.args.lanes_per_row_log2 == 0 && plan.grid == 1, "16-byte rows: log2 %d grid %u",
              plan.args.lanes_per_row_log2, plan.grid);
        /* 5000-byte rows are 16-aligned? no: unaligned, 8-byte units */
        d = gather_desc(625, 8, 100, 10);
        mgpu_gather_validate(&d, &p);
        plan = plan_for(&p, &hopper);
        CHECK(plan.args.unit_bytes == 8 && plan.grid == 13, "unaligned: unit %d grid %u", plan.args.unit_bytes,
              plan.grid);
        d.src = (const void *)(SRC_BASE + 2);
        mgpu_gather_validate(&d, &p);
        plan = plan_for(&p, &hopper);
        CHECK(plan.args.unit_bytes == 2, "src + 2: unit %d", plan.args.unit_bytes);
        /* 14 KiB rows: 4 chunks of 4 KiB per row, a warp per chunk */
        d = gather_desc(3584, 4, 1 << 16, 1 << 16);
        mgpu_gather_validate(&d, &p);
        plan = plan_for(&p, &hopper);
        CHECK(plan.grid == (1u << 16) * 4 / 8, "wide grid %u", plan.grid);

        /* scatter units: packed 16 bytes, bf16 pairs, single elements */
        mgpu_scatter_add_desc sd = scatter_desc(64, MGPU_DTYPE_F32, 1000, 10);
        mgpu_scatter_add_validate(&sd, &p);
        plan = plan_for(&p, &hopper);
        CHECK(plan.args.unit_bytes == 16 && plan.args.lanes_per_row_log2 == 4 && plan.args.dtype == MGPU_DTYPE_F32,
              "f32 scatter: unit %d log2 %d", plan.args.unit_bytes, plan.args.lanes_per_row_log2);
        CHECK(plan.grid == (1000 + 15) / 16, "f32 scatter grid %u", plan.grid);
        sd = scatter_desc(66, MGPU_DTYPE_BF16, 1000, 10);
        mgpu_scatter_add_validate(&sd, &p);
        plan = plan_for(&p, &hopper);
        CHECK(plan.args.unit_bytes == 4 && plan.args.lanes_per_row_log2 == 5, "bf16 pairs: unit %d log2 %d",
              plan.args.unit_bytes, plan.args.lanes_per_row_log2);
        sd = scatter_desc(3, MGPU_DTYPE_F16, 1000, 10);
        mgpu_scatter_add_validate(&sd, &p);
        plan = plan_for(&p, &hopper);
        CHECK(plan.args.unit_bytes == 2 && plan.args.lanes_per_row_log2 == 2, "f16 singles: unit %d log2 %d",
              plan.args.unit_bytes, plan.args.lanes_per_row_log2);
    }
    if (has_cc(10, 0)) {
        mgpu_gather_desc d = gather_desc(64, 4, 1 << 20, 1 << 22);
        mgpu_gather_validate(&d, &p);
        struct mgpu_gather_plan plan = plan_for(&p, &blackwell);
        CHECK(plan.map_elem_bytes == 8 && plan.box_bytes == 256, "gather4 256 B: unit %d box %d", plan.map_elem_bytes,
              plan.box_bytes);
        CHECK(plan.grid == 148u * MGPU_GATHER4_CTAS_PER_SM, "gather4 grid %u", plan.grid);
        d = gather_desc(3584, 4, 5, 100); /* 14 KiB: 7 boxes of 2 KiB, 2 groups of 4 rows */
        mgpu_gather_validate(&d, &p);
        plan = plan_for(&p, &blackwell);
        CHECK(plan.box_bytes == MGPU_GATHER4_MAX_BOX_BYTES && plan.grid == 14, "gather4 14 KiB: box %d grid %u",
              plan.box_bytes, plan.grid);
    }
}

int main(void)
{
    check_gather_validation();
    check_scatter_validation();
    check_gather_selection();
    check_force();
    check_scatter_selection();
    check_plans();
    return check_exit();
}
