/*
 * Variant selection as a pure function of (problem, device capabilities),
 * with made-up devices: Hopper (9.0), Blackwell (10.0), and devices this
 * library has no kernels for (8.0, 10.3, 12.0). On both it also checks the
 * plan of the persistent kernel per shape class: tile, cluster (CTA pairs on
 * Blackwell), split-K factor, grid (from the device's SM count), band,
 * operand packing, the C map; fp8 and the epilogues (scales, bias,
 * activation) on both, and their refusal where no kernels exist.
 */
#include <string.h>

#include "check.h"
#include "gemm_plan.h"

static const struct mgpu_device_caps hopper = {9, 0, 132, 232448, 0};
static const struct mgpu_device_caps blackwell = {10, 0, 148, 232448, 0};
/* a workspace larger than any plan here needs */
static const struct mgpu_gemm_resources ample = {0x7e0000000000, (size_t)1 << 40, 0x7e8000000000};

static int has_cc(int major, int minor)
{
    for (int i = 0; i < mgpu_variant_count; i++)
        if (mgpu_variants[i].cc_major == major && mgpu_variants[i].cc_minor == minor)
            return 1;
    return 0;
}

static struct mgpu_gemm_problem problem(int transa, int transb, int dtype)
{
    static const float one = 1.0f, zero = 0.0f;
    struct mgpu_gemm_problem p = {
        .transa = transa, .transb = transb, .m = 1000, .n = 1000, .k = 1000, .batch = 1,
        .a_dtype = dtype, .b_dtype = dtype, .c_dtype = MGPU_DTYPE_F32,
        .a = 0x7f0000000000, .b = 0x7f1000000000, .c = 0x7f2000000000,
        .alpha = &one, .beta = &zero,
    };
    p.lda = transa == MGPU_OP_N ? p.m : p.k;
    p.ldb = transb == MGPU_OP_N ? p.k : p.n;
    p.ldc = p.m;
    return p;
}

static const struct mgpu_variant *pick(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                                       const char *force, mgpu_status *status)
{
    *status = MGPU_STATUS_SUCCESS;
    int i = mgpu_select_gemm(p, caps, force, status);
    return i < 0 ? NULL : &mgpu_variants[i];
}

static void check_tensor_core_choice(const struct mgpu_device_caps *caps, enum mgpu_kernel_kind kind)
{
    mgpu_status s;
    const int ops[2] = {MGPU_OP_N, MGPU_OP_T};
    const int dtypes[2] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int dt = 0; dt < 2; dt++) {
                struct mgpu_gemm_problem p = problem(ops[ta], ops[tb], dtypes[dt]);
                CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "valid problem rejected: %s",
                      mgpu_last_error_message());
                const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
                CHECK(v && v->kind == kind, "cc %d.%d %c%c dtype %d: got %s", caps->cc_major, caps->cc_minor,
                      "NT"[ta], "NT"[tb], dtypes[dt], v ? v->name : mgpu_status_string(s));
                if (!v)
                    continue;
                CHECK(v->dtype == dtypes[dt], "%s: wrong dtype", v->name);
                CHECK(v->gemm.a_kmajor == (ops[ta] == MGPU_OP_T), "%s: wrong A layout", v->name);
                CHECK(v->gemm.b_kmajor == (ops[tb] == MGPU_OP_N), "%s: wrong B layout", v->name);
                CHECK(v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor, "%s: wrong arch", v->name);
                /* pure: the same question gets the same answer */
                CHECK(pick(&p, caps, NULL, &s) == v, "selection not deterministic");
            }
}

/* Inputs TMA cannot read: the persistent kernel (`fast`) packs them, on
 * Hopper and on Blackwell. k == 0 is the portable kernel's everywhere. */
static void check_unaligned_paths(const struct mgpu_device_caps *caps, enum mgpu_kernel_kind fast)
{
    const int packs = 1;
    mgpu_status s;
    struct mgpu_gemm_problem base = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    struct mgpu_gemm_plan plan;
    const struct mgpu_variant *v;
    const enum mgpu_kernel_kind unaligned = fast;

    struct mgpu_gemm_problem p = base;
    p.lda = 1001; /* not a multiple of 8 elements */
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == unaligned, "odd lda: got %s", v ? v->name : "none");
    if (packs) {
        CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && plan.pack_a && !plan.pack_b &&
                  plan.pack_variant >= 0 && mgpu_variants[plan.pack_variant].kind == MGPU_KIND_GEMM_PACK,
              "odd lda: A not packed");
    }

    p = base;
    p.b += 2; /* element-aligned, not 16-byte aligned */
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == unaligned, "unaligned B: got %s", v ? v->name : "none");
    if (packs)
        CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && !plan.pack_a && plan.pack_b,
              "unaligned B: B not packed");

    p = base;
    p.k = 0;
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "k = 0: got %s", v ? v->name : "none");

    p = base;
    p.batch = 4;
    p.stride_a = 0; /* A broadcast over the batch */
    p.stride_b = 1000 * 1000;
    p.stride_c = 1000 * 1000;
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == unaligned, "broadcast A: got %s", v ? v->name : "none");
    if (packs)
        CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && !plan.pack_a && !plan.pack_b,
              "broadcast A: the persistent kernel reads it through TMA, unpacked");
    p.stride_a = 1000 * 1000;
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == fast, "aligned batch: got %s", v ? v->name : "none");
    p.stride_a = 1000 * 1000 + 1; /* odd batch stride */
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == unaligned, "odd batch stride: got %s", v ? v->name : "none");
    if (packs)
        CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && plan.pack_a && !plan.pack_b,
              "odd batch stride: A not packed");

    /* a device with too little shared memory for the tensor-core tiles */
    struct mgpu_device_caps small = *caps;
    small.max_smem_per_block = 48 * 1024;
    v = pick(&base, &small, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "small smem: got %s", v ? v->name : "none");
}

/* The plan of a bf16 TN problem, dense operands, with the overrides in `force`. */
static struct mgpu_gemm_plan plan_forced(int64_t m, int64_t n, int64_t k, int64_t batch,
                                         const struct mgpu_device_caps *caps, const struct mgpu_gemm_force *force)
{
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    p.m = m;
    p.n = n;
    p.k = k;
    p.batch = batch;
    p.lda = k;
    p.ldb = k;
    p.ldc = m;
    p.stride_a = m * k;
    p.stride_b = n * k;
    p.stride_c = m * n;
    struct mgpu_gemm_plan plan = {0};
    mgpu_status s = MGPU_STATUS_SUCCESS;
    CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "%lldx%lldx%lld: invalid", (long long)m, (long long)n,
          (long long)k);
    CHECK(mgpu_plan_gemm(&p, caps, force, &ample, &plan, &s) == 0, "%lldx%lldx%lld: %s", (long long)m, (long long)n,
          (long long)k, mgpu_status_string(s));
    return plan;
}

static struct mgpu_gemm_plan plan_of(int64_t m, int64_t n, int64_t k, int64_t batch,
                                     const struct mgpu_device_caps *caps, int force_splits)
{
    const struct mgpu_gemm_force force = {.splits = force_splits};
    return plan_forced(m, n, k, batch, caps, &force);
}

/* The plan of a dense bf16 problem (ld = rows, no batch) in the given layout. */
static struct mgpu_gemm_plan plan_layout(int transa, int transb, int64_t m, int64_t n, int64_t k,
                                         const struct mgpu_device_caps *caps)
{
    struct mgpu_gemm_problem p = problem(transa, transb, MGPU_DTYPE_BF16);
    p.m = m, p.n = n, p.k = k, p.batch = 1;
    p.lda = transa == MGPU_OP_T ? k : m;
    p.ldb = transb == MGPU_OP_N ? k : n;
    p.ldc = m;
    struct mgpu_gemm_plan plan = {0};
    mgpu_status s = MGPU_STATUS_SUCCESS;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0, "%lldx%lldx%lld: %s", (long long)m, (long long)n,
          (long long)k, mgpu_status_string(s));
    return plan;
}

/* The split-K tail (src/gemm/gemm_plan.c, tail_split_tiles): the units
 * beyond the last full wave shared out along K where that cuts the busiest
 * CTA's k-tiles by a tenth or more, a tile has 60 k-tiles or more and the
 * tail is at most 40 % of a wave;
 * MGPU_FORCE_TAIL_SPLIT turns it on wherever the rows have it (16-bit,
 * cooperative, two consumers, no split-K, more than one wave) or off; the
 * workspace must hold it. */
static void check_tail_split(const struct mgpu_device_caps *caps)
{
    const struct { int64_t m, n, k; int force, tail, cluster; } cases[] = {
        {3000, 3000, 4000, 1, 12, 2}, /* 144 cluster units on 66: 2 waves + 12; 189 -> 138 k-tiles (forced: by
                                       * default 192 x 192 tiles, wide_wanted) */
        {3000, 3000, 8000, 0, 48, 1}, /* 576 tiles of 128 x 128 on 132: 4 waves + 48; 625 -> 546 */
        {3000, 3000, 3000, 0, 0, 2},  /* 141 -> 103 k-tiles, but 47 k-tiles a tile */
        {3000, 3000, 1000, 0, 0, 2},  /* 48 -> 35 k-tiles, 16 a tile */
        {6000, 6000, 6000, 0, 0, 2},  /* 576 units, 8 waves + 48: 846 -> 821 k-tiles (3 %) */
        {4096, 4096, 4096, 0, 0, 1},  /* 512 tiles on 132, 3 waves + 116 */
        {1024, 28672, 8192, 0, 0, 1}, /* 896 tiles, 6 waves + 104 */
        {8192, 14336, 4096, 0, 0, 2}, /* 1792 units, 27 waves + 10: 3 % */
        {128, 28672, 8192, 0, 0, 1},  /* 224 tiles of 128 x 128: 1 wave + 92 (70 % of a wave) */
        {3000, 3000, 3000, 1, 60, 2}, /* 192 x 128 tiles (mid_rows_wanted): 192 units, 2 waves + 60 */
        {3000, 3000, 1000, 1, 60, 2},
        {4096, 4096, 4096, 1, 116, 1},
        {3000, 3000, 4000, -1, 0, 2},
        {2000, 2000, 2000, 1, 0, 1},  /* 128 large tiles: one wave, no tail */
        {3000, 3000, 100, 1, 120, 1}, /* packed operands, lone 192 x 128 tiles (mid_rows_wanted): 384, 2 waves
                                       * + 120 tiles of 2 k-tiles, 240 k-tiles of tail for 132 CTAs */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mgpu_gemm_force force = {.tail_split = cases[i].force};
        const struct mgpu_gemm_plan plan = plan_forced(cases[i].m, cases[i].n, cases[i].k, 1, caps, &force);
        const struct mgpu_variant *v = &mgpu_variants[plan.variant];
        CHECK(plan.tail_tiles == cases[i].tail && plan.args.tail_split == (cases[i].tail > 0) && plan.splits == 1 &&
                  v->gemm.cluster_n == cases[i].cluster && (plan.grid == caps->sm_count || !cases[i].tail),
              "%lldx%lldx%lld force %d: %s, tail %d (args %d), split-k %d, grid %lld (want tail %d, cluster %d)",
              (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k, cases[i].force, v->name,
              plan.tail_tiles, plan.args.tail_split, plan.splits, (long long)plan.grid, cases[i].tail,
              cases[i].cluster);
        if (plan.tail_tiles > 0 && !plan.pack_a && !plan.pack_b) {
            /* tiles + grid - 1 slots of one fp32 tile per CTA (after the packed operands, if any) */
            const size_t slots = (size_t)(plan.tail_tiles + plan.grid / v->gemm.cluster_n - 1) * v->gemm.cluster_n;
            CHECK(plan.workspace_bytes == slots * v->gemm.tile_m * v->gemm.tile_n * 4 &&
                      plan.args.split_counters == ample.split_counters,
                  "%lldx%lldx%lld: workspace %zu, counters %llx", (long long)cases[i].m, (long long)cases[i].n,
                  (long long)cases[i].k, plan.workspace_bytes, (unsigned long long)plan.args.split_counters);
        }
    }
    /* ping-pong rows and split-K plans have none */
    const struct mgpu_gemm_force pingpong = {.tail_split = 1, .schedule = MGPU_SCHEDULE_PINGPONG};
    struct mgpu_gemm_plan plan = plan_forced(3000, 3000, 4000, 1, caps, &pingpong);
    CHECK(plan.tail_tiles == 0 && !plan.args.tail_split, "3000x3000x4000 ping-pong: tail %d", plan.tail_tiles);
    const struct mgpu_gemm_force split = {.tail_split = 1, .splits = 2};
    plan = plan_forced(3000, 3000, 4000, 1, caps, &split);
    CHECK(plan.tail_tiles == 0 && plan.splits == 2, "3000x3000x4000 split 2: tail %d", plan.tail_tiles);
    /* a workspace too small for the partials: no tail, and the plan says so */
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    p.m = p.n = p.ldc = 3000;
    p.k = p.lda = p.ldb = 4000;
    const struct mgpu_gemm_resources small = {0x7e0000000000, (size_t)16 << 20, 0x7e8000000000};
    mgpu_status s = MGPU_STATUS_SUCCESS;
    const struct mgpu_gemm_force tail_on = {.tail_split = 1};
    CHECK(mgpu_plan_gemm(&p, caps, &tail_on, &small, &plan, &s) == 0 && plan.tail_tiles == 0 && !plan.args.tail_split &&
              plan.degraded && strstr(plan.degraded, "tail") && plan.workspace_wanted > ((size_t)16 << 20),
          "3000x3000x4000, 16 MiB: tail %d, degraded %s", plan.tail_tiles, plan.degraded ? plan.degraded : "(none)");
    size_t wanted = 0;
    CHECK(mgpu_gemm_workspace_wanted(&p, caps, &tail_on, &wanted, &s) == 0 && wanted == plan.workspace_wanted,
          "3000x3000x4000: workspace wanted %zu, plan %zu", wanted, plan.workspace_wanted);
}

/* The persistent kernel's plan per shape class on Hopper. */
static void check_plans(const struct mgpu_device_caps *caps)
{
    /* 2-CTA clusters for the large tiles when there are many of them and
     * the tile columns pair up (src/gemm/gemm_plan.c says why); split-K fills the SMs
     * when the tiles alone use at most half of them. The band is
     * sqrt(units at once x tile_n / tile_m) cluster tile rows, at most the
     * tile rows of a batch entry. */
    const struct { int64_t m, n, k, batch; int tile_m, cluster, splits, band; } cases[] = {
        {8192, 8192, 8192, 1, 256, 2, 1, 8},  /* large: 256 x 128 tiles, 2-CTA clusters: sqrt(66) */
        {8192, 4096, 4096, 1, 256, 2, 1, 8},  /* 1024 tiles */
        {4096, 4096, 4096, 1, 256, 1, 1, 8},  /* 512 tiles: no cluster, sqrt(132 / 2) */
        {4000, 4000, 4000, 1, 256, 2, 1, 8},  /* 8000-byte rows of A and B (operands_off_lines): clusters */
        {4096, 4096, 4000, 1, 256, 2, 1, 8},
        {4000, 4096, 4096, 1, 256, 1, 1, 8},  /* A and B rows on 128-byte lines (only D's are not) */
        {2056, 2312, 200, 1, 192, 2, 1, 9},   /* 171 tiles, 400-byte rows: 90 units (512 rows) -> 110 of
                                               * 192 x 128 (384; mid_rows_wanted) */
        {32768, 600, 4096, 1, 256, 1, 1, 8},  /* 5 tile columns: an odd cluster would idle a CTA */
        {32768, 1100, 4096, 1, 256, 2, 1, 8}, /* 9 tile columns: enough to pair up with one idle CTA */
        {1024, 1024, 1024, 32, 256, 1, 1, 4}, /* batched: 32 tiles per entry, 4 tile rows */
        {64, 4096, 4096, 1, 64, 1, 1, 1},     /* m <= 64: 64 tiles of 64 x 64 (narrow_wanted), no split */
        {128, 4096, 4096, 1, 64, 1, 1, 2},    /* small m: 128 tiles of 64 x 64 (narrow_wanted), two tile rows */
        {65, 4096, 4096, 1, 64, 1, 1, 2},
        {64, 8192, 8192, 1, 64, 1, 1, 1},     /* 128 tiles of 64 x 64 */
        {64, 2048, 4096, 1, 64, 1, 4, 1},     /* 32 tiles of 64 x 64 (a quarter wave): 16 of 64 x 128, split 4 */
        {128, 8192, 8192, 1, 64, 1, 1, 2},
        {128, 4096, 14336, 1, 64, 1, 1, 2},   /* small m, long k: 128 tiles of 64 x 64, no split */
        {64, 4096, 14336, 1, 64, 1, 1, 1},    /* 64 tiles of 64 x 64 */
        {128, 8192, 28672, 1, 128, 1, 1, 1},  /* 256 tiles of 64 x 64 (beyond a wave): 128 x 128 */
        {64, 4096, 256, 1, 64, 1, 1, 1},      /* too little K to split */
        /* at most one wave of 256 x 128 tiles: 64-row tiles where they make
         * one wave, else 128-row ones; split-K only with k >= 4096 and at
         * most half the SMs busy */
        {256, 256, 256, 1, 64, 1, 1, 4},      /* 8 tiles of 64 x 128, sqrt(8 x 2) */
        {1024, 1024, 1024, 1, 64, 1, 1, 16},  /* 128 tiles, no split */
        {1000, 1000, 1000, 1, 64, 1, 1, 16},
        {2048, 2048, 2048, 1, 128, 1, 1, 11}, /* 512 tiles of 64 rows: 256 of 128, sqrt(132) */
        {1024, 4096, 1024, 1, 128, 1, 1, 8},  /* 256 tiles of 128 x 128 (8 tile rows) */
        /* ... but with k >= 4096 the 256 x 128 tiles stay where the 128-row ones take more than a wave */
        {256, 10240, 8192, 1, 256, 1, 1, 1},  /* 80 large tiles (one wave) against 160 of 128 x 128 */
        {512, 6144, 4096, 1, 256, 1, 1, 2},   /* 96 against 192 */
        {256, 14336, 4096, 1, 256, 1, 1, 1},  /* 112 against 224 */
        {384, 8192, 4096, 1, 128, 1, 1, 3},   /* 256-row tiles would pad 128 rows: 192 of 128 x 128 */
        {256, 8192, 4096, 1, 128, 1, 1, 2},   /* 128 tiles of 128 x 128: one wave, taken */
        {512, 4096, 4096, 1, 128, 1, 1, 4},
        /* ... and (FEW_TILES_OFF_LINES_LARGE) where A or B rows start off 128-byte lines, any k:
         * lone CTAs of 256 x 128 */
        {2000, 2000, 2000, 1, 256, 1, 1, 8},  /* 4000-byte rows: 128 large tiles against 256 of 128 x 128 */
        {2000, 2000, 2048, 1, 128, 1, 1, 11}, /* rows on lines: 256 of 128 x 128, as 2048^3 */
        {1300, 1300, 1000, 1, 128, 1, 1, 11}, /* 121 tiles of 128 x 128 make one wave: taken */
        {384, 8192, 1000, 1, 128, 1, 1, 3},   /* 256-row tiles would pad 128 rows */
        {4096, 128, 8192, 1, 64, 1, 2, 16},   /* skinny n, long k: 64 tiles, two slices */
        {300, 200, 20000, 1, 64, 1, 13, 5},   /* 10 tiles: 132 / 10 slices */
        {2048, 2048, 2048, 2, 256, 1, 1, 8},  /* two entries: 256 large tiles, more than one wave */
        /* wave quantization (half_rows_wanted): 128 x 128 tiles where 64-row tiles of 64 < m <= 128
         * make more than a wave and 128-row ones give the busiest CTA no more rows ... */
        {128, 10240, 8192, 1, 128, 1, 1, 1},  /* 160 tiles of 64 x 128 (2 waves): 80 of 128 x 128 */
        {96, 10240, 8192, 1, 128, 1, 1, 1},
        {128, 14336, 4096, 1, 128, 1, 1, 1},  /* 224 -> 112 */
        {128, 28672, 8192, 1, 128, 1, 1, 1},  /* 448 (4 waves of 64 rows) -> 224 (2 of 128) */
        {64, 28672, 8192, 1, 64, 1, 1, 1},    /* m <= 64: as many 128-row tiles, no gain */
        {128, 10240, 8192, 2, 64, 1, 1, 2},   /* batched: unchanged (not measured) */
        /* ... and where 256 x 128 tiles beyond one wave (no cluster) give the busiest CTA more than
         * 8/7 of the rows 128 x 128 ones would */
        {1024, 10240, 8192, 1, 128, 1, 1, 8}, /* 320 tiles, 3 waves (768 rows) -> 640, 5 (640) */
        {1024, 6144, 4096, 1, 128, 1, 1, 8},  /* 192, 2 (512) -> 384, 3 (384) */
        {1024, 14336, 4096, 1, 128, 1, 1, 8}, /* 448, 4 (1024) -> 896, 7 (896): 7/8 exactly */
        {512, 10240, 8192, 1, 128, 1, 1, 4},  /* 160, 2 (512) -> 320, 3 (384) */
        {1024, 8192, 8192, 1, 256, 1, 1, 4},  /* 256, 2 (512) -> 512, 4 (512): unchanged */
        {2048, 10240, 8192, 1, 256, 1, 1, 8}, /* 640, 5 (1280) -> 1280, 10 (1280) */
        {3072, 6144, 4096, 1, 256, 1, 1, 8},  /* 576, 5 (1280) -> 1152, 9 (1152 > 7/8 x 1280) */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mgpu_gemm_plan plan = plan_of(cases[i].m, cases[i].n, cases[i].k, cases[i].batch, caps, 0);
        const struct mgpu_variant *v = &mgpu_variants[plan.variant];
        const int cluster = v->gemm.cluster_m * v->gemm.cluster_n;
        CHECK(v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT && v->gemm.tile_m == cases[i].tile_m &&
                  cluster == cases[i].cluster && plan.splits == cases[i].splits && plan.band == cases[i].band,
              "%lldx%lldx%lld batch %lld: got %s, split-k %d, band %d (want tile_m %d, cluster %d, split-k %d, "
              "band %d)",
              (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k, (long long)cases[i].batch,
              v->name, plan.splits, plan.band, cases[i].tile_m, cases[i].cluster, cases[i].splits, cases[i].band);
        CHECK(plan.grid >= cluster && plan.grid <= caps->sm_count && plan.grid % cluster == 0,
              "%s: grid %lld on %d SMs", v->name, (long long)plan.grid, caps->sm_count);
        CHECK(!plan.pack_a && !plan.pack_b && plan.pack_variant < 0, "%s: aligned operands packed", v->name);
    }
    /* small m: the 64 x 64 tile (one consumer warpgroup) only where its tiles make more than a
     * quarter of a wave and at most one, 16-bit TN, any k; the 64 x 128 / 128 x 128 tiles elsewhere */
    const struct { int64_t m, n, k, batch; int tile_n; } narrow[] = {
        {64, 4096, 4096, 1, 64},   {128, 4096, 4096, 1, 64},  {64, 8192, 8192, 1, 64},  {100, 4096, 4096, 1, 64},
        {32, 1024, 4096, 4, 64},   {128, 8192, 8192, 1, 128}, {128, 6144, 4096, 1, 128}, {64, 2048, 4096, 1, 128},
        {128, 4096, 14336, 1, 64}, {64, 8192, 28672, 1, 64}, {128, 8192, 28672, 1, 128}, {256, 256, 256, 1, 128},
    };
    for (unsigned i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
        const struct mgpu_gemm_plan pn = plan_of(narrow[i].m, narrow[i].n, narrow[i].k, narrow[i].batch, caps, 0);
        const struct mgpu_variant *v = &mgpu_variants[pn.variant];
        CHECK(v->gemm.tile_n == narrow[i].tile_n && (narrow[i].tile_n == 128 || (pn.splits == 1 && v->threads == 256)),
              "%lldx%lldx%lld batch %lld: got %s, split-k %d (want tile_n %d)", (long long)narrow[i].m,
              (long long)narrow[i].n, (long long)narrow[i].k, (long long)narrow[i].batch, v->name, pn.splits,
              narrow[i].tile_n);
    }
    {
        struct mgpu_gemm_problem p = problem(MGPU_OP_N, MGPU_OP_N, MGPU_DTYPE_BF16);
        p.m = 64, p.n = 4096, p.k = 4096, p.batch = 1, p.lda = 64, p.ldb = 4096, p.ldc = 64;
        struct mgpu_gemm_plan pn = {0};
        mgpu_status s = MGPU_STATUS_SUCCESS;
        CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &pn, &s) == 0 &&
                  mgpu_variants[pn.variant].gemm.tile_n == 128 && mgpu_variants[pn.variant].gemm.tile_m == 64,
              "NN 64x4096x4096: the 64 x 128 row (no 64 x 64 row for NN), got %s", mgpu_variants[pn.variant].name);
    }
    /* few tiles with both operands packed: packed rows off 128-byte lines (1500 -> 1504
     * elements, 3008 bytes) take lone 256 x 128 CTAs; packed rows on lines (2044 -> 2048
     * elements, 4096 bytes) keep 128 x 128 tiles */
    {
        const struct { int64_t mnk; int tile_m; } packed[] = {{1500, 256}, {2044, 128}};
        for (unsigned i = 0; i < sizeof packed / sizeof packed[0]; i++) {
            const int64_t d = packed[i].mnk;
            struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
            p.m = d, p.n = d, p.k = d, p.lda = d, p.ldb = d, p.ldc = d;
            struct mgpu_gemm_plan pp = {0};
            mgpu_status s = MGPU_STATUS_SUCCESS;
            CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &pp, &s) == 0, "%lld^3 packed: %s", (long long)d,
                  mgpu_status_string(s));
            const struct mgpu_variant *v = &mgpu_variants[pp.variant];
            CHECK(v->gemm.tile_m == packed[i].tile_m && v->gemm.cluster_m * v->gemm.cluster_n == 1 &&
                      pp.splits == 1 && pp.pack_a && pp.pack_b,
                  "%lld^3: got %s, split-k %d, packs %d %d (want tile_m %d, lone)", (long long)d, v->name,
                  pp.splits, pp.pack_a, pp.pack_b, packed[i].tile_m);
        }
    }
    /* the grid follows the device's SM count, never a constant */
    struct mgpu_device_caps fewer = *caps;
    fewer.sm_count = 78;
    struct mgpu_gemm_plan plan = plan_of(8192, 8192, 8192, 1, &fewer, 0);
    CHECK(plan.grid == 78, "8192^3 on 78 SMs: grid %lld", (long long)plan.grid);
    plan = plan_of(64, 4096, 4096, 1, &fewer, 0);
    CHECK(plan.splits == 1 && plan.grid == 64 && mgpu_variants[plan.variant].gemm.tile_n == 64,
          "64x4096x4096 on 78 SMs: split-k %d grid %lld", plan.splits, (long long)plan.grid);
    plan = plan_of(64, 1024, 4096, 1, &fewer, 0);
    CHECK(plan.splits == 4 && plan.grid == 32, "64x1024x4096 on 78 SMs: split-k %d grid %lld", plan.splits,
          (long long)plan.grid);
    /* forced split factors are clamped to the number of k-tiles */
    plan = plan_of(8192, 8192, 8192, 1, caps, 3);
    CHECK(plan.splits == 3, "forced split-k 3: got %d", plan.splits);
    /* ... and dropped when the tiles would need more split counters than a handle keeps */
    plan = plan_of(16384, 16384, 4096, 1, caps, 2);
    CHECK(plan.splits == 1, "forced split-k 2 on 16384^2 tiles (%d counters): got %d", MGPU_SPLIT_COUNTERS,
          plan.splits);
    /* a forced band is taken, clamped to the tile rows (8192 / 256 = 32) */
    const struct mgpu_gemm_force three = {.band = 3}, huge = {.band = 1000};
    plan = plan_forced(8192, 8192, 8192, 1, caps, &three);
    CHECK(plan.band == 3, "forced band 3: got %d", plan.band);
    plan = plan_forced(8192, 8192, 8192, 1, caps, &huge);
    CHECK(plan.band == 32, "forced band 1000: got %d", plan.band);
    /* MGPU_FORCE_SCHEDULE: the ping-pong rows for large 16-bit problems, with the cluster
     * decision of the cooperative ones; small m and the cooperative choice unchanged */
    const struct mgpu_gemm_force pingpong = {.schedule = MGPU_SCHEDULE_PINGPONG},
                                 cooperative = {.schedule = MGPU_SCHEDULE_COOPERATIVE};
    const struct { int64_t m, n, k; enum mgpu_gemm_shape_class want; int tile_m, cluster; } schedules[] = {
        {8192, 8192, 8192, MGPU_GEMM_LARGE_PINGPONG_CLUSTER, 128, 2},
        {4096, 4096, 4096, MGPU_GEMM_LARGE_PINGPONG, 128, 1},
        {1024, 10240, 8192, MGPU_GEMM_LARGE_PINGPONG, 128, 1}, /* large on 128 x 128 tiles by default */
        {128, 4096, 4096, MGPU_GEMM_TINY_M, 64, 1},
    };
    /* by default: cooperative, with or without a fused bias or activation (decision 018) */
    const struct { int64_t m, n, k; int bias, act; int pp; } fused[] = {
        {8192, 14336, 4096, 1, 1, 0}, {4096, 4096, 4096, 0, 1, 0}, {8192, 8192, 8192, 1, 1, 0},
        {8192, 14336, 4096, 0, 0, 0}, {128, 4096, 4096, 1, 1, 0},
    };
    for (unsigned i = 0; i < sizeof fused / sizeof fused[0]; i++) {
        struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
        p.m = fused[i].m, p.n = fused[i].n, p.k = fused[i].k, p.batch = 1;
        p.lda = p.k, p.ldb = p.k, p.ldc = p.m;
        p.bias = fused[i].bias ? (uintptr_t)0x100000 : 0;
        p.bias_dtype = MGPU_DTYPE_F32;
        p.bias_mode = MGPU_BIAS_PER_ROW;
        p.activation = fused[i].act ? MGPU_ACTIVATION_GELU : MGPU_ACTIVATION_NONE;
        struct mgpu_gemm_plan fp = {0};
        mgpu_status st = MGPU_STATUS_SUCCESS;
        CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &fp, &st) == 0, "fused %lldx%lldx%lld: %s",
              (long long)p.m, (long long)p.n, (long long)p.k, mgpu_status_string(st));
        const char *name = mgpu_variants[fp.variant].name;
        CHECK((strstr(name, "_pp_") != NULL) == fused[i].pp, "%lldx%lldx%lld bias %d act %d: got %s",
              (long long)p.m, (long long)p.n, (long long)p.k, fused[i].bias, fused[i].act, name);
    }
    for (unsigned i = 0; i < sizeof schedules / sizeof schedules[0]; i++) {
        plan = plan_forced(schedules[i].m, schedules[i].n, schedules[i].k, 1, caps, &pingpong);
        const struct mgpu_variant *v = &mgpu_variants[plan.variant];
        CHECK(v->gemm.shape_class == schedules[i].want && v->gemm.tile_m == schedules[i].tile_m &&
                  v->cluster == schedules[i].cluster &&
                  (strstr(v->name, "_pp_") != NULL) == (schedules[i].tile_m == 128),
              "%lldx%lldx%lld, ping-pong forced: got %s", (long long)schedules[i].m, (long long)schedules[i].n,
              (long long)schedules[i].k, v->name);
        const struct mgpu_gemm_plan coop = plan_forced(schedules[i].m, schedules[i].n, schedules[i].k, 1, caps,
                                                       &cooperative);
        const struct mgpu_gemm_plan plain = plan_of(schedules[i].m, schedules[i].n, schedules[i].k, 1, caps, 0);
        CHECK(coop.variant == plain.variant && strstr(mgpu_variants[coop.variant].name, "_pp_") == NULL,
              "%lldx%lldx%lld, cooperative forced: got %s", (long long)schedules[i].m, (long long)schedules[i].n,
              (long long)schedules[i].k, mgpu_variants[coop.variant].name);
    }
    plan = plan_of(64, 64, 100, 1, caps, 1000);
    CHECK(plan.splits == 2, "forced split-k 1000 with 2 k-tiles: got %d", plan.splits);
}

/* The 192 x 128 rows (gemm_plan.c, mid_rows_wanted): taken for 16-bit large
 * problems where they give the busiest CTA at most 7/8 of the work (tile
 * rows x k-tiles, the split-K tail counted) of the 256 x 128 tiles, or less
 * than that of the 128 x 128 ones half_rows_wanted took; the cluster
 * choice stays, and clusters of 192-row tiles need K-major A. */
static void check_mid_rows(const struct mgpu_device_caps *caps)
{
    const struct { int transa, transb; int64_t m, n, k; int tile_m, cluster, wide; } cases[] = {
        /* 144 cluster units (768 rows) -> 192 (576); k >= 2048, rows off lines: 192 x 192 (wide_wanted) */
        {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 3000, 192, 2, 1},
        {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 1000, 192, 2, 0},
        {MGPU_OP_T, MGPU_OP_T, 2999, 3001, 555, 192, 1, 0}, /* both packed (rows on lines): lone, 128 -> 192 */
        {MGPU_OP_N, MGPU_OP_N, 3000, 3000, 1000, 256, 2, 0}, /* M-major A: no 192-row cluster */
        {MGPU_OP_N, MGPU_OP_N, 3072, 3072, 1024, 192, 1, 0}, /* lone: 576 tiles of 128 (640 rows) -> 384 (576) */
        {MGPU_OP_T, MGPU_OP_N, 3072, 3072, 1024, 192, 1, 0},
        {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 4000, 192, 2, 1}, /* the 256-row tail (138 x 256 < 189 x 192): wide */
        {MGPU_OP_N, MGPU_OP_N, 3000, 3000, 3000, 256, 2, 0}, /* M-major A: no 192-row tiles */
        {MGPU_OP_T, MGPU_OP_N, 3072, 3072, 3072, 192, 1, 0}, /* rows on lines: not wide */
        {MGPU_OP_T, MGPU_OP_N, 3072, 3072, 8192, 128, 1, 0}, /* the 128-row tail: 4 x 128 + 47 k-tiles of 128 rows */
        {MGPU_OP_T, MGPU_OP_N, 6000, 6000, 6000, 192, 2, 1}, /* 2304 rows either way; wide: equal work */
        {MGPU_OP_T, MGPU_OP_N, 4096, 4096, 4096, 256, 1, 0}, /* 1024 -> 1152 */
        {MGPU_OP_T, MGPU_OP_N, 5000, 5000, 5000, 224, 2, 0}, /* 1792 -> 1728: not 7/8; 224 rows (wave_rows_wanted) */
        {MGPU_OP_T, MGPU_OP_N, 8192, 8192, 8192, 256, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 2000, 2000, 2000, 256, 1, 0}, /* one wave: few tiles */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mgpu_gemm_plan plan =
            plan_layout(cases[i].transa, cases[i].transb, cases[i].m, cases[i].n, cases[i].k, caps);
        const struct mgpu_variant *v = &mgpu_variants[plan.variant];
        const int mid = cases[i].tile_m == 192 && !cases[i].wide;
        CHECK(v->gemm.tile_m == cases[i].tile_m && v->gemm.cluster_n == cases[i].cluster &&
                  v->gemm.tile_n == (cases[i].wide ? 192 : 128) && strstr(v->name, "_pp_") == NULL &&
                  plan.splits == 1 &&
                  (!mid || (strcmp(plan.shape_class, "large, 192-row tiles") == 0 &&
                            v->gemm.shape_class ==
                                (cases[i].cluster == 2 ? MGPU_GEMM_LARGE_192_CLUSTER : MGPU_GEMM_LARGE_192))) &&
                  (!cases[i].wide || (strcmp(plan.shape_class, "large, 192 x 192 tiles") == 0 &&
                                      v->gemm.shape_class == (cases[i].cluster == 2 ? MGPU_GEMM_WIDE_192_CLUSTER
                                                                                    : MGPU_GEMM_WIDE_192))),
              "case %u %lldx%lldx%lld: got %s (%s), want tile_m %d, cluster %d", i, (long long)cases[i].m,
              (long long)cases[i].n, (long long)cases[i].k, v->name, plan.shape_class, cases[i].tile_m, cases[i].cluster);
        if (v->gemm.tile_m == 192)
            CHECK(plan.band >= 1 && plan.grid == caps->sm_count && plan.args.tail_split == 0,
                  "%lldx%lldx%lld: band %d grid %lld tail %d", (long long)cases[i].m, (long long)cases[i].n,
                  (long long)cases[i].k, plan.band, (long long)plan.grid, plan.args.tail_split);
    }
    /* f16 alike; fp8 keeps its own 192-row LARGE rows */
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_F16);
    p.m = p.n = p.k = p.lda = p.ldb = p.ldc = 3000;
    mgpu_status s = MGPU_STATUS_SUCCESS;
    const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
    CHECK(v && v->gemm.tile_m == 192 && v->gemm.cluster_n == 2 && v->dtype == MGPU_DTYPE_F16, "f16 3000^3: got %s",
          v ? v->name : "none");
    /* forced ping-pong: the ping-pong rows, with the cluster choice */
    const struct mgpu_gemm_force pingpong = {.schedule = MGPU_SCHEDULE_PINGPONG};
    const struct mgpu_gemm_plan pp = plan_forced(3000, 3000, 3000, 1, caps, &pingpong);
    CHECK(mgpu_variants[pp.variant].gemm.shape_class == MGPU_GEMM_LARGE_PINGPONG_CLUSTER,
          "3000^3 ping-pong forced: got %s", mgpu_variants[pp.variant].name);
    /* forced by name, on a shape the planner sends elsewhere */
    const struct mgpu_gemm_force named = {.variant = "mgpu_gemm_sm90_ws_bf16_tn_192x128x64_s4_c1"};
    const struct mgpu_gemm_plan forced = plan_forced(8192, 8192, 8192, 1, caps, &named);
    CHECK(forced.forced && strcmp(mgpu_variants[forced.variant].name, named.variant) == 0,
          "forced 192 x 128: got %s", mgpu_variants[forced.variant].name);
}

/* The rows of other wgmma N for whole waves (gemm_plan.c, wave_rows_wanted):
 * the plans of mgpu-bench's large list, of the shapes behind cuBLAS
 * (docs/decisions/053-gemm-large-behind.md) and of a few odd ones, bf16,
 * pinned (tile, cluster, tail) on 132 SMs; f16 alike; M-major A has no such
 * rows; the split-K tail forced keeps the plan so far; forced ping-pong keeps
 * the cluster choice. */
static void check_wave_rows(const struct mgpu_device_caps *caps)
{
    const struct { int transa, transb; int64_t m, n, k; int tile_m, tile_n, cluster, tail; } cases[] = {
        /* the large list: unchanged (whole waves of 224 rows within 15/16 nowhere) */
        {MGPU_OP_T, MGPU_OP_N, 4096, 4096, 4096, 256, 128, 1, 0},
        {MGPU_OP_T, MGPU_OP_N, 4096, 8192, 4096, 256, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 8192, 8192, 8192, 256, 128, 2, 0}, /* 16 waves x 256 against 18 x 224: 0.996 */
        {MGPU_OP_T, MGPU_OP_N, 8192, 4096, 4096, 256, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 8192, 6144, 4096, 256, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 8192, 14336, 4096, 256, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 8192, 4096, 14336, 256, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 4000, 4000, 4000, 256, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 16384, 4096, 4096, 256, 128, 2, 0}, /* a --models row */
        /* behind cuBLAS: 5000^3 takes 224 x 128 clusters (460 units in 7 waves of 66, no tail:
         * 97 % of a wave), the others keep 192 x 192 / 192 x 128 */
        {MGPU_OP_T, MGPU_OP_N, 5000, 5000, 5000, 224, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 5000, 5000, 2000, 224, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 3000, 192, 192, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 6000, 6000, 6000, 192, 192, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 1000, 192, 128, 2, 0},
        {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 4000, 192, 192, 2, 0},
        /* rows on lines, lone CTAs: 5120^3 (the 256-row tail before), 2560^3 (2 waves either way) */
        {MGPU_OP_T, MGPU_OP_N, 5120, 5120, 5120, 224, 128, 1, 0},
        {MGPU_OP_T, MGPU_OP_N, 2560, 2560, 2560, 224, 128, 1, 0},
        {MGPU_OP_T, MGPU_OP_N, 6144, 6144, 6144, 256, 128, 2, 0},
        /* M-major A: no 224-row rows; 5000^3 keeps the 256-row clusters and their tail */
        {MGPU_OP_N, MGPU_OP_N, 5000, 5000, 5000, 256, 128, 2, 4},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mgpu_gemm_plan plan =
            plan_layout(cases[i].transa, cases[i].transb, cases[i].m, cases[i].n, cases[i].k, caps);
        const struct mgpu_variant *v = &mgpu_variants[plan.variant];
        const int wave = v->gemm.tile_m == 224;
        CHECK(v->gemm.tile_m == cases[i].tile_m && v->gemm.tile_n == cases[i].tile_n &&
                  v->gemm.cluster_n == cases[i].cluster && plan.tail_tiles == cases[i].tail && plan.splits == 1 &&
                  strstr(v->name, "_pp_") == NULL &&
                  (!wave || (strcmp(plan.shape_class, "large, whole-wave tiles") == 0 &&
                             v->gemm.shape_class ==
                                 (cases[i].cluster == 2 ? MGPU_GEMM_WAVE_CLUSTER : MGPU_GEMM_WAVE) &&
                             plan.grid == caps->sm_count)),
              "wave case %u %lldx%lldx%lld: got %s (%s, tail %d), want %dx%d c%d tail %d", i,
              (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k, v->name, plan.shape_class, plan.tail_tiles, cases[i].tile_m,
              cases[i].tile_n, cases[i].cluster, cases[i].tail);
    }
    /* f16 alike */
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_F16);
    p.m = p.n = p.k = p.lda = p.ldb = p.ldc = 5000;
    mgpu_status s = MGPU_STATUS_SUCCESS;
    const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
    CHECK(v && strcmp(v->name, "mgpu_gemm_sm90_ws_f16_tn_224x128x64_s4_c2") == 0, "f16 5000^3: got %s",
          v ? v->name : "none");
    /* the tail forced on: the plan so far (256 x 128 clusters, 4 tail units) */
    const struct mgpu_gemm_force tail_on = {.tail_split = 1};
    struct mgpu_gemm_plan plan = plan_forced(5000, 5000, 5000, 1, caps, &tail_on);
    CHECK(mgpu_variants[plan.variant].gemm.tile_m == 256 && plan.tail_tiles == 4,
          "5000^3 tail forced: got %s, tail %d", mgpu_variants[plan.variant].name, plan.tail_tiles);
    /* forced ping-pong: the ping-pong clusters */
    const struct mgpu_gemm_force pingpong = {.schedule = MGPU_SCHEDULE_PINGPONG};
    plan = plan_forced(5000, 5000, 5000, 1, caps, &pingpong);
    CHECK(mgpu_variants[plan.variant].gemm.shape_class == MGPU_GEMM_LARGE_PINGPONG_CLUSTER,
          "5000^3 ping-pong forced: got %s", mgpu_variants[plan.variant].name);
    /* forced by name where the planner sends elsewhere; the split-K tail on it (1184 units: 62 past 17 waves of 66) */
    const struct mgpu_gemm_force named = {.variant = "mgpu_gemm_sm90_ws_bf16_tn_224x128x64_s4_c2", .tail_split = 1};
    plan = plan_forced(8192, 8192, 8192, 1, caps, &named);
    CHECK(plan.forced && strcmp(mgpu_variants[plan.variant].name, named.variant) == 0 && plan.tail_tiles == 62 &&
              plan.workspace_bytes == (size_t)(62 + 66 - 1) * 2 * 224 * 128 * 4,
          "forced 224 x 128: got %s, tail %d, workspace %zu", mgpu_variants[plan.variant].name, plan.tail_tiles,
          plan.workspace_bytes);
}

/* Programmatic dependent launch of the sm_90a persistent kernel
 * (gemm_plan.c, programmatic_wanted): on, except for two-consumer rows on
 * 7/8 of the SMs or more whose busiest CTA runs 64 k-tiles or more; the
 * small-m kernel's always. */
static void check_programmatic(const struct mgpu_device_caps *caps)
{
    const struct { int64_t m, n, k, batch; int want; } cases[] = {
        {64, 4096, 4096, 1, 1},    /* 64 x 64 row (one consumer), 64 CTAs */
        {128, 4096, 4096, 1, 1},   /* 64 x 64 row, 128 CTAs of 64 k-tiles */
        {64, 8192, 8192, 1, 1},    /* 64 x 64 row, 128 CTAs of 128 k-tiles */
        {1024, 1024, 1024, 1, 1},  /* 128 CTAs of 16 k-tiles */
        {1024, 4096, 1024, 1, 1},  /* 132 CTAs, at most 2 units of 16 k-tiles */
        {256, 256, 256, 1, 1},     /* 8 CTAs */
        {64, 14336, 4096, 1, 1},   /* 112 CTAs: 20 SMs free */
        {128, 6144, 4096, 1, 1},   /* 96 CTAs */
        {64, 2048, 4096, 1, 1},    /* split-K, 64 CTAs */
        {128, 4096, 14336, 1, 1},  /* split-K, 64 CTAs */
        {128, 8192, 8192, 1, 0},   /* 128 CTAs of 128 k-tiles */
        {256, 4096, 4096, 1, 0},   /* 128 CTAs of 64 k-tiles */
        {512, 4096, 4096, 1, 0},   /* 128 x 128 tiles, 128 CTAs of 64 k-tiles */
        {2048, 2048, 2048, 1, 0},  /* 132 CTAs, at most 2 units of 32 k-tiles */
        {128, 14336, 4096, 1, 1},  /* 128 x 128 tiles (half_rows_wanted): 112 CTAs */
        {1024, 1024, 1024, 32, 0}, /* 132 CTAs, at most 8 units of 16 k-tiles */
        {4096, 4096, 4096, 1, 0},
        {8192, 8192, 8192, 1, 0},  /* 2-CTA clusters */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mgpu_gemm_plan plan = plan_of(cases[i].m, cases[i].n, cases[i].k, cases[i].batch, caps, 0);
        CHECK(plan.persistent && plan.programmatic == cases[i].want,
              "%lldx%lldx%lld batch %lld (%s, grid %lld, split-k %d): programmatic %d, want %d", (long long)cases[i].m,
              (long long)cases[i].n, (long long)cases[i].k, (long long)cases[i].batch,
              mgpu_variants[plan.variant].name, (long long)plan.grid, plan.splits, plan.programmatic, cases[i].want);
    }
    /* the SM count decides what "every SM" is: 128 x 8192^2 fills 128 of 132, not of 160 */
    struct mgpu_device_caps more = *caps;
    more.sm_count = 160;
    CHECK(plan_of(128, 8192, 8192, 1, &more, 0).programmatic, "128x8192x8192 on 160 SMs: not programmatic");
    /* the small-m (decode) kernel always (plan_small_m) */
    const struct mgpu_gemm_plan decode = plan_of(16, 4096, 4096, 1, caps, 0);
    CHECK(decode.small_m && decode.programmatic, "16x4096x4096 (small-m kernel): not programmatic");
    /* MGPU_GEMM_PDL forces either way, for both kernels */
    const struct mgpu_gemm_force on = {.programmatic = 1}, off = {.programmatic = -1};
    CHECK(plan_forced(128, 8192, 8192, 1, caps, &on).programmatic, "128x8192x8192 forced on: not programmatic");
    CHECK(!plan_forced(64, 4096, 4096, 1, caps, &off).programmatic, "64x4096x4096 forced off: programmatic");
    CHECK(!plan_forced(16, 4096, 4096, 1, caps, &off).programmatic, "16x4096x4096 forced off: programmatic");
}

/* The small-m (decode) kernel on Hopper: m <= 16, TN, 16-byte loads
 * possible (aligned bases, lda, ldb and k multiples of 8); K split so that
 * two CTAs per SM run, at least 8 steps of 32 per slice, at most 32 slices;
 * one counter per column block and batch entry; partials in the workspace. */
static void check_small_m_plans(const struct mgpu_device_caps *caps)
{
    /* splits: the register form's (two CTAs per SM); ring, ring_splits: the
     * planner's tensor-map ring (12 stages, one CTA per SM, where that fills
     * the SMs as well as two per SM; else 6 stages, two per SM) */
    const struct { int64_t m, n, k, batch; int splits, ring_cols, ring, ring_splits; } cases[] = {
        {1, 8192, 8192, 1, 4, 64, 20, 1},     /* 64 column blocks of 128: 2 x 132 / 64; of 64: 128, one wave */
        {16, 8192, 8192, 1, 4, 64, 20, 1},
        {1, 4096, 4096, 1, 8, 64, 20, 2},     /* 32 blocks: 2 x 132 / 32; 64 of 64 columns: 132 / 64 */
        {16, 4096, 4096, 1, 8, 64, 20, 2},
        {8, 4096, 14336, 1, 8, 128, 12, 4},   /* k > 8192: 128 columns, 132 / 32 */
        {16, 1024, 4096, 1, 16, 64, 20, 8},   /* 8 blocks: 16, as many as 128 steps / 8 allow; 16 of 64: 132 / 16 */
        {16, 128, 256, 1, 1, 64, 20, 1},      /* 8 steps: one slice */
        {16, 4096, 4096, 64, 1, 128, 12, 1},  /* 2048 blocks over the batch fill the SMs */
        {4, 1000, 2048, 3, 8, 128, 12, 5},    /* 8 blocks x 3 entries: 2 x 132 / 24 = 11, as many as 64 steps / 8
                                               * allow; 132 / 24 = 5 (120 of 132 slots; 64 columns: 96) */
        {16, 128, 65536, 1, 32, 128, 12, 32}, /* capped at 32 slices */
        {1, 6144, 4096, 1, 5, 128, 6, 5},     /* 48 blocks: 96 of 132 slots (one per SM), 240 of 264 (two) */
        {16, 10240, 8192, 1, 3, 128, 6, 3},   /* 80 blocks: unsplit on 132 slots, 3 slices on 264 */
        {1, 14336, 4096, 1, 2, 128, 12, 1},   /* 112 blocks: 112 of 132, 224 of 264; 224 of 64: two waves */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mgpu_gemm_force reg = {.variant = "mgpu_gemm_small_m_sm90_bf16_tn_m16"};
        for (int form = 0; form < 2; form++) {
            const struct mgpu_gemm_plan plan = form ? plan_forced(cases[i].m, cases[i].n, cases[i].k, cases[i].batch,
                                                                  caps, &reg)
                                                    : plan_of(cases[i].m, cases[i].n, cases[i].k, cases[i].batch, caps, 0);
            const struct mgpu_variant *v = &mgpu_variants[plan.variant];
            const int cols = form ? 128 : cases[i].ring_cols;
            const int64_t blocks = (cases[i].n + cols - 1) / cols;
            const int splits = form ? cases[i].splits : cases[i].ring_splits;
            const int kind_ok = form ? v->kind == MGPU_KIND_GEMM_SMALL_M_SM90 && !plan.use_map[MGPU_GEMM_MAP_A]
                                     : v->kind == MGPU_KIND_GEMM_SMALL_M_TMA_SM90 && v->gemm.tile_n == cases[i].ring_cols &&
                                           v->gemm.tile_k == 64 && v->gemm.stages == cases[i].ring &&
                                           plan.use_map[MGPU_GEMM_MAP_A] && plan.use_map[MGPU_GEMM_MAP_B];
            CHECK(kind_ok && v->gemm.tile_m == 16 && plan.small_m && !plan.persistent && plan.splits == splits &&
                      plan.grid_x == blocks && plan.grid_y == (unsigned)splits && plan.grid_z == cases[i].batch,
                  "%lldx%lldx%lld batch %lld (%s): got %s, split-k %d, grid %u x %u x %u (want split-k %d)",
                  (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k, (long long)cases[i].batch,
                  form ? "register form" : "plan", v->name, plan.splits, plan.grid_x, plan.grid_y, plan.grid_z,
                  splits);
            const size_t partials = (size_t)blocks * cols * 16 * 4 * (size_t)cases[i].batch * (size_t)splits;
            CHECK(plan.workspace_bytes == (splits > 1 ? partials : 0) &&
                      plan.args.split_counters == (splits > 1 ? ample.split_counters : 0) && plan.args.splits == splits,
                  "%lldx%lldx%lld: workspace %zu, want %zu", (long long)cases[i].m, (long long)cases[i].n,
                  (long long)cases[i].k, plan.workspace_bytes, splits > 1 ? partials : 0);
        }
    }
    /* what the kernel cannot read as it is goes to the persistent kernel */
    struct mgpu_gemm_plan plan = plan_of(17, 4096, 4096, 1, caps, 0);
    CHECK(!plan.small_m && mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "m = 17: %s",
          mgpu_variants[plan.variant].name);
    plan = plan_of(16, 4096, 4100, 1, caps, 0);
    CHECK(!plan.small_m, "k = 4100 (not a multiple of 8): small-m kernel chosen");
    mgpu_status s;
    const int layouts[3][2] = {{MGPU_OP_N, MGPU_OP_N}, {MGPU_OP_T, MGPU_OP_T}, {MGPU_OP_N, MGPU_OP_T}};
    for (int l = 0; l < 3; l++) {
        struct mgpu_gemm_problem p = problem(layouts[l][0], layouts[l][1], MGPU_DTYPE_BF16);
        p.m = 8;
        p.lda = layouts[l][0] == MGPU_OP_N ? p.m : p.k;
        p.ldc = p.m;
        const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
        CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "m = 8, layout %d: got %s", l, v ? v->name : "none");
    }
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_F16);
    p.m = 16;
    p.n = 4096;
    p.k = 4096;
    p.lda = p.ldb = 4096;
    p.ldc = 16;
    const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SMALL_M_TMA_SM90 && v->dtype == MGPU_DTYPE_F16, "f16 m = 16: %s",
          v ? v->name : "none");
    /* the tensor-map ring wants B's columns on 128-byte boundaries; the
     * register form takes 16-byte ones */
    struct mgpu_gemm_problem odd = p;
    odd.b += 16;
    v = pick(&odd, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SMALL_M_SM90, "B off 128 bytes: %s", v ? v->name : "none");
    odd = p;
    odd.ldb = 4104; /* 8208 bytes: a multiple of 16, not of 128 */
    v = pick(&odd, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SMALL_M_SM90, "ldb off 128 bytes: %s", v ? v->name : "none");
    CHECK(pick(&odd, caps, "mgpu_gemm_small_m_tma_sm90_f16_tn_m16_n128_k64_s6", &s) != NULL,
          "the ring forced at ldb off 128 bytes: %s", mgpu_status_string(s));
    /* the 6-stage ring runs two CTAs per SM: twice the slices; the 64-column
     * rows twice the column blocks */
    {
        struct mgpu_gemm_force force = {0};
        force.variant = "mgpu_gemm_small_m_tma_sm90_f16_tn_m16_n128_k64_s6";
        struct mgpu_gemm_plan ring;
        CHECK(mgpu_plan_gemm(&p, caps, &force, &ample, &ring, &s) == 0 && ring.small_m && ring.splits == 8 &&
                  ring.use_map[MGPU_GEMM_MAP_B] && ring.maps[MGPU_GEMM_MAP_B].box[1] == 128 &&
                  ring.maps[MGPU_GEMM_MAP_A].box[1] == 16 && ring.maps[MGPU_GEMM_MAP_A].dims[1] == 16,
              "forced 6-stage ring: split-k %d", ring.splits);
        force.variant = "mgpu_gemm_small_m_tma_sm90_f16_tn_m16_n64_k64_s20";
        CHECK(mgpu_plan_gemm(&p, caps, &force, &ample, &ring, &s) == 0 && ring.small_m && ring.splits == 2 &&
                  ring.grid_x == 64 && ring.maps[MGPU_GEMM_MAP_B].box[1] == 64,
              "forced 64-column ring: split-k %d, grid %u", ring.splits, ring.grid_x);
        /* the maps over {k, rows, batch} with byte strides; B broadcast
         * (batch stride 0) is a map of one batch entry read by every CTA */
        struct mgpu_gemm_problem bt = p;
        bt.batch = 3;
        bt.stride_a = 16 * 4096;
        bt.stride_b = 0;
        bt.stride_c = 16 * 4096;
        force.variant = "mgpu_gemm_small_m_tma_sm90_f16_tn_m16_n128_k64_s6";
        const struct mgpu_tensor_map_desc *ma = &ring.maps[MGPU_GEMM_MAP_A], *mb = &ring.maps[MGPU_GEMM_MAP_B];
        CHECK(mgpu_plan_gemm(&bt, caps, &force, &ample, &ring, &s) == 0 && ring.small_m && ring.grid_z == 3 &&
                  ma->dims[0] == 4096 && ma->dims[1] == 16 && ma->dims[2] == 3 && ma->byte_strides[0] == 8192 &&
                  ma->byte_strides[1] == 16 * 4096 * 2 && mb->dims[0] == 4096 && mb->dims[1] == 4096 &&
                  mb->dims[2] == 1 && mb->byte_strides[0] == 8192 && mb->box[0] == 64 && mb->swizzle_128b &&
                  ma->l2_promote == 128 && mb->l2_promote == 128 && ring.args.b_broadcast && !ring.args.a_broadcast,
              "batched ring, B broadcast: A dims %llu x %llu x %llu, B batch %llu",
              (unsigned long long)ma->dims[0], (unsigned long long)ma->dims[1], (unsigned long long)ma->dims[2],
              (unsigned long long)mb->dims[2]);
        /* a batch stride of B off 128 bytes: the planner keeps the register form */
        bt.stride_b = 4096 * 4096 + 8;
        v = pick(&bt, caps, NULL, &s);
        CHECK(v && v->kind == MGPU_KIND_GEMM_SMALL_M_SM90, "B's batch stride off 128 bytes: %s",
              v ? v->name : "none");
    }
    odd = p;
    odd.lda = 4100; /* 8200 bytes: not a multiple of 16 */
    v = pick(&odd, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "odd lda: %s", v ? v->name : "none");
    odd = p;
    odd.b += 2;
    v = pick(&odd, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "B off 16 bytes: %s", v ? v->name : "none");
    /* forcing the m <= 16 kernel where m does not fit is refused */
    struct mgpu_gemm_problem m40 = p;
    m40.m = 40;
    m40.ldc = 40;
    CHECK(pick(&m40, caps, "mgpu_gemm_small_m_sm90_f16_tn_m16", &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
          "forcing the m16 kernel at m = 40: %s", mgpu_status_string(s));
    v = pick(&m40, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "m = 40 by default: %s", v ? v->name : "none");
    /* forced split factors are taken, clamped to the kernel's K steps: 32
     * elements in the register form, a whole stage (tile_k) in the ring */
    plan = plan_of(16, 4096, 4096, 1, caps, 3);
    CHECK(plan.small_m && plan.splits == 3 && plan.grid_y == 3, "forced split-k 3: %d", plan.splits);
    plan = plan_of(16, 4096, 64, 1, caps, 100);
    CHECK(plan.small_m && plan.splits == 1 && plan.grid_y == 1,
          "forced split-k 100 with one 64-element ring stage: %d", plan.splits);
    {
        struct mgpu_gemm_problem k64 = p;
        k64.k = 64;
        k64.lda = k64.ldb = 64;
        const struct mgpu_gemm_force reg = {.variant = "mgpu_gemm_small_m_sm90_f16_tn_m16", .splits = 100};
        const struct mgpu_gemm_force ring = {.variant = "mgpu_gemm_small_m_tma_sm90_f16_tn_m16_n128_k64_s6",
                                             .splits = 100};
        struct mgpu_gemm_plan fp;
        CHECK(mgpu_plan_gemm(&k64, caps, &reg, &ample, &fp, &s) == 0 && fp.small_m && fp.splits == 2,
              "register form, forced split-k 100 with 2 steps: %d", fp.splits);
        k64.k = 320;
        k64.lda = k64.ldb = 320;
        CHECK(mgpu_plan_gemm(&k64, caps, &ring, &ample, &fp, &s) == 0 && fp.small_m && fp.splits == 5,
              "ring, forced split-k 100 over 5 stages of 64: %d", fp.splits);
    }
    /* the split follows the SM count */
    struct mgpu_device_caps fewer = *caps;
    fewer.sm_count = 78;
    plan = plan_of(16, 4096, 4096, 1, &fewer, 0);
    CHECK(plan.small_m && plan.splits == 1, "16x4096x4096 on 78 SMs: split-k %d", plan.splits); /* 64 blocks of 64 */
    /* a small workspace gives up slices: 32 blocks x 128 x 16 x 4 bytes = 256 KiB per slice
     * (the 6-stage ring: 8 slices) */
    struct mgpu_gemm_problem q = p;
    struct mgpu_gemm_resources small = ample;
    small.workspace_bytes = (size_t)3 << 18;
    const struct mgpu_gemm_force pair = {.variant = "mgpu_gemm_small_m_tma_sm90_f16_tn_m16_n128_k64_s6"};
    CHECK(mgpu_plan_gemm(&q, caps, &pair, &small, &plan, &s) == 0 && plan.small_m && plan.splits == 3 &&
              plan.degraded && plan.workspace_wanted == (size_t)8 << 18,
          "small workspace: split-k %d, wanted %zu", plan.splits, plan.workspace_wanted);
    small.workspace_bytes = 1000;
    CHECK(mgpu_plan_gemm(&q, caps, NULL, &small, &plan, &s) == 0 && plan.small_m && plan.splits == 1 &&
              plan.workspace_bytes == 0 && plan.degraded,
          "tiny workspace: split-k %d", plan.splits);
    /* fp8 keeps the persistent kernel */
    struct mgpu_gemm_problem f8 = p;
    f8.a_dtype = f8.b_dtype = MGPU_DTYPE_E4M3;
    v = pick(&f8, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "fp8 m = 16: %s", v ? v->name : "none");
}

/* The planner memoizes the variant per thread, keyed on everything the
 * selection reads (src/gemm/gemm_plan.c, "selection memo"): a second plan of
 * the same problem must equal the first, and a problem that differs only in
 * pointer alignment, layout or device must be planned anew. */
static void check_selection_memo(const struct mgpu_device_caps *caps)
{
    mgpu_status s;
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    p.m = 16;
    p.n = p.k = p.lda = p.ldb = 4096;
    p.ldc = 16;
    const struct mgpu_variant *first = pick(&p, caps, NULL, &s);
    CHECK(first && first->kind == MGPU_KIND_GEMM_SMALL_M_TMA_SM90, "m = 16: %s", first ? first->name : "none");
    struct mgpu_gemm_problem moved = p;
    moved.b += 2; /* still 2-byte aligned, no longer 16 */
    const struct mgpu_variant *v = pick(&moved, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "B off 16 bytes after a memoized plan: %s",
          v ? v->name : "none");
    moved = p;
    moved.b += 4096; /* another pointer, same alignment: the same choice */
    CHECK(pick(&moved, caps, NULL, &s) == first, "B moved by 4096 bytes");
    CHECK(pick(&p, caps, NULL, &s) == first, "the first problem again");
    struct mgpu_gemm_problem nn = p;
    nn.transa = MGPU_OP_N;
    nn.lda = 16;
    v = pick(&nn, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT, "NN after a memoized TN plan: %s", v ? v->name : "none");
    struct mgpu_device_caps other = *caps;
    other.cc_major = 8;
    v = pick(&p, &other, NULL, &s);
    CHECK(v == NULL && s == MGPU_STATUS_ARCH_MISMATCH, "cc 8.0 after a memoized cc 9.0 plan: %s",
          mgpu_status_string(s));
    /* many shapes twice: more than the memo holds, every answer the same */
    const int64_t ms[12] = {1, 16, 17, 64, 128, 129, 256, 1000, 1024, 2048, 4096, 8192};
    int got[2][12];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 12; i++) {
            struct mgpu_gemm_plan plan = plan_of(ms[i], 2048, 2048, 1, caps, 0);
            got[round][i] = plan.variant * 64 + plan.splits;
        }
    for (int i = 0; i < 12; i++)
        CHECK(got[0][i] == got[1][i], "m = %lld: plans differ between rounds", (long long)ms[i]);
}

/* The sm_100a persistent kernel's plan per shape class (src/gemm/gemm_plan.c):
 * CTA pairs (256 x 256 cluster tiles) when m > 128 and the 128-wide tile
 * columns pair up, lone CTAs otherwise; split-K by the sm_90a default rule
 * when the tiles' CTAs fill at most half the target (148 SMs, 74 for
 * m <= 128) and K has at least 8 k-tiles; the band is
 * sqrt(units at once x cluster tile_n / tile_m); D leaves through 32-column
 * TMA boxes when TMA can address C, else by direct stores. */
static void check_blackwell_plans(const struct mgpu_device_caps *caps)
{
    const struct { int64_t m, n, k, batch; int pairs, band; int64_t grid; int splits; } cases[] = {
        {8192, 8192, 8192, 1, 2, 9, 148, 1},  /* 32 x 32 cluster tiles, 74 pairs at once: sqrt(74) */
        {4096, 4096, 4096, 1, 2, 9, 148, 1},
        {1000, 1000, 1000, 1, 2, 4, 128, 4},  /* 16 pair units (32 CTAs) x 4 slices of 4 k-tiles; band 4 rows */
        {1024, 1024, 1024, 32, 2, 4, 148, 1}, /* batched */
        {32768, 1100, 4096, 1, 2, 9, 148, 1}, /* 9 columns: enough to pair up with one idle CTA */
        {32768, 600, 4096, 1, 1, 9, 148, 1},  /* 5 columns: an odd few stay lone; sqrt(148 x 128 / 256) */
        {4096, 128, 8192, 1, 1, 8, 144, 9},   /* skinny n: 16 CTAs x 9 slices; band sqrt(144 / 2) */
        {64, 4096, 4096, 1, 1, 1, 64, 2},     /* small m: lone CTAs, 32 of them x 2 slices (target 74) */
        {128, 8192, 8192, 1, 1, 1, 64, 1},    /* 64 CTAs: more than half of 74 */
        {1, 4096, 4096, 1, 1, 1, 64, 2},
        {129, 4096, 4096, 1, 2, 1, 128, 4},   /* just past small m: pairs, one tile row, 32 CTAs x 4 */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mgpu_gemm_plan plan = plan_of(cases[i].m, cases[i].n, cases[i].k, cases[i].batch, caps, 0);
        const struct mgpu_variant *v = &mgpu_variants[plan.variant];
        const int pairs = v->gemm.cluster_m * v->gemm.cluster_n;
        CHECK(v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT && pairs == cases[i].pairs && plan.splits == cases[i].splits &&
                  plan.band == cases[i].band && plan.grid == cases[i].grid && plan.persistent,
              "sm100 %lldx%lldx%lld batch %lld: got %s, split-k %d, band %d, grid %lld (want cluster %d, band %d, "
              "grid %lld, split-k %d)",
              (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k, (long long)cases[i].batch,
              v->name, plan.splits, plan.band, (long long)plan.grid, cases[i].pairs, cases[i].band,
              (long long)cases[i].grid, cases[i].splits);
        CHECK(plan.grid % pairs == 0 && plan.grid <= caps->sm_count, "%s: grid %lld", v->name, (long long)plan.grid);
        CHECK(!plan.programmatic, "%s: programmatic (the sm_100a kernel has no griddepcontrol)", v->name);
        const struct mgpu_gemm_force on = {.programmatic = 1}; /* MGPU_GEMM_PDL=1 cannot change that */
        CHECK(!plan_forced(cases[i].m, cases[i].n, cases[i].k, cases[i].batch, caps, &on).programmatic,
              "%s: programmatic when forced", v->name);
        CHECK(v->gemm.tile_m == 256 && v->gemm.tile_n == 128 && v->gemm.tile_k == 64 && v->threads == 192, "%s: tile", v->name);
        /* A boxes: each CTA of a pair loads half the 256 A rows (K-major here) */
        CHECK(plan.use_map[MGPU_GEMM_MAP_A] && plan.maps[MGPU_GEMM_MAP_A].box[1] == (uint32_t)(256 / pairs) &&
                  plan.maps[MGPU_GEMM_MAP_B].box[1] == 128 && plan.maps[MGPU_GEMM_MAP_A].l2_promote == 128 &&
                  plan.maps[MGPU_GEMM_MAP_B].l2_promote == 128,
              "%s: operand boxes %u / %u", v->name, plan.maps[MGPU_GEMM_MAP_A].box[1], plan.maps[MGPU_GEMM_MAP_B].box[1]);
        /* fp32 C, ldc = m: TMA stores when m rows are a multiple of 16 bytes */
        CHECK(cases[i].m % 4 != 0 ||
                  (plan.args.c_tma && plan.use_map[MGPU_GEMM_MAP_C] && plan.maps[MGPU_GEMM_MAP_C].box[1] == 32 &&
                   plan.maps[MGPU_GEMM_MAP_C].box[0] == 32 /* 128 bytes of rows */),
              "%s: C map box %u x %u", v->name, plan.maps[MGPU_GEMM_MAP_C].box[0], plan.maps[MGPU_GEMM_MAP_C].box[1]);
        CHECK(plan.args.batch_count == cases[i].batch && plan.args.band == plan.band &&
                  plan.args.splits == cases[i].splits &&
                  (cases[i].splits == 1) == (plan.args.split_counters == 0),
              "%s: kernel arguments", v->name);
        /* partials: one 256 x 128 fp32 slot per CTA tile and slice, after the (absent) packs */
        if (cases[i].splits > 1) {
            const int64_t tiles = (cases[i].m + 255) / 256 * ((cases[i].n + 128 * pairs - 1) / (128 * pairs) * pairs) *
                                  cases[i].batch;
            CHECK(plan.workspace_bytes == (size_t)(tiles * 256 * 128 * 4 * cases[i].splits),
                  "%s: split-K workspace %zu", v->name, plan.workspace_bytes);
        }
    }
    /* split-K on sm_100a: 8 lone CTAs of 64 x 1024, 256 k-tiles: 74 / 8 = 9 slices;
     * forced factors are taken, clamped to the k-tiles (8192 / 64 = 128) */
    struct mgpu_gemm_plan plan = plan_of(64, 1024, 16384, 1, caps, 0);
    CHECK(plan.splits == 9 && plan.args.split_counters != 0 && plan.args.workspace != 0,
          "sm100 few tiles, long k: split-k %d", plan.splits);
    plan = plan_of(4096, 1024, 8192, 1, caps, 3);
    CHECK(plan.splits == 3 && plan.args.splits == 3, "sm100 forced split-k 3: got %d", plan.splits);
    /* 8192^3: 2048 CTA tiles x 4 epilogue warps need more counters than the handle has */
    plan = plan_of(8192, 8192, 8192, 1, caps, 3);
    CHECK(plan.splits == 1, "sm100 forced split-k 3 on 8192^3: got %d (beyond the split counters)", plan.splits);
    plan = plan_of(64, 64, 8192, 1, caps, 1000);
    CHECK(plan.splits == 128, "sm100 forced split-k 1000 with 128 k-tiles: got %d", plan.splits);
    /* a workspace too small for the partials: fewer slices, then none */
    {
        mgpu_status s2;
        struct mgpu_gemm_problem q = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
        q.m = 64;
        q.n = 1024;
        q.k = 16384;
        q.lda = q.ldb = 16384;
        q.ldc = 64;
        const struct mgpu_gemm_resources small_ws = {0x7e0000000000, 3 * (size_t)8 * 256 * 128 * 4, 0x7e8000000000};
        CHECK(mgpu_plan_gemm(&q, caps, NULL, &small_ws, &plan, &s2) == 0 && plan.splits == 3 && plan.degraded,
              "sm100 split-K in a 3-slice workspace: %d", plan.splits);
        const struct mgpu_gemm_resources none_ws = {0, 0, 0x7e8000000000};
        CHECK(mgpu_plan_gemm(&q, caps, NULL, &none_ws, &plan, &s2) == 0 && plan.splits == 1,
              "sm100 split-K without workspace: %d", plan.splits);
    }
    /* the grid follows the device's SM count, rounded down to whole pairs */
    struct mgpu_device_caps odd = *caps;
    odd.sm_count = 147;
    plan = plan_of(8192, 8192, 8192, 1, &odd, 0);
    CHECK(plan.grid == 146, "8192^3 on 147 SMs: grid %lld", (long long)plan.grid);
    /* a forced band is taken, clamped to the cluster tile rows (8192 / 256 = 32) */
    plan = plan_forced(8192, 8192, 8192, 1, caps, &(struct mgpu_gemm_force){.band = 1000});
    CHECK(plan.band == 32, "sm100 forced band 1000: got %d", plan.band);

    /* edge shapes: every m, n of the edge list runs on the persistent kernel;
     * a C that TMA cannot address (m * 4 bytes not a multiple of 16) leaves by
     * direct stores */
    const int64_t edges[] = {1, 7, 63, 64, 65, 127, 129, 255, 257, 1000};
    for (unsigned i = 0; i < sizeof edges / sizeof edges[0]; i++)
        for (unsigned j = 0; j < sizeof edges / sizeof edges[0]; j++) {
            plan = plan_of(edges[i], edges[j], 72, 1, caps, 0);
            const struct mgpu_variant *v = &mgpu_variants[plan.variant];
            CHECK(v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT && plan.args.c_tma == (edges[i] % 4 == 0),
                  "sm100 %lldx%lld: %s, c_tma %d", (long long)edges[i], (long long)edges[j], v->name,
                  plan.args.c_tma);
        }

    /* every layout and 16-bit dtype has both shapes, and forcing either works */
    const int ops[2] = {MGPU_OP_N, MGPU_OP_T};
    const int dtypes[2] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int dt = 0; dt < 2; dt++) {
                struct mgpu_gemm_problem p = problem(ops[ta], ops[tb], dtypes[dt]);
                mgpu_status s;
                int found = 0;
                for (int i = 0; i < mgpu_variant_count; i++) {
                    const struct mgpu_variant *v = &mgpu_variants[i];
                    if (v->kind != MGPU_KIND_GEMM_SM100_PERSISTENT || v->dtype != dtypes[dt] ||
                        v->gemm.a_kmajor != (ops[ta] == MGPU_OP_T) || v->gemm.b_kmajor != (ops[tb] == MGPU_OP_N))
                        continue;
                    found |= 1 << (v->gemm.cluster_m * v->gemm.cluster_n - 1);
                    CHECK(pick(&p, caps, v->name, &s) == v, "forcing %s: %s", v->name, mgpu_status_string(s));
                }
                CHECK(found == 3, "%c%c dtype %d: lone and pair variants missing (%d)", "NT"[ta], "NT"[tb],
                      dtypes[dt], found);
            }
    /* alpha == 0 reads neither A nor B: the portable kernel */
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    static const float zero = 0.0f;
    p.alpha = &zero;
    mgpu_status s;
    const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "sm100 alpha = 0: got %s", v ? v->name : "none");
}

static void check_force(const struct mgpu_device_caps *caps)
{
    mgpu_status s;
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_F16);
    const struct mgpu_variant *tc = pick(&p, caps, NULL, &s);
    struct mgpu_gemm_problem odd = p;
    odd.lda = 1001;
    const struct mgpu_variant *portable = pick(&odd, caps, NULL, &s);
    if (!tc || !portable)
        return;
    CHECK(pick(&p, caps, portable->name, &s) == portable, "forcing the portable variant failed");
    CHECK(pick(&p, caps, tc->name, &s) == tc, "forcing the chosen variant failed");
    if (tc->kind == MGPU_KIND_GEMM_SM90_PERSISTENT || tc->kind == MGPU_KIND_GEMM_SM100_PERSISTENT) {
        /* the persistent kernel packs what TMA cannot read */
        CHECK(pick(&odd, caps, tc->name, &s) == tc, "forcing the persistent variant on unaligned input: %s",
              mgpu_status_string(s));
        struct mgpu_gemm_problem k0 = p;
        k0.k = 0;
        CHECK(pick(&k0, caps, tc->name, &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
              "forcing the persistent variant with k = 0: %s", mgpu_status_string(s));
    } else {
        CHECK(pick(&odd, caps, tc->name, &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
              "forcing a TMA variant on unaligned input: %s", mgpu_status_string(s));
    }
    /* a name of no GEMM variant of this device is meant for something else: ignored */
    CHECK(pick(&p, caps, "mgpu_no_such_kernel", &s) == tc, "forcing an unknown name: %s", mgpu_status_string(s));
    struct mgpu_gemm_problem bf = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    CHECK(pick(&bf, caps, tc->name, &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
          "forcing an f16 variant on bf16 input: %s", mgpu_status_string(s));
}

/* An fp8 TN problem with 16-byte multiple leading dimensions. */
static struct mgpu_gemm_problem fp8_problem(int a_dtype, int b_dtype, int64_t m, int64_t n, int64_t k)
{
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, a_dtype);
    p.b_dtype = b_dtype;
    p.c_dtype = MGPU_DTYPE_BF16;
    p.m = m;
    p.n = n;
    p.k = k;
    p.lda = k;
    p.ldb = k;
    p.ldc = m;
    return p;
}

/* fp8 on Hopper: the fp8 persistent variants of the right pair, their tiles,
 * packing by 16-byte rules for 1-byte elements, split-K over 128-wide k-tiles. */
static void check_fp8(const struct mgpu_device_caps *caps)
{
    const int fp8[2] = {MGPU_DTYPE_E4M3, MGPU_DTYPE_E5M2};
    mgpu_status s;
    struct mgpu_gemm_plan plan;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const int64_t ms[3] = {8192, 4096, 64};
            for (int i = 0; i < 3; i++) {
                struct mgpu_gemm_problem p = fp8_problem(fp8[a], fp8[b], ms[i], 4096, 4096);
                CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "fp8 %d x %d: %s", fp8[a], fp8[b],
                      mgpu_last_error_message());
                const int ok = mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0;
                const struct mgpu_variant *v = ok ? &mgpu_variants[plan.variant] : NULL;
                const int want_tile = ms[i] <= 128 ? 128 : 192;
                const int want_cluster = ms[i] == 8192 ? 2 : 1; /* 43 x 32 tiles of 192 x 128; 22 x 32 are too few */
                CHECK(v && v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT && v->dtype == fp8[a] && v->gemm.b_dtype == fp8[b] &&
                          v->gemm.tile_m == want_tile && v->gemm.tile_k == 128 && v->gemm.cluster_m * v->gemm.cluster_n == want_cluster,
                      "fp8 %d x %d m=%lld: got %s (want an fp8 persistent variant of tile_m %d, cluster %d)", fp8[a],
                      fp8[b], (long long)ms[i], v ? v->name : mgpu_status_string(s), want_tile, want_cluster);
                CHECK(ok && !plan.pack_a && !plan.pack_b, "fp8 m=%lld: aligned operands packed", (long long)ms[i]);
                if (ms[i] == 64) /* 32 tiles of 128 x 128, small m: half of 132 SMs, split 2 */
                    CHECK(ok && plan.splits == 2, "fp8 64x4096x4096: split-k %d, want 2", ok ? plan.splits : -1);
            }
        }
    /* 1-byte elements: an ld of 1000 bytes is not a multiple of 16, 1008 is */
    struct mgpu_gemm_problem p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3, 1000, 1000, 1000);
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && plan.pack_a && plan.pack_b &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM90_PERSISTENT,
          "fp8 ld 1000: both operands must be packed");
    p.lda = p.ldb = 1008;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && !plan.pack_a && !plan.pack_b,
          "fp8 ld 1008: nothing to pack");
    p.a += 8; /* 8-byte aligned base */
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && plan.pack_a && !plan.pack_b,
          "fp8 A at an 8-byte boundary: A must be packed");
    /* k == 0: the portable kernel */
    p = fp8_problem(MGPU_DTYPE_E5M2, MGPU_DTYPE_E4M3, 100, 100, 0);
    p.lda = p.ldb = 1;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_PORTABLE,
          "fp8 k = 0: not the portable kernel");
    /* forced split-K is clamped to 128-wide k-tiles: k = 304 has 3 */
    p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3, 256, 256, 304);
    CHECK(mgpu_plan_gemm(&p, caps, &(struct mgpu_gemm_force){.splits = 1000}, &ample, &plan, &s) == 0 && plan.splits == 3,
          "fp8 k=304 forced split 1000: got %d, want 3", plan.splits);
    /* forcing: a 16-bit variant cannot take fp8, nor an fp8 variant of the other pair */
    p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E5M2, 512, 512, 512);
    CHECK(pick(&p, caps, "mgpu_gemm_sm90_ws_bf16_tn_256x128x64_s4_c1", &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
          "bf16 variant forced on fp8: %s", mgpu_status_string(s));
    CHECK(pick(&p, caps, "mgpu_gemm_sm90_ws_e5m2xe4m3_tn_192x128x128_s4_c1", &s) == NULL &&
              s == MGPU_STATUS_NOT_SUPPORTED,
          "e5m2 x e4m3 variant forced on e4m3 x e5m2: %s", mgpu_status_string(s));
    const struct mgpu_variant *v = pick(&p, caps, "mgpu_gemm_sm90_ws_e4m3xe5m2_tn_128x128x128_s6_c1", &s);
    CHECK(v && strcmp(v->name, "mgpu_gemm_sm90_ws_e4m3xe5m2_tn_128x128x128_s6_c1") == 0, "forcing the fp8 128 tile: %s",
          mgpu_status_string(s));
    v = pick(&p, caps, "mgpu_gemm_portable_sm90_64x64", &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "forcing the portable kernel on fp8: %s", mgpu_status_string(s));
    /* a device with too little shared memory: the portable kernel */
    struct mgpu_device_caps small = *caps;
    small.max_smem_per_block = 48 * 1024;
    v = pick(&p, &small, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "fp8 small smem: got %s", v ? v->name : "none");
}

/* Scales, bias and activations on Hopper: the persistent kernel (split-K
 * included) and the portable kernel. */
static void check_epilogue_plans(const struct mgpu_device_caps *caps)
{
    mgpu_status s;
    struct mgpu_gemm_plan plan;
    struct mgpu_gemm_problem p = problem(MGPU_OP_N, MGPU_OP_T, MGPU_DTYPE_BF16);
    p.bias = 0x7f3000000000;
    p.bias_dtype = MGPU_DTYPE_F32;
    p.activation = MGPU_ACTIVATION_GELU;
    CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "bias + gelu: %s", mgpu_last_error_message());
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM90_PERSISTENT,
          "bias + gelu: not the persistent kernel");
    CHECK(mgpu_plan_gemm(&p, caps, &(struct mgpu_gemm_force){.splits = 3}, &ample, &plan, &s) == 0 && plan.splits == 3,
          "bias + gelu, forced split-K: split %d", plan.splits);
    CHECK(pick(&p, caps, "mgpu_gemm_portable_sm90_64x64", &s) != NULL, "portable kernel forced with an epilogue: %s",
          mgpu_status_string(s));
    p.k = 0;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_PORTABLE,
          "bias + gelu with k = 0: not the portable kernel");
}

/* fp8 on Blackwell (made-up cc 10.0): the kind::f8f6f4 rows of the sm_100a
 * persistent kernel for every e4m3 / e5m2 pair, CTA pairs or lone CTAs by
 * the shape classes of the 16-bit rows, 128-wide k-tiles (128-byte TMA boxes
 * of 128 fp8 elements), packing by the 16-byte rules for 1-byte elements,
 * no split-K, every output dtype the Hopper fp8 path takes. */
static void check_blackwell_fp8(const struct mgpu_device_caps *caps)
{
    const int fp8[2] = {MGPU_DTYPE_E4M3, MGPU_DTYPE_E5M2};
    const int outs[3] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16, MGPU_DTYPE_F32};
    mgpu_status s;
    struct mgpu_gemm_plan plan;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const int64_t ms[3] = {8192, 4096, 64};
            for (int i = 0; i < 3; i++) {
                struct mgpu_gemm_problem p = fp8_problem(fp8[a], fp8[b], ms[i], 4096, 4096);
                p.c_dtype = outs[i];
                CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "sm100 fp8 %d x %d: %s", fp8[a], fp8[b],
                      mgpu_last_error_message());
                const int ok = mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0;
                const struct mgpu_variant *v = ok ? &mgpu_variants[plan.variant] : NULL;
                const int want_pairs = ms[i] > 128 ? 2 : 1; /* 32 tile columns pair up; small m stays lone */
                CHECK(v && v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT && v->dtype == fp8[a] &&
                          v->gemm.b_dtype == fp8[b] && v->gemm.tile_m == 256 && v->gemm.tile_n == 128 &&
                          v->gemm.tile_k == 128 && v->gemm.a_kmajor == 1 && v->gemm.b_kmajor == 1 &&
                          v->gemm.cluster_m * v->gemm.cluster_n == want_pairs && v->threads == 192,
                      "sm100 fp8 %d x %d m=%lld: got %s (want the kind::f8f6f4 row with %d CTAs)", fp8[a], fp8[b],
                      (long long)ms[i], v ? v->name : mgpu_status_string(s), want_pairs);
                if (!v)
                    continue;
                /* 64 x 4096: 32 lone CTAs, 32 k-tiles of 128: 2 slices (74 / 32) */
                CHECK(plan.splits == (ms[i] == 64 ? 2 : 1) && !plan.pack_a && !plan.pack_b &&
                          plan.args.c_dtype == outs[i],
                      "%s: split %d, packs %d %d", v->name, plan.splits, plan.pack_a, plan.pack_b);
                /* 128-byte boxes are 128 fp8 elements of K; A rows split over a pair */
                CHECK(plan.maps[MGPU_GEMM_MAP_A].box[0] == 128 && plan.maps[MGPU_GEMM_MAP_B].box[0] == 128 &&
                          plan.maps[MGPU_GEMM_MAP_A].box[1] == (uint32_t)(256 / want_pairs) &&
                          plan.maps[MGPU_GEMM_MAP_B].box[1] == 128,
                      "%s: operand boxes", v->name);
                /* the C map: 128 bytes of rows of the output dtype, 32 columns */
                CHECK(plan.args.c_tma && plan.maps[MGPU_GEMM_MAP_C].box[1] == 32 &&
                          plan.maps[MGPU_GEMM_MAP_C].box[0] == (uint32_t)(128 / mgpu_dtype_size(outs[i])),
                      "%s: C map", v->name);
                /* the variant is forcible by name; the other pair's row and a bf16 row are not */
                CHECK(pick(&p, caps, v->name, &s) == v, "forcing %s: %s", v->name, mgpu_status_string(s));
                for (int j = 0; j < mgpu_variant_count; j++) {
                    const struct mgpu_variant *o = &mgpu_variants[j];
                    if (o->kind != MGPU_KIND_GEMM_SM100_PERSISTENT || (o->dtype == fp8[a] && o->gemm.b_dtype == fp8[b]))
                        continue;
                    CHECK(pick(&p, caps, o->name, &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
                          "%s forced on fp8 %d x %d: %s", o->name, fp8[a], fp8[b], mgpu_status_string(s));
                }
            }
        }
    /* 1-byte elements: an ld of 1000 bytes is packed, 1008 is read as it is */
    struct mgpu_gemm_problem p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E5M2, 1000, 1000, 1000);
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && plan.pack_a && plan.pack_b &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM100_PERSISTENT && plan.pack_variant >= 0 &&
              plan.pack[0].args.elem_bytes == 1,
          "sm100 fp8 ld 1000: both operands must be packed (1-byte elements)");
    p.lda = p.ldb = 1008;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 && !plan.pack_a && !plan.pack_b,
          "sm100 fp8 ld 1008: nothing to pack");
    /* strided batches, B broadcast: read through TMA, not packed */
    p = fp8_problem(MGPU_DTYPE_E5M2, MGPU_DTYPE_E5M2, 512, 512, 512);
    p.batch = 8;
    p.stride_a = 512 * 512;
    p.stride_b = 0;
    p.stride_c = 512 * 512;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM100_PERSISTENT && !plan.pack_a && !plan.pack_b &&
              plan.args.b_broadcast && !plan.args.a_broadcast && plan.args.batch_count == 8,
          "sm100 fp8 batched, B broadcast");
    /* k == 0: the portable kernel; forcing the portable kernel works */
    p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3, 100, 100, 0);
    p.lda = p.ldb = 1;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_PORTABLE,
          "sm100 fp8 k = 0: not the portable kernel");
    p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3, 256, 256, 256);
    const struct mgpu_variant *v = pick(&p, caps, "mgpu_gemm_portable_sm100_64x64", &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "sm100: forcing the portable kernel on fp8: %s",
          mgpu_status_string(s));
    /* forced split-K is clamped to 128-wide fp8 k-tiles: k = 256 has 2 */
    CHECK(mgpu_plan_gemm(&p, caps, &(struct mgpu_gemm_force){.splits = 4}, &ample, &plan, &s) == 0 && plan.splits == 2,
          "sm100 fp8 forced split-K: %d", plan.splits);
    /* fp8 outside TN is refused by validation, on every device */
    p.transa = MGPU_OP_N;
    CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_NOT_SUPPORTED, "sm100 fp8 NN accepted");
}

/* Scales, bias and activations on Blackwell: the sm_100a persistent kernel
 * for every layout, dtype, bias mode and bias dtype; k == 0 and a forced
 * name go to the portable kernel; the arguments reach the kernel. */
static void check_blackwell_epilogues(const struct mgpu_device_caps *caps)
{
    mgpu_status s;
    struct mgpu_gemm_plan plan;
    const int ops[2] = {MGPU_OP_N, MGPU_OP_T};
    const int dtypes[2] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    const int acts[3] = {MGPU_ACTIVATION_NONE, MGPU_ACTIVATION_RELU, MGPU_ACTIVATION_GELU};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int dt = 0; dt < 2; dt++)
                for (int mode = 0; mode < 2; mode++)
                    for (int f32_bias = 0; f32_bias < 2; f32_bias++)
                        for (int act = 0; act < 3; act++) {
                            struct mgpu_gemm_problem p = problem(ops[ta], ops[tb], dtypes[dt]);
                            p.c_dtype = dtypes[dt];
                            p.bias = 0x7f3000000000;
                            p.bias_dtype = f32_bias ? MGPU_DTYPE_F32 : dtypes[dt];
                            p.bias_mode = mode ? MGPU_BIAS_PER_COLUMN : MGPU_BIAS_PER_ROW;
                            p.bias_stride = 0;
                            p.activation = acts[act];
                            CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "sm100 bias: %s",
                                  mgpu_last_error_message());
                            const int ok = mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0;
                            const struct mgpu_variant *v = ok ? &mgpu_variants[plan.variant] : NULL;
                            CHECK(v && v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT && v->dtype == dtypes[dt] &&
                                      v->gemm.a_kmajor == (ops[ta] == MGPU_OP_T) &&
                                      v->gemm.b_kmajor == (ops[tb] == MGPU_OP_N),
                                  "sm100 %c%c dtype %d bias mode %d f32 %d act %d: got %s", "NT"[ta], "NT"[tb],
                                  dtypes[dt], mode, f32_bias, acts[act], v ? v->name : mgpu_status_string(s));
                            if (!v)
                                continue;
                            /* 1000^3: 32 CTAs of pairs, 16 k-tiles: 4 slices; the last
                             * unit of a tile applies the epilogue */
                            CHECK(plan.args.bias == p.bias && plan.args.bias_mode == p.bias_mode &&
                                      plan.args.bias_dtype == p.bias_dtype && plan.args.activation == acts[act] &&
                                      plan.splits == 4,
                                  "%s: epilogue arguments", v->name);
                        }
    /* scales alone, batched bias with a stride, fp8 with everything */
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    p.scale_a = 0x7f3000000000;
    p.scale_b = 0x7f3000000100;
    p.scale_d = 0x7f3000000200;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM100_PERSISTENT && plan.args.scale_a == p.scale_a &&
              plan.args.scale_b == p.scale_b && plan.args.scale_d == p.scale_d,
          "sm100 scales: not the persistent kernel, or scales lost");
    p = problem(MGPU_OP_N, MGPU_OP_T, MGPU_DTYPE_F16);
    p.batch = 3;
    p.stride_a = p.stride_b = p.stride_c = 1000 * 1000;
    p.bias = 0x7f3000000000;
    p.bias_dtype = MGPU_DTYPE_F32;
    p.bias_mode = MGPU_BIAS_PER_COLUMN;
    p.bias_stride = 1000;
    p.activation = MGPU_ACTIVATION_GELU;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM100_PERSISTENT &&
              plan.args.bias_batch_stride == 1000 && plan.args.batch_count == 3,
          "sm100 batched bias: not the persistent kernel, or stride lost");
    p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E5M2, 4096, 4096, 4096);
    p.c_dtype = MGPU_DTYPE_F32;
    p.scale_a = 0x7f3000000000;
    p.scale_b = 0x7f3000000100;
    p.scale_d = 0x7f3000000200;
    p.bias = 0x7f3000001000;
    p.bias_dtype = MGPU_DTYPE_F32;
    p.activation = MGPU_ACTIVATION_RELU;
    CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "sm100 fp8 + epilogue: %s", mgpu_last_error_message());
    const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT && v->dtype == MGPU_DTYPE_E4M3 &&
              v->gemm.b_dtype == MGPU_DTYPE_E5M2,
          "sm100 fp8 + scales + bias + relu: got %s", v ? v->name : mgpu_status_string(s));
    /* k == 0 (and alpha == 0): D = epilogue(beta * C) by the portable kernel */
    p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    p.activation = MGPU_ACTIVATION_RELU;
    p.k = 0;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_PORTABLE,
          "sm100 relu with k = 0: not the portable kernel");
    p.k = 1000;
    v = pick(&p, caps, "mgpu_gemm_portable_sm100_64x64", &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "sm100: portable kernel forced with an epilogue: %s",
          mgpu_status_string(s));
    /* unaligned operands with an epilogue: packed for the persistent kernel */
    p.lda = 1001;
    CHECK(mgpu_plan_gemm(&p, caps, NULL, &ample, &plan, &s) == 0 &&
              mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM100_PERSISTENT && plan.pack_a,
          "sm100 relu, odd lda: not packed for the persistent kernel");
}

/* Devices without GEMM kernels refuse the extensions as they refuse plain calls. */
static void check_extensions_elsewhere(void)
{
    const struct mgpu_device_caps others[] = {{8, 0, 108, 166912, 0}, {10, 3, 148, 232448, 0}, {12, 0, 84, 101376, 0}};
    for (unsigned i = 0; i < sizeof others / sizeof others[0]; i++) {
        mgpu_status s;
        struct mgpu_gemm_problem p = fp8_problem(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3, 1024, 1024, 1024);
        CHECK(pick(&p, &others[i], NULL, &s) == NULL &&
                  (s == MGPU_STATUS_ARCH_MISMATCH || s == MGPU_STATUS_NOT_SUPPORTED),
              "cc %d.%d fp8: %s", others[i].cc_major, others[i].cc_minor, mgpu_status_string(s));
    }
}

int main(void)
{
    if (has_cc(9, 0)) {
        check_tensor_core_choice(&hopper, MGPU_KIND_GEMM_SM90_PERSISTENT);
        check_unaligned_paths(&hopper, MGPU_KIND_GEMM_SM90_PERSISTENT);
        check_force(&hopper);
        check_plans(&hopper);
        check_programmatic(&hopper);
        check_tail_split(&hopper);
        check_mid_rows(&hopper);
        check_wave_rows(&hopper);
        check_small_m_plans(&hopper);
        check_selection_memo(&hopper);
        check_fp8(&hopper);
        check_epilogue_plans(&hopper);
    }
    if (has_cc(10, 0)) {
        check_tensor_core_choice(&blackwell, MGPU_KIND_GEMM_SM100_PERSISTENT);
        check_unaligned_paths(&blackwell, MGPU_KIND_GEMM_SM100_PERSISTENT);
        check_force(&blackwell);
        check_blackwell_plans(&blackwell);
        check_blackwell_fp8(&blackwell);
        check_blackwell_epilogues(&blackwell);
        /* a Hopper name forced on Blackwell is for the other device: ignored */
        mgpu_status s;
        struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_F16);
        CHECK(pick(&p, &blackwell, "mgpu_gemm_sm90_ws_f16_tn_128x128x64_s6_c1", &s) == pick(&p, &blackwell, NULL, &s),
              "sm90 name forced on cc 10.0 not ignored");
    }
    const struct mgpu_device_caps others[] = {{8, 0, 108, 166912, 0}, {12, 0, 84, 101376, 0}, {10, 3, 148, 232448, 0},
                                              {9, 1, 132, 232448, 0}, {7, 5, 40, 65536, 0}};
    for (unsigned i = 0; i < sizeof others / sizeof others[0]; i++) {
        mgpu_status s;
        struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
        const struct mgpu_variant *v = pick(&p, &others[i], NULL, &s);
        CHECK(v == NULL && s == MGPU_STATUS_ARCH_MISMATCH, "cc %d.%d: got %s / %s", others[i].cc_major,
              others[i].cc_minor, v ? v->name : "none", mgpu_status_string(s));
        CHECK(strstr(mgpu_last_error_message(), "compute capability") != NULL, "message: %s",
              mgpu_last_error_message());
    }
    check_extensions_elsewhere();
    return check_exit();
}
