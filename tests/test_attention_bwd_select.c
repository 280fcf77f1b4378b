/*
 * mgpu_attention_bwd's pure half on the CPU: descriptor validation (every
 * status the header lists for a bad descriptor, the gradient tensors'
 * strides and alignment, `deterministic`), the choice of the three kernels
 * with made-up devices (9.0 picks the sm_90a main variant of the call's
 * dtype and head dim and the dtype's preprocess / postprocess; 10.0 the
 * sm_100a ones for every head dim with the same launch plan, except the main
 * grid of head dims 192 / 256 (mgpu_attention_bwd_sm100_ctas: two head-dim
 * slices per 128 keys); an architecture the build lacks and 8.0 get
 * ARCH_MISMATCH), forcing, the sm_100a CTA map (every key and head-dim
 * column of dK, dV, dQ covered once; deterministic waits point at smaller
 * CTA indices), and the launch plan: grids, tensor-map shapes,
 * LSE layout, and the workspace size recomputed here from the scratch
 * layout the ABI describes (fixed length, varlen, GQA, deterministic), and
 * the order of dq_accum tiles: the offsets the main kernel writes
 * (per consumer, thread and register, as in attention_bwd_epilogue.cuh) are
 * exactly the ones mgpu_attention_bwd_dq_offset gives the postprocess.
 */
#include <math.h>
#include <string.h>

#include "attention_bwd_plan.h"
#include "check.h"
#include "dispatch.h"

static const struct mgpu_device_caps hopper = {9, 0, 132, 232448, 0};
static const struct mgpu_device_caps blackwell = {10, 0, 148, 232448, 0};
static const struct mgpu_device_caps ampere = {8, 0, 108, 166912, 0};

/* Made-up, suitably aligned device addresses. */
#define ADDR(i) ((void *)(uintptr_t)(0x7f0000000000ull + (uint64_t)(i) * 0x1000000000ull))
#define LSE_ADDR ((const float *)ADDR(9))

static mgpu_attention_bwd_desc base_desc(void)
{
    mgpu_attention_bwd_desc d = MGPU_ATTENTION_BWD_DESC_INIT;
    d.batch = 2;
    d.seqlen_q = 1000;
    d.seqlen_k = 1500;
    d.heads_q = 16;
    d.heads_kv = 4;
    d.head_dim = 128;
    d.dtype = MGPU_DTYPE_BF16;
    return d;
}

static mgpu_status validate(const mgpu_attention_bwd_desc *d, struct mgpu_attention_bwd_problem *p)
{
    return mgpu_attention_bwd_validate(d, ADDR(0), ADDR(1), ADDR(2), ADDR(3), ADDR(4), LSE_ADDR, ADDR(5), ADDR(6),
                                       ADDR(7), 1, p);
}

#define EXPECT(field_set, status)                                                                  \
    do {                                                                                           \
        mgpu_attention_bwd_desc d_ = base_desc();                                                  \
        field_set;                                                                                 \
        CHECK_STATUS(validate(&d_, &p), status);                                                   \
        CHECK(status == MGPU_STATUS_SUCCESS || mgpu_last_error_message()[0], "no message for %s", #field_set); \
    } while (0)

static void test_validation(void)
{
    struct mgpu_attention_bwd_problem p;
    EXPECT((void)0, MGPU_STATUS_SUCCESS);
    CHECK(fabsf(p.a.softmax_scale - 1.0f / sqrtf(128.0f)) < 1e-7f, "default scale %g", (double)p.a.softmax_scale);
    CHECK(p.do_strides.seq == 16 * 128 && p.dq_strides.batch == 1000 * 16 * 128 && p.dq_strides.head == 128,
          "dense dO / dQ strides are Q's");
    CHECK(p.dk_strides.seq == 4 * 128 && p.dv_strides.batch == 1500 * 4 * 128, "dense dK / dV strides are K's");
    CHECK(p.deterministic == 0, "deterministic default 0");
    EXPECT(d_.deterministic = 1, MGPU_STATUS_SUCCESS);
    CHECK(p.deterministic == 1, "deterministic passed");

    CHECK_STATUS(mgpu_attention_bwd_validate(NULL, ADDR(0), ADDR(1), ADDR(2), ADDR(3), ADDR(4), LSE_ADDR, ADDR(5),
                                             ADDR(6), ADDR(7), 1, &p),
                 MGPU_STATUS_NULL_POINTER);
    /* a forward descriptor's size is not a backward one's */
    EXPECT(d_.struct_size = sizeof(mgpu_attention_fwd_desc), MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.deterministic = 2, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.deterministic = -1, MGPU_STATUS_INVALID_VALUE);
    /* the checks shared with the forward */
    EXPECT(d_.dtype = MGPU_DTYPE_F32, MGPU_STATUS_UNSUPPORTED_DTYPE);
    EXPECT(d_.causal = 2, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.window_left = -2, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.softmax_scale = NAN, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.softcap = -1.0f, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.cu_seqlens_k = (const int32_t *)(uintptr_t)0x1000, MGPU_STATUS_INVALID_VALUE);
    EXPECT(d_.batch = -1, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.seqlen_k = (int64_t)1 << 31, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.heads_kv = 3, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.seqlen_k = 0, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.head_dim = 0, MGPU_STATUS_INVALID_SIZE);
    EXPECT(d_.head_dim = 80, MGPU_STATUS_NOT_SUPPORTED);

    /* every tensor's pointer, strides and alignment */
    {
        mgpu_attention_bwd_desc d = base_desc();
        void *ptrs[9] = {ADDR(0), ADDR(1), ADDR(2), ADDR(3), ADDR(4), ADDR(9), ADDR(5), ADDR(6), ADDR(7)};
        static const char *names[9] = {"q", "k", "v", "o", "dout", "lse", "dq", "dk", "dv"};
        for (int i = 0; i < 9; i++) {
            void *saved = ptrs[i];
            ptrs[i] = NULL;
            CHECK_STATUS(mgpu_attention_bwd_validate(&d, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5],
                                                     ptrs[6], ptrs[7], ptrs[8], 1, &p),
                         MGPU_STATUS_NULL_POINTER);
            /* the workspace query does not look at pointers */
            CHECK_STATUS(mgpu_attention_bwd_validate(&d, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5],
                                                     ptrs[6], ptrs[7], ptrs[8], 0, &p),
                         MGPU_STATUS_SUCCESS);
            ptrs[i] = (char *)saved + (i == 5 ? 2 : 8); /* misaligned */
            const mgpu_status want = i == 5 ? MGPU_STATUS_INVALID_VALUE : MGPU_STATUS_NOT_SUPPORTED;
            CHECK_STATUS(mgpu_attention_bwd_validate(&d, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5],
                                                     ptrs[6], ptrs[7], ptrs[8], 1, &p),
                         want);
            CHECK(i == 5 || strstr(mgpu_last_error_message(), names[i]), "%s: message names it: %s", names[i],
                  mgpu_last_error_message());
            ptrs[i] = saved;
        }
    }
    EXPECT(d_.do_strides.seq = -8, MGPU_STATUS_INVALID_LD);
    EXPECT((d_.dq_strides.seq = 16 * 128, d_.dq_strides.head = 128), MGPU_STATUS_INVALID_LD); /* batch 0, batch 2 */
    EXPECT((d_.dk_strides.seq = 4 * 128, d_.dk_strides.batch = 1 << 30), MGPU_STATUS_INVALID_LD); /* head 0 */
    EXPECT((d_.dv_strides.batch = (int64_t)1 << 40, d_.dv_strides.seq = 512, d_.dv_strides.head = 128),
           MGPU_STATUS_INVALID_LD);
    EXPECT((d_.dq_strides.batch = 1000 * 16 * 136, d_.dq_strides.seq = 16 * 136, d_.dq_strides.head = 136),
           MGPU_STATUS_SUCCESS);
    CHECK(p.dq_strides.seq == 16 * 136, "given dQ strides kept");
    EXPECT((d_.dk_strides.batch = 1500 * 4 * 130, d_.dk_strides.seq = 4 * 130, d_.dk_strides.head = 130),
           MGPU_STATUS_NOT_SUPPORTED);
    CHECK(strstr(mgpu_last_error_message(), "dk strides"), "stride message: %s", mgpu_last_error_message());
    EXPECT((d_.do_strides.batch = 1000 * 16 * 129, d_.do_strides.seq = 16 * 129, d_.do_strides.head = 129),
           MGPU_STATUS_NOT_SUPPORTED);

    /* nothing to do: pointers may be NULL */
    {
        mgpu_attention_bwd_desc d = base_desc();
        d.batch = 0;
        d.head_dim = 80; /* not even looked at */
        CHECK_STATUS(mgpu_attention_bwd_validate(&d, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, &p),
                     MGPU_STATUS_SUCCESS);
        CHECK(mgpu_attention_problem_empty(&p.a), "batch = 0 is empty");
        d = base_desc();
        d.seqlen_q = 0;
        CHECK_STATUS(mgpu_attention_bwd_validate(&d, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, &p),
                     MGPU_STATUS_SUCCESS);
        CHECK(mgpu_attention_problem_empty(&p.a), "seqlen_q = 0 is empty");
    }
    /* varlen: batch strides ignored */
    EXPECT((d_.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000, d_.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000,
            d_.total_q = 3000, d_.total_k = 2000, d_.dq_strides.batch = 3, d_.dq_strides.seq = 16 * 128,
            d_.dq_strides.head = 128),
           MGPU_STATUS_SUCCESS);
}

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* The workspace the ABI's layout asks for, recomputed independently: six
 * arrays (three for MHA), each padded to 256 bytes. */
static uint64_t expected_workspace(int64_t batch, int64_t hq, int64_t hkv, int64_t sq, int64_t sk, int64_t d,
                                   int varlen, int64_t total_q, int64_t total_k)
{
    const int64_t bm = 64, bn = d <= 128 ? 128 : 64;
    const int64_t q_rows = varlen ? hq * round_up(total_q + batch * bm, bm) : batch * hq * round_up(sq, bm);
    const int64_t k_rows = varlen ? hkv * round_up(total_k + batch * bn, bn) : batch * hkv * round_up(sk, bn);
    int64_t total = 2 * round_up(q_rows * 4, 256) + round_up(q_rows * d * 4, 256) + round_up(q_rows / bm * 4, 256);
    if (hq != hkv)
        total += 2 * round_up(k_rows * d * 4, 256) + round_up(k_rows / bn * 4, 256);
    return (uint64_t)total;
}

/* 1 when the registry holds a main kernel of this kind (head_dim 0: any
 * head dim and dtype) for this head dim and dtype. */
static int main_built(enum mgpu_kernel_kind kind, int head_dim, mgpu_dtype dt)
{
    for (int i = 0; i < mgpu_variant_count; i++)
        if (mgpu_variants[i].kind == kind &&
            (head_dim == 0 || (mgpu_variants[i].attention.head_dim == head_dim && mgpu_variants[i].dtype == (int)dt)))
            return 1;
    return 0;
}

static int variant_built(int head_dim, mgpu_dtype dt)
{
    return main_built(MGPU_KIND_ATTENTION_BWD_SM90, head_dim, dt);
}

/* The device the plan tests use: 9.0 when the build has sm_90a kernels, else 10.0. */
static const struct mgpu_device_caps *plan_device(void)
{
    return main_built(MGPU_KIND_ATTENTION_BWD_SM90, 0, MGPU_DTYPE_BF16) ? &hopper : &blackwell;
}

/* The three kernels of a plan are those of `caps`, the main one of this
 * kind, dtype and head dim with the ABI's tiles and shared memory. */
static void check_kernels(const struct mgpu_attention_bwd_plan *plan, const struct mgpu_device_caps *caps,
                          enum mgpu_kernel_kind kind, mgpu_dtype dt, int head_dim)
{
    const struct mgpu_variant *m = &mgpu_variants[plan->main], *pre = &mgpu_variants[plan->pre],
                              *post = &mgpu_variants[plan->post];
    struct mgpu_attention_bwd_tile tile = {0, 0, 0, 0, 0, 0, 0};
    CHECK(mgpu_attention_bwd_tile(head_dim, &tile) == 0, "ABI tile for d=%d", head_dim);
    CHECK(m->kind == kind && m->dtype == (int)dt && m->attention.head_dim == head_dim && m->cc_major == caps->cc_major &&
              m->cc_minor == caps->cc_minor && m->threads == MGPU_ATTENTION_BWD_THREADS,
          "main %s", m->name);
    CHECK(m->attention.block_m == tile.block_m && m->attention.block_n == tile.block_n &&
              m->smem_bytes == mgpu_attention_bwd_smem_bytes(head_dim) && m->smem_bytes <= caps->max_smem_per_block,
          "%s: tiles / shared memory from the ABI", m->name);
    CHECK(pre->kind == MGPU_KIND_ATTENTION_BWD_PRE && pre->dtype == (int)dt && pre->cc_major == caps->cc_major &&
              post->kind == MGPU_KIND_ATTENTION_BWD_POST && post->dtype == (int)dt && post->cc_major == caps->cc_major,
          "helpers %s / %s for cc %d.%d", pre->name, post->name, caps->cc_major, caps->cc_minor);
}

/* Everything but the kernel indices: the sm_100a kernel (x) takes the ABI's
 * arguments, maps, scratch and grids exactly as the sm_90a one (y), except
 * the main grid of head dims 192 / 256 (the one documented exception, the
 * ABI's mgpu_attention_bwd_sm100_ctas): round_up(n_blocks, 2) CTAs per query
 * head instead of n_blocks, and the order of the sm_90a grid (pair_group and
 * key_blocks_down, which the sm_100a kernel does not read: 1 and 0 there). */
static int same_launch(const struct mgpu_attention_bwd_plan *x, const struct mgpu_attention_bwd_plan *y)
{
    const int64_t per_head = (int64_t)x->args.heads_q * x->args.batch;
    const int64_t main90 = (int64_t)x->args.n_blocks * per_head;
    const int64_t main100 =
        x->args.head_dim > 128 ? ((int64_t)x->args.n_blocks + 1) / 2 * 2 * per_head : main90;
    /* the 9.0 grid's order (pair_group, key_blocks_down) is the 9.0 kernel's own */
    struct mgpu_attention_bwd_args y_args = y->args;
    y_args.pair_group = x->args.pair_group;
    y_args.key_blocks_down = x->args.key_blocks_down;
    y_args.pairs_by_slot = x->args.pairs_by_slot;
    return x->args.pair_group == 1 && y->args.pair_group >= 1 && x->args.key_blocks_down == 0 &&
           x->args.pairs_by_slot == 0 &&
           memcmp(&x->tile, &y->tile, sizeof x->tile) == 0 &&
           memcmp(&x->args, &y_args, sizeof x->args) == 0 &&
           memcmp(&x->q_map, &y->q_map, sizeof x->q_map) == 0 && memcmp(&x->k_map, &y->k_map, sizeof x->k_map) == 0 &&
           memcmp(&x->v_map, &y->v_map, sizeof x->v_map) == 0 &&
           memcmp(&x->do_map, &y->do_map, sizeof x->do_map) == 0 &&
           memcmp(&x->dq_map, &y->dq_map, sizeof x->dq_map) == 0 &&
           memcmp(&x->scratch, &y->scratch, sizeof x->scratch) == 0 && x->workspace_bytes == y->workspace_bytes &&
           x->pre_grid == y->pre_grid && y->main_grid == (unsigned)main90 && x->main_grid == (unsigned)main100 &&
           x->post_grid == y->post_grid;
}

static void test_selection(void)
{
    static const int dims[] = {64, 96, 128, 192, 256};
    static const mgpu_dtype dtypes[] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    const int sm90 = main_built(MGPU_KIND_ATTENTION_BWD_SM90, 0, MGPU_DTYPE_BF16);
    const int sm100 = main_built(MGPU_KIND_ATTENTION_BWD_SM100, 0, MGPU_DTYPE_BF16);
    CHECK(sm90 || sm100, "the build has an attention backward kernel");
    struct mgpu_attention_bwd_problem p;
    struct mgpu_attention_bwd_plan plan, plan90;
    mgpu_status s;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++)
            for (int det = 0; det < 2; det++) {
                mgpu_attention_bwd_desc d = base_desc();
                d.dtype = dtypes[t];
                d.head_dim = dims[i];
                d.deterministic = det;
                CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
                CHECK(mgpu_attention_bwd_plan(&p, &ampere, NULL, &plan, &s) < 0 && s == MGPU_STATUS_ARCH_MISMATCH,
                      "8.0 must be ARCH_MISMATCH");
                CHECK(strstr(mgpu_last_error_message(), "compute capability 8.0 (its ") != NULL &&
                          strstr(mgpu_last_error_message(), sm90 ? "9.0" : "10.0") != NULL,
                      "the message names the compute capabilities the build has: %s", mgpu_last_error_message());
                int have90 = 0;

                /* ---- 9.0 ---- */
                if (!sm90) {
                    CHECK(mgpu_attention_bwd_plan(&p, &hopper, NULL, &plan, &s) < 0 && s == MGPU_STATUS_ARCH_MISMATCH,
                          "9.0 without sm_90a kernels must be ARCH_MISMATCH");
                    CHECK(strstr(mgpu_last_error_message(), "compute capability 9.0 (its") != NULL &&
                              strstr(mgpu_last_error_message(), "are for compute capability 10.0)") != NULL,
                          "the message names what the build has: %s", mgpu_last_error_message());
                } else if (!variant_built(dims[i], dtypes[t])) { /* a build without this head dim: refused cleanly */
                    CHECK(dims[i] != 128, "head dim 128 must always be built");
                    CHECK(mgpu_attention_bwd_plan(&p, &hopper, NULL, &plan, &s) < 0 && s == MGPU_STATUS_NOT_SUPPORTED,
                          "d=%d without a variant: NOT_SUPPORTED", dims[i]);
                } else {
                    CHECK(mgpu_attention_bwd_plan(&p, &hopper, NULL, &plan, &s) == 0, "9.0 d=%d: %s", dims[i],
                          mgpu_last_error_message());
                    check_kernels(&plan, &hopper, MGPU_KIND_ATTENTION_BWD_SM90, dtypes[t], dims[i]);
                    const struct mgpu_variant *m = &mgpu_variants[plan.main];
                    plan90 = plan;
                    have90 = 1;
                    /* forcing: its own name, another head dim's, a forward or GEMM name (ignored) */
                    CHECK(mgpu_attention_bwd_plan(&p, &hopper, m->name, &plan, &s) == 0 &&
                              &mgpu_variants[plan.main] == m,
                          "forcing %s", m->name);
                    const char *other = dims[i] == 128 ? "mgpu_attention_bwd_sm90_f16_d128" : "mgpu_attention_bwd_sm90_bf16_d128";
                    if (dtypes[t] == MGPU_DTYPE_F16 && dims[i] == 128)
                        other = "mgpu_attention_bwd_sm90_bf16_d128";
                    CHECK(mgpu_attention_bwd_plan(&p, &hopper, other, &plan, &s) < 0 && s == MGPU_STATUS_NOT_SUPPORTED,
                          "forcing %s for d=%d", other, dims[i]);
                    CHECK(mgpu_attention_bwd_plan(&p, &hopper, "mgpu_attention_fwd_sm90_bf16_d128", &plan, &s) == 0 &&
                              &mgpu_variants[plan.main] == m,
                          "a forward name is not for the backward");
                    CHECK(mgpu_attention_bwd_plan(&p, &hopper, "mgpu_attention_bwd_sm100_bf16_d128", &plan, &s) == 0 &&
                              &mgpu_variants[plan.main] == m,
                          "an sm_100a name is not for a 9.0 device");
                }

                /* ---- 10.0 (made up: no Blackwell GPU here) ---- */
                if (!sm100) {
                    CHECK(mgpu_attention_bwd_plan(&p, &blackwell, NULL, &plan, &s) < 0 &&
                              s == MGPU_STATUS_ARCH_MISMATCH,
                          "10.0 without sm_100a kernels must be ARCH_MISMATCH");
                    continue;
                }
                if (dims[i] > 128) { /* never another head dim's kernel */
                    CHECK(mgpu_attention_bwd_plan(&p, &blackwell, "mgpu_attention_bwd_sm100_bf16_d128", &plan, &s) < 0 &&
                              s == MGPU_STATUS_NOT_SUPPORTED,
                          "10.0 d=%d forced to d128: NOT_SUPPORTED", dims[i]);
                }
                CHECK(main_built(MGPU_KIND_ATTENTION_BWD_SM100, dims[i], dtypes[t]), "sm_100a d=%d built", dims[i]);
                CHECK(mgpu_attention_bwd_plan(&p, &blackwell, NULL, &plan, &s) == 0, "10.0 d=%d: %s", dims[i],
                      mgpu_last_error_message());
                check_kernels(&plan, &blackwell, MGPU_KIND_ATTENTION_BWD_SM100, dtypes[t], dims[i]);
                const struct mgpu_variant *m = &mgpu_variants[plan.main];
                char name[64];
                snprintf(name, sizeof name, "mgpu_attention_bwd_sm100_%s_d%d", dtypes[t] == MGPU_DTYPE_BF16 ? "bf16" : "f16",
                         dims[i]);
                CHECK(strcmp(m->name, name) == 0, "10.0 main %s, want %s", m->name, name);
                if (have90)
                    CHECK(same_launch(&plan, &plan90), "d=%d: the 10.0 plan launches as the 9.0 one", dims[i]);
                CHECK(mgpu_attention_bwd_plan(&p, &blackwell, m->name, &plan, &s) == 0 && &mgpu_variants[plan.main] == m,
                      "forcing %s", m->name);
                const char *other = dtypes[t] == MGPU_DTYPE_BF16 ? "mgpu_attention_bwd_sm100_f16_d128"
                                                                 : "mgpu_attention_bwd_sm100_bf16_d128";
                CHECK(mgpu_attention_bwd_plan(&p, &blackwell, other, &plan, &s) < 0 && s == MGPU_STATUS_NOT_SUPPORTED,
                      "forcing %s for %s", other, m->name);
                CHECK(mgpu_attention_bwd_plan(&p, &blackwell, "mgpu_attention_bwd_sm90_bf16_d128", &plan, &s) == 0 &&
                          &mgpu_variants[plan.main] == m,
                      "an sm_90a name is not for a 10.0 device");
            }
}

/* 10.0 with every feature of the call: masks, soft-cap, GQA / MQA, varlen,
 * deterministic; the plan is the one of test_plan's 9.0 device where both
 * are built, and the numbers worked by hand otherwise. */
static void test_blackwell_features(void)
{
    if (!main_built(MGPU_KIND_ATTENTION_BWD_SM100, 0, MGPU_DTYPE_BF16))
        return;
    struct mgpu_attention_bwd_problem p;
    struct mgpu_attention_bwd_plan plan, plan90;
    mgpu_status s;
    const int sm90 = main_built(MGPU_KIND_ATTENTION_BWD_SM90, 0, MGPU_DTYPE_BF16);
    for (int c = 0; c < 12; c++) {
        mgpu_attention_bwd_desc d = base_desc();
        /* the six cases with head dims 64, 96, 128, then with 192, 256 */
        d.head_dim = c < 6 ? (c % 3 == 0 ? 64 : c % 3 == 1 ? 96 : 128) : c % 2 == 0 ? 192 : 256;
        switch (c % 6) {
        case 0: /* GQA 4:1, causal, window, soft-cap */
            d.causal = 1;
            d.window_left = 256;
            d.softcap = 30.0f;
            break;
        case 1: /* MHA, deterministic, sliding window both sides */
            d.heads_kv = 16;
            d.deterministic = 1;
            d.window_left = 100;
            d.window_right = 50;
            break;
        case 2: /* varlen MQA, causal, deterministic */
            d.heads_kv = 1;
            d.causal = 1;
            d.deterministic = 1;
            d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
            d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
            d.total_q = 1800;
            d.total_k = 2500;
            break;
        case 3: /* fp16, GQA 2:1, soft-cap */
            d.dtype = MGPU_DTYPE_F16;
            d.heads_kv = 8;
            d.softcap = 50.0f;
            break;
        case 4: /* varlen GQA, window */
            d.heads_kv = 4;
            d.window_left = 64;
            d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
            d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
            d.total_q = 1800;
            d.total_k = 2500;
            break;
        default: /* seqlen_q != seqlen_k, causal (bottom-right), one query */
            d.seqlen_q = 1;
            d.causal = 1;
            break;
        }
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        CHECK(mgpu_attention_bwd_plan(&p, &blackwell, NULL, &plan, &s) == 0, "10.0 case %d: %s", c,
              mgpu_last_error_message());
        check_kernels(&plan, &blackwell, MGPU_KIND_ATTENTION_BWD_SM100, d.dtype, (int)d.head_dim);
        const int varlen = d.cu_seqlens_q != NULL;
        CHECK(plan.workspace_bytes == expected_workspace(d.batch, d.heads_q, d.heads_kv, d.seqlen_q, d.seqlen_k,
                                                         d.head_dim, varlen, d.total_q, d.total_k),
              "10.0 case %d workspace %zu", c, plan.workspace_bytes);
        /* 128 keys per CTA; head dims 192 / 256: 2 key blocks of 64 and 2 slices */
        const int64_t ctas_per_head = d.head_dim <= 128 ? (d.seqlen_k + 127) / 128 : (d.seqlen_k + 127) / 128 * 2;
        CHECK(plan.main_grid == (unsigned)(ctas_per_head * d.heads_q * d.batch) &&
                  plan.args.n_blocks == (d.seqlen_k + plan.tile.block_n - 1) / plan.tile.block_n,
              "10.0 case %d main grid %u", c, plan.main_grid);
        CHECK(plan.args.group_size == d.heads_q / d.heads_kv && plan.args.deterministic == d.deterministic &&
                  plan.args.causal == d.causal && plan.args.softcap == d.softcap &&
                  (plan.args.cu_seqlens_q != 0) == varlen,
              "10.0 case %d args", c);
        if (sm90 && variant_built((int)d.head_dim, d.dtype)) {
            CHECK(mgpu_attention_bwd_plan(&p, &hopper, NULL, &plan90, &s) == 0, "9.0 case %d", c);
            CHECK(same_launch(&plan, &plan90), "10.0 case %d launches as on 9.0", c);
        }
    }
}

static void test_plan(void)
{
    struct mgpu_attention_bwd_problem p;
    struct mgpu_attention_bwd_plan plan;
    mgpu_status s;

    /* GQA 4:1, fixed length */
    mgpu_attention_bwd_desc d = base_desc();
    d.causal = 1;
    d.window_left = 256;
    d.softcap = 30.0f;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) == 0, "plan: %s", mgpu_last_error_message());
    const struct mgpu_attention_bwd_args *a = &plan.args;
    CHECK(plan.tile.block_m == 64 && plan.tile.block_n == 128, "d=128 tile 64x128");
    CHECK(plan.main_grid == 12 * 16 * 2, "main grid %u: ceil(1500 / 128) * 16 heads * 2", plan.main_grid);
    CHECK(plan.pre_grid == 16 * 16 * 2, "pre grid %u: ceil(1000 / 64) * 16 * 2", plan.pre_grid);
    CHECK(plan.post_grid == 16 * 16 * 2 + 12 * 4 * 2, "post grid %u: query tiles + GQA key tiles", plan.post_grid);
    CHECK(a->n_blocks == 12 && a->group_size == 4 && a->causal == 1 && a->window_left == 256 &&
              a->window_right == -1 && a->softcap == 30.0f && a->deterministic == 0,
          "args");
    CHECK(a->pair_group == (plan_device() == &hopper ? 4 : 1),
          "non-deterministic, causal: key block by key block over 4 pairs (pair_group %d)", a->pair_group);
    CHECK(fabsf(a->scale_log2 - a->softmax_scale * 1.44269504f) < 1e-6f, "scale_log2");
    CHECK(a->lse_head_stride == 1000 && a->lse_batch_stride == 16 * 1000, "lse [b][h][sq]");
    CHECK(a->o == (uint64_t)(uintptr_t)ADDR(3) && a->dout == (uint64_t)(uintptr_t)ADDR(4) &&
              a->lse == (uint64_t)(uintptr_t)LSE_ADDR && a->dq == (uint64_t)(uintptr_t)ADDR(5) &&
              a->dk == (uint64_t)(uintptr_t)ADDR(6) && a->dv == (uint64_t)(uintptr_t)ADDR(7),
          "pointers");
    CHECK(a->do_seq_stride == 16 * 128 && a->dk_seq_stride == 4 * 128 && a->dv_batch_stride == 1500 * 4 * 128,
          "strides");
    /* the backward's operand maps promote 256 bytes (the forward's 128) */
    CHECK(plan.q_map.l2_promote == 256 && plan.k_map.l2_promote == 256 && plan.v_map.l2_promote == 256 &&
              plan.do_map.l2_promote == 256,
          "bwd L2 promotion %d %d %d %d", plan.q_map.l2_promote, plan.k_map.l2_promote, plan.v_map.l2_promote,
          plan.do_map.l2_promote);
    CHECK(plan.q_map.box[1] == 64 && plan.do_map.box[1] == 64 && plan.k_map.box[1] == 128 && plan.v_map.box[1] == 128,
          "boxes");
    CHECK(plan.do_map.base == (uintptr_t)ADDR(4) && plan.do_map.dims[1] == 1000 && plan.do_map.dims[2] == 16 &&
              plan.k_map.dims[1] == 1500 && plan.k_map.dims[2] == 4 && plan.q_map.dims[3] == 2,
          "map dims");
    CHECK(plan.workspace_bytes == expected_workspace(2, 16, 4, 1000, 1500, 128, 0, 0, 0),
          "GQA workspace %zu, want %llu", plan.workspace_bytes,
          (unsigned long long)expected_workspace(2, 16, 4, 1000, 1500, 128, 0, 0, 0));
    CHECK(plan.workspace_bytes == 29624832, "GQA workspace %zu (worked by hand: 29624832)", plan.workspace_bytes);
    mgpu_attention_bwd_place_scratch(&plan, 0x100000);
    CHECK(a->lse_log2 == 0x100000 && a->dq_accum % 256 == 0 && a->dk_accum > a->dq_semaphore &&
              a->dkv_semaphore > a->dv_accum && a->dv_accum > a->dk_accum && a->q_rows_padded == 1024 &&
              a->k_rows_padded == 1536,
          "placed scratch");

    /* MHA: no dK / dV accumulators, postprocess converts dQ only; deterministic */
    d = base_desc();
    d.heads_kv = 16;
    d.deterministic = 1;
    d.head_dim = variant_built(256, MGPU_DTYPE_BF16) ? 256 : 128;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) == 0, "plan: %s", mgpu_last_error_message());
    CHECK(plan.tile.block_n == (d.head_dim == 256 ? 64 : 128) &&
              plan.main_grid == (unsigned)(1500 + plan.tile.block_n - 1) / plan.tile.block_n * 16 * 2 &&
              plan.post_grid == plan.pre_grid,
          "d=%lld MHA grids %u %u %u", (long long)d.head_dim, plan.main_grid, plan.pre_grid, plan.post_grid);
    CHECK(plan.workspace_bytes == expected_workspace(2, 16, 16, 1000, 1500, d.head_dim, 0, 0, 0),
          "MHA workspace %zu", plan.workspace_bytes);
    mgpu_attention_bwd_place_scratch(&plan, 0x100000);
    CHECK(plan.args.dk_accum == 0 && plan.args.dv_accum == 0 && plan.args.dkv_semaphore == 0 &&
              plan.args.deterministic == 1,
          "MHA: no key-side scratch");
    /* head dim 256: the tensor map of dq_accum, rows of every (sequence, head) slot, 16 x 128 boxes */
    if (d.head_dim == 256)
        CHECK(plan.dq_map.rank == 2 && plan.dq_map.type == MGPU_MAP_F32 && plan.dq_map.base == plan.args.dq_accum &&
                  plan.dq_map.dims[0] == 256 && plan.dq_map.dims[1] == 2 * 16 * 1024 &&
                  plan.dq_map.byte_strides[0] == 256 * 4 && plan.dq_map.box[0] == 128 && plan.dq_map.box[1] == 16 &&
                  plan.dq_map.swizzle_128b == 0,
              "d256 dq_accum map");
    else
        CHECK(plan.dq_map.rank == 0, "d128: no dq_accum map");
    /* deterministic on sm_90a: twice the pairs of a wave of CTAs per group (at most every pair) */
    const int64_t det_blocks = (1500 + plan.tile.block_n - 1) / plan.tile.block_n;
    int32_t det_group = (int32_t)(2 * ((132 + det_blocks - 1) / det_blocks));
    det_group = plan_device() != &hopper ? 1 : det_group > 16 ? 16 : det_group;
    CHECK(plan.args.pair_group == det_group, "deterministic pair_group %d, want %d", plan.args.pair_group, det_group);
    p.force_pair_group = 5;
    CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) == 0, "plan: %s", mgpu_last_error_message());
    CHECK(plan.args.pair_group == (plan_device() == &hopper ? 5 : 1), "forced pair_group %d", plan.args.pair_group);
    p.force_pair_group = 1000;
    CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) == 0, "plan: %s", mgpu_last_error_message());
    CHECK(plan.args.pair_group == (plan_device() == &hopper ? 32 : 1), "forced pair_group %d capped at the 32 pairs",
          plan.args.pair_group);
    p.force_pair_group = 0;

    /* key_blocks_down (sm_90a): deterministic, causal (or a right window alone), at most 64 query blocks */
    CHECK(plan.args.key_blocks_down == 0, "deterministic, no mask: key blocks up");
    const int on_hopper = plan_device() == &hopper;
    struct {
        int causal, left, right, seqlen_q, det, force, want;
    } const kd[] = {
        {1, -1, -1, 1000, 1, 0, on_hopper},   {0, -1, 0, 1000, 1, 0, on_hopper},  {1, -1, -1, 4096, 1, 0, on_hopper},
        {1, -1, -1, 4097, 1, 0, 0},           {1, 256, -1, 1000, 1, 0, 0},        {0, 64, 64, 1000, 1, 0, 0},
        {1, -1, -1, 1000, 0, 0, 0},           {1, -1, -1, 1000, 1, -1, 0},        {0, -1, -1, 1000, 1, 1, on_hopper},
        {1, -1, -1, 8192, 0, 1, on_hopper},
    };
    for (size_t c = 0; c < sizeof kd / sizeof kd[0]; c++) {
        d.causal = kd[c].causal;
        d.window_left = kd[c].left;
        d.window_right = kd[c].right;
        d.seqlen_q = kd[c].seqlen_q;
        d.deterministic = kd[c].det;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        p.force_keys_down = kd[c].force;
        CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) == 0, "plan: %s", mgpu_last_error_message());
        CHECK(plan.args.key_blocks_down == kd[c].want,
              "causal %d, window (%d, %d), seqlen_q %d, deterministic %d, forced %d: key_blocks_down %d, want %d",
              kd[c].causal, kd[c].left, kd[c].right, kd[c].seqlen_q, kd[c].det, kd[c].force,
              plan.args.key_blocks_down, kd[c].want);
    }
    p.force_keys_down = 0;
    /* deterministic GQA (16 / 4 heads, 2 sequences, 12 key blocks): causal, pairs slot by slot and at most
     * batch * heads_kv = 8 pairs a group; without a mask, neither */
    for (int causal = 0; causal <= 1; causal++) {
        d = base_desc();
        d.deterministic = 1;
        d.causal = causal;
        CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
        CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) == 0, "plan: %s",
              mgpu_last_error_message());
        CHECK(plan.args.pair_group == (plan_device() != &hopper ? 1 : causal ? 8 : 16) &&
                  plan.args.pairs_by_slot == (plan_device() == &hopper && causal),
              "deterministic GQA, causal %d: pair_group %d, pairs_by_slot %d", causal, plan.args.pair_group,
              plan.args.pairs_by_slot);
    }

    /* varlen, MQA */
    d = base_desc();
    d.heads_kv = 1;
    d.head_dim = variant_built(64, MGPU_DTYPE_BF16) ? 64 : 128;
    d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
    d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
    d.total_q = 1800;
    d.total_k = 2500;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) == 0, "plan: %s", mgpu_last_error_message());
    CHECK(plan.q_map.dims[1] == 1800 && plan.q_map.dims[3] == 1 && plan.k_map.dims[1] == 2500, "varlen map dims");
    CHECK(plan.args.lse_head_stride == 1800 && plan.args.lse_batch_stride == 0, "lse [h][total_q]");
    CHECK(plan.args.cu_seqlens_q == 0x1000 && plan.args.cu_seqlens_k == 0x2000, "offsets passed");
    CHECK(plan.main_grid == 12 * 16 * 2, "varlen main grid uses the longest sequence: %u", plan.main_grid);
    CHECK(plan.workspace_bytes == expected_workspace(2, 16, 1, 1000, 1500, d.head_dim, 1, 1800, 2500),
          "varlen workspace %zu, want %llu", plan.workspace_bytes,
          (unsigned long long)expected_workspace(2, 16, 1, 1000, 1500, d.head_dim, 1, 1800, 2500));

    /* grids of 2^31 CTAs or more, and products that would overflow int64 */
    d = base_desc();
    d.batch = d.seqlen_q = d.seqlen_k = INT32_MAX; /* varlen: the batch strides are not used */
    d.heads_q = d.heads_kv = 1024;
    d.cu_seqlens_q = (const int32_t *)(uintptr_t)0x1000;
    d.cu_seqlens_k = (const int32_t *)(uintptr_t)0x2000;
    d.total_q = d.total_k = 1000;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) < 0 && s == MGPU_STATUS_INVALID_SIZE,
          "2^25 * 2^10 * 2^31 CTAs: %s", mgpu_last_error_message());
    d = base_desc();
    /* dense strides beyond int64: INVALID_SIZE, as for the forward (tests/test_overflow.c) */
    d.batch = d.seqlen_q = d.seqlen_k = d.heads_q = d.heads_kv = INT32_MAX;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_INVALID_SIZE);
    d = base_desc();
    d.batch = 1 << 20;
    d.heads_q = d.heads_kv = 1 << 10;
    d.seqlen_q = d.seqlen_k = 1 << 10;
    CHECK_STATUS(validate(&d, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_attention_bwd_plan(&p, plan_device(), NULL, &plan, &s) < 0 && s == MGPU_STATUS_INVALID_SIZE,
          "huge grid: %s", mgpu_last_error_message());
}

/* For every head dim: the kernel's writes of a dq_accum tile, consumer c
 * (columns [c0, c0 + n)), warpgroup thread t, register i = 4 q + k of the
 * m64nN accumulator (row 16 (t / 32) + (t % 32) / 4 + 8 (k / 2), column
 * c0 + 8 q + 2 (t % 4) + k % 2) at element block_m * c0 + (128 q + t) * 4 + k
 * (the dQ writer's fragment order, dq_buffers > 0) or row * d + column
 * (adds from registers, dq_buffers == 0), cover the tile once and agree with
 * mgpu_attention_bwd_dq_offset. */
static void test_dq_fragment_order(void)
{
    static const int dims[] = {64, 96, 128, 192, 256};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int d = dims[di];
        struct mgpu_attention_bwd_tile t = {0, 0, 0, 0, 0, 0, 0};
        CHECK(mgpu_attention_bwd_tile(d, &t) == 0, "tile of head dim %d", d);
        CHECK(t.block_m == 64 && t.dq_cols0 % 8 == 0 && t.dq_cols0 > 0 && t.dq_cols0 < d, "d%d: dq_cols0 %d", d,
              t.dq_cols0);
        CHECK(t.dq_buffers == (d <= 128 ? 2 : 0), "d%d: dq_buffers %d", d, t.dq_buffers);
        /* tmap_dq's box width divides both consumers' column ranges (split_dim only) */
        CHECK(d <= 128 ? t.dq_box_cols == 0
                       : t.dq_box_cols % 32 == 0 && t.dq_cols0 % t.dq_box_cols == 0 &&
                             (d - t.dq_cols0) % t.dq_box_cols == 0,
              "d%d: dq_box_cols %d", d, t.dq_box_cols);
        const int elems = t.block_m * d;
        unsigned char seen[64 * 256];
        memset(seen, 0, sizeof seen);
        int bad = 0;
        for (int c = 0; c < 2; c++) {
            const int c0 = c == 0 ? 0 : t.dq_cols0, n = c == 0 ? t.dq_cols0 : d - t.dq_cols0;
            for (int thread = 0; thread < 128; thread++)
                for (int q = 0; q < n / 8; q++)
                    for (int k = 0; k < 4; k++) {
                        const int row = 16 * (thread / 32) + (thread % 32) / 4 + 8 * (k / 2);
                        const int col = c0 + 8 * q + 2 * (thread % 4) + k % 2;
                        const int64_t at = t.dq_buffers > 0 ? (int64_t)t.block_m * c0 + (128 * q + thread) * 4 + k
                                                            : (int64_t)row * d + col;
                        if (at < 0 || at >= elems || seen[at] || mgpu_attention_bwd_dq_offset(&t, d, row, col) != at)
                            bad++;
                        else
                            seen[at] = 1;
                    }
        }
        int missing = 0;
        for (int e = 0; e < elems; e++)
            missing += !seen[e];
        CHECK(bad == 0 && missing == 0, "d%d: dq_accum fragment order: %d writes disagree, %d elements missed", d,
              bad, missing);
    }
}

/* The sm_100a kernel's CTA map, as attention_bwd_sm100.cuh decodes blockIdx.x
 * (slice fastest, then 128-key block, query head, sequence), over
 * mgpu_attention_bwd_sm100_ctas(d, n_blocks) CTAs per query head: every key
 * of every ABI key block and every head-dim column of dK / dV / dQ is owned
 * by exactly one CTA per (query head, sequence); the dQ turns of a query
 * block (key-block order) and the dK / dV turns of a key block (query-head
 * order) wait only for CTAs of a smaller index (those the GPU started
 * before), and the dQ columns the dQ warps add (slice start + lane) are each
 * column's row-major dq_accum offset for d > 128. */
static void test_sm100_cta_map(void)
{
    static const int dims[] = {64, 96, 128, 192, 256};
    enum { HEADS = 3, MAX_KEYS = 128 * 9 };
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int d = dims[di];
        struct mgpu_attention_bwd_tile t = {0, 0, 0, 0, 0, 0, 0};
        CHECK(mgpu_attention_bwd_tile(d, &t) == 0, "tile of head dim %d", d);
        const int slices = mgpu_attention_bwd_sm100_slices(d);
        const int keys_per_cta = 128, slice_cols = d > 128 ? 128 : d;
        CHECK(slices == (d > 128 ? 2 : 1) && keys_per_cta % t.block_n == 0, "d%d: slices %d", d, slices);
        for (int n_blocks = 1; n_blocks <= 9; n_blocks++) {
            const int64_t per_head = mgpu_attention_bwd_sm100_ctas(d, n_blocks);
            const int key_blocks = (n_blocks + keys_per_cta / t.block_n - 1) / (keys_per_cta / t.block_n);
            CHECK(per_head == (int64_t)key_blocks * slices, "d%d n_blocks %d: %lld CTAs per head", d, n_blocks,
                  (long long)per_head);
            static unsigned char owned[HEADS][MAX_KEYS][256];
            memset(owned, 0, sizeof owned);
            int bad = 0;
            for (int x = 0; x < per_head * HEADS; x++) {
                const int slice = x % slices, tile = x / slices;
                const int kb = tile % key_blocks, h = (tile / key_blocks) % HEADS;
                const int col0 = slice * slice_cols, cols = slice == slices - 1 ? d - col0 : slice_cols;
                if (cols <= 0 || cols > slice_cols || cols % 32 != 0)
                    bad++;
                for (int key = kb * keys_per_cta; key < (kb + 1) * keys_per_cta && key < n_blocks * t.block_n; key++)
                    for (int c = col0; c < col0 + cols; c++)
                        bad += owned[h][key][c]++ != 0;
                /* dQ turn: every slice of key block kb - 1, same head; dK / dV turn: every slice
                 * of key block kb of head h - 1 (the group's previous query head) */
                for (int s2 = 0; s2 < slices; s2++) {
                    if (kb > 0)
                        bad += ((h * key_blocks + kb - 1) * slices + s2) >= x;
                    if (h > 0)
                        bad += (((h - 1) * key_blocks + kb) * slices + s2) >= x;
                }
                if (d > 128)
                    for (int lane = 0; lane < cols; lane++)
                        bad += mgpu_attention_bwd_dq_offset(&t, d, 5, col0 + lane) != (int64_t)5 * d + col0 + lane;
            }
            for (int h = 0; h < HEADS; h++)
                for (int key = 0; key < n_blocks * t.block_n; key++)
                    for (int c = 0; c < d; c++)
                        bad += owned[h][key][c] != 1;
            CHECK(bad == 0, "d%d n_blocks %d: sm_100a CTA map, %d errors", d, n_blocks, bad);
        }
    }
}

/* The sm_90a grid (mgpu_attention_bwd_sm90_cta) for every pair_group, both
 * key-block orders: each (key block, pair) once, pair_group 1 is key blocks
 * fastest (key_blocks_down: in decreasing order), and the deterministic turns
 * wait only for CTAs of a smaller index: key block kb - 1 of the pair (dQ;
 * kb + 1 with key_blocks_down, whose turns go in decreasing key-block order)
 * and the pair before, same key block (dK / dV: the query head before in the
 * group, which comes earlier in either pair order, see test_sm90_pair_order). */
static void test_sm90_cta_map(void)
{
    enum { MAX_PAIRS = 13, MAX_BLOCKS = 9 };
    for (int down = 0; down <= 1; down++) {
        for (int pairs = 1; pairs <= MAX_PAIRS; pairs++) {
            for (int n_blocks = 1; n_blocks <= MAX_BLOCKS; n_blocks++) {
                for (int group = 1; group <= pairs; group++) {
                    int at[MAX_PAIRS][MAX_BLOCKS];
                    memset(at, 0xff, sizeof at);
                    int bad = 0;
                    for (int x = 0; x < pairs * n_blocks; x++) {
                        int kb = -1, pair = -1;
                        mgpu_attention_bwd_sm90_cta(x, n_blocks, pairs, group, down, &kb, &pair);
                        if (kb < 0 || kb >= n_blocks || pair < 0 || pair >= pairs || at[pair][kb] >= 0) {
                            bad++;
                            continue;
                        }
                        at[pair][kb] = x;
                        if (group == 1)
                            bad += kb != (down ? n_blocks - 1 - x % n_blocks : x % n_blocks) || pair != x / n_blocks;
                    }
                    for (int pair = 0; pair < pairs; pair++)
                        for (int kb = 0; kb < n_blocks; kb++)
                            bad += at[pair][kb] < 0 || (pair > 0 && at[pair - 1][kb] >= at[pair][kb]) ||
                                   (down ? kb + 1 < n_blocks && at[pair][kb + 1] >= at[pair][kb]
                                        : kb > 0 && at[pair][kb - 1] >= at[pair][kb]);
                    CHECK(bad == 0,
                          "key_blocks_down %d, pairs %d, n_blocks %d, pair_group %d: sm_90a CTA map, %d errors", down,
                          pairs, n_blocks, group, bad);
                }
            }
        }
    }
}

/* The sm_90a grid's pair order (mgpu_attention_bwd_sm90_pair): a bijection
 * onto (sequence, query head); b * heads_q + h unless pairs_by_slot with GQA; there
 * the query head before in the KV head's group (whose dK / dV turn comes
 * first) has the smaller pair index, and any batch * heads_kv consecutive
 * pairs hold one query head per (sequence, KV head). */
static void test_sm90_pair_order(void)
{
    enum { MAX_B = 3, MAX_KV = 4, MAX_G = 4 };
    for (int by_slot = 0; by_slot <= 1; by_slot++)
        for (int batch = 1; batch <= MAX_B; batch++)
            for (int heads_kv = 1; heads_kv <= MAX_KV; heads_kv++)
                for (int gs = 1; gs <= MAX_G; gs++) {
                    const int heads_q = heads_kv * gs, pairs = batch * heads_q;
                    int index[MAX_B][MAX_KV * MAX_G];
                    memset(index, 0xff, sizeof index);
                    int bad = 0;
                    for (int p = 0; p < pairs; p++) {
                        int b = -1, h = -1;
                        mgpu_attention_bwd_sm90_pair(p, batch, heads_kv, gs, by_slot, &b, &h);
                        if (b < 0 || b >= batch || h < 0 || h >= heads_q || index[b][h] >= 0) {
                            bad++;
                            continue;
                        }
                        index[b][h] = p;
                        if (!by_slot || gs == 1)
                            bad += p != b * heads_q + h;
                    }
                    for (int b = 0; b < batch; b++)
                        for (int h = 0; h < heads_q; h++)
                            bad += h % gs != 0 && index[b][h - 1] >= index[b][h];
                    if (by_slot && gs > 1)
                        for (int p0 = 0; p0 + batch * heads_kv <= pairs; p0++) {
                            int seen[MAX_B][MAX_KV] = {{0}};
                            for (int p = p0; p < p0 + batch * heads_kv; p++) {
                                int b, h;
                                mgpu_attention_bwd_sm90_pair(p, batch, heads_kv, gs, by_slot, &b, &h);
                                bad += seen[b][h / gs]++ != 0;
                            }
                        }
                    CHECK(bad == 0, "pairs_by_slot %d, batch %d, heads %d/%d: sm_90a pair order, %d errors", by_slot,
                          batch, heads_q, heads_kv, bad);
                }
}

int main(void)
{
    test_dq_fragment_order();
    test_sm100_cta_map();
    test_sm90_cta_map();
    test_sm90_pair_order();
    test_validation();
    test_selection();
    test_blackwell_features();
    test_plan();
    return check_exit();
}
