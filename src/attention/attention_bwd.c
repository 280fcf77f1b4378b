/*
 * mgpu_attention_bwd and mgpu_attention_bwd_workspace_size: validate and
 * plan (attention_bwd_plan.c), borrow the handle's workspace for the
 * scratch, encode the tensor maps the main kernel reads (Q, K, V, dO, and
 * at head dims 192 / 256 the dQ accumulator it adds into)
 * and queue the three kernels of kernels/abi/attention_bwd_abi.h on the
 * handle's stream: preprocess (D = rowsum(dO * O), LSE * log2(e), scratch
 * zeroed), main (dQ accumulated in fp32, dK and dV), postprocess (dQ, and
 * for GQA dK and dV, in the caller's dtype). Nothing is allocated or
 * synchronised; every check that can fail runs before the first launch.
 */
#include <string.h>

#include "attention_bwd_plan.h"
#include "runtime.h"

static void log_plan(const struct mgpu_attention_bwd_problem *bp, const struct mgpu_attention_bwd_plan *plan,
                     const char *force)
{
    const struct mgpu_attention_problem *p = &bp->a;
    const struct mgpu_variant *m = &mgpu_variants[plan->main];
    mgpu_log("attention_bwd b=%lld sq=%lld sk=%lld hq=%lld hkv=%lld d=%lld %s causal=%d window=(%d,%d) softcap=%g%s "
             "deterministic=%d: %s grid=%u (%dx%d tiles, pair group %d)%s, %s grid=%u, %s grid=%u, workspace=%zu bytes",
             (long long)p->batch, (long long)p->seqlen_q, (long long)p->seqlen_k, (long long)p->heads_q,
             (long long)p->heads_kv, (long long)p->head_dim, p->dtype == MGPU_DTYPE_BF16 ? "bf16" : "f16", p->causal,
             p->window_left, p->window_right, (double)p->softcap, p->varlen ? " varlen" : "", bp->deterministic,
             m->name, plan->main_grid, plan->tile.block_m, plan->tile.block_n, plan->args.pair_group,
             force && force[0] && strcmp(force, m->name) == 0 ? " (forced)" : "", mgpu_variants[plan->pre].name,
             plan->pre_grid, mgpu_variants[plan->post].name, plan->post_grid, plan->workspace_bytes);
}

mgpu_status mgpu_attention_bwd_workspace_size(mgpu_handle *handle, const mgpu_attention_bwd_desc *desc,
                                              size_t *bytes)
{
    const struct mgpu_driver *d;
    struct mgpu_attention_bwd_problem p;
    mgpu_status s = mgpu_handle_enter(handle, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (!bytes)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "bytes is NULL");
    s = mgpu_attention_bwd_validate(desc, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, &p);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (mgpu_attention_problem_empty(&p.a)) {
        *bytes = 0;
        return MGPU_STATUS_SUCCESS;
    }
    struct mgpu_attention_bwd_plan plan;
    if (mgpu_attention_bwd_plan(&p, &handle->caps, mgpu_env()->force_variant, &plan, &s) != 0)
        return s;
    *bytes = plan.workspace_bytes;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_attention_bwd(mgpu_handle *handle, const mgpu_attention_bwd_desc *desc, const void *q,
                               const void *k, const void *v, const void *o, const void *dout, const float *lse,
                               void *dq, void *dk, void *dv)
{
    const struct mgpu_driver *d;
    struct mgpu_attention_bwd_problem p;
    mgpu_status s = mgpu_handle_enter(handle, &d);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_bwd_validate(desc, q, k, v, o, dout, lse, dq, dk, dv, 1, &p);
    if (s != MGPU_STATUS_SUCCESS || mgpu_attention_problem_empty(&p.a))
        return s;
    p.force_pair_group = mgpu_env()->force_bwd_pair_group;
    p.force_keys_down = mgpu_env()->force_bwd_keys_down;

    const char *force = mgpu_env()->force_variant;
    struct mgpu_attention_bwd_plan plan;
    if (mgpu_attention_bwd_plan(&p, &handle->caps, force, &plan, &s) != 0)
        return s;
    CUdeviceptr workspace = 0;
    s = mgpu_handle_workspace(handle, plan.workspace_bytes, &workspace);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    mgpu_attention_bwd_place_scratch(&plan, (uint64_t)workspace);
    if (mgpu_log_enabled())
        log_plan(&p, &plan, force);

    struct mgpu_attention_bwd_params params;
    memset(&params, 0, sizeof params);
    s = mgpu_encode_tensor_map(d, &plan.q_map, "attention backward Q", &params.tmap_q);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_encode_tensor_map(d, &plan.k_map, "attention backward K", &params.tmap_k);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_encode_tensor_map(d, &plan.v_map, "attention backward V", &params.tmap_v);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_encode_tensor_map(d, &plan.do_map, "attention backward dO", &params.tmap_do);
    if (s == MGPU_STATUS_SUCCESS && plan.dq_map.rank != 0)
        s = mgpu_encode_tensor_map(d, &plan.dq_map, "attention backward dQ accumulator", &params.tmap_dq);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    params.args = plan.args;
    /* Load all three kernels before queuing the first, so that a module
     * problem leaves nothing half done. */
    CUfunction fn;
    const int variants[3] = {plan.pre, plan.main, plan.post};
    for (int i = 0; i < 3; i++) {
        s = mgpu_kernel_function(handle, d, variants[i], &fn);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }

    void *helper_params[1] = {&params.args};
    void *main_params[1] = {&params};
    s = mgpu_launch(handle, d, plan.pre, plan.pre_grid, 1, 1, helper_params);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_launch(handle, d, plan.main, plan.main_grid, 1, 1, main_params);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_launch(handle, d, plan.post, plan.post_grid, 1, 1, helper_params);
    return s;
}
