/*
 * mgpu_gemm, mgpu_gemm_strided_batched and mgpu_gemm_ex: check the handle,
 * validate, plan (gemm_plan.c: variant, split-K, packs, workspace, grid,
 * kernel arguments, tensor maps), encode the maps, launch on the handle's
 * stream. The BLAS-style calls
 * are mgpu_gemm_ex's problem without scales, bias or activation.
 *
 * Tensor maps of A and B, one per operand, rank 3 over {contiguous, strided,
 * batch} dimensions, 128-byte swizzled boxes 128 bytes wide (64 16-bit or
 * 128 fp8 elements; fp8 is mapped as UINT8, the kernel knows the format):
 *   K-major operand (A with transa = T, B with transb = N):
 *       dims {k, rows, batch}, box {128 bytes, tile_rows, 1}
 *   MN-major operand (A with transa = N, B with transb = T; 16-bit only):
 *       dims {rows, k, batch}, box {64, 64, 1}; the kernel loads tile_rows / 64 boxes
 * where rows is m for A and n for B (a broadcast operand, batch stride 0, has
 * batch dimension 1). Out-of-bounds elements read as zero, which is how
 * partial tiles at the m, n and k edges are handled. With 2-CTA clusters each
 * CTA loads half of the A tile (tile_rows = tile_m / 2) and multicasts it.
 *
 * The persistent kernel also takes a map of D (C): dims {m, n, batch}, box
 * {128 bytes of rows, 64 columns, 1}, 128-byte swizzle, for its TMA stores;
 * when C's alignment rules that out it stores directly. A plan may use the
 * handle's workspace for packed copies of the operands TMA cannot read (the
 * pack kernel runs in front, on the same stream) and for the fp32 split-K
 * partials.
 */
#include "runtime.h"

#include <stdio.h>
#include <string.h>

#include "gemm_plan.h"

_Static_assert((int)MGPU_ABI_F16 == (int)MGPU_DTYPE_F16 && (int)MGPU_ABI_BF16 == (int)MGPU_DTYPE_BF16 &&
                   (int)MGPU_ABI_F32 == (int)MGPU_DTYPE_F32 && (int)MGPU_ABI_E4M3 == (int)MGPU_DTYPE_E4M3 &&
                   (int)MGPU_ABI_E5M2 == (int)MGPU_DTYPE_E5M2,
               "kernel dtype codes must equal the public ones");
_Static_assert((int)MGPU_ABI_ACT_NONE == (int)MGPU_ACTIVATION_NONE &&
                   (int)MGPU_ABI_ACT_RELU == (int)MGPU_ACTIVATION_RELU &&
                   (int)MGPU_ABI_ACT_GELU == (int)MGPU_ACTIVATION_GELU &&
                   (int)MGPU_ABI_BIAS_PER_ROW == (int)MGPU_BIAS_PER_ROW &&
                   (int)MGPU_ABI_BIAS_PER_COLUMN == (int)MGPU_BIAS_PER_COLUMN,
               "kernel epilogue codes must equal the public ones");

static void log_plan(const struct mgpu_gemm_problem *p, const struct mgpu_gemm_plan *plan,
                     const mgpu_handle *h)
{
    const struct mgpu_variant *v = &mgpu_variants[plan->variant];
    char tail[48] = "";
    if (plan->tail_tiles > 0)
        snprintf(tail, sizeof tail, ", split-K tail of %d units", plan->tail_tiles);
    mgpu_log("gemm %s%s m=%lld n=%lld k=%lld batch=%lld %s%s%s->%s%s%s%s%s lda=%lld ldb=%lld ldc=%lld: "
             "%s%s [%s; split-k %d, grid %lld, band %d, cluster %dx%d%s%s%s%s%s]",
             p->transa == MGPU_OP_N ? "N" : "T", p->transb == MGPU_OP_N ? "N" : "T", (long long)p->m,
             (long long)p->n, (long long)p->k, (long long)p->batch, mgpu_dtype_name(p->a_dtype),
             p->b_dtype != p->a_dtype ? "x" : "", p->b_dtype != p->a_dtype ? mgpu_dtype_name(p->b_dtype) : "",
             mgpu_dtype_name(p->c_dtype), *p->alpha == 0.0f ? " alpha=0" : "",
             p->scale_a || p->scale_b || p->scale_d ? " scaled" : "",
             p->bias ? (p->bias_mode == MGPU_BIAS_PER_ROW ? " +row bias" : " +column bias") : "",
             p->activation == MGPU_ACTIVATION_RELU   ? " relu"
             : p->activation == MGPU_ACTIVATION_GELU ? " gelu"
                                                     : "",
             (long long)p->lda, (long long)p->ldb, (long long)p->ldc, v->name, plan->forced ? " (forced)" : "",
             plan->shape_class, plan->splits, (long long)plan->grid, plan->band, v->gemm.cluster_m, v->gemm.cluster_n,
             plan->pack_a ? ", A packed" : "", plan->pack_b ? ", B packed" : "",
             plan->persistent && !plan->args.c_tma ? ", direct stores" : "",
             plan->programmatic ? ", programmatic" : "", tail);
    if (plan->degraded) {
        char wanted[32];
        if (plan->workspace_wanted == MGPU_GEMM_WANTED_OVER_LIMIT)
            snprintf(wanted, sizeof wanted, "over the limit");
        else
            snprintf(wanted, sizeof wanted, "%zu bytes", plan->workspace_wanted);
        mgpu_log("gemm: %s (the best plan wants %s of workspace, the handle has %zu bytes; "
                 "mgpu_gemm_workspace_size says how much, mgpu_reserve_workspace gives it)",
                 plan->degraded, wanted, h->workspace_bytes);
    }
}

static const char *const map_names[3] = {"GEMM A", "GEMM B", "GEMM C"};

/* The pack kernels, then the persistent kernel with its three maps. */
static mgpu_status launch_persistent(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gemm_plan *plan)
{
    mgpu_status s = MGPU_STATUS_SUCCESS;
    const int packed[2] = {plan->pack_a, plan->pack_b};
    for (int i = 0; i < 2 && s == MGPU_STATUS_SUCCESS; i++) {
        if (!packed[i])
            continue;
        struct mgpu_gemm_pack_args args = plan->pack[i].args;
        void *params[1] = {&args};
        s = mgpu_launch(h, d, plan->pack_variant, plan->pack[i].grid, 1, 1, params);
    }
    CUtensorMap maps[3];
    memset(maps, 0, sizeof maps);
    for (int i = 0; i < 3 && s == MGPU_STATUS_SUCCESS; i++)
        if (plan->use_map[i])
            s = mgpu_encode_tensor_map(d, &plan->maps[i], map_names[i], &maps[i]);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    struct mgpu_gemm_args args = plan->args;
    void *params[4] = {&maps[0], &maps[1], &maps[2], &args};
    /* Programmatic dependent launch of the sm_90a persistent kernel, which
     * waits for the grids before it (griddepcontrol.wait) before it touches
     * global memory and lets the next grid start its prologue at once: where
     * the plan says (gemm_plan.c, programmatic_wanted, or MGPU_GEMM_PDL;
     * docs/decisions/025-gemm-programmatic-launch.md). */
    if (plan->programmatic)
        return mgpu_launch_programmatic(h, d, plan->variant, (unsigned)plan->grid, 1, 1, params);
    return mgpu_launch(h, d, plan->variant, (unsigned)plan->grid, 1, 1, params);
}

/* One CTA per tile, launched per chunk of columns and batches (grid y and z
 * limits): the portable kernel, which takes its arguments only. */
static mgpu_status launch_tiles(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gemm_problem *p,
                                const struct mgpu_gemm_plan *plan)
{
    CUtensorMap maps[2];
    memset(maps, 0, sizeof maps);
    mgpu_status s = MGPU_STATUS_SUCCESS;
    if (plan->use_map[MGPU_GEMM_MAP_A])
        s = mgpu_encode_tensor_map(d, &plan->maps[MGPU_GEMM_MAP_A], map_names[0], &maps[0]);
    for (int64_t col0 = 0; col0 < p->n && s == MGPU_STATUS_SUCCESS; col0 += plan->cols_per_launch) {
        for (int64_t b0 = 0; b0 < p->batch && s == MGPU_STATUS_SUCCESS; b0 += plan->batches_per_launch) {
            struct mgpu_gemm_args args;
            struct mgpu_tensor_map_desc map_b;
            unsigned grid_y, grid_z;
            mgpu_gemm_plan_chunk(plan, p, col0, b0, &args, &map_b, &grid_y, &grid_z);
            void *params[3] = {&maps[0], &maps[1], &args};
            if (plan->use_map[MGPU_GEMM_MAP_B]) {
                s = mgpu_encode_tensor_map(d, &map_b, map_names[1], &maps[1]);
                if (s != MGPU_STATUS_SUCCESS)
                    break;
            } else {
                params[0] = &args;
            }
            s = mgpu_launch(h, d, plan->variant, plan->grid_x, grid_y, grid_z, params);
        }
    }
    return s;
}

/* The small-m kernel: one launch, the arguments (the register form) or the
 * maps of A and B and the arguments (the tensor-map ring); for programmatic
 * dependent launch (the kernel waits, griddepcontrol.wait, before any global
 * access) where the plan says (gemm_plan.c, plan_small_m, or MGPU_GEMM_PDL). */
static mgpu_status launch_small_m(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gemm_plan *plan)
{
    struct mgpu_gemm_args args = plan->args;
    CUtensorMap maps[2];
    memset(maps, 0, sizeof maps);
    void *params[3] = {&args, NULL, NULL};
    if (plan->use_map[MGPU_GEMM_MAP_A]) {
        for (int i = 0; i < 2; i++) {
            const mgpu_status s = mgpu_encode_tensor_map(d, &plan->maps[i], map_names[i], &maps[i]);
            if (s != MGPU_STATUS_SUCCESS)
                return s;
        }
        params[0] = &maps[0];
        params[1] = &maps[1];
        params[2] = &args;
    }
    if (plan->programmatic)
        return mgpu_launch_programmatic(h, d, plan->variant, plan->grid_x, plan->grid_y, plan->grid_z, params);
    return mgpu_launch(h, d, plan->variant, plan->grid_x, plan->grid_y, plan->grid_z, params);
}

/* The force settings of the environment, as every plan takes them. */
static struct mgpu_gemm_force env_force(void)
{
    const struct mgpu_env *env = mgpu_env();
    const struct mgpu_gemm_force force = {
        .variant = env->force_variant, .splits = env->force_split_k, .band = env->force_band,
        .schedule = env->force_schedule, .fp8_no_promotion = env->debug_fp8_no_promotion,
        .programmatic = env->gemm_pdl, .tail_split = env->force_tail_split};
    return force;
}

/* The workspace queries: the handle, then the problem (validated as the
 * call validates it; the BLAS-style query takes alpha and beta as 1), then the plan made with an
 * unlimited workspace. */
static mgpu_status workspace_size(mgpu_handle *h, const mgpu_gemm_desc *desc, const struct mgpu_gemm_problem *given,
                                  size_t *bytes)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (!bytes)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "bytes is NULL");
    struct mgpu_gemm_problem p;
    if (desc) {
        s = mgpu_gemm_problem_from_desc(desc, &p);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    } else if (given) {
        p = *given;
    } else {
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    }
    static const float one = 1.0f;
    if (!desc)
        p.alpha = p.beta = &one;
    s = mgpu_gemm_validate(&p);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (mgpu_gemm_problem_empty(&p)) {
        *bytes = 0;
        return MGPU_STATUS_SUCCESS;
    }
    const struct mgpu_gemm_force force = env_force();
    size_t wanted;
    if (mgpu_gemm_workspace_wanted(&p, &h->caps, &force, &wanted, &s) < 0)
        return s;
    if (wanted == MGPU_GEMM_WANTED_OVER_LIMIT)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "the GEMM's workspace would exceed 2^63 bytes");
    *bytes = wanted;
    return MGPU_STATUS_SUCCESS;
}

/* Handle first, then the problem, then the plan and its launches. */
static mgpu_status gemm(mgpu_handle *h, const mgpu_gemm_desc *desc, const struct mgpu_gemm_problem *given)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    struct mgpu_gemm_problem from_desc;
    if (desc) {
        s = mgpu_gemm_problem_from_desc(desc, &from_desc);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
        given = &from_desc;
    } else if (!given) {
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    }
    const struct mgpu_gemm_problem *p = given;
    s = mgpu_gemm_validate(p);
    if (s != MGPU_STATUS_SUCCESS || mgpu_gemm_problem_empty(p))
        return s;

    const struct mgpu_gemm_force force = env_force();
    struct mgpu_gemm_resources res = {
        .workspace_bytes = h->workspace_bytes,
        .split_counters = mgpu_handle_counter(h, MGPU_COUNTERS_SPLIT_K),
    };
    CUdeviceptr ws = 0;
    s = mgpu_handle_workspace(h, 0, &ws);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    res.workspace = ws;
    struct mgpu_gemm_plan plan;
    if (mgpu_plan_gemm(p, &h->caps, &force, &res, &plan, &s) < 0)
        return s;
    if (mgpu_log_enabled())
        log_plan(p, &plan, h);
    if (plan.small_m)
        return launch_small_m(h, d, &plan);
    return plan.persistent ? launch_persistent(h, d, &plan) : launch_tiles(h, d, p, &plan);
}

mgpu_status mgpu_gemm(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb, int64_t m, int64_t n,
                      int64_t k, const float *alpha, const void *A, mgpu_dtype a_type, int64_t lda, const void *B,
                      mgpu_dtype b_type, int64_t ldb, const float *beta, void *C, mgpu_dtype c_type, int64_t ldc)
{
    const struct mgpu_gemm_problem p = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .batch = 1,
        .a_dtype = a_type, .b_dtype = b_type, .c_dtype = c_type,
        .a = (uintptr_t)A, .b = (uintptr_t)B, .c = (uintptr_t)C,
        .lda = lda, .ldb = ldb, .ldc = ldc,
        .alpha = alpha, .beta = beta,
    };
    return gemm(handle, NULL, &p);
}

mgpu_status mgpu_gemm_strided_batched(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb,
                                      int64_t m, int64_t n, int64_t k, const float *alpha, const void *A,
                                      mgpu_dtype a_type, int64_t lda, int64_t stride_a, const void *B,
                                      mgpu_dtype b_type, int64_t ldb, int64_t stride_b, const float *beta, void *C,
                                      mgpu_dtype c_type, int64_t ldc, int64_t stride_c, int64_t batch_count)
{
    const struct mgpu_gemm_problem p = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .batch = batch_count,
        .a_dtype = a_type, .b_dtype = b_type, .c_dtype = c_type,
        .a = (uintptr_t)A, .b = (uintptr_t)B, .c = (uintptr_t)C,
        .lda = lda, .ldb = ldb, .ldc = ldc,
        .stride_a = stride_a, .stride_b = stride_b, .stride_c = stride_c,
        .alpha = alpha, .beta = beta,
    };
    return gemm(handle, NULL, &p);
}

mgpu_status mgpu_gemm_ex(mgpu_handle *handle, const mgpu_gemm_desc *desc)
{
    return gemm(handle, desc, NULL);
}

mgpu_status mgpu_gemm_workspace_size(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb, int64_t m,
                                     int64_t n, int64_t k, const void *A, mgpu_dtype a_type, int64_t lda,
                                     const void *B, mgpu_dtype b_type, int64_t ldb, const void *C,
                                     mgpu_dtype c_type, int64_t ldc, size_t *bytes)
{
    const struct mgpu_gemm_problem p = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .batch = 1,
        .a_dtype = a_type, .b_dtype = b_type, .c_dtype = c_type,
        .a = (uintptr_t)A, .b = (uintptr_t)B, .c = (uintptr_t)C,
        .lda = lda, .ldb = ldb, .ldc = ldc,
    };
    return workspace_size(handle, NULL, &p, bytes);
}

mgpu_status mgpu_gemm_ex_workspace_size(mgpu_handle *handle, const mgpu_gemm_desc *desc, size_t *bytes)
{
    return workspace_size(handle, desc, NULL, bytes);
}
