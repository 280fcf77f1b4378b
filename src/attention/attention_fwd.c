/*
 * mgpu_attention_fwd: check the handle, validate, select and plan
 * (attention_plan.c), encode the three TMA tensor maps over Q, K and V that
 * attention_abi.h describes, launch on the handle's stream (one CTA per
 * query tile or key split, or a persistent grid), and for split calls the
 * combine pass after it (partial buffers in the handle's workspace; launched
 * for programmatic dependent launch where its CTAs fit beside the main grid)
 * unless the plan merges the splits in the main kernel (the handle's split
 * counters, one per work tile, zero between launches). The
 * kernel's whole parameter is struct mgpu_attention_fwd_params, passed by
 * value. Calls with one query tile per (sequence, tile head) that the plan
 * gives the decode entry launch it instead, on its three-dimensional grid;
 * prefill calls at head dim 64 that the plan gives the wide entry (192 query
 * rows, three consumer warpgroups) launch that on the 192-row plan's grid.
 * fp8 calls whose V^T fits the workspace: the V pre-pass first, then the
 * V^T twin of the fp8 kernel. mgpu_kv_cache_append: validate, one copy
 * kernel.
 */
#include <string.h>

#include "attention_plan.h"
#include "runtime.h"

static void log_call(const struct mgpu_attention_problem *p, const struct mgpu_variant *v, int forced,
                     const struct mgpu_attention_plan *plan)
{
    mgpu_log("attention_fwd b=%lld sq=%lld sk=%lld hq=%lld hkv=%lld d=%lld %s causal=%d window=(%d,%d) "
             "softcap=%g%s%s%s%s: %s%s grid=%u%s pack_gqa=%d splits=%d%s%s%s",
             (long long)p->batch, (long long)p->seqlen_q, (long long)p->seqlen_k, (long long)p->heads_q,
             (long long)p->heads_kv, (long long)p->head_dim,
             p->qkv_fp8 ? (p->dtype == MGPU_DTYPE_BF16 ? "e4m3->bf16" : "e4m3->f16")
                        : (p->dtype == MGPU_DTYPE_BF16 ? "bf16" : "f16"),
             p->causal,
             p->window_left, p->window_right, (double)p->softcap, p->varlen ? " varlen" : "", p->lse ? " lse" : "",
             p->seqused_k ? " seqused_k" : "", p->block_table ? " paged" : "", v->name, forced ? " (forced)" : "",
             plan->grid, plan->dynamic ? " (dynamic tiles)" : "", plan->args.pack_gqa, plan->args.num_splits,
             plan->args.num_splits <= 1 ? ""
             : plan->merge_in_kernel  ? " merged in kernel"
             : plan->combine_early    ? " + combine (early)"
                                      : " + combine",
             plan->args.num_splits > 1 && plan->args.merge_splits_per_warp > 0 ? " (one merge warp a row)" : "",
             plan->programmatic ? ", programmatic" : "");
}

/* fp8 calls: V^T from the workspace (a pre-pass writes it, the V^T twin of
 * the fp8 variant loads it like K) when the workspace holds it and enough
 * query tiles read each V (or a forced variant names a V^T kernel), unless a
 * forced variant names the fp8 kernel itself; else that kernel transposes V
 * in shared memory. Returns the main variant (the V^T twin or `variant`);
 * *transpose the pre-pass (-1: none), its parameter and grid filled. */
static int choose_fp8_vt(mgpu_handle *h, const struct mgpu_attention_problem *p, int variant, const char *force,
                         struct mgpu_attention_plan *plan, struct mgpu_attention_fwd_fp8_vt_args *vt,
                         unsigned vt_grid[3], int *transpose)
{
    *transpose = -1;
    if (!p->qkv_fp8 || (force && strcmp(force, mgpu_variants[variant].name) == 0))
        return variant;
    const size_t bytes = mgpu_attention_fwd_fp8_vt_bytes(p);
    mgpu_status s;
    int twin = -1;
    if (bytes > 0 && bytes <= h->workspace_bytes) {
        twin = mgpu_select_attention_fwd_fp8_vt(p->dtype, &h->caps, force, transpose, &s);
        const int forced = twin >= 0 && force && strcmp(force, mgpu_variants[twin].name) == 0;
        if (!forced && !mgpu_attention_fwd_fp8_vt_pays(p))
            twin = -1;
    }
    if (mgpu_log_enabled())
        mgpu_log("attention_fwd fp8: V^T %s (%zu bytes, workspace %zu)",
                 twin >= 0 ? "from the workspace (pre-pass)" : "transposed in the kernel", bytes, h->workspace_bytes);
    if (twin < 0) {
        *transpose = -1;
        return variant;
    }
    mgpu_attention_fwd_plan_fp8_vt(p, (uint64_t)h->workspace, plan, vt, vt_grid);
    return twin;
}

static mgpu_status run(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_attention_problem *p)
{
    mgpu_status s;
    const struct mgpu_env *env = mgpu_env();
    const char *force = env->force_variant;
    int variant = mgpu_select_attention_fwd(p, &h->caps, force, &s);
    if (variant < 0)
        return s;
    /* a forward variant forced by name runs itself, not its decode entry;
     * a decode entry forced by name runs where the call fits it */
    const int forced_by_name = force && strcmp(force, mgpu_variants[variant].name) == 0;
    int forced_block_n = 0; /* a 64-row decode entry named: its key block */
    const int decode_forced = mgpu_attention_fwd_decode_forced(force, &mgpu_variants[variant], &forced_block_n);
    if (decode_forced < 0)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "MGPU_FORCE_VARIANT names %s, a decode entry for another dtype "
                         "or head dim than this call's (%s)", force, mgpu_variants[variant].name);
    const int wide_forced = mgpu_attention_fwd_wide_forced(force, &mgpu_variants[variant]);
    if (wide_forced < 0)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "MGPU_FORCE_VARIANT names %s, a wide entry for another dtype "
                         "or head dim than this call's (%s)", force, mgpu_variants[variant].name);
    const int decode64 =
        mgpu_select_attention_fwd_decode64(&mgpu_variants[variant], &h->caps, mgpu_variants[variant].attention.block_n);
    const int decode64_short = mgpu_select_attention_fwd_decode64(&mgpu_variants[variant], &h->caps,
                                                                  MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N);
    const int short_forced = forced_block_n == MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N ? 1 : forced_block_n ? -1 : 0;
    const struct mgpu_attention_fwd_choice choice = {
        h->workspace_bytes,
        env->force_pack_gqa,
        env->force_num_splits,
        env->force_paged_gather,
        env->force_split_merge,
        env->attention_pdl,
        forced_by_name ? -1 : decode_forced ? 1 : env->attention_decode_entry,
        decode64 >= 0,
        decode_forced == 64 ? 1 : decode_forced == 128 ? -1 : env->attention_decode64,
        env->attention_merge16,
        env->attention_split_fill,
        decode64_short >= 0,
        short_forced ? short_forced : env->attention_decode64_short};
    struct mgpu_attention_plan plan;
    mgpu_attention_make_plan_ex(p, &mgpu_variants[variant], &h->caps, &choice, &plan);
    /* Prefill calls at head dim 64: the wide entry where it pays (forced
     * on by MGPU_ATTENTION_WIDE=1 or by its name, off by =0 or by the
     * forward variant's name; either forcing is ignored where the 192-row
     * plan would split the keys). */
    const int wide = mgpu_select_attention_fwd_wide(&mgpu_variants[variant], &h->caps);
    if (wide >= 0)
        mgpu_attention_fwd_plan_wide(p, &mgpu_variants[variant], &h->caps, &choice,
                                     forced_by_name ? -1 : wide_forced ? 1 : env->attention_wide, &plan);
    /* fp8: the plan stays the fp8 variant's (one split, no workspace), its V map may move to V^T. */
    struct mgpu_attention_fwd_fp8_vt_args vt;
    unsigned vt_grid[3] = {0, 0, 0};
    int transpose = -1;
    variant = choose_fp8_vt(h, p, variant, force, &plan, &vt, vt_grid, &transpose);
    const struct mgpu_variant *v = &mgpu_variants[variant];
    int main_variant = variant;
    if (plan.wide) {
        main_variant = wide; /* planned only where it exists */
    } else if (plan.decode64) {
        /* planned only where it exists */
        main_variant = plan.decode64_block_n == mgpu_variants[variant].attention.block_n ? decode64 : decode64_short;
    } else if (plan.decode_entry) {
        /* The variant's decode entry; without one in the registry, the
         * forward kernel on the same one-tile-per-CTA grid. */
        const int decode = mgpu_select_attention_fwd_decode(v, &h->caps);
        if (decode >= 0)
            main_variant = decode;
        else
            plan.decode_entry = 0;
    }
    int combine = -1;
    if (plan.args.num_splits > 1) {
        if (!plan.merge_in_kernel) {
            combine = mgpu_select_attention_fwd_combine(p->dtype, &h->caps, &s);
            if (combine < 0)
                return s;
        }
        CUdeviceptr workspace = 0;
        s = mgpu_handle_workspace(h, plan.workspace_bytes, &workspace);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
        mgpu_attention_fwd_place_partials(&plan, (uint64_t)workspace);
    }
    if (mgpu_log_enabled())
        log_call(p, &mgpu_variants[main_variant],
                 force && (strcmp(force, v->name) == 0 || (plan.wide && wide_forced > 0)), &plan);

    struct mgpu_attention_fwd_params params;
    memset(&params, 0, sizeof params);
    s = mgpu_encode_tensor_map(d, &plan.q_map, "attention Q", &params.tmap_q);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_encode_tensor_map(d, &plan.k_map, "attention K", &params.tmap_k);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_encode_tensor_map(d, &plan.v_map, "attention V", &params.tmap_v);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    params.args = plan.args;
    if (plan.dynamic)
        params.args.tile_counter = mgpu_handle_counter(h, MGPU_COUNTERS_ATTENTION);
    if (plan.merge_in_kernel)
        params.args.split_counters = mgpu_handle_counter(h, MGPU_COUNTERS_ATTENTION_SPLITS);

    /* Both kernels loaded before the first is queued. */
    CUfunction fn;
    s = mgpu_kernel_function(h, d, main_variant, &fn);
    if (s == MGPU_STATUS_SUCCESS && combine >= 0)
        s = mgpu_kernel_function(h, d, combine, &fn);
    if (s == MGPU_STATUS_SUCCESS && transpose >= 0)
        s = mgpu_kernel_function(h, d, transpose, &fn);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (transpose >= 0) {
        void *vt_params[1] = {&vt};
        s = mgpu_launch(h, d, transpose, vt_grid[0], vt_grid[1], vt_grid[2], vt_params);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }
    void *kernel_params[1] = {&params};
    const unsigned grid[3] = {plan.decode_entry ? plan.decode_grid[0] : plan.grid,
                              plan.decode_entry ? plan.decode_grid[1] : 1, plan.decode_entry ? plan.decode_grid[2] : 1};
    s = plan.programmatic ? mgpu_launch_programmatic(h, d, main_variant, grid[0], grid[1], grid[2], kernel_params)
                          : mgpu_launch(h, d, main_variant, grid[0], grid[1], grid[2], kernel_params);
    if (s == MGPU_STATUS_SUCCESS && combine >= 0) {
        /* Programmatic dependent launch where the plan says so: the
         * combine's CTAs are scheduled while the main kernel runs, and wait
         * (griddepcontrol) for its completion before reading the partials. */
        void *combine_params[1] = {&params.args};
        s = plan.combine_early ? mgpu_launch_programmatic(h, d, combine, plan.combine_grid, 1, 1, combine_params)
                               : mgpu_launch(h, d, combine, plan.combine_grid, 1, 1, combine_params);
    }
    return s;
}

mgpu_status mgpu_attention_fwd(mgpu_handle *handle, const mgpu_attention_fwd_desc *desc, const void *q,
                               const void *k, const void *v, void *o, float *lse)
{
    const struct mgpu_driver *d;
    struct mgpu_attention_problem p;
    mgpu_status s = mgpu_handle_enter(handle, &d);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_fwd_validate(desc, q, k, v, o, lse, &p);
    if (s != MGPU_STATUS_SUCCESS || mgpu_attention_problem_empty(&p))
        return s;
    return run(handle, d, &p);
}

mgpu_status mgpu_kv_cache_append(mgpu_handle *handle, const mgpu_kv_cache_append_desc *desc, const void *k_new,
                                 const void *v_new, void *k_cache, void *v_cache)
{
    const struct mgpu_driver *d;
    struct mgpu_kv_cache_append_args a;
    mgpu_status s = mgpu_handle_enter(handle, &d);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_kv_cache_append_validate(desc, k_new, v_new, k_cache, v_cache, &a);
    if (s != MGPU_STATUS_SUCCESS || a.vectors == 0)
        return s;
    const int variant = mgpu_select_kv_cache_append(&handle->caps, &s);
    if (variant < 0)
        return s;
    const int64_t grid = mgpu_cdiv(a.vectors, MGPU_KV_APPEND_THREADS);
    if (mgpu_log_enabled())
        mgpu_log("kv_cache_append b=%d new=%d hkv=%d d=%d page_size=%d%s: %s grid=%lld", a.batch, a.seqlen_new,
                 a.heads_kv, a.head_dim, a.page_size, a.block_table ? " paged" : "", mgpu_variants[variant].name,
                 (long long)grid);
    void *kernel_params[1] = {&a};
    return mgpu_launch(handle, d, variant, (unsigned)grid, 1, 1, kernel_params);
}
