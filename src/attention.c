/*
 * mgpu_attention_fwd: validate and select (attention_select.c), encode the
 * three rank-4 TMA tensor maps over Q, K and V that
 * kernels/common/attention_abi.h describes, launch one CTA per 128-row query
 * tile on the handle's stream. The kernel's whole parameter is
 * struct mgpu_attention_fwd_params, passed by value.
 */
#include <stdlib.h>
#include <string.h>

#include "attention_select.h"
#include "attention/attention_maps.h"
#include "internal.h"

static void log_call(const struct mgpu_attention_problem *p, const struct mgpu_variant *v, const char *force,
                     unsigned grid, int dynamic)
{
    mgpu_log("attention_fwd b=%lld sq=%lld sk=%lld hq=%lld hkv=%lld d=%lld %s causal=%d window=(%d,%d) "
             "softcap=%g%s%s: %s%s grid=%u%s",
             (long long)p->batch, (long long)p->seqlen_q, (long long)p->seqlen_k, (long long)p->heads_q,
             (long long)p->heads_kv, (long long)p->head_dim, p->dtype == MGPU_DTYPE_BF16 ? "bf16" : "f16", p->causal,
             p->window_left, p->window_right, (double)p->softcap, p->varlen ? " varlen" : "", p->lse ? " lse" : "",
             v->name, force && force[0] && strcmp(force, v->name) == 0 ? " (forced)" : "", grid,
             dynamic ? " (dynamic tiles)" : "");
}

static mgpu_status run(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_attention_problem *p)
{
    mgpu_status s;
    const char *force = getenv("MGPU_FORCE_VARIANT");
    const int variant = mgpu_select_attention_fwd(p, &h->caps, force, &s);
    if (variant < 0)
        return s;
    const struct mgpu_variant *v = &mgpu_variants[variant];
    struct mgpu_attention_plan plan;
    mgpu_attention_make_plan(p, v, &h->caps, &plan);
    if (mgpu_log_enabled())
        log_call(p, v, force, plan.grid, plan.dynamic);

    struct mgpu_attention_fwd_params params;
    memset(&params, 0, sizeof params);
    s = mgpu_attention_encode_map(d, p->dtype, &plan.q_map, "cuTensorMapEncodeTiled(attention Q)", &params.tmap_q);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_encode_map(d, p->dtype, &plan.k_map, "cuTensorMapEncodeTiled(attention K)", &params.tmap_k);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_encode_map(d, p->dtype, &plan.v_map, "cuTensorMapEncodeTiled(attention V)", &params.tmap_v);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    params.args = plan.args;
    if (plan.dynamic) {
        s = mgpu_handle_counters(h, d, MGPU_COUNTERS_ATTENTION, &params.args.tile_counter);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }

    void *kernel_params[1] = {&params};
    return mgpu_launch(h, d, variant, plan.grid, 1, 1, kernel_params);
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
