/*
 * mgpu_attention_fwd's pure half on the CPU: descriptor validation (every
 * status the header lists for a bad descriptor), variant selection with
 * made-up devices (9.0 picks the variant of the call's dtype and head dim;
 * 8.0 gets ARCH_MISMATCH), forcing, and the launch plan (tensor-map
 * shapes, LSE layout, grid) for fixed-length and varlen calls. With sm_100a
 * kernels in the build, a made-up 10.0 device picks the Blackwell variant for
 * every feature (masks, soft-cap, GQA, varlen, LSE, both dtypes, every head
 * dim) and plans one CTA per 128- or 256-row tile, and for serving
 * (paged K/V, seqused_k, the KV-cache append) the same kernels with the page
 * maps and none of the decode planning; without them 10.0 gets
 * ARCH_MISMATCH. Each architecture's checks run when the build has it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_plan.h"
#include "check.h"

static const struct mgpu_device_caps hopper = {9, 0, 132, 232448, 0};
static const struct mgpu_device_caps blackwell = {10, 0, 148, 232448, 0};
static const struct mgpu_device_caps ampere = {8, 0, 108, 166912, 0};

/* Made-up, suitably aligned device addresses. */
#define Q_ADDR ((const void *)(uintptr_t)0x7f0000000000)
#define K_ADDR ((const void *)(uintptr_t)0x7f1000000000)
#define V_ADDR ((const void *)(uintptr_t)0x7f2000000000)
#define O_ADDR ((void *)(uintptr_t)0x7f3000000000)
#define LSE_ADDR ((float *)(uintptr_t)0x7f4000000000)
#define CACHE_ADDR ((void *)(uintptr_t)0x7f5000000000)

/* Whether this build has attention forward kernels for a compute capability. */
static int has_attention_cc(int major, int minor)
{
    for (int i = 0; i < mgpu_variant_count; i++)
        if ((mgpu_variants[i].kind == MGPU_KIND_ATTENTION_FWD_SM90 ||
             mgpu_variants[i].kind == MGPU_KIND_ATTENTION_FWD_SM100) &&
            mgpu_variants[i].cc_major == major && mgpu_variants[i].cc_minor == minor)
            return 1;
    return 0;
}

static mgpu_attention_fwd_desc base_desc(void)
{
    mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
    d.batch = 2;
    d.seqlen_q = 1000;
    d.seqlen_k = 1500;
    d.heads_q = 16;
    d.heads_kv = 4;
    d.head_dim = 128;
    d.dtype = MGPU_DTYPE_BF16;
    return d;
}

/* A decode step over a paged cache (GQA 32 / 8, 3000 keys in pages of 256
 * rows, 12 table entries per sequence) with the made-up table and seqused_k
 * addresses PAGED_TABLE / PAGED_USED. */
#define PAGED_TABLE 0x5000
#define PAGED_USED 0x6000
static mgpu_attention_fwd_desc paged_desc(void)
{
    mgpu_attention_fwd_desc d = base_desc();
    d.batch = 4;
    d.seqlen_q = 1;
    d.seqlen_k = 3000;
    d.heads_q = 32;
    d.heads_kv = 8;
    d.seqused_k = (const int32_t *)(uintptr_t)PAGED_USED;
    d.block_table = (const int32_t *)(uintptr_t)PAGED_TABLE;
    d.max_blocks_per_seq = 12;
    d.page_size = 256;
    d.num_pages = 100;
    return d;
}

static mgpu_status validate(const mgpu_attention_fwd_desc *d, struct mgpu_attention_problem *p)
{
    return mgpu_attention_fwd_validate(d, Q_ADDR, K_ADDR, V_ADDR, O_ADDR, LSE_ADDR, p);
}

#define EXPECT(field_set, status)                                                                  \
    do {                                                                                           \
        mgpu_attention_fwd_desc d_ = base_desc();                                                  \
        field_set;                                                                                 \
        CHECK_STATUS(validate(&d_, &p), status);                                                   \
        CHECK(status == MGPU_STATUS_SUCCESS || mgpu_last_error_message()[0], "no message for %s", #field_set); \
    } while (0)

static void test_validation(void)
{
    struct mgpu_attention_problem p;
    EXPECT((void)0, MGPU_STATUS_SUCCESS);
    CHECK(fabsf(p.softmax_scale - 1.0f / sqrtf(128.0f)) < 1e-7f, "default scale %g", (double)p.softmax_scale);
    CHECK(p.q_strides.head == 128 && p.q_strides.seq == 16 * 128 && p.q_strides.batch == 1000 * 16 * 128,
          "dense q strides");
    CHECK(p.k_strides.seq == 4 * 128 && p.k_strides.batch == 1500 * 4 * 128, "dense k strides");

    CHECK_STATUS(mgpu_attention_fwd_validate(NULL, Q_ADDR, K_ADDR, V_ADDR, O_ADDR, NULL, &p), MGPU_STATUS_NULL_POINTER);
    EXPECT(d_.struct_size = 8, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.dtype = MGPU_DTYPE_F32, MGPU_STATUS_UNSUPPORTED_DTYPE);
    EXPECT(d_.dtype = (mgpu_dtype)7, MGPU_STATUS_UNSUPPORTED_DTYPE);
    EXPECT(d_.causal = 2, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.window_left = -2, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.window_right = -5, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.softmax_scale = -1.0f, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.softmax_scale = NAN, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.softcap = -1.0f, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.softcap = INFINITY, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000, MGPU_STATUS_INVALID_VALUE);
    EXPECT((d_.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1002, d_.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000),
           MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.batch = -1, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.seqlen_q = (int64_t)1 << 31, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.heads_kv = 3, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.heads_kv = 0, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.seqlen_k = 0, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.head_dim = 0, MGPU_STATUS_INVALID_SIZE);
    EXPECT((d_.batch = 1 << 20, d_.heads_q = 1 << 10, d_.heads_kv = 1, d_.seqlen_q = 1 << 10),
           MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.q_strides.seq = -8, MGPU_STATUS_INVALID_LD);
    EXPECT((d_.o_strides.seq = 16 * 128, d_.o_strides.head = 128), MGPU_STATUS_INVALID_LD); /* batch 0, batch 2 */
    EXPECT((d_.q_strides.seq = 16 * 128, d_.q_strides.batch = 1 << 30), MGPU_STATUS_INVALID_LD); /* head 0, 16 heads */
    EXPECT((d_.k_strides.batch = (int64_t)1 << 40, d_.k_strides.seq = 512, d_.k_strides.head = 128),
           MGPU_STATUS_INVALID_LD);

    /* Valid descriptors this build has no kernel for. */
    EXPECT(d_.head_dim = 80, MGPU_STATUS_NOT_SUPPORTED);
    EXPECT(d_.head_dim = 512, MGPU_STATUS_NOT_SUPPORTED);
    EXPECT((d_.q_strides.batch = 1000 * 16 * 136, d_.q_strides.seq = 16 * 136, d_.q_strides.head = 136),
           MGPU_STATUS_SUCCESS);
    EXPECT((d_.o_strides.batch = 1000 * 16 * 129, d_.o_strides.seq = 16 * 129, d_.o_strides.head = 129),
           MGPU_STATUS_NOT_SUPPORTED);
    CHECK(strstr(mgpu_last_error_message(), "multiples of 8"), "stride message: %s", mgpu_last_error_message());
    {
        mgpu_attention_fwd_desc d = base_desc();
        CHECK_STATUS(mgpu_attention_fwd_validate(&d, (const char *)Q_ADDR + 8, K_ADDR, V_ADDR, O_ADDR, NULL, &p),
                     MGPU_STATUS_NOT_SUPPORTED);
        CHECK(strstr(mgpu_last_error_message(), "16-byte aligned"), "alignment message: %s",
              mgpu_last_error_message());
        CHECK_STATUS(mgpu_attention_fwd_validate(&d, Q_ADDR, K_ADDR, V_ADDR, (char *)O_ADDR + 2, NULL, &p),
                     MGPU_STATUS_NOT_SUPPORTED);
        CHECK_STATUS(mgpu_attention_fwd_validate(&d, Q_ADDR, K_ADDR, V_ADDR, O_ADDR, (float *)((char *)LSE_ADDR + 2),
                                                 &p),
                     MGPU_STATUS_INVALID_VALUE);
        CHECK_STATUS(mgpu_attention_fwd_validate(&d, Q_ADDR, NULL, V_ADDR, O_ADDR, NULL, &p), MGPU_STATUS_NULL_POINTER);
        /* nothing to do: pointers may be NULL, and the call succeeds */
        d.seqlen_q = 0;
        CHECK_STATUS(mgpu_attention_fwd_validate(&d, NULL, NULL, NULL, NULL, NULL, &p), MGPU_STATUS_SUCCESS);
        CHECK(mgpu_attention_problem_empty(&p), "seqlen_q = 0 is empty");
        d = base_desc();
        d.batch = 0;
        d.head_dim = 80; /* not even looked at */
        CHECK_STATUS(mgpu_attention_fwd_validate(&d, NULL, NULL, NULL, NULL, NULL, &p), MGPU_STATUS_SUCCESS);
        CHECK(mgpu_attention_problem_empty(&p), "batch = 0 is empty");
    }
    /* varlen: batch strides are ignored, even when not multiples of 8 */
    EXPECT((d_.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000, d_.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000,
            d_.total_q = 3000, d_.total_k = 2000, d_.q_strides.batch = 3, d_.q_strides.seq = 16 * 128,
            d_.q_strides.head = 128),
           MGPU_STATUS_SUCCESS);
    EXPECT((d_.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000, d_.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000,
            d_.total_q = 3000, d_.total_k = 0),
           MGPU_STATUS_INVALID_SIZE);
}

static void test_selection(void)
{
    static const int dims[] = {64, 96, 128, 192, 256};
    static const mgpu_dtype dtypes[] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    struct mgpu_attention_problem p;
    mgpu_status s;
    if (!has_attention_cc(9, 0))
        return;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++) {
            mgpu_attention_fwd_desc d = base_desc();
            d.dtype = dtypes[t];
            d.head_dim = dims[i];
            CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
            const int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
            CHECK(idx >= 0, "9.0 d=%d: %s", dims[i], mgpu_last_error_message());
            if (idx < 0)
                continue;
            const struct mgpu_variant *v = &mgpu_variants[idx];
            CHECK(v->kind == MGPU_KIND_ATTENTION_FWD_SM90 && v->dtype == (int)dtypes[t] && v->attention.head_dim == dims[i] &&
                      v->cc_major == 9 && v->cc_minor == 0,
                  "9.0 dtype %d d=%d got %s", dtypes[t], dims[i], v->name);
            CHECK(v->threads == MGPU_ATTENTION_FWD_THREADS && v->attention.block_m == MGPU_ATTENTION_FWD_BLOCK_M,
                  "%s: threads / block", v->name);
            CHECK(mgpu_select_attention_fwd(&p, &hopper, NULL, &s) == idx, "selection not deterministic");
            /* forcing: its own name works, another head dim's does not, a GEMM name is ignored */
            CHECK(mgpu_select_attention_fwd(&p, &hopper, v->name, &s) == idx, "forcing %s", v->name);
            const char *other = dims[i] == 64 ? "mgpu_attention_fwd_sm90_bf16_d128" : "mgpu_attention_fwd_sm90_bf16_d64";
            CHECK(mgpu_select_attention_fwd(&p, &hopper, other, &s) < 0 && s == MGPU_STATUS_NOT_SUPPORTED,
                  "forcing %s for d=%d", other, dims[i]);
            CHECK(mgpu_select_attention_fwd(&p, &hopper, "mgpu_gemm_portable_sm90_64x64", &s) == idx,
                  "a GEMM name is not for attention");
            if (!has_attention_cc(10, 0))
                CHECK(mgpu_select_attention_fwd(&p, &blackwell, NULL, &s) < 0 && s == MGPU_STATUS_ARCH_MISMATCH,
                      "10.0 without sm_100a kernels must be ARCH_MISMATCH");
            CHECK(mgpu_select_attention_fwd(&p, &ampere, NULL, &s) < 0 && s == MGPU_STATUS_ARCH_MISMATCH,
                  "8.0 must be ARCH_MISMATCH");
        }
}

static void test_plan(void)
{
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    mgpu_status s;
    if (!has_attention_cc(9, 0))
        return;
    mgpu_attention_fwd_desc d = base_desc();
    d.head_dim = 96;
    d.causal = 1;
    d.window_left = 256;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    CHECK(idx >= 0, "select: %s", mgpu_last_error_message());
    if (idx < 0)
        return;
    const struct mgpu_variant *v = &mgpu_variants[idx];
    mgpu_attention_make_plan(&p, v, &hopper, &plan);
    CHECK(plan.grid == 8 * 16 * 2, "grid %u: ceil(1000 / 128) * 16 heads * 2", plan.grid);
    /* prefill: launched as before; forced, for programmatic dependent launch */
    CHECK(plan.programmatic == 0, "prefill: programmatic %d", plan.programmatic);
    const struct mgpu_attention_fwd_choice pdl = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    mgpu_attention_make_plan_ex(&p, v, &hopper, &pdl, &plan);
    CHECK(plan.programmatic == 1, "prefill forced: programmatic %d", plan.programmatic);
    mgpu_attention_make_plan(&p, v, &hopper, &plan);
    CHECK(plan.q_map.dims[0] == 96 && plan.q_map.dims[1] == 1000 && plan.q_map.dims[2] == 16 &&
              plan.q_map.dims[3] == 2,
          "q map dims");
    CHECK(plan.k_map.dims[1] == 1500 && plan.k_map.dims[2] == 4 && plan.k_map.box[1] == (uint32_t)v->attention.block_n,
          "k map dims / box");
    CHECK(plan.q_map.byte_strides[0] == 16 * 96 * 2 && plan.q_map.byte_strides[1] == 96 * 2 &&
              plan.q_map.byte_strides[2] == 1000 * 16 * 96 * 2,
          "q map strides");
    CHECK(plan.q_map.box[0] == 64 && plan.q_map.box[1] == 128, "q box");
    CHECK(plan.args.group_size == 4 && plan.args.causal == 1 && plan.args.window_left == 256 &&
              plan.args.window_right == -1,
          "args");
    CHECK(plan.args.lse_head_stride == 1000 && plan.args.lse_batch_stride == 16 * 1000, "lse [b][h][sq]");
    CHECK(fabsf(plan.args.scale_log2 - plan.args.softmax_scale * 1.44269504f) < 1e-6f, "scale_log2");

    /* Unmasked fixed length: persistent grid where Q is double-buffered (head dim <= 128). */
    const int64_t dims[] = {64, 96, 128, 192, 256};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        d = base_desc();
        d.head_dim = dims[i];
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
        CHECK(idx >= 0, "select d=%lld: %s", (long long)dims[i], mgpu_last_error_message());
        if (idx < 0)
            continue;
        mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
        const unsigned tiles = 8 * 16 * 2;
        const unsigned want = dims[i] <= 128 ? (unsigned)hopper.sm_count : tiles;
        CHECK(plan.grid == want, "d=%lld grid %u, want %u", (long long)dims[i], plan.grid, want);
        d.seqlen_q = 100; /* 1 * 16 * 2 tiles: fewer than SMs */
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
        CHECK(plan.grid == 32, "d=%lld, 32 tiles: grid %u", (long long)dims[i], plan.grid);
        d.seqlen_q = 1000;
        d.seqlen_k = 16384; /* long key loop: one CTA per tile */
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
        CHECK(plan.grid == tiles, "d=%lld, 16384 keys: grid %u", (long long)dims[i], plan.grid);
        /* causal, short loop: the same grids, with dynamic tiles (heavy first,
         * L2-sized head groups) where persistent */
        d.seqlen_k = 1000;
        d.causal = 1;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
        const int persistent = dims[i] <= 128;
        CHECK(plan.grid == want && plan.dynamic == persistent, "d=%lld causal: grid %u dynamic %d", (long long)dims[i],
              plan.grid, plan.dynamic);
        const int64_t pairs = 16 * 2, group = ((int64_t)24 << 20) / (2 * 1000 * dims[i] * 2);
        CHECK(plan.args.lpt_group == (persistent ? (int32_t)(group < pairs ? group : pairs) : 0),
              "d=%lld causal: lpt group %d", (long long)dims[i], plan.args.lpt_group);
        d.causal = 0;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
        CHECK(!plan.dynamic && plan.args.lpt_group == 0, "non-causal: static tiles");
    }
    /* many heads: the heavy-first groups stop at the L2 budget */
    d = base_desc();
    d.causal = 1;
    d.head_dim = 128;
    d.seqlen_q = d.seqlen_k = 4096;
    d.heads_q = d.heads_kv = 32;
    d.batch = 4;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (idx >= 0) {
        mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
        CHECK(plan.dynamic && plan.args.lpt_group == 12, "4 x 32 heads x 4096 keys: lpt group %d (24 MiB / 2 MiB)",
              plan.args.lpt_group);
    }

    d = base_desc();
    d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
    d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
    d.total_q = 1800;
    d.total_k = 2500;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (idx < 0)
        return;
    mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
    CHECK(plan.q_map.dims[1] == 1800 && plan.q_map.dims[3] == 1 && plan.k_map.dims[1] == 2500, "varlen map dims");
    CHECK(plan.args.lse_head_stride == 1800 && plan.args.lse_batch_stride == 0, "lse [h][total_q]");
    CHECK(plan.args.cu_seqlens_q == 0x1000 && plan.args.cu_seqlens_k == 0x2000, "offsets passed");
    CHECK(plan.grid == 8 * 16 * 2, "varlen grid uses the longest sequence");
}

/* Decode planning: GQA packing, key splits (from the tile count, bounded by
 * key blocks, forcing and the workspace), paged K/V maps, and validation of
 * the inference fields. */
static void test_inference_plan(void)
{
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    mgpu_status s;
    if (!has_attention_cc(9, 0)) /* the inference fields are planned for the sm_90a kernel */
        return;
    mgpu_attention_fwd_desc d = base_desc();
    d.batch = 1;
    d.seqlen_q = 1;
    d.seqlen_k = 4096;
    d.heads_q = 64;
    d.heads_kv = 8;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    const int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    CHECK(idx >= 0, "select: %s", mgpu_last_error_message());
    if (idx < 0)
        return;
    const struct mgpu_variant *v = &mgpu_variants[idx];
    /* the wave rule's split counts (the split fill: test_split_fill_plan) */
    struct mgpu_attention_fwd_choice choice = {(size_t)32 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0};
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    const struct mgpu_attention_fwd_args *a = &plan.args;
    CHECK(a->pack_gqa == 1 && a->tile_heads == 8 && a->tile_queries == 16, "decode GQA 8:1 packs: %d %d %d",
          a->pack_gqa, a->tile_heads, a->tile_queries);
    /* an inference call: the main kernel launched for programmatic
     * dependent launch, unless forced off */
    CHECK(plan.programmatic == 1, "decode: programmatic %d", plan.programmatic);
    choice.force_programmatic = -1;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(plan.programmatic == 0, "decode forced off: programmatic %d", plan.programmatic);
    choice.force_programmatic = 0;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(plan.q_map.rank == 5 && plan.q_map.dims[0] == 128 && plan.q_map.dims[1] == 8 && plan.q_map.dims[2] == 1 &&
              plan.q_map.dims[3] == 8 && plan.q_map.dims[4] == 1,
          "packed q map dims");
    CHECK(plan.q_map.byte_strides[0] == 128 * 2 && plan.q_map.byte_strides[1] == 64 * 128 * 2 &&
              plan.q_map.byte_strides[2] == 8 * 128 * 2 && plan.q_map.byte_strides[3] == 64 * 128 * 2,
          "packed q map strides");
    CHECK(plan.q_map.box[0] == 64 && plan.q_map.box[1] == 8 && plan.q_map.box[2] == 16 && plan.q_map.box[3] == 1 &&
              plan.q_map.box[4] == 1,
          "packed q box");
    /* the forward's maps promote a missed line as 128 bytes, one box row (decision 068) */
    CHECK(plan.q_map.l2_promote == 128 && plan.k_map.l2_promote == 128 && plan.v_map.l2_promote == 128,
          "fwd L2 promotion %d %d %d", plan.q_map.l2_promote, plan.k_map.l2_promote, plan.v_map.l2_promote);
    /* 8 tiles on 132 SMs: split; the fewest splits within 85 % of the best
     * last wave (14), then as many as have keys: 3 key blocks each, 11. */
    CHECK(a->num_splits == 11 && plan.grid == 8 * 11, "splits %d grid %u", a->num_splits, plan.grid);
    /* 11 splits: two combine warps per row, four rows per CTA; one CTA
     * would merge a tile's 8 rows in two passes: the combine kernel, 88 + 16
     * CTAs fit 132 SMs: launched early */
    CHECK(a->partial_rows == 64 && plan.combine_grid == 16 && plan.merge_in_kernel == 0 && plan.combine_early == 1,
          "partial rows %lld, combine grid %u, in kernel %d, early %d", (long long)a->partial_rows,
          plan.combine_grid, plan.merge_in_kernel, plan.combine_early);
    /* The merge in the main kernel forced: no combine launch */
    choice.force_merge = 1;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->num_splits == 11 && plan.merge_in_kernel == 1 && plan.combine_early == 0,
          "in kernel forced: splits %d in kernel %d early %d", a->num_splits, plan.merge_in_kernel,
          plan.combine_early);
    choice.force_merge = 0;
    CHECK(plan.workspace_bytes == mgpu_attention_fwd_split_bytes(&p, 11) && plan.workspace_bytes >= 11 * 64 * 129 * 4,
          "workspace %zu", plan.workspace_bytes);
    mgpu_attention_fwd_place_partials(&plan, 0x10000);
    CHECK(a->o_partial == 0x10000 && a->lse_partial == 0x10000 + 11 * 64 * 128 * 4, "partials placed");
    /* Short workspace: fewer splits (one merge pass: in the main kernel);
     * none: no split (never a failure). */
    choice.workspace_bytes = mgpu_attention_fwd_split_bytes(&p, 3);
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->num_splits == 3 && plan.grid == 24 && plan.merge_in_kernel == 1 && plan.combine_early == 0,
          "workspace for 3 splits: %d", a->num_splits);
    mgpu_attention_make_plan(&p, v, &hopper, &plan);
    CHECK(a->num_splits == 1 && a->pack_gqa == 1 && plan.workspace_bytes == 0 && plan.combine_early == 0 &&
              plan.merge_in_kernel == 0,
          "no workspace: %d splits", a->num_splits);
    /* Forcing: packing off, splits on; splits beyond the key blocks are capped. */
    choice.workspace_bytes = (size_t)32 << 20;
    choice.force_pack = -1;
    choice.force_splits = 5;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->pack_gqa == 0 && a->tile_heads == 64 && a->tile_queries == 128 && plan.q_map.rank == 4 &&
              a->num_splits == 5 && plan.grid == 64 * 5,
          "forced: pack %d splits %d grid %u", a->pack_gqa, a->num_splits, plan.grid);
    /* one row a tile: merged in the main kernel; with the combine forced,
     * 320 main CTAs leave no SM to the combine's 8: launched after the main
     * kernel, not early */
    CHECK(plan.merge_in_kernel == 1 && plan.combine_early == 0, "forced splits: in kernel %d", plan.merge_in_kernel);
    choice.force_merge = -1;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(plan.combine_grid == 8 && plan.merge_in_kernel == 0 && plan.combine_early == 0,
          "forced: combine grid %u early %d", plan.combine_grid, plan.combine_early);
    choice.force_merge = 0;
    choice.force_splits = 1000;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->num_splits == 32, "splits capped at the 32 key blocks: %d", a->num_splits);
    choice.force_pack = 0;
    choice.force_splits = 0;

    /* Full GPU: no split; MHA: no packing; long queries: neither. */
    d.batch = 64;
    d.heads_kv = 64;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    /* 4096 and 512 equal tiles of 32 key blocks: decode steps, the decode
     * entry (one tile per CTA); the general kernel would take the
     * persistent grid */
    CHECK(a->pack_gqa == 0 && a->num_splits == 1 && plan.decode_entry && plan.grid == 4096,
          "MHA batch 64: pack %d splits %d grid %u", a->pack_gqa, a->num_splits, plan.grid);
    choice.force_decode_entry = -1;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(!plan.decode_entry && plan.grid == 132, "MHA batch 64, general kernel: grid %u", plan.grid);
    choice.force_decode_entry = 0;
    d.heads_kv = 8;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->pack_gqa == 1 && a->num_splits == 1 && plan.decode_entry && plan.grid == 512,
          "GQA batch 64: pack %d splits %d grid %u", a->pack_gqa, a->num_splits, plan.grid);
    d.seqlen_q = 4096;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    /* GQA prefill with full query tiles: not packed, with or without masks */
    CHECK(a->pack_gqa == 0 && a->num_splits == 1, "prefill: pack %d splits %d", a->pack_gqa, a->num_splits);
    d.causal = 1;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->pack_gqa == 0 && a->num_splits == 1, "causal prefill: pack %d splits %d", a->pack_gqa, a->num_splits);
    d.causal = 0;
    d.window_left = 512;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->pack_gqa == 0, "windowed prefill: pack %d", a->pack_gqa);
    d.window_left = -1;
    /* Groups larger than a query block cannot pack, even forced. */
    d.seqlen_q = 1;
    d.heads_q = 256;
    d.heads_kv = 1;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    choice.force_pack = 1;
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->pack_gqa == 0, "group 256 does not pack");
    choice.force_pack = 0;

    /* The decode features are the sm_90a kernel's: on sm_100a no packing, no splits. */
    if (has_attention_cc(10, 0)) {
        d = base_desc();
        d.batch = 1;
        d.seqlen_q = 1;
        d.seqlen_k = 4096;
        d.heads_q = 64;
        d.heads_kv = 8;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        const int i100 = mgpu_select_attention_fwd(&p, &blackwell, NULL, &s);
        CHECK(i100 >= 0, "10.0 decode: %s", mgpu_last_error_message());
        if (i100 >= 0) {
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[i100], &blackwell, &choice, &plan);
            CHECK(a->pack_gqa == 0 && a->num_splits == 1 && a->tile_heads == 64 &&
                      a->tile_queries == mgpu_variants[i100].attention.block_m,
                  "10.0 decode: pack %d splits %d", a->pack_gqa, a->num_splits);
        }
    }

    /* Paged K/V. */
    const int32_t *table = (const int32_t *)(uintptr_t)PAGED_TABLE, *used = (const int32_t *)(uintptr_t)PAGED_USED;
    d = paged_desc();
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(p.k_strides.seq == 8 * 128 && p.k_strides.batch == 256 * 8 * 128, "dense page strides");
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->block_table == PAGED_TABLE && a->seqused_k == PAGED_USED && a->page_size == 256 && a->block_table_stride == 12 &&
              a->page_box_rows == 128 && a->num_pages == 100 && a->paged_gather == 0,
          "paged args: box %d gather %d", a->page_box_rows, a->paged_gather);
    CHECK(plan.k_map.dims[1] == 256 && plan.k_map.dims[2] == 8 && plan.k_map.dims[3] == 100 &&
              plan.k_map.box[1] == 128 && plan.k_map.byte_strides[2] == 256 * 8 * 128 * 2,
          "paged k map");
    d.page_size = 48;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_INVALID_SIZE); /* 12 * 48 < 3000 */
    d.max_blocks_per_seq = 63;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
    CHECK(a->page_box_rows == 16 && plan.v_map.box[1] == 16, "page 48: boxes of 16 rows (%d)", a->page_box_rows);
    CHECK(a->paged_gather == 1 && a->paged_k == (uint64_t)(uintptr_t)p.k && a->paged_v == (uint64_t)(uintptr_t)p.v,
          "page 48: cp.async gather (%d)", a->paged_gather);
    {
        struct mgpu_attention_fwd_choice off = choice;
        off.force_gather = -1;
        mgpu_attention_make_plan_ex(&p, v, &hopper, &off, &plan);
        CHECK(a->paged_gather == 0, "page 48, gather forced off");
        off.force_gather = 1;
        d.page_size = 256;
        d.max_blocks_per_seq = 12;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        mgpu_attention_make_plan_ex(&p, v, &hopper, &off, &plan);
        CHECK(a->paged_gather == 1, "page 256, gather forced on");
        /* pages of 32 rows: boxes of 32 rows by TMA; of 16: gathered */
        static const struct {
            int page, blocks, gather;
        } small[] = {{32, 94, 0}, {16, 188, 1}};
        for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
            d.page_size = small[i].page;
            d.max_blocks_per_seq = small[i].blocks;
            CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
            mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
            CHECK(a->page_box_rows == small[i].page && a->paged_gather == small[i].gather, "page %d: box %d gather %d",
                  small[i].page, a->page_box_rows, a->paged_gather);
        }
        d.page_size = 48;
        d.max_blocks_per_seq = 63;
    }
    d.page_size = 40;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_INVALID_SIZE);
    d.page_size = 48;
    d.seqused_k = NULL;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_INVALID_VALUE);
    d.seqused_k = used;
    d.num_pages = 0;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_INVALID_SIZE);
    d.num_pages = 100;
    d.block_table = (const int32_t *)(uintptr_t)0x5002;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_INVALID_VALUE);
    d.block_table = table;
    d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
    d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
    d.total_q = 4;
    d.total_k = 3000;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_INVALID_VALUE);
    /* A descriptor of the first layout still validates (inference fields off). */
    d = base_desc();
    d.struct_size = MGPU_ATTENTION_FWD_DESC_SIZE_V1;
    d.block_table = table; /* beyond the first layout: not read */
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(p.block_table == 0 && p.seqused_k == 0, "v1 descriptor: no inference fields");

    /* KV-cache append. */
    mgpu_kv_cache_append_desc ad = MGPU_KV_CACHE_APPEND_DESC_INIT;
    struct mgpu_kv_cache_append_args aa;
    ad.batch = 4;
    ad.seqlen_new = 1;
    ad.heads_kv = 8;
    ad.head_dim = 128;
    ad.cache_seqlens = used;
    ad.block_table = table;
    ad.max_blocks_per_seq = 12;
    ad.page_size = 256;
    ad.num_pages = 100;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, Q_ADDR, K_ADDR, O_ADDR, CACHE_ADDR, &aa), MGPU_STATUS_SUCCESS);
    CHECK(aa.vectors == 2 * 4 * 8 * 16 && aa.k_cache_strides[0] == 256 * 8 * 128 && aa.k_new_strides[1] == 8 * 128,
          "append args");
    ad.head_dim = 100;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, Q_ADDR, K_ADDR, O_ADDR, CACHE_ADDR, &aa), MGPU_STATUS_NOT_SUPPORTED);
    ad.head_dim = 128;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, Q_ADDR, K_ADDR, (char *)O_ADDR + 8, CACHE_ADDR, &aa),
                 MGPU_STATUS_NOT_SUPPORTED);
    ad.cache_seqlens = NULL;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, Q_ADDR, K_ADDR, O_ADDR, CACHE_ADDR, &aa), MGPU_STATUS_NULL_POINTER);
    ad.cache_seqlens = used;
    ad.block_table = NULL;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, Q_ADDR, K_ADDR, O_ADDR, CACHE_ADDR, &aa), MGPU_STATUS_SUCCESS);
    ad.num_pages = 3;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, Q_ADDR, K_ADDR, O_ADDR, CACHE_ADDR, &aa), MGPU_STATUS_INVALID_SIZE);
    ad.seqlen_new = 0;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, NULL, NULL, NULL, NULL, &aa), MGPU_STATUS_SUCCESS);
    CHECK(aa.vectors == 0, "nothing to append");
    ad.struct_size = 8;
    CHECK_STATUS(mgpu_kv_cache_append_validate(&ad, Q_ADDR, K_ADDR, O_ADDR, CACHE_ADDR, &aa), MGPU_STATUS_INVALID_VALUE);
    CHECK(mgpu_select_attention_fwd_combine(MGPU_DTYPE_BF16, &hopper, &s) >= 0 &&
              mgpu_select_attention_fwd_combine(MGPU_DTYPE_F16, &hopper, &s) >= 0 &&
              mgpu_select_kv_cache_append(&hopper, &s) >= 0,
          "helper variants");
    const int append = mgpu_select_kv_cache_append(&hopper, &s);
    CHECK(append >= 0 && strcmp(mgpu_variants[append].name, "mgpu_kv_cache_append_sm90") == 0,
          "append on 9.0: the sm_90a kernel");
}

/* ---- Blackwell (made-up cc 10.0 device) ---------------------------------- */

/* Selects on the Blackwell device and checks the variant against the ABI's
 * Blackwell table; returns it or NULL. */
static const struct mgpu_variant *select_sm100(const mgpu_attention_fwd_desc *d, struct mgpu_attention_problem *p,
                                               const char *what)
{
    mgpu_status s;
    CHECK_STATUS(validate(d, p), MGPU_STATUS_SUCCESS);
    const int idx = mgpu_select_attention_fwd(p, &blackwell, NULL, &s);
    CHECK(idx >= 0, "10.0 %s: %s", what, mgpu_last_error_message());
    if (idx < 0)
        return NULL;
    const struct mgpu_variant *v = &mgpu_variants[idx];
    const int hd = (int)d->head_dim;
    CHECK(v->kind == MGPU_KIND_ATTENTION_FWD_SM100 && v->cc_major == 10 && v->cc_minor == 0 &&
              v->dtype == (int)d->dtype && v->attention.head_dim == hd,
          "10.0 %s: got %s", what, v->name);
    CHECK(v->threads == MGPU_ATTENTION_FWD_SM100_THREADS(hd) &&
              v->attention.block_m == MGPU_ATTENTION_FWD_SM100_BLOCK_M(hd) &&
              v->attention.block_n == MGPU_ATTENTION_FWD_SM100_BLOCK_N(hd) &&
              v->attention.stages == MGPU_ATTENTION_FWD_SM100_STAGES && v->cluster <= 1,
          "%s: threads / tiles differ from the ABI", v->name);
    CHECK(v->smem_bytes == mgpu_attention_fwd_sm100_smem_bytes(v->attention.block_m, v->attention.block_n, hd,
                                                               v->attention.stages) &&
              v->smem_bytes <= blackwell.max_smem_per_block,
          "%s: shared memory %d", v->name, v->smem_bytes);
    /* TMEM: S and O of every 128-row Q tile in 512 columns */
    CHECK(v->attention.block_m / 128 * (hd + v->attention.block_n) <= 512, "%s: TMEM budget", v->name);
    return v;
}

/* The plan of a decode step (one query row per sequence) of the given shape on
 * the Hopper caps, in a paged cache of `page`-row pages (0: contiguous); the
 * selected variant, or -1 (checked). */
static int paged_decode_plan(int batch, int seqlen_k, int heads_q, int heads_kv, int head_dim, int page,
                             const struct mgpu_attention_fwd_choice *choice, struct mgpu_attention_problem *p,
                             struct mgpu_attention_plan *plan)
{
    mgpu_status s;
    mgpu_attention_fwd_desc d = base_desc();
    d.batch = batch;
    d.seqlen_q = 1;
    d.seqlen_k = seqlen_k;
    d.heads_q = heads_q;
    d.heads_kv = heads_kv;
    d.head_dim = head_dim;
    if (page) {
        d.page_size = page;
        d.max_blocks_per_seq = seqlen_k / page;
        d.num_pages = batch * d.max_blocks_per_seq;
        d.block_table = (const int32_t *)(uintptr_t)PAGED_TABLE;
        d.seqused_k = (const int32_t *)(uintptr_t)PAGED_USED;
    }
    CHECK_STATUS(validate(&d, p), MGPU_STATUS_SUCCESS);
    const int idx = mgpu_select_attention_fwd(p, &hopper, NULL, &s);
    CHECK(idx >= 0, "select: %s", mgpu_last_error_message());
    if (idx >= 0)
        mgpu_attention_make_plan_ex(p, &mgpu_variants[idx], &hopper, choice, plan);
    return idx;
}

static int decode_plan(int batch, int seqlen_k, int heads_q, int heads_kv, int head_dim,
                       const struct mgpu_attention_fwd_choice *choice, struct mgpu_attention_problem *p,
                       struct mgpu_attention_plan *plan)
{
    return paged_decode_plan(batch, seqlen_k, heads_q, heads_kv, head_dim, 0, choice, p, plan);
}

/* Split counts, and where the splits merge: in the main kernel where its
 * last split merges a tile's rows in one pass of 8 warps and the tiles have
 * their counters, else the combine kernel; forcing either way within that. */
static void test_split_merge_plan(void)
{
    mgpu_status s;
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    const struct mgpu_attention_fwd_args *a = &plan.args;
    if (!has_attention_cc(9, 0))
        return;
    CHECK(mgpu_attention_fwd_merge_passes(8, 8) == 1 && mgpu_attention_fwd_merge_passes(8, 9) == 2 &&
              mgpu_attention_fwd_merge_passes(8, 16) == 2 && mgpu_attention_fwd_merge_passes(8, 17) == 4 &&
              mgpu_attention_fwd_merge_passes(8, 109) == 8 && mgpu_attention_fwd_merge_passes(1, 128) == 1 &&
              mgpu_attention_fwd_merge_passes(16, 4) == 2,
          "merge passes");
    /* the wave rule's split counts (the split fill: test_split_fill_plan) */
    struct mgpu_attention_fwd_choice choice = {(size_t)64 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0};
    /* (batch, keys, heads q / kv, head dim) -> splits, in kernel, combine early */
    static const struct {
        int b, sk, hq, hkv, d;
        int splits, in_kernel, early;
    } rows[] = {
        {1, 1024, 64, 8, 128, 8, 1, 0},     /* 64 key blocks in all: one CTA each; 8 rows x 8 splits, one pass */
        {1, 8192, 64, 8, 128, 13, 0, 1},    /* the wave rule's 15, 13 with keys; two passes: the combine, early */
        {1, 32768, 64, 8, 128, 8, 1, 0},    /* long cache, d128: half the SMs */
        {1, 8192, 64, 8, 256, 8, 1, 0},     /* 1 MiB of K and V per split at d256: half the SMs */
        {1, 32768, 64, 8, 64, 15, 1, 0},    /* d64: the wave rule; 120 + 16 CTAs: one warp a row, one pass */
        {1, 1024, 32, 32, 128, 4, 1, 0},    /* MHA: one row a tile */
        {8, 1024, 64, 8, 128, 2, 1, 0},     /* 64 tiles */
        {1, 131072, 8, 1, 128, 103, 0, 1},  /* MQA: the wave rule's 109, 103 with keys; 8 passes: the combine */
        {64, 1024, 64, 8, 128, 1, 0, 0},    /* no split */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const int idx = decode_plan(rows[i].b, rows[i].sk, rows[i].hq, rows[i].hkv, rows[i].d, &choice, &p, &plan);
        if (idx < 0)
            return;
        CHECK(a->num_splits == rows[i].splits && plan.merge_in_kernel == rows[i].in_kernel &&
                  plan.combine_early == rows[i].early && a->split_counters == 0,
              "row %zu: splits %d in kernel %d early %d", i, a->num_splits, plan.merge_in_kernel,
              plan.combine_early);
        /* forcing changes the merge, never the split count */
        struct mgpu_attention_fwd_choice forced = choice;
        forced.force_merge = 1;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &forced, &plan);
        CHECK(a->num_splits == rows[i].splits && plan.merge_in_kernel == (rows[i].splits > 1) &&
                  plan.combine_early == 0,
              "row %zu forced in kernel: splits %d in kernel %d", i, a->num_splits, plan.merge_in_kernel);
        forced.force_merge = -1;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &forced, &plan);
        CHECK(a->num_splits == rows[i].splits && plan.merge_in_kernel == 0, "row %zu forced combine: %d", i,
              plan.merge_in_kernel);
    }
    /* Long caches on a device with more DRAM bandwidth than an H100's
     * (H200): the splits fill every SM, one merge warp a row in the kernel;
     * at an H100's bandwidth (or none reported) half the SMs. */
    static const struct mgpu_device_caps h100 = {9, 0, 132, 232448, 3352}, h200 = {9, 0, 132, 232448, 4915};
    /* a 6144-bit HBM3 part at 2619 MHz (about 4 TB/s): the H100's rules */
    static const struct mgpu_device_caps hbm3_6144 = {9, 0, 132, 232448, 4022};
    static const struct {
        int b, sk, d;
        int h100_splits, h200_splits;
    } longs[] = {
        {1, 32768, 128, 8, 16},   /* 8 tiles: 64 or 128 CTAs */
        {1, 131072, 128, 8, 16},
        {2, 32768, 128, 4, 8},    /* 16 tiles */
        {1, 8192, 128, 13, 13},   /* under 1 MiB a split: the wave rule's either way */
        {1, 32768, 64, 15, 15},   /* d64: never (the split fill is off in these rows) */
    };
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
        const int idx = decode_plan(longs[i].b, longs[i].sk, 64, 8, longs[i].d, &choice, &p, &plan);
        if (idx < 0)
            return;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h100, &choice, &plan);
        CHECK(a->num_splits == longs[i].h100_splits, "long row %zu, H100: splits %d", i, a->num_splits);
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hbm3_6144, &choice, &plan);
        CHECK(a->num_splits == longs[i].h100_splits, "long row %zu, 4 TB/s: splits %d", i, a->num_splits);
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h200, &choice, &plan);
        CHECK(a->num_splits == longs[i].h200_splits && (a->num_splits == 1 || plan.merge_in_kernel == 1 ||
                                                         longs[i].h200_splits == longs[i].h100_splits),
              "long row %zu, H200: splits %d in kernel %d", i, a->num_splits, plan.merge_in_kernel);
    }
    /* Tiles of 16 rows (GQA 128/8): half the SMs on either device (16 splits
     * would need two merge warps a row). */
    {
        const int idx = decode_plan(1, 32768, 128, 8, 128, &choice, &p, &plan);
        if (idx < 0)
            return;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h100, &choice, &plan);
        const int on_h100 = a->num_splits;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h200, &choice, &plan);
        CHECK(a->num_splits == on_h100 && on_h100 == 8, "16-row tiles: splits %d (H100 %d)", a->num_splits, on_h100);
    }
    /* The split fill (on here) past 8 key blocks a split only on the faster
     * device: 1 x 32768 keys, d64, 8 tiles: the wave rule's 15 splits of 18
     * blocks, or 16 of 16. */
    {
        struct mgpu_attention_fwd_choice filled = choice;
        filled.split_fill = 0;
        const int idx = decode_plan(1, 32768, 64, 8, 64, &filled, &p, &plan);
        if (idx < 0)
            return;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h100, &filled, &plan);
        CHECK(a->num_splits == 15, "d64 fill, H100: splits %d", a->num_splits);
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h200, &filled, &plan);
        CHECK(a->num_splits == 16 && plan.merge_in_kernel == 1, "d64 fill, H200: splits %d in kernel %d",
              a->num_splits, plan.merge_in_kernel);
    }
    /* More work tiles than counters: the combine kernel, even forced. */
    mgpu_attention_fwd_desc d = base_desc();
    d.batch = 64;
    d.seqlen_q = 1;
    d.seqlen_k = 1024;
    d.heads_q = 128;
    d.heads_kv = 128;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    const int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (idx < 0)
        return;
    choice.force_splits = 2;
    choice.force_merge = 1;
    mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &plan);
    CHECK(a->num_splits == 2 && plan.merge_in_kernel == 0, "8192 tiles: splits %d in kernel %d", a->num_splits,
          plan.merge_in_kernel);
    d.batch = 32; /* 4096 tiles: counters for all */
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &plan);
    CHECK(a->num_splits == 2 && plan.merge_in_kernel == 1, "4096 tiles: splits %d in kernel %d", a->num_splits,
          plan.merge_in_kernel);
}

/* The combine's warps per row: the fewest (a power of two, at most 8) that
 * leave each warp at most 8 splits (past 64 splits: 8 warps); a CTA's rows
 * fill its 8 warps. */
static void test_combine_warps(void)
{
    for (int splits = 1; splits <= MGPU_ATTENTION_FWD_MAX_SPLITS; splits++) {
        const int w = mgpu_attention_fwd_combine_warps(splits);
        const int per = (splits + w - 1) / w;
        CHECK((w & (w - 1)) == 0 && w >= 1 && w <= 8, "splits %d: %d warps", splits, w);
        CHECK(per <= 8 || w == 8, "splits %d: %d per warp of %d", splits, per, w);
        CHECK(w == 1 || (splits + w / 2 - 1) / (w / 2) > 8, "splits %d: %d warps, fewer would do", splits, w);
        CHECK(w * per >= splits, "splits %d: %d warps of %d miss splits", splits, w, per);
        CHECK(mgpu_attention_fwd_combine_rows_per_cta(splits) * w == MGPU_ATTENTION_FWD_COMBINE_THREADS / 32,
              "splits %d: rows per CTA", splits);
    }
    CHECK(mgpu_attention_fwd_combine_warps(8) == 1 && mgpu_attention_fwd_combine_warps(9) == 2 &&
              mgpu_attention_fwd_combine_warps(33) == 8 && mgpu_attention_fwd_combine_warps(128) == 8,
          "combine warps at 8 / 9 / 33 / 128 splits");
    /* The wide share (merge_splits_per_warp 16): one warp up to 16 splits,
     * the same rule past them; 0 is the default share. */
    for (int splits = 1; splits <= MGPU_ATTENTION_FWD_MAX_SPLITS; splits++) {
        const int w = mgpu_attention_fwd_merge_warps(splits, MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP);
        CHECK(mgpu_attention_fwd_merge_warps(splits, 0) == mgpu_attention_fwd_combine_warps(splits) &&
                  mgpu_attention_fwd_merge_warps(splits, MGPU_ATTENTION_FWD_COMBINE_SPLITS_PER_WARP) ==
                      mgpu_attention_fwd_combine_warps(splits),
              "splits %d: the default share", splits);
        CHECK((w & (w - 1)) == 0 && w >= 1 && w <= 8 && w * ((splits + w - 1) / w) >= splits &&
                  ((splits + w - 1) / w <= 16 || w == 8) && (w == 1 || (splits + w / 2 - 1) / (w / 2) > 16),
              "splits %d: %d wide warps", splits, w);
        CHECK(splits > 16 || w == 1, "splits %d: %d wide warps", splits, w);
    }
}

static void test_selection_sm100(void)
{
    static const int dims[] = {64, 96, 128, 192, 256};
    static const mgpu_dtype dtypes[] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    mgpu_status s;
    if (!has_attention_cc(10, 0))
        return;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++) {
            mgpu_attention_fwd_desc d = base_desc(); /* GQA 16 / 4, seqlen_k > seqlen_q, LSE */
            d.dtype = dtypes[t];
            d.head_dim = dims[i];
            const struct mgpu_variant *v = select_sm100(&d, &p, "GQA");
            if (!v)
                continue;
            const int idx = (int)(v - mgpu_variants);
            CHECK(mgpu_select_attention_fwd(&p, &blackwell, v->name, &s) == idx, "forcing %s", v->name);
            const char *other = dims[i] == 64 ? "mgpu_attention_fwd_sm100_bf16_d128" : "mgpu_attention_fwd_sm100_bf16_d64";
            CHECK(mgpu_select_attention_fwd(&p, &blackwell, other, &s) < 0 && s == MGPU_STATUS_NOT_SUPPORTED,
                  "forcing %s for d=%d", other, dims[i]);
            /* a Hopper name is not for this device: ignored */
            CHECK(mgpu_select_attention_fwd(&p, &blackwell, "mgpu_attention_fwd_sm90_bf16_d128", &s) == idx,
                  "a Hopper name on 10.0");
            if (has_attention_cc(9, 0)) {
                const int h = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
                CHECK(h >= 0 && mgpu_variants[h].kind == MGPU_KIND_ATTENTION_FWD_SM90, "9.0 keeps the Hopper kernel");
            }
            const struct mgpu_device_caps blackwell_b = {10, 3, 148, 232448, 0};
            CHECK(mgpu_select_attention_fwd(&p, &blackwell_b, NULL, &s) < 0 && s == MGPU_STATUS_ARCH_MISMATCH,
                  "10.3 has no sm_100a image");

            /* the plan: one CTA per tile of block_m rows, never persistent */
            mgpu_attention_make_plan(&p, v, &blackwell, &plan);
            const unsigned tiles = (unsigned)((1000 + v->attention.block_m - 1) / v->attention.block_m) * 16 * 2;
            CHECK(plan.grid == tiles && !plan.dynamic && plan.args.lpt_group == 0 && plan.args.tile_counter == 0,
                  "%s: grid %u (want %u), dynamic %d", v->name, plan.grid, tiles, plan.dynamic);
            CHECK(plan.q_map.box[0] == 64 && plan.q_map.box[1] == (uint32_t)v->attention.block_m &&
                      plan.k_map.box[1] == (uint32_t)v->attention.block_n &&
                      plan.v_map.box[1] == (uint32_t)v->attention.block_n,
                  "%s: boxes", v->name);
            CHECK(plan.args.group_size == 4 && plan.args.lse_head_stride == 1000 &&
                      plan.args.lse_batch_stride == 16 * 1000,
                  "%s: GQA group, LSE layout", v->name);

            /* every feature takes the same variant */
            struct {
                const char *what;
                int causal, left, right;
                float softcap;
                int varlen, mqa, no_lse;
            } features[] = {
                {"causal", 1, -1, -1, 0.f, 0, 0, 0},
                {"sliding window", 0, 128, 0, 0.f, 0, 0, 0},
                {"causal + left window", 1, 256, -1, 0.f, 0, 0, 0},
                {"soft-cap", 0, -1, -1, 30.f, 0, 0, 0},
                {"varlen", 0, -1, -1, 0.f, 1, 0, 0},
                {"varlen causal soft-cap", 1, -1, -1, 50.f, 1, 0, 0},
                {"MQA", 0, -1, -1, 0.f, 0, 1, 0},
                {"no LSE", 1, -1, -1, 0.f, 0, 0, 1},
            };
            for (size_t f = 0; f < sizeof features / sizeof features[0]; f++) {
                d = base_desc();
                d.dtype = dtypes[t];
                d.head_dim = dims[i];
                d.causal = features[f].causal;
                d.window_left = features[f].left;
                d.window_right = features[f].right;
                d.softcap = features[f].softcap;
                if (features[f].varlen) {
                    d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
                    d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
                    d.total_q = 1800;
                    d.total_k = 2500;
                }
                if (features[f].mqa)
                    d.heads_kv = 1;
                const struct mgpu_variant *fv = features[f].no_lse ? NULL : select_sm100(&d, &p, features[f].what);
                if (features[f].no_lse) {
                    CHECK_STATUS(mgpu_attention_fwd_validate(&d, Q_ADDR, K_ADDR, V_ADDR, O_ADDR, NULL, &p),
                                 MGPU_STATUS_SUCCESS);
                    const int fi = mgpu_select_attention_fwd(&p, &blackwell, NULL, &s);
                    fv = fi >= 0 ? &mgpu_variants[fi] : NULL;
                }
                CHECK(fv == v, "%s d=%d: %s, want %s", features[f].what, dims[i], fv ? fv->name : "none", v->name);
                if (!fv)
                    continue;
                mgpu_attention_make_plan(&p, fv, &blackwell, &plan);
                CHECK(!plan.dynamic && plan.args.lpt_group == 0 && plan.args.causal == features[f].causal &&
                          plan.args.window_left == features[f].left && plan.args.softcap == features[f].softcap &&
                          plan.args.lse == (features[f].no_lse ? 0 : (uint64_t)(uintptr_t)LSE_ADDR),
                      "%s d=%d: plan args", features[f].what, dims[i]);
                if (features[f].varlen)
                    CHECK(plan.args.cu_seqlens_q == 0x1000 && plan.args.lse_batch_stride == 0 &&
                              plan.q_map.dims[1] == 1800 && plan.q_map.dims[3] == 1 &&
                              plan.grid == (unsigned)((1000 + fv->attention.block_m - 1) / fv->attention.block_m) * 16 * 2,
                          "%s d=%d: varlen plan", features[f].what, dims[i]);
                if (features[f].mqa)
                    CHECK(plan.args.group_size == 16 && plan.k_map.dims[2] == 1, "MQA d=%d: group", dims[i]);
            }
        }
    /* head dims without a kernel are NOT_SUPPORTED at validation, on any device */
    mgpu_attention_fwd_desc d = base_desc();
    d.head_dim = 80;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_NOT_SUPPORTED);
}

/* Serving on 10.0: paged K/V, seqused_k and the KV-cache append take the
 * sm_100a kernels (every head dim, both dtypes, with masks, soft-cap, MQA);
 * the plan has the page maps with boxes of gcd(page_size, block_n) rows and
 * none of the decode planning (no GQA packing, no key splits). */
static void test_serving_sm100(void)
{
    static const int dims[] = {64, 96, 128, 192, 256};
    static const mgpu_dtype dtypes[] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    const int32_t *used = (const int32_t *)(uintptr_t)PAGED_USED;
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    mgpu_status s;
    const int append = mgpu_select_kv_cache_append(&blackwell, &s);
    if (!has_attention_cc(10, 0)) {
        CHECK(append < 0 && s == MGPU_STATUS_ARCH_MISMATCH, "append on 10.0 without sm_100a kernels");
        return;
    }
    CHECK(append >= 0 && mgpu_variants[append].kind == MGPU_KIND_KV_CACHE_APPEND &&
              mgpu_variants[append].cc_major == 10 && mgpu_variants[append].cc_minor == 0 &&
              strcmp(mgpu_variants[append].name, "mgpu_kv_cache_append_sm100") == 0 &&
              mgpu_variants[append].threads == MGPU_KV_APPEND_THREADS,
          "append on 10.0: %s", append >= 0 ? mgpu_variants[append].name : mgpu_last_error_message());
    const struct mgpu_device_caps blackwell_b = {10, 3, 148, 232448, 0};
    CHECK(mgpu_select_kv_cache_append(&blackwell_b, &s) < 0 && s == MGPU_STATUS_ARCH_MISMATCH, "append on 10.3");
    CHECK(mgpu_select_attention_fwd_combine(MGPU_DTYPE_BF16, &blackwell, &s) < 0, "no split combine on 10.0");

    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++) {
            mgpu_attention_fwd_desc d = paged_desc();
            d.dtype = dtypes[t];
            d.head_dim = dims[i];
            const struct mgpu_variant *v = select_sm100(&d, &p, "paged");
            if (!v)
                continue;
            const int bm = v->attention.block_m, bn = v->attention.block_n, hd = dims[i];
            /* a workspace is offered: still no split, and no packing (GQA 4:1 decode) */
            const struct mgpu_attention_fwd_choice choice = {(size_t)32 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
            mgpu_attention_make_plan_ex(&p, v, &blackwell, &choice, &plan);
            const struct mgpu_attention_fwd_args *a = &plan.args;
            CHECK(a->block_table == PAGED_TABLE && a->seqused_k == PAGED_USED && a->page_size == 256 &&
                      a->block_table_stride == 12 && a->num_pages == 100 && a->page_box_rows == bn,
                  "%s paged args: box %d", v->name, a->page_box_rows);
            CHECK(plan.k_map.rank == 4 && plan.k_map.dims[0] == (uint64_t)hd && plan.k_map.dims[1] == 256 &&
                      plan.k_map.dims[2] == 8 && plan.k_map.dims[3] == 100 && plan.k_map.box[0] == 64 &&
                      plan.k_map.box[1] == (uint32_t)bn && plan.k_map.box[2] == 1 && plan.k_map.box[3] == 1 &&
                      plan.k_map.byte_strides[0] == (uint64_t)8 * hd * 2 &&
                      plan.k_map.byte_strides[1] == (uint64_t)hd * 2 &&
                      plan.k_map.byte_strides[2] == (uint64_t)256 * 8 * hd * 2,
                  "%s paged k map", v->name);
            CHECK(memcmp(plan.v_map.dims, plan.k_map.dims, sizeof plan.k_map.dims) == 0 &&
                      memcmp(plan.v_map.box, plan.k_map.box, sizeof plan.k_map.box) == 0,
                  "%s paged v map", v->name);
            CHECK(plan.q_map.rank == 4 && plan.q_map.box[1] == (uint32_t)bm, "%s q map unpacked", v->name);
            CHECK(a->pack_gqa == 0 && a->num_splits == 1 && a->tile_heads == 32 && a->tile_queries == bm &&
                      plan.workspace_bytes == 0 && plan.grid == 32 * 4 && !plan.dynamic && a->lpt_group == 0,
                  "%s: pack %d splits %d grid %u", v->name, a->pack_gqa, a->num_splits, plan.grid);
            /* pages smaller than a key block, and not dividing it: boxes of gcd(page, block_n) rows */
            static const struct { int page, entries; unsigned box; } small_pages[] = {{16, 200, 16}, {48, 63, 16}, {96, 32, 32}};
            for (unsigned j = 0; j < sizeof small_pages / sizeof small_pages[0]; j++) {
                d.page_size = small_pages[j].page;
                d.max_blocks_per_seq = small_pages[j].entries;
                CHECK(select_sm100(&d, &p, "paged, small pages") == v, "page %d", small_pages[j].page);
                mgpu_attention_make_plan(&p, v, &blackwell, &plan);
                CHECK(a->page_box_rows == (int32_t)small_pages[j].box && plan.k_map.box[1] == small_pages[j].box &&
                          plan.v_map.box[1] == small_pages[j].box && plan.v_map.dims[1] == (uint64_t)small_pages[j].page,
                      "%s page %d: box %d", v->name, small_pages[j].page, a->page_box_rows);
                /* the sm_100a kernel is launched as before (no griddepcontrol) */
                CHECK(plan.programmatic == 0, "%s paged: programmatic %d", v->name, plan.programmatic);
            }
            /* masks, soft-cap, MQA and prefill-length queries with pages */
            d.page_size = 256;
            d.max_blocks_per_seq = 12;
            d.seqlen_q = 700;
            d.causal = 1;
            d.window_left = 512;
            d.softcap = 30.f;
            d.heads_kv = 1;
            CHECK(select_sm100(&d, &p, "paged causal window soft-cap MQA") == v, "paged features");
            mgpu_attention_make_plan(&p, v, &blackwell, &plan);
            CHECK(a->causal == 1 && a->window_left == 512 && a->softcap == 30.f && a->group_size == 32 &&
                      plan.k_map.dims[2] == 1 && a->page_box_rows == bn &&
                      plan.grid == (unsigned)((700 + bm - 1) / bm) * 32 * 4 && !plan.dynamic,
                  "%s paged features: grid %u", v->name, plan.grid);
            /* seqused_k alone: the contiguous maps, per-sequence key counts */
            d = base_desc();
            d.dtype = dtypes[t];
            d.head_dim = dims[i];
            d.seqused_k = used;
            CHECK(select_sm100(&d, &p, "seqused_k") == v, "seqused_k");
            mgpu_attention_make_plan_ex(&p, v, &blackwell, &choice, &plan);
            CHECK(a->seqused_k == PAGED_USED && a->block_table == 0 && a->page_box_rows == 0 &&
                      plan.k_map.dims[1] == 1500 && plan.k_map.dims[3] == 2 && plan.k_map.box[1] == (uint32_t)bn &&
                      a->num_splits == 1 && a->pack_gqa == 0,
                  "%s seqused_k plan", v->name);
            /* fp8 inputs take no cache on any device (the fp8 kernel is sm_90a's: test_fp8) */
            d.qkv_fp8 = 1;
            CHECK_STATUS(validate(&d, &p), MGPU_STATUS_NOT_SUPPORTED);
        }
}

/* ---- fp8 inputs (qkv_fp8) ------------------------------------------------ */

#define DESCALE_ADDR ((const float *)(uintptr_t)0x7f6000000000)

static void test_fp8(void)
{
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    mgpu_status s;
    /* validation: values (INVALID_VALUE) and what the kernel lacks (NOT_SUPPORTED) */
    EXPECT(d_.qkv_fp8 = 1, MGPU_STATUS_SUCCESS);
    CHECK(p.qkv_fp8 == 1 && p.q_descale == 0, "fp8 problem");
    EXPECT((d_.qkv_fp8 = 1, d_.q_descale = d_.k_descale = d_.v_descale = DESCALE_ADDR, d_.descale_head_stride = 1,
            d_.descale_batch_stride = 4),
           MGPU_STATUS_SUCCESS);
    CHECK(p.q_descale == (uintptr_t)DESCALE_ADDR && p.descale_batch_stride == 4 && p.descale_head_stride == 1,
          "descale fields");
    EXPECT(d_.qkv_fp8 = 2, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.q_descale = DESCALE_ADDR, MGPU_STATUS_INVALID_VALUE);           /* descales without fp8 */
    EXPECT(d_.descale_head_stride = 1, MGPU_STATUS_INVALID_VALUE);
    EXPECT((d_.qkv_fp8 = 1, d_.v_descale = (const float *)((uintptr_t)DESCALE_ADDR + 2)), MGPU_STATUS_INVALID_VALUE);
    EXPECT((d_.qkv_fp8 = 1, d_.descale_batch_stride = -1), MGPU_STATUS_INVALID_VALUE);
    EXPECT((d_.qkv_fp8 = 1, d_.descale_batch_stride = INT64_MAX / 2), MGPU_STATUS_INVALID_VALUE);
    EXPECT((d_.qkv_fp8 = 1, d_.head_dim = 64), MGPU_STATUS_NOT_SUPPORTED);
    EXPECT((d_.qkv_fp8 = 1, d_.seqused_k = (const int32_t *)DESCALE_ADDR), MGPU_STATUS_NOT_SUPPORTED);
    EXPECT((d_.qkv_fp8 = 1, d_.q_strides.head = 136, d_.q_strides.seq = 16 * 136, d_.q_strides.batch = 1000 * 16 * 136),
           MGPU_STATUS_NOT_SUPPORTED); /* a multiple of 8, not of 16, elements */
    EXPECT((d_.qkv_fp8 = 1, d_.dtype = MGPU_DTYPE_E4M3), MGPU_STATUS_UNSUPPORTED_DTYPE); /* O stays 16-bit */
    /* a descriptor of the pre-fp8 size reads the fp8 fields as 0 */
    {
        mgpu_attention_fwd_desc d = base_desc();
        d.struct_size = MGPU_ATTENTION_FWD_DESC_SIZE_V2;
        d.qkv_fp8 = 1;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        CHECK(p.qkv_fp8 == 0, "V2 descriptor: fp8 fields ignored");
    }

    if (!has_attention_cc(9, 0))
        return;
    static const mgpu_dtype outs[] = {MGPU_DTYPE_BF16, MGPU_DTYPE_F16};
    for (int i = 0; i < 2; i++) {
        mgpu_attention_fwd_desc d = base_desc();
        d.dtype = outs[i];
        d.qkv_fp8 = 1;
        d.k_descale = DESCALE_ADDR;
        d.descale_head_stride = 1;
        d.seqlen_q = 4; /* a decode shape: still neither packed nor split */
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        const int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
        CHECK(idx >= 0, "fp8 select: %s", mgpu_last_error_message());
        if (idx < 0)
            return;
        const struct mgpu_variant *v = &mgpu_variants[idx];
        CHECK(v->kind == MGPU_KIND_ATTENTION_FWD_FP8_SM90 && v->dtype == (int)outs[i] && v->attention.head_dim == 128,
              "fp8 picked %s", v->name);
        const struct mgpu_attention_fwd_choice choice = {(size_t)1 << 30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        mgpu_attention_make_plan_ex(&p, v, &hopper, &choice, &plan);
        CHECK(plan.args.pack_gqa == 0 && plan.args.num_splits == 1 && plan.workspace_bytes == 0, "fp8: no packing, no "
              "splits");
        CHECK(plan.args.k_descale == (uint64_t)(uintptr_t)DESCALE_ADDR && plan.args.q_descale == 0 &&
                  plan.args.descale_head_stride == 1 && plan.args.descale_batch_stride == 0,
              "fp8 descale args");
        const struct mgpu_tensor_map_desc *maps[3] = {&plan.q_map, &plan.k_map, &plan.v_map};
        for (int m = 0; m < 3; m++)
            CHECK(maps[m]->type == MGPU_MAP_U8 && maps[m]->box[0] == 128 && maps[m]->dims[0] == 128 &&
                      maps[m]->byte_strides[0] == (uint64_t)(m == 0 ? 16 : 4) * 128 && maps[m]->swizzle_128b,
                  "fp8 map %d over bytes", m);
        /* 16-bit calls never get the fp8 kind, nor fp8 calls the 16-bit one */
        d.qkv_fp8 = 0;
        d.k_descale = NULL;
        d.descale_head_stride = 0;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        const int idx16 = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
        CHECK(idx16 >= 0 && mgpu_variants[idx16].kind == MGPU_KIND_ATTENTION_FWD_SM90, "16-bit select");
    }
    /* long unmasked calls: one CTA per tile; short ones: the persistent grid */
    mgpu_attention_fwd_desc d = base_desc();
    d.qkv_fp8 = 1;
    d.seqlen_q = d.seqlen_k = 1024;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (idx >= 0) {
        mgpu_attention_make_plan(&p, &mgpu_variants[idx], &hopper, &plan);
        CHECK(plan.grid == 132, "fp8 persistent grid %u", plan.grid);
    }
    /* V^T from the workspace: its bytes, the twin and pre-pass variants, the
     * V map over the workspace and the pre-pass's grid
     * (abi/attention_fwd_fp8_abi.h, "V^T from the workspace") */
    d = base_desc(); /* 2 x 1500 keys, 4 KV heads: 12 blocks of 128 */
    d.qkv_fp8 = 1;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_fwd_fp8_vt_bytes(&p) == (size_t)2 * 4 * 12 * 128 * 128, "V^T bytes %zu",
          mgpu_attention_fwd_fp8_vt_bytes(&p));
    int transpose = -1;
    const int twin = mgpu_select_attention_fwd_fp8_vt(p.dtype, &hopper, NULL, &transpose, &s);
    CHECK(twin >= 0 && mgpu_variants[twin].kind == MGPU_KIND_ATTENTION_FWD_FP8_VT_SM90 &&
              mgpu_variants[twin].dtype == MGPU_DTYPE_BF16 && transpose >= 0 &&
              mgpu_variants[transpose].kind == MGPU_KIND_ATTENTION_FWD_FP8_TRANSPOSE_V_SM90,
          "fp8 V^T variants");
    {
        int t2 = -1;
        const int forced = mgpu_select_attention_fwd_fp8_vt(MGPU_DTYPE_F16, &hopper,
                                                            "mgpu_attention_fwd_fp8_vt_sm90_e4m3_f16_d128", &t2, &s);
        CHECK(forced >= 0 && mgpu_variants[forced].dtype == MGPU_DTYPE_F16 && t2 == transpose, "forced V^T twin");
    }
    {
        struct mgpu_attention_fwd_fp8_vt_args vt;
        unsigned grid[3];
        mgpu_attention_fwd_plan_fp8_vt(&p, 0x10000, &plan, &vt, grid);
        CHECK(grid[0] == 12 && grid[1] == 4 && grid[2] == 2 && vt.vt == 0x10000 && vt.vt_head_stride == 12 * 128 * 128 &&
                  vt.vt_batch_stride == 4 * 12 * 128 * 128 && vt.v_seq_stride == 4 * 128 && vt.seqlen_k == 1500,
              "fp8 V^T pre-pass args");
        CHECK(plan.v_map.base == 0x10000 && plan.v_map.type == MGPU_MAP_U8 && plan.v_map.dims[1] == 12 * 128 &&
                  plan.v_map.dims[3] == 2 && plan.v_map.box[0] == 128 && plan.v_map.box[1] == 128 &&
                  plan.v_map.byte_strides[0] == 128 && plan.v_map.byte_strides[1] == 12 * 128 * 128,
              "fp8 V^T map");
    }
    CHECK(mgpu_attention_fwd_fp8_vt_pays(&p), "V^T pays: 8 query tiles x group 4");
    /* varlen: floor(total_k / 128) + batch blocks a KV head, one batch */
    d.cu_seqlens_q = d.cu_seqlens_k = (const int32_t *)DESCALE_ADDR;
    d.total_q = 1000;
    d.total_k = 1000;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_fwd_fp8_vt_bytes(&p) == (size_t)(7 + 2) * 4 * 128 * 128, "varlen V^T bytes %zu",
          mgpu_attention_fwd_fp8_vt_bytes(&p));
    d.cu_seqlens_q = d.cu_seqlens_k = NULL;
    d.total_q = d.total_k = 0;
    /* more KV heads than a grid's y extent: no V^T (the kernel transposes) */
    d.heads_q = d.heads_kv = 70000;
    d.seqlen_q = d.seqlen_k = 128;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_fwd_fp8_vt_bytes(&p) == 0, "V^T with 70000 KV heads");
    /* more sequences than a grid's z extent (fixed length): none either */
    d.heads_q = d.heads_kv = 1;
    d.batch = 70000;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_fwd_fp8_vt_bytes(&p) == 0, "V^T with 70000 sequences");
    d.batch = 2;
    /* 8 query tiles per KV head (B=16 S=1024 MHA): the in-kernel transpose */
    d.heads_q = d.heads_kv = 16;
    d.seqlen_q = d.seqlen_k = 1024;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_fwd_fp8_vt_bytes(&p) > 0 && !mgpu_attention_fwd_fp8_vt_pays(&p), "V^T does not pay at 8 tiles");
    d.seqlen_q = d.seqlen_k = 2048;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_fwd_fp8_vt_pays(&p), "V^T pays at 16 tiles");

    /* 10.0: no fp8 attention kernel, a clear refusal */
    d = base_desc();
    d.qkv_fp8 = 1;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_select_attention_fwd(&p, &blackwell, NULL, &s) < 0 &&
              (s == MGPU_STATUS_NOT_SUPPORTED || s == MGPU_STATUS_ARCH_MISMATCH) && mgpu_last_error_message()[0],
          "fp8 on 10.0: %s", mgpu_status_string(s));
}

/* Which decode calls launch the main kernel for programmatic dependent
 * launch: all inference calls, and decode steps on the decode entry at head
 * dims above 64, but long key loops on a full grid (132 SMs). */
static void test_programmatic_plan(void)
{
    if (!has_attention_cc(9, 0))
        return;
    static const struct {
        int batch, seqlen_k, heads_q, heads_kv, head_dim;
        unsigned grid;
        int programmatic;
    } rows[] = {
        {1, 1024, 64, 8, 128, 64, 1},     /* 8 splits of one key block */
        {1, 131072, 64, 8, 128, 64, 1},   /* 128 key blocks a CTA, half the SMs */
        {8, 8192, 64, 8, 128, 128, 1},    /* a full grid, 32 key blocks a CTA */
        {8, 32768, 64, 8, 128, 128, 0},   /* a full grid, 128 key blocks a CTA */
        {8, 32768, 64, 8, 64, 128, 0},
        {8, 8192, 32, 32, 128, 256, 1},   /* MHA without splits: a decode step on the decode entry */
        {8, 1024, 32, 32, 128, 256, 1},
        {8, 8192, 32, 32, 256, 256, 1},
        {8, 32768, 32, 32, 128, 256, 0},  /* a full grid, 256 key blocks a CTA */
        {8, 8192, 32, 32, 64, 256, 0},    /* head dim 64: launched as before */
    };
    const struct mgpu_attention_fwd_choice choice = {(size_t)1 << 30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan;
        if (decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, rows[i].head_dim, &choice,
                        &p, &plan) < 0)
            continue;
        CHECK(plan.grid == rows[i].grid && plan.programmatic == rows[i].programmatic,
              "row %zu: grid %u (want %u), programmatic %d (want %d)", i, plan.grid, rows[i].grid, plan.programmatic,
              rows[i].programmatic);
    }
}

/* The decode entry: fixed-length decode steps, and other inference calls
 * with one query tile per (sequence, tile head) and no persistent grid, on
 * the grid {splits, tile heads, batch}; its variant has the forward
 * variant's dtype and tiles; forcing it off, or on for a call the planner
 * leaves to the general kernel; never past the grid's limits or with
 * several query tiles; varlen only forced. */
static void test_decode_entry_plan(void)
{
    const struct {
        int batch, seqlen_k, heads_q, heads_kv, head_dim;
        int decode; /* the planner's choice */
    } rows[] = {
        {1, 1024, 64, 8, 128, 1},    /* packed, 8 splits */
        {8, 8192, 64, 8, 64, 1},     /* packed, splits */
        {1, 131072, 8, 1, 128, 1},   /* MQA, splits */
        {1, 1024, 32, 32, 256, 1},   /* MHA with splits */
        {8, 1024, 32, 32, 128, 1},   /* MHA without splits: no inference feature, a decode step */
        {70000, 1024, 8, 8, 64, 0},  /* MHA, no split: batch past the grid's z */
    };
    const struct mgpu_attention_fwd_choice choice = {(size_t)1 << 30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan;
        const int idx = decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv,
                                    rows[i].head_dim, &choice, &p, &plan);
        if (idx < 0)
            continue;
        CHECK(plan.decode_entry == rows[i].decode, "row %zu: decode entry %d (want %d)", i, plan.decode_entry,
              rows[i].decode);
        if (plan.decode_entry) {
            const struct mgpu_attention_fwd_args *a = &plan.args;
            CHECK(plan.decode_grid[0] == (unsigned)a->num_splits && plan.decode_grid[1] == (unsigned)a->tile_heads &&
                      plan.decode_grid[2] == (unsigned)rows[i].batch &&
                      plan.grid == plan.decode_grid[0] * plan.decode_grid[1] * plan.decode_grid[2] &&
                      !plan.dynamic && a->tile_counter == 0,
                  "row %zu: decode grid {%u, %u, %u}, grid %u", i, plan.decode_grid[0], plan.decode_grid[1],
                  plan.decode_grid[2], plan.grid);
            const int e = mgpu_select_attention_fwd_decode(&mgpu_variants[idx], &hopper);
            CHECK(e >= 0 && mgpu_variants[e].kind == MGPU_KIND_ATTENTION_FWD_DECODE_SM90 &&
                      mgpu_variants[e].dtype == mgpu_variants[idx].dtype &&
                      mgpu_variants[e].attention.head_dim == rows[i].head_dim &&
                      mgpu_variants[e].smem_bytes == mgpu_variants[idx].smem_bytes,
                  "row %zu: decode variant %d", i, e);
        }
        struct mgpu_attention_fwd_choice forced = choice;
        forced.force_decode_entry = -1;
        decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, rows[i].head_dim, &forced,
                    &p, &plan);
        CHECK(!plan.decode_entry, "row %zu: forced off", i);
        forced.force_decode_entry = 1;
        decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, rows[i].head_dim, &forced,
                    &p, &plan);
        CHECK(plan.decode_entry == (rows[i].batch <= 65535), "row %zu: forced on: %d", i, plan.decode_entry);
        if (plan.decode_entry)
            CHECK(plan.grid == plan.decode_grid[0] * plan.decode_grid[1] * plan.decode_grid[2] && !plan.dynamic,
                  "row %zu: forced on, grid %u", i, plan.grid);
    }
    /* several query tiles: never */
    mgpu_attention_fwd_desc d = base_desc();
    d.seqlen_q = 129;
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    mgpu_status s;
    const int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (idx >= 0) {
        struct mgpu_attention_fwd_choice forced = choice;
        forced.force_decode_entry = 1;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &forced, &plan);
        CHECK(!plan.decode_entry, "seqlen_q 129: decode entry");
    }
    /* one query tile, no inference feature, more than one query: the general kernel */
    d.seqlen_q = 100;
    d.seqlen_k = 100;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    const int prefill = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (prefill >= 0) {
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[prefill], &hopper, &choice, &plan);
        CHECK(!plan.decode_entry && !plan.args.pack_gqa && plan.args.num_splits == 1, "short prefill: decode entry");
    }
    /* varlen decode (packed, split): the general kernel, forced or not */
    d = base_desc();
    d.seqlen_q = 1;
    d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
    d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
    d.total_q = 2;
    d.total_k = 3000;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    const int varlen = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (varlen >= 0) {
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[varlen], &hopper, &choice, &plan);
        CHECK(!plan.decode_entry && plan.args.pack_gqa, "varlen decode: decode entry %d", plan.decode_entry);
        struct mgpu_attention_fwd_choice forced = choice;
        forced.force_decode_entry = 1;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[varlen], &hopper, &forced, &plan);
        CHECK(!plan.decode_entry && plan.args.pack_gqa, "varlen decode forced: decode entry %d", plan.decode_entry);
    }
}

/* The 64-row decode entry (one consumer warpgroup): planned for decode-entry
 * calls whose rows fit 64 when the variant exists (choice.decode64), with
 * its tiles (tile_queries, Q box), its 4-warp merge and its forcing. */
static void test_decode64_plan(void)
{
    static const struct {
        int batch, seqlen_k, heads_q, heads_kv, head_dim;
        int decode64; /* the planner's choice */
    } rows[] = {
        {1, 1024, 64, 8, 128, 0},   /* packed, 8 splits: the 128-row entry merges them in the kernel */
        {8, 8192, 64, 8, 128, 0},   /* packed, 2 splits: the same */
        {1, 8192, 64, 8, 128, 1},   /* packed, 16 splits: the combine kernel either way */
        {1, 8192, 64, 8, 64, 1},    /* the same at d64 */
        {64, 1024, 64, 8, 128, 1},  /* packed, no splits */
        {1, 131072, 8, 1, 128, 1},  /* MQA, splits */
        {8, 1024, 32, 32, 128, 1},  /* MHA d128, one row a tile */
        {1, 1024, 32, 32, 128, 1},  /* MHA d128, splits merged in the kernel (one row) */
        {1, 8192, 32, 32, 64, 0},   /* MHA d64 */
        {1, 8192, 128, 1, 128, 0},  /* group 128: more than 64 rows */
    };
    /* the wave rule's split counts (the split fill: test_split_fill_plan) */
    const struct mgpu_attention_fwd_choice choice = {(size_t)1 << 30, 0, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0, 0};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan;
        const int idx = decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv,
                                    rows[i].head_dim, &choice, &p, &plan);
        if (idx < 0)
            continue;
        CHECK(plan.decode_entry && plan.decode64 == rows[i].decode64, "row %zu: decode64 %d (want %d)", i,
              plan.decode64, rows[i].decode64);
        const struct mgpu_attention_fwd_args *a = &plan.args;
        if (plan.decode64) {
            const int group = rows[i].heads_q / rows[i].heads_kv;
            const uint32_t box_rows = a->pack_gqa ? plan.q_map.box[1] * plan.q_map.box[2] : plan.q_map.box[1];
            CHECK(a->tile_queries == (a->pack_gqa ? 64 / group : 64) && box_rows <= 64 &&
                      plan.decode_grid[0] == (unsigned)a->num_splits &&
                      plan.grid == plan.decode_grid[0] * plan.decode_grid[1] * plan.decode_grid[2],
                  "row %zu: tile_queries %d, Q box rows %u", i, a->tile_queries, box_rows);
            CHECK(!plan.merge_in_kernel ||
                      mgpu_attention_fwd_merge_warps(a->num_splits, a->merge_splits_per_warp) *
                              (a->pack_gqa ? group : 1) <=
                          4,
                  "row %zu: merge in the kernel past 4 warps (%d splits)", i, a->num_splits);
            const int e = mgpu_select_attention_fwd_decode64(&mgpu_variants[idx], &hopper, mgpu_variants[idx].attention.block_n);
            CHECK(e >= 0 && mgpu_variants[e].kind == MGPU_KIND_ATTENTION_FWD_DECODE64_SM90 &&
                      mgpu_variants[e].dtype == mgpu_variants[idx].dtype &&
                      mgpu_variants[e].attention.head_dim == rows[i].head_dim &&
                      mgpu_variants[e].attention.block_m == 64 && mgpu_variants[e].threads == 256,
                  "row %zu: decode64 variant %d", i, e);
            CHECK(mgpu_attention_fwd_decode_forced(mgpu_variants[e].name, &mgpu_variants[idx], NULL) == 64,
                  "row %zu: forced by name", i);
            /* a decode entry of another head dim or dtype: the call cannot run it */
            for (int o = 0; o < mgpu_variant_count; o++) {
                const struct mgpu_variant *other = &mgpu_variants[o];
                if ((other->kind == MGPU_KIND_ATTENTION_FWD_DECODE64_SM90 ||
                     other->kind == MGPU_KIND_ATTENTION_FWD_DECODE_SM90) &&
                    (other->dtype != mgpu_variants[idx].dtype ||
                     other->attention.head_dim != mgpu_variants[idx].attention.head_dim))
                    CHECK(mgpu_attention_fwd_decode_forced(other->name, &mgpu_variants[idx], NULL) == -1,
                          "row %zu: %s forced on %s", i, other->name, mgpu_variants[idx].name);
            }
        }
        struct mgpu_attention_fwd_choice forced = choice;
        forced.force_decode64 = 1;
        decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, rows[i].head_dim, &forced,
                    &p, &plan);
        CHECK(plan.decode64 == (rows[i].heads_q / rows[i].heads_kv <= 64), "row %zu: forced on: %d", i,
              plan.decode64);
        CHECK(!plan.decode64 || !plan.merge_in_kernel ||
                  mgpu_attention_fwd_merge_warps(plan.args.num_splits, plan.args.merge_splits_per_warp) *
                              (plan.args.pack_gqa ? 8 : 1) <=
                          4,
              "row %zu: forced on: merge in the kernel past 4 warps", i);
        forced = choice;
        forced.force_decode64 = -1;
        decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, rows[i].head_dim, &forced,
                    &p, &plan);
        CHECK(plan.decode_entry && !plan.decode64, "row %zu: forced off", i);
        forced = choice;
        forced.decode64 = 0;
        decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, rows[i].head_dim, &forced,
                    &p, &plan);
        CHECK(!plan.decode64, "row %zu: no 64-row variant", i);
        forced = choice;
        forced.force_decode_entry = -1;
        decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, rows[i].head_dim, &forced,
                    &p, &plan);
        CHECK(!plan.decode_entry && !plan.decode64, "row %zu: decode entry off", i);
    }
    /* head dims without a 64-row variant */
    static const int dims[] = {96, 192, 256};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan;
        const int idx = decode_plan(1, 8192, 64, 8, dims[i], &choice, &p, &plan);
        if (idx >= 0)
            CHECK(mgpu_select_attention_fwd_decode64(&mgpu_variants[idx], &hopper, mgpu_variants[idx].attention.block_n) < 0, "d%d: a 64-row variant",
                  dims[i]);
    }
}

/* The 64-row decode entry's 64-row key blocks (head dim 128): planned for
 * 64-row entry calls without splits over more than a wave of CTAs and at
 * most 4096 keys; the plan's key blocks (maps, paged boxes) are then 64
 * rows; forcing either way; the entry itself by dtype, head dim and key
 * block, by name too. */
static void test_decode64_short_plan(void)
{
    static const struct {
        int batch, seqlen_k, heads_q, heads_kv, page;
        int want; /* the planner's choice */
    } rows[] = {
        {64, 1024, 64, 8, 0, 1},   /* packed, 512 CTAs, short */
        {32, 2048, 64, 8, 0, 1},   /* packed, 256 CTAs */
        {8, 1024, 32, 32, 0, 1},   /* MHA, 256 CTAs */
        {64, 1024, 32, 32, 0, 1},  /* MHA, 2048 CTAs */
        {16, 4096, 32, 32, 0, 1},  /* MHA, 512 CTAs, 4096 keys */
        {64, 1024, 64, 8, 16, 1},  /* paged, 16-row pages */
        {16, 1024, 64, 8, 0, 0},   /* 128 CTAs: one wave */
        {64, 8192, 64, 8, 0, 0},   /* long caches */
        {8, 8192, 32, 32, 0, 0},   /* the same, MHA */
        {1, 8192, 32, 32, 0, 0},   /* splits */
        {1, 131072, 8, 1, 0, 0},   /* MQA, splits */
        {1, 1024, 64, 8, 0, 0},    /* the 128-row entry (splits merged in the kernel) */
    };
    const struct mgpu_attention_fwd_choice choice = {(size_t)1 << 30, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0};
    if (!has_attention_cc(9, 0))
        return;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan;
        const int idx = paged_decode_plan(rows[i].batch, rows[i].seqlen_k, rows[i].heads_q, rows[i].heads_kv, 128,
                                          rows[i].page, &choice, &p, &plan);
        if (idx < 0)
            continue;
        const struct mgpu_variant *fwd = &mgpu_variants[idx];
        const int is_short = plan.decode64 && plan.decode64_block_n == MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N;
        CHECK(is_short == rows[i].want, "row %zu: decode64 %d, key block %d (want short %d)", i, plan.decode64,
              plan.decode64_block_n, rows[i].want);
        if (is_short) {
            CHECK(plan.args.num_splits == 1 && plan.grid > 132 && plan.k_map.box[1] == (rows[i].page ? 16u : 64u) &&
                      plan.args.paged_gather == (rows[i].page == 16),
                  "row %zu: splits %d grid %u K box rows %u gather %d", i, plan.args.num_splits, plan.grid,
                  plan.k_map.box[1], plan.args.paged_gather);
            const int e = mgpu_select_attention_fwd_decode64(fwd, &hopper, MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N);
            int block_n = 0;
            CHECK(e >= 0 && mgpu_variants[e].attention.block_n == 64 && mgpu_variants[e].attention.block_m == 64 &&
                      mgpu_variants[e].dtype == fwd->dtype && mgpu_variants[e].attention.head_dim == 128 &&
                      mgpu_attention_fwd_decode_forced(mgpu_variants[e].name, fwd, &block_n) == 64 && block_n == 64,
                  "row %zu: short entry %d, forced by name: key block %d", i, e, block_n);
            const int e128 = mgpu_select_attention_fwd_decode64(fwd, &hopper, fwd->attention.block_n);
            CHECK(e128 >= 0 && e128 != e && mgpu_variants[e128].attention.block_n == fwd->attention.block_n &&
                      mgpu_attention_fwd_decode_forced(mgpu_variants[e128].name, fwd, &block_n) == 64 &&
                      block_n == fwd->attention.block_n,
                  "row %zu: the forward's key block entry %d", i, e128);
        }
        struct mgpu_attention_fwd_choice forced = choice;
        forced.force_decode64_short = -1;
        mgpu_attention_make_plan_ex(&p, fwd, &hopper, &forced, &plan);
        CHECK(!plan.decode64 || plan.decode64_block_n == fwd->attention.block_n, "row %zu: forced off", i);
        forced = choice;
        forced.decode64_short = 0;
        mgpu_attention_make_plan_ex(&p, fwd, &hopper, &forced, &plan);
        CHECK(!plan.decode64 || plan.decode64_block_n == fwd->attention.block_n, "row %zu: no short entry", i);
        /* forced on: the 64-row entry too (every row here fits 64) */
        forced = choice;
        forced.force_decode64_short = 1;
        mgpu_attention_make_plan_ex(&p, fwd, &hopper, &forced, &plan);
        CHECK(plan.decode64 && plan.decode64_block_n == MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N,
              "row %zu: forced on: decode64 %d key block %d", i, plan.decode64, plan.decode64_block_n);
        /* both forced, the entry off: the 128-row entry */
        forced.force_decode64 = -1;
        mgpu_attention_make_plan_ex(&p, fwd, &hopper, &forced, &plan);
        CHECK(plan.decode_entry && !plan.decode64, "row %zu: 64-row entry forced off", i);
    }
    /* MHA at head dim 64 (unpacked): the 64-row entry over more than a
     * wave without splits where DRAM is faster than 4.5 TB/s, never on an
     * H100 (DRAM bandwidth unknown: the H100 rule) */
    {
        static const struct mgpu_device_caps h100 = {9, 0, 132, 232448, 3352}, h200 = {9, 0, 132, 232448, 4915};
        static const struct {
            int batch, seqlen_k, want_h200;
        } mha[] = {{8, 1024, 1}, {8, 8192, 1}, {1, 8192, 0}};
        struct mgpu_attention_fwd_choice d64 = choice;
        d64.decode64_short = 0; /* none at head dim 64 */
        for (size_t i = 0; i < sizeof mha / sizeof mha[0]; i++) {
            struct mgpu_attention_problem p;
            struct mgpu_attention_plan plan;
            const int idx = decode_plan(mha[i].batch, mha[i].seqlen_k, 32, 32, 64, &d64, &p, &plan);
            if (idx < 0)
                continue;
            CHECK(!plan.decode64, "MHA d64 row %zu: decode64 without the DRAM bandwidth", i);
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h100, &d64, &plan);
            CHECK(!plan.decode64, "MHA d64 row %zu: decode64 on an H100", i);
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &h200, &d64, &plan);
            CHECK(plan.decode64 == mha[i].want_h200 && (!plan.decode64 || (plan.args.num_splits == 1 &&
                                                                           plan.decode64_block_n == 128)),
                  "MHA d64 row %zu: decode64 %d on an H200 (splits %d)", i, plan.decode64, plan.args.num_splits);
        }
    }
    /* Paged at head dim 64: the 64-row entry split to about two CTAs an SM
     * where the planner's 64-row plan leaves a CTA or less an SM (at most
     * twice its splits); not where splits or the entry are forced, nor on
     * contiguous caches, nor where the grid exceeds the SMs already. */
    {
        static const struct {
            int batch, seqlen_k, page, splits; /* splits 0: the rule does not apply */
            int decode64, plain_splits;        /* where it does not: the plan */
        } paged[] = {{8, 32768, 16, 4, 1, 0},  {8, 8192, 16, 4, 1, 0}, {8, 32768, 64, 4, 1, 0},
                     {8, 32768, 0, 0, 0, 2},   /* contiguous: the 128-row entry, 2 splits */
                     {64, 1024, 16, 0, 1, 1},  /* 512 CTAs already */
                     {1, 1024, 16, 0, 0, 8}};  /* 8 splits, one a key block: no more to add */
        struct mgpu_attention_fwd_choice d64 = choice;
        d64.decode64_short = 0;
        for (size_t i = 0; i < sizeof paged / sizeof paged[0]; i++) {
            struct mgpu_attention_problem p;
            struct mgpu_attention_plan plan;
            const int idx =
                paged_decode_plan(paged[i].batch, paged[i].seqlen_k, 64, 8, 64, paged[i].page, &d64, &p, &plan);
            if (idx < 0)
                continue;
            if (paged[i].splits)
                CHECK(plan.decode64 && plan.args.num_splits == paged[i].splits &&
                          plan.grid == (unsigned)(paged[i].splits * 8 * paged[i].batch),
                      "paged d64 row %zu: decode64 %d, splits %d, grid %u", i, plan.decode64, plan.args.num_splits,
                      plan.grid);
            else
                CHECK(plan.decode64 == paged[i].decode64 && plan.args.num_splits == paged[i].plain_splits,
                      "paged d64 row %zu: decode64 %d, splits %d, grid %u", i, plan.decode64, plan.args.num_splits,
                      plan.grid);
            struct mgpu_attention_fwd_choice forced = d64;
            forced.force_splits = 2;
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &forced, &plan);
            CHECK(plan.args.num_splits == 2 || (paged[i].batch == 64 && plan.args.num_splits == 1),
                  "paged d64 row %zu: forced 2 splits, %d", i, plan.args.num_splits);
        }
        /* unpacked (MHA) paged d64: not this rule's (decode64_pays's) */
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan, contiguous;
        const int idx = paged_decode_plan(1, 8192, 32, 32, 64, 16, &d64, &p, &plan);
        if (idx >= 0) {
            paged_decode_plan(1, 8192, 32, 32, 64, 0, &d64, &p, &contiguous);
            CHECK(plan.decode64 == contiguous.decode64 && plan.args.num_splits == contiguous.args.num_splits,
                  "paged MHA d64: decode64 %d splits %d (contiguous %d, %d)", plan.decode64, plan.args.num_splits,
                  contiguous.decode64, contiguous.args.num_splits);
        }
    }
    /* head dim 64: no short entry, so none planned (the runtime's choice
     * says which entries exist) */
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    const int idx = decode_plan(64, 1024, 64, 8, 64, &choice, &p, &plan);
    if (idx < 0)
        return;
    struct mgpu_attention_fwd_choice c = choice;
    c.decode64_short = mgpu_select_attention_fwd_decode64(&mgpu_variants[idx], &hopper,
                                                          MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N) >= 0;
    mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &c, &plan);
    CHECK(!c.decode64_short && plan.decode64 && plan.decode64_block_n == 128, "d64: decode64 %d, key block %d",
          plan.decode64, plan.decode64_block_n);
}

/* The plans of bench/attention_bench.py's 30 decode rows (DECODE_SHAPES
 * without those over 6 GiB of K and V; bf16, one query row, the bench
 * handle's default 32 MiB workspace and one of 1 GiB, 132 SMs, the 64-row
 * entry where the build has it). With MGPU_ATTENTION_MERGE16=0 every row
 * keeps the plan main's planner made before the wide merge (the table);
 * by the planner's rule every row's plan is that same plan, bit for bit,
 * except the rows the rule targets (9 to 16 splits of 8 packed rows whose
 * combine could not be launched early): 1 x 32768 keys, GQA 64/8, d64,
 * whose 15 splits then merge in the 128-row decode entry, one warp a row. */
static void test_bench_decode_plans(void)
{
    static const struct {
        int b, sk, hq, hkv, d;
        int splits, decode64, in_kernel, early;
        unsigned grid, combine_grid;
        int programmatic, wide;
    } rows[] = {
        /* B, Sk, Hq, Hkv, D -> splits, 64-row entry, merged in the kernel, combine early, grid, combine
         * grid, programmatic (with the wide merge off), and whether the wide merge changes the plan */
        {1, 1024, 64, 8, 128, 8, 0, 1, 0, 64, 8, 1, 0},
        {1, 8192, 64, 8, 128, 16, 1, 0, 0, 128, 16, 1, 1}, /* the split fill: 16 splits of 4 blocks */
        {1, 32768, 64, 8, 128, 8, 0, 1, 0, 64, 8, 1, 0},
        {1, 131072, 64, 8, 128, 8, 0, 1, 0, 64, 8, 1, 0},
        {8, 1024, 64, 8, 128, 2, 0, 1, 0, 128, 64, 1, 0},
        {8, 8192, 64, 8, 128, 2, 0, 1, 0, 128, 64, 1, 0},
        {8, 32768, 64, 8, 128, 2, 0, 1, 0, 128, 64, 0, 0},
        {8, 131072, 64, 8, 128, 2, 0, 1, 0, 128, 64, 0, 0},
        {64, 1024, 64, 8, 128, 1, 1, 0, 0, 512, 512, 1, 0},
        {64, 8192, 64, 8, 128, 1, 1, 0, 0, 512, 512, 1, 0},
        {1, 1024, 32, 32, 128, 4, 1, 1, 0, 128, 4, 1, 0},
        {1, 8192, 32, 32, 128, 4, 1, 1, 0, 128, 4, 1, 0},
        {1, 32768, 32, 32, 128, 4, 1, 1, 0, 128, 4, 1, 0},
        {8, 1024, 32, 32, 128, 1, 1, 0, 0, 256, 32, 1, 0}, /* decode steps: programmatic */
        {8, 8192, 32, 32, 128, 1, 1, 0, 0, 256, 32, 1, 0},
        {8, 32768, 32, 32, 128, 1, 1, 0, 0, 256, 32, 0, 0},
        {64, 1024, 32, 32, 128, 1, 1, 0, 0, 2048, 256, 1, 0},
        {1, 8192, 64, 8, 64, 16, 1, 0, 0, 128, 16, 1, 1}, /* the split fill */
        {1, 32768, 64, 8, 64, 15, 1, 0, 0, 120, 16, 1, 1},
        {8, 8192, 64, 8, 64, 2, 0, 1, 0, 128, 64, 1, 0},
        {8, 32768, 64, 8, 64, 2, 0, 1, 0, 128, 64, 0, 0},
        {1, 8192, 64, 8, 256, 8, 0, 1, 0, 64, 8, 1, 0},
        {1, 32768, 64, 8, 256, 8, 0, 1, 0, 64, 8, 1, 0},
        {8, 8192, 64, 8, 256, 2, 0, 1, 0, 128, 64, 1, 0},
        {8, 32768, 64, 8, 256, 2, 0, 1, 0, 128, 64, 0, 0},
        {1, 8192, 32, 32, 64, 4, 0, 1, 0, 128, 4, 1, 0},
        {8, 8192, 32, 32, 64, 1, 0, 0, 0, 256, 32, 0, 0}, /* head dim 64: launched as before */
        {1, 8192, 32, 32, 256, 4, 0, 1, 0, 128, 4, 1, 0},
        {8, 8192, 32, 32, 256, 1, 0, 0, 0, 256, 32, 1, 0},
        {1, 131072, 8, 1, 128, 103, 1, 0, 1, 103, 8, 1, 0},
    };
    const size_t n = sizeof rows / sizeof rows[0];
    CHECK(n == 30, "%zu bench decode rows", n);
    int wide_rows = 0;
    for (size_t k = 0; k < 2 * n; k++) {
        const size_t i = k % n;
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan, off;
        struct mgpu_attention_fwd_choice choice = {(size_t)(k < n ? 32 : 1024) << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        const int idx = decode_plan(rows[i].b, rows[i].sk, rows[i].hq, rows[i].hkv, rows[i].d, &choice, &p, &plan);
        if (idx < 0)
            return;
        choice.decode64 = mgpu_select_attention_fwd_decode64(&mgpu_variants[idx], &hopper,
                                                             mgpu_variants[idx].attention.block_n) >= 0;
        choice.decode64_short = mgpu_select_attention_fwd_decode64(&mgpu_variants[idx], &hopper,
                                                                   MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N) >= 0;
        choice.force_merge16 = -1;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &off);
        const struct mgpu_attention_fwd_args *a = &off.args;
        CHECK(off.decode_entry && a->pack_gqa == (rows[i].hq != rows[i].hkv) && a->num_splits == rows[i].splits &&
                  off.decode64 == rows[i].decode64 && off.merge_in_kernel == rows[i].in_kernel &&
                  off.combine_early == rows[i].early && off.grid == rows[i].grid &&
                  (a->num_splits == 1 || off.combine_grid == rows[i].combine_grid) &&
                  off.programmatic == rows[i].programmatic && a->merge_splits_per_warp == 0,
              "bench row %zu (%d x %d, %d/%d, d%d), wide merge off: splits %d decode64 %d in kernel %d early %d "
              "grid %u combine %u programmatic %d",
              i, rows[i].b, rows[i].sk, rows[i].hq, rows[i].hkv, rows[i].d, a->num_splits, off.decode64,
              off.merge_in_kernel, off.combine_early, off.grid, off.combine_grid, off.programmatic);
        /* the 64-row key blocks: the short caches over more than a wave (decision 071) */
        const int want_short = rows[i].d == 128 && rows[i].sk == 1024 && rows[i].grid > 132;
        CHECK(off.decode64_block_n == (want_short ? 64 : off.decode64 ? 128 : 0),
              "bench row %zu: 64-row entry key block %d", i, off.decode64_block_n);
        choice.force_merge16 = 0;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &plan);
        wide_rows += rows[i].wide;
        if (!rows[i].wide) {
            CHECK(memcmp(&plan, &off, sizeof plan) == 0, "bench row %zu (%d x %d, %d/%d, d%d): the plan changed", i,
                  rows[i].b, rows[i].sk, rows[i].hq, rows[i].hkv, rows[i].d);
            continue;
        }
        /* the wide merge: the same splits and grid, merged in the 128-row
         * entry, one warp a row (a combine would be 8 CTAs) */
        a = &plan.args;
        CHECK(plan.decode_entry && !plan.decode64 && a->num_splits == rows[i].splits && plan.merge_in_kernel &&
                  !plan.combine_early && plan.grid == rows[i].grid && plan.combine_grid == 8 &&
                  plan.programmatic == rows[i].programmatic &&
                  a->merge_splits_per_warp == MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP &&
                  mgpu_attention_fwd_merge_warps(a->num_splits, a->merge_splits_per_warp) == 1,
              "bench row %zu (wide): decode64 %d splits %d in kernel %d early %d grid %u combine %u per warp %d", i,
              plan.decode64, a->num_splits, plan.merge_in_kernel, plan.combine_early, plan.grid, plan.combine_grid,
              a->merge_splits_per_warp);
    }
    CHECK(wide_rows == 6, "%d wide rows (three rows, two workspaces)", wide_rows);
}

/* The split fill (choose_splits): packed tiles of at most 8 rows that split
 * take the splits that keep every split CTA in one wave of the 132 SMs, at
 * most 16, where each then walks at most 8 key blocks and that is more than
 * the wave rule's; MGPU_ATTENTION_SPLIT_FILL=0 (split_fill -1) the wave
 * rule alone. */
static void test_split_fill_plan(void)
{
    if (!has_attention_cc(9, 0))
        return;
    static const struct {
        int b, sk, hq, hkv, d, force;
        int splits, off_splits; /* with the fill, without */
    } rows[] = {
        {1, 8192, 64, 8, 128, 0, 16, 13},   /* 8 tiles of 64 key blocks: 16 splits of 4 */
        {1, 8192, 64, 8, 64, 0, 16, 13},    /* the same at d64 */
        {1, 4096, 64, 8, 128, 0, 16, 11},   /* 16 splits of 2 */
        {1, 4096, 64, 8, 64, 0, 16, 11},
        {2, 4096, 64, 8, 128, 0, 8, 7},     /* 16 tiles: 8 splits of 4 */
        {1, 32768, 64, 8, 64, 0, 15, 15},   /* 16 splits would walk 16 blocks each */
        {1, 16384, 64, 8, 128, 0, 8, 8},    /* 16 of 8 blocks, then the long-cache rule's half of the SMs */
        {1, 1024, 64, 8, 128, 0, 8, 8},     /* one split per key block already */
        {8, 1024, 64, 8, 128, 0, 2, 2},     /* 64 tiles: 2 a wave */
        {1, 131072, 8, 1, 128, 0, 103, 103}, /* MQA: 16 splits would walk 64 blocks */
        {8, 4096, 32, 1, 128, 0, 11, 11},   /* 32 rows a tile: no fill */
        {1, 8192, 32, 32, 128, 0, 4, 4},    /* MHA (unpacked): no fill */
        {1, 8192, 64, 8, 128, 12, 12, 12},  /* forced counts stay */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        for (int off = 0; off < 2; off++) {
            struct mgpu_attention_fwd_choice choice = {(size_t)32 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, off ? -1 : 0, 0, 0};
            choice.force_splits = rows[i].force;
            struct mgpu_attention_problem p;
            struct mgpu_attention_plan plan;
            const int idx =
                decode_plan(rows[i].b, rows[i].sk, rows[i].hq, rows[i].hkv, rows[i].d, &choice, &p, &plan);
            if (idx < 0)
                return;
            choice.decode64 = mgpu_select_attention_fwd_decode64(&mgpu_variants[idx], &hopper,
                                                                 mgpu_variants[idx].attention.block_n) >= 0;
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &plan);
            const int want = off ? rows[i].off_splits : rows[i].splits;
            CHECK(plan.args.num_splits == want && plan.grid <= 132,
                  "row %zu, fill %s: splits %d (want %d), grid %u", i, off ? "off" : "on", plan.args.num_splits, want,
                  plan.grid);
            /* the filled batch-1 GQA 64/8 rows: 128 CTAs, the 8 rows merged in
             * one pass of the 128-row entry, one warp a row */
            if (!off && !rows[i].force && rows[i].splits == 16 && rows[i].b == 1)
                CHECK(plan.decode_entry && !plan.decode64 && plan.merge_in_kernel && plan.grid == 128 &&
                          plan.args.merge_splits_per_warp == MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP,
                      "row %zu: decode64 %d in kernel %d grid %u per warp %d", i, plan.decode64, plan.merge_in_kernel,
                      plan.grid, plan.args.merge_splits_per_warp);
        }
    }
}

/* The wide merge (one warp a row of 9 to 16 splits, args.merge_splits_per_warp):
 * planned where the combine could not be launched early and the tile's 5 to
 * 8 rows then merge in one pass of 8 warps; a function of the call, never
 * of where the merge runs or which decode entry runs it (every placement
 * adds in the same order); MGPU_ATTENTION_MERGE16 forces it on (9 to 16
 * splits) or off. */
static void test_merge16_plan(void)
{
    if (!has_attention_cc(9, 0))
        return;
    static const struct {
        int b, sk, hq, hkv, d;
        int force_splits, splits, wide;
    } rows[] = {
        {1, 32768, 64, 8, 64, 0, 15, 1},   /* 120 + 16 CTAs on 132 SMs */
        {1, 1920, 64, 8, 64, 0, 15, 1},    /* 15 key blocks: one split each, 120 + 16 */
        {1, 1920, 64, 8, 128, 0, 15, 1},   /* the same at d128 */
        {1, 1200, 64, 8, 256, 0, 15, 1},   /* d256 (keys of 80): 15 splits, two 128-column passes */
        {4, 1920, 16, 2, 128, 0, 15, 1},   /* 4 sequences of 2 KV heads: 8 tiles too */
        {1, 4096, 64, 8, 128, 16, 16, 1},  /* 16 splits (forced): 128 + 16 */
        {1, 8192, 64, 8, 128, 0, 13, 0},   /* 104 + 16: the combine early, as before */
        {1, 8192, 64, 8, 64, 0, 13, 0},    /* the same at d64 */
        {1, 1024, 64, 8, 128, 0, 8, 0},    /* 8 splits: one warp a row already */
        {1, 131072, 8, 1, 128, 0, 103, 0}, /* MQA: past 16 splits */
        {1, 1920, 8, 8, 128, 0, 15, 0},    /* MHA: one row a tile (two warps), merged in the kernel already */
        {1, 1920, 32, 4, 128, 0, 15, 0},   /* group 8 of 4 KV heads: 60 + 8 CTAs, the combine early */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        /* the wave rule's split counts (the split fill: test_split_fill_plan) */
        struct mgpu_attention_fwd_choice choice = {(size_t)32 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0};
        choice.force_splits = rows[i].force_splits;
        struct mgpu_attention_problem p;
        struct mgpu_attention_plan plan;
        const int idx = decode_plan(rows[i].b, rows[i].sk, rows[i].hq, rows[i].hkv, rows[i].d, &choice, &p, &plan);
        if (idx < 0)
            return;
        choice.decode64 = mgpu_select_attention_fwd_decode64(&mgpu_variants[idx], &hopper,
                                                             mgpu_variants[idx].attention.block_n) >= 0;
        const int wide = rows[i].wide ? MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP : 0;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &plan);
        const struct mgpu_attention_fwd_args *a = &plan.args;
        CHECK(a->num_splits == rows[i].splits && a->merge_splits_per_warp == wide,
              "row %zu: splits %d, %d splits a merge warp", i, a->num_splits, a->merge_splits_per_warp);
        if (wide)
            CHECK(plan.decode_entry && !plan.decode64 && plan.merge_in_kernel && !plan.combine_early &&
                      plan.combine_grid == (unsigned)mgpu_cdiv(a->partial_rows, 8),
                  "row %zu: decode64 %d in kernel %d early %d combine grid %u", i, plan.decode64,
                  plan.merge_in_kernel, plan.combine_early, plan.combine_grid);
        /* forcing the placement or the entry keeps the share (the same bits) */
        static const int merges[] = {1, -1};
        for (int m = 0; m < 2; m++) {
            struct mgpu_attention_fwd_choice c = choice;
            c.force_merge = merges[m];
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &c, &plan);
            CHECK(a->num_splits == rows[i].splits && a->merge_splits_per_warp == wide &&
                      plan.merge_in_kernel == (merges[m] > 0),
                  "row %zu, merge forced %d: %d splits a warp, in kernel %d", i, merges[m], a->merge_splits_per_warp,
                  plan.merge_in_kernel);
            /* the wide combine: 8 rows a CTA, early where they fit beside
             * the split CTAs (120 + 8, not 128 + 8) */
            if (wide && merges[m] < 0)
                CHECK(plan.combine_early == (plan.grid + plan.combine_grid <= 132) &&
                          plan.combine_grid == (unsigned)mgpu_cdiv(a->partial_rows, 8),
                      "row %zu, combine forced: early %d, grid %u", i, plan.combine_early, plan.combine_grid);
            c = choice;
            c.force_decode64 = merges[m];
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &c, &plan);
            CHECK(a->merge_splits_per_warp == wide, "row %zu, decode64 forced %d: %d splits a warp", i, merges[m],
                  a->merge_splits_per_warp);
        }
        /* MGPU_ATTENTION_MERGE16=0: the default share, the plan as before */
        struct mgpu_attention_fwd_choice c = choice;
        c.force_merge16 = -1;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &c, &plan);
        CHECK(a->merge_splits_per_warp == 0 && (!wide || (!plan.merge_in_kernel && !plan.combine_early &&
                                                          plan.combine_grid == (unsigned)mgpu_cdiv(a->partial_rows, 4))),
              "row %zu, forced off: %d splits a warp, in kernel %d, early %d", i, a->merge_splits_per_warp,
              plan.merge_in_kernel, plan.combine_early);
        /* =1: every call of 9 to 16 splits */
        c.force_merge16 = 1;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &c, &plan);
        const int forced_wide = a->num_splits > 8 && a->num_splits <= 16;
        CHECK(a->merge_splits_per_warp == (forced_wide ? MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP : 0),
              "row %zu, forced on: %d splits a warp", i, a->merge_splits_per_warp);
    }
    /* 1 x 8192 GQA d128 forced wide: one pass of 8 warps in the 128-row
     * entry (the 64-row one's 4 warps would take two) */
    struct mgpu_attention_fwd_choice choice = {(size_t)32 << 20, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0};
    struct mgpu_attention_problem p;
    struct mgpu_attention_plan plan;
    if (decode_plan(1, 8192, 64, 8, 128, &choice, &p, &plan) >= 0)
        CHECK(plan.args.merge_splits_per_warp == 16 && plan.merge_in_kernel && !plan.decode64 &&
                  plan.combine_grid == 8,
              "1 x 8192 forced wide: in kernel %d decode64 %d", plan.merge_in_kernel, plan.decode64);
}

/* The wide entry (192 query rows, three consumer warpgroups): prefill calls
 * at head dim 64 whose queries 192-row tiles pad at most 12.5 % (causal:
 * 4 %) more than 128-row ones, not varlen or windowed ones unless forced,
 * with its tiles (tile_queries, Q box, grid), never an inference plan, and
 * its forcing. */
static void test_wide_plan(void)
{
    static const struct {
        int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal;
        int wide;    /* the planner's choice */
        int forced;  /* forced on (MGPU_ATTENTION_WIDE=1) */
        int persist; /* the wide plan's grid: persistent (132) */
    } rows[] = {
        {4, 4096, 4096, 32, 32, 64, 0, 1, 1, 1},  /* 22 tiles of 192 rows a head: 4224 rows, +3.1 % */
        {4, 4096, 4096, 32, 32, 64, 1, 1, 1, 1},  /* causal: dynamic tiles */
        {8, 8192, 8192, 32, 32, 64, 0, 1, 1, 0},  /* 64 key blocks: one CTA per tile */
        {16, 1024, 1024, 16, 16, 64, 0, 1, 1, 1}, /* 1152 against 1024 rows: +12.5 % */
        {16, 1024, 1024, 16, 16, 64, 1, 0, 1, 1}, /* causal: at most +4 % */
        {16, 256, 256, 32, 32, 64, 0, 0, 1, 1},   /* 384 against 256 rows */
        {4, 2048, 2048, 32, 32, 64, 1, 1, 1, 1},  /* causal, 2112 against 2048 rows: +3.1 % */
        {4, 4096, 4096, 32, 8, 64, 0, 1, 1, 1},   /* GQA, unpacked */
        {2, 1152, 1152, 12, 12, 64, 0, 1, 1, 1},  /* 1152 rows either way */
        {4, 4096, 4096, 32, 32, 128, 0, 0, 0, 0}, /* head dim 128: no wide entry */
        {1, 2048, 2048, 2, 2, 64, 0, 0, 0, 0},    /* few tiles: the planner splits the keys (inference) */
        {1, 4096, 4096, 6, 6, 64, 0, 1, 1, 0},    /* 132 tiles of 192 rows: none split, one CTA each */
        {1, 4096, 4096, 4, 4, 64, 0, 0, 0, 0},    /* 128 tiles of 128 rows, 88 of 192 that would split: kept */
    };
    const struct mgpu_attention_fwd_choice choice = {(size_t)32 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    if (!has_attention_cc(9, 0))
        return;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
        d.batch = rows[i].batch;
        d.seqlen_q = rows[i].seqlen_q;
        d.seqlen_k = rows[i].seqlen_k;
        d.heads_q = rows[i].heads_q;
        d.heads_kv = rows[i].heads_kv;
        d.head_dim = rows[i].head_dim;
        d.causal = rows[i].causal;
        d.dtype = MGPU_DTYPE_BF16;
        struct mgpu_attention_problem p;
        mgpu_status s;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        const int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
        CHECK(idx >= 0, "row %zu: select: %s", i, mgpu_last_error_message());
        if (idx < 0)
            continue;
        const int e = mgpu_select_attention_fwd_wide(&mgpu_variants[idx], &hopper);
        CHECK((e >= 0) == (rows[i].head_dim == 64), "row %zu: wide variant %d", i, e);
        if (e < 0) {
            for (int j = 0; j < mgpu_variant_count; j++)
                if (mgpu_variants[j].kind == MGPU_KIND_ATTENTION_FWD_WIDE_SM90)
                    CHECK(mgpu_attention_fwd_wide_forced(mgpu_variants[j].name, &mgpu_variants[idx]) == -1,
                          "row %zu: %s forced at head dim %d", i, mgpu_variants[j].name, rows[i].head_dim);
            continue;
        }
        CHECK(mgpu_variants[e].kind == MGPU_KIND_ATTENTION_FWD_WIDE_SM90 &&
                  mgpu_variants[e].dtype == mgpu_variants[idx].dtype && mgpu_variants[e].attention.head_dim == 64 &&
                  mgpu_variants[e].attention.block_m == 192 && mgpu_variants[e].threads == 512 &&
                  mgpu_variants[e].attention.block_n == mgpu_variants[idx].attention.block_n,
              "row %zu: wide variant %s", i, mgpu_variants[e].name);
        /* its name forces it; another dtype's wide entry cannot run the call */
        CHECK(mgpu_attention_fwd_wide_forced(mgpu_variants[e].name, &mgpu_variants[idx]) == 1 &&
                  mgpu_attention_fwd_wide_forced(mgpu_variants[idx].name, &mgpu_variants[idx]) == 0 &&
                  mgpu_attention_fwd_wide_forced(NULL, &mgpu_variants[idx]) == 0,
              "row %zu: %s forced", i, mgpu_variants[e].name);
        for (int j = 0; j < mgpu_variant_count; j++)
            if (mgpu_variants[j].kind == MGPU_KIND_ATTENTION_FWD_WIDE_SM90 && j != e)
                CHECK(mgpu_attention_fwd_wide_forced(mgpu_variants[j].name, &mgpu_variants[idx]) == -1,
                      "row %zu: %s forced for %s", i, mgpu_variants[j].name, mgpu_variants[idx].name);
        for (int force = -1; force <= 1; force++) {
            struct mgpu_attention_plan plan;
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &plan);
            const unsigned grid128 = plan.grid;
            mgpu_attention_fwd_plan_wide(&p, &mgpu_variants[idx], &hopper, &choice, force, &plan);
            const int want = force < 0 ? 0 : force > 0 ? rows[i].forced : rows[i].wide;
            CHECK(plan.wide == want, "row %zu, force %d: wide %d (want %d)", i, force, plan.wide, want);
            const struct mgpu_attention_fwd_args *a = &plan.args;
            if (!plan.wide) {
                CHECK(plan.grid == grid128, "row %zu, force %d: grid %u, was %u", i, force, plan.grid, grid128);
                continue;
            }
            const int64_t tiles = (rows[i].seqlen_q + 191) / 192 * (int64_t)rows[i].heads_q * rows[i].batch;
            CHECK(a->tile_queries == 192 && plan.q_map.box[1] == 192 && plan.q_map.rank == 4 && !a->pack_gqa &&
                      a->num_splits == 1 && !plan.decode_entry && !plan.decode64,
                  "row %zu: tile_queries %d, Q box %u, pack %d, splits %d", i, a->tile_queries, plan.q_map.box[1],
                  a->pack_gqa, a->num_splits);
            CHECK(plan.grid == (unsigned)(rows[i].persist ? 132 : tiles) && plan.dynamic == (rows[i].persist &&
                                                                                               rows[i].causal),
                  "row %zu: grid %u, dynamic %d (%lld tiles)", i, plan.grid, plan.dynamic, (long long)tiles);
        }
    }
    /* An inference call (packed GQA decode) keeps its plan, forced or not. */
    mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
    d.batch = 8;
    d.seqlen_q = 1;
    d.seqlen_k = 8192;
    d.heads_q = 64;
    d.heads_kv = 8;
    d.head_dim = 64;
    d.dtype = MGPU_DTYPE_F16;
    struct mgpu_attention_problem p;
    mgpu_status s;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    const int idx = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
    if (idx >= 0) {
        struct mgpu_attention_plan plan;
        mgpu_attention_make_plan_ex(&p, &mgpu_variants[idx], &hopper, &choice, &plan);
        mgpu_attention_fwd_plan_wide(&p, &mgpu_variants[idx], &hopper, &choice, 1, &plan);
        CHECK(!plan.wide, "decode forced wide");
    }
    /* Varlen and windowed calls (not timed on the wide entry) keep the
     * 128-row kernel unless forced, even where the padding would pass. */
    for (int c = 0; c < 3; c++) {
        d = (mgpu_attention_fwd_desc)MGPU_ATTENTION_FWD_DESC_INIT;
        d.batch = 4;
        d.seqlen_q = d.seqlen_k = 4096;
        d.heads_q = d.heads_kv = 32;
        d.head_dim = 64;
        d.dtype = MGPU_DTYPE_BF16;
        if (c == 0) {
            d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
            d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
            d.total_q = d.total_k = 4 * 4096;
        } else if (c == 1) {
            d.window_left = 512;
        } else {
            d.causal = 1;
            d.window_left = 1024;
        }
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        const int f = mgpu_select_attention_fwd(&p, &hopper, NULL, &s);
        if (f < 0)
            continue;
        for (int force = 0; force <= 1; force++) {
            struct mgpu_attention_plan plan;
            mgpu_attention_make_plan_ex(&p, &mgpu_variants[f], &hopper, &choice, &plan);
            mgpu_attention_fwd_plan_wide(&p, &mgpu_variants[f], &hopper, &choice, force, &plan);
            CHECK(plan.wide == force && (!force || plan.args.tile_queries == 192),
                  "%s, force %d: wide %d, tile_queries %d", c == 0 ? "varlen" : c == 1 ? "window" : "causal window",
                  force, plan.wide, plan.args.tile_queries);
        }
    }
}

/* On / off switches read only "0" and "1"; anything else is the planner's
 * choice (mgpu_env_parse), so that "true" or "on" cannot turn a rule off. */
static void test_env_switches(void)
{
    const struct { const char *value; int want; } cases[] = {
        {"1", 1}, {"0", -1}, {"", 0}, {"true", 0}, {"on", 0}, {"2", 0}, {"01", 0}, {"10", 0},
    };
    struct mgpu_env env;
    char variant[64];
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("MGPU_ATTENTION_SPLIT_FILL", cases[i].value, 1);
        mgpu_env_parse(&env, variant, sizeof variant);
        CHECK(env.attention_split_fill == cases[i].want, "MGPU_ATTENTION_SPLIT_FILL=\"%s\": %d, want %d",
              cases[i].value, env.attention_split_fill, cases[i].want);
    }
    unsetenv("MGPU_ATTENTION_SPLIT_FILL");
    mgpu_env_parse(&env, variant, sizeof variant);
    CHECK(env.attention_split_fill == 0, "MGPU_ATTENTION_SPLIT_FILL unset: %d", env.attention_split_fill);
    setenv("MGPU_ATTENTION_WIDE", "0", 1);
    mgpu_env_parse(&env, variant, sizeof variant);
    CHECK(env.attention_wide == -1, "MGPU_ATTENTION_WIDE=0: %d", env.attention_wide);
    unsetenv("MGPU_ATTENTION_WIDE");
}

int main(void)
{
    test_validation();
    test_selection();
    test_plan();
    test_inference_plan();
    test_combine_warps();
    test_split_merge_plan();
    test_programmatic_plan();
    test_decode_entry_plan();
    test_decode64_plan();
    test_decode64_short_plan();
    test_bench_decode_plans();
    test_split_fill_plan();
    test_merge16_plan();
    test_wide_plan();
    test_env_switches();
    test_selection_sm100();
    test_serving_sm100();
    test_fp8();
    return check_exit();
}
