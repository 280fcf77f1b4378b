/*
 * The dispatch layer every operation shares (see dispatch.h): dtype helpers,
 * the environment switches (read once per process, here and nowhere else)
 * and the one registry lookup, with its arch-mismatch, forced-variant and
 * best-fit rules. Pure: no driver call.
 */
#include "dispatch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mgpu_dtype_is_fp8(int dtype)
{
    return dtype == MGPU_DTYPE_E4M3 || dtype == MGPU_DTYPE_E5M2;
}

int mgpu_dtype_known(int dtype)
{
    return dtype == MGPU_DTYPE_F16 || dtype == MGPU_DTYPE_BF16 || dtype == MGPU_DTYPE_F32 || mgpu_dtype_is_fp8(dtype);
}

int mgpu_dtype_size(int dtype)
{
    switch (dtype) {
    case MGPU_DTYPE_F32: return 4;
    case MGPU_DTYPE_F16:
    case MGPU_DTYPE_BF16: return 2;
    case MGPU_DTYPE_E4M3:
    case MGPU_DTYPE_E5M2: return 1;
    default: return 0;
    }
}

const char *mgpu_dtype_name(int dtype)
{
    switch (dtype) {
    case MGPU_DTYPE_F16: return "f16";
    case MGPU_DTYPE_BF16: return "bf16";
    case MGPU_DTYPE_F32: return "f32";
    case MGPU_DTYPE_E4M3: return "e4m3";
    case MGPU_DTYPE_E5M2: return "e5m2";
    default: return "?";
    }
}

enum mgpu_map_type mgpu_map_type_of(int dtype)
{
    switch (dtype) {
    case MGPU_DTYPE_F16: return MGPU_MAP_F16;
    case MGPU_DTYPE_BF16: return MGPU_MAP_BF16;
    case MGPU_DTYPE_F32: return MGPU_MAP_F32;
    default: return MGPU_MAP_U8;
    }
}

/* ---------------------------------------------------------------- environment */

static struct mgpu_env env_read;
static char force_variant[256];
static const struct mgpu_env *env_current = &env_read;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

/* An on / off switch: 1 ("1"), -1 ("0"), 0 (unset, empty or anything else:
 * the planner's choice, so that "true" or "on" cannot turn a feature off). */
static int env_switch(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || (v[0] != '0' && v[0] != '1') || v[1] != '\0')
        return 0;
    return v[0] == '1' ? 1 : -1;
}

void mgpu_env_parse(struct mgpu_env *env, char *variant, size_t variant_size)
{
    memset(env, 0, sizeof *env);
    const char *log = getenv("MGPU_LOG");
    env->log = log && log[0] && strcmp(log, "0") != 0;
    const char *force = getenv("MGPU_FORCE_VARIANT");
    if (force && force[0] && variant_size > 0) {
        strncpy(variant, force, variant_size - 1);
        variant[variant_size - 1] = 0;
        env->force_variant = variant;
    }
    env->force_split_k = env_int("MGPU_FORCE_SPLIT_K");
    env->force_band = env_int("MGPU_FORCE_BAND");
    const char *no_promotion = getenv("MGPU_DEBUG_FP8_NO_PROMOTION");
    env->debug_fp8_no_promotion = no_promotion && no_promotion[0] && strcmp(no_promotion, "0") != 0;
    const char *schedule = getenv("MGPU_FORCE_SCHEDULE");
    env->force_schedule = !schedule                              ? 0
                          : strcmp(schedule, "cooperative") == 0 ? 1
                          : strcmp(schedule, "pingpong") == 0    ? 2
                                                                 : 0;
    env->force_pack_gqa = env_switch("MGPU_FORCE_PACK_GQA");
    env->force_num_splits = env_int("MGPU_FORCE_NUM_SPLITS");
    env->force_paged_gather = env_switch("MGPU_FORCE_PAGED_GATHER");
    env->force_split_merge = env_switch("MGPU_FORCE_SPLIT_MERGE");
    env->force_bwd_pair_group = env_int("MGPU_FORCE_BWD_PAIR_GROUP");
    env->force_bwd_keys_down = env_switch("MGPU_FORCE_BWD_KEYS_DOWN");
    env->attention_pdl = env_switch("MGPU_ATTENTION_PDL");
    env->gemm_pdl = env_switch("MGPU_GEMM_PDL");
    env->attention_decode_entry = env_switch("MGPU_ATTENTION_DECODE_ENTRY");
    env->force_tail_split = env_switch("MGPU_FORCE_TAIL_SPLIT");
    env->attention_decode64 = env_switch("MGPU_ATTENTION_DECODE64");
    env->attention_decode64_short = env_switch("MGPU_ATTENTION_DECODE64_SHORT");
    env->attention_merge16 = env_switch("MGPU_ATTENTION_MERGE16");
    env->attention_split_fill = env_switch("MGPU_ATTENTION_SPLIT_FILL");
    env->attention_wide = env_switch("MGPU_ATTENTION_WIDE");
}

static void read_env(void)
{
    mgpu_env_parse(&env_read, force_variant, sizeof force_variant);
}

const struct mgpu_env *mgpu_env(void)
{
    pthread_once(&env_once, read_env);
    return __atomic_load_n(&env_current, __ATOMIC_ACQUIRE);
}

void mgpu_env_override(const struct mgpu_env *env)
{
    pthread_once(&env_once, read_env);
    __atomic_store_n(&env_current, env ? env : &env_read, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- registry lookup */

static int same_cc(const struct mgpu_variant *v, const struct mgpu_device_caps *caps)
{
    return v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor;
}

int mgpu_variant_on_device(const struct mgpu_variant *v, const struct mgpu_device_caps *caps)
{
    return same_cc(v, caps) && v->smem_bytes <= caps->max_smem_per_block;
}

int mgpu_registry_lookup(const struct mgpu_lookup *q, int *forced, mgpu_status *status)
{
    const struct mgpu_device_caps *caps = q->caps;
    int for_arch = 0;
    for (int i = 0; i < mgpu_variant_count && !for_arch; i++)
        for_arch = q->of_op(mgpu_variants[i].kind) && same_cc(&mgpu_variants[i], caps);
    if (!for_arch) {
        /* Name the compute capabilities this build does have kernels of the
         * operation for (at most a few distinct ones exist). */
        char have[64] = "";
        size_t used = 0;
        for (int i = 0; i < mgpu_variant_count; i++) {
            const struct mgpu_variant *v = &mgpu_variants[i];
            int seen = !q->of_op(v->kind);
            for (int j = 0; j < i && !seen; j++)
                seen = q->of_op(mgpu_variants[j].kind) && mgpu_variants[j].cc_major == v->cc_major &&
                       mgpu_variants[j].cc_minor == v->cc_minor;
            if (!seen && used + 16 < sizeof have)
                used += (size_t)snprintf(have + used, sizeof have - used, "%s%d.%d", used ? ", " : "", v->cc_major,
                                         v->cc_minor);
        }
        *status = mgpu_fail(MGPU_STATUS_ARCH_MISMATCH,
                            "this build has no %s kernel for compute capability %d.%d (its %s kernels are for "
                            "compute capability %s)",
                            q->what, caps->cc_major, caps->cc_minor, q->what, used ? have : "none");
        return -1;
    }
    if (q->refusal) {
        *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "%s; this device is compute capability %d.%d", q->refusal,
                            caps->cc_major, caps->cc_minor);
        return -1;
    }
    if (forced)
        *forced = 0;
    if (q->force && q->force[0]) {
        for (int i = 0; i < mgpu_variant_count; i++) {
            const struct mgpu_variant *v = &mgpu_variants[i];
            if (!q->of_op(v->kind) || !same_cc(v, caps) || strcmp(v->name, q->force) != 0)
                continue;
            if (mgpu_variant_on_device(v, caps) && q->fits(v, q->ctx) > 0) {
                if (forced)
                    *forced = 1;
                return i;
            }
            *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                                "MGPU_FORCE_VARIANT=%s cannot do this %s call (dtype, layout, index type, mode, "
                                "alignment, head dim or shared memory differ)",
                                q->force, q->what);
            return -1;
        }
    }
    int best = -1, best_rank = 0;
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (!q->of_op(v->kind) || !mgpu_variant_on_device(v, caps))
            continue;
        const int rank = q->fits(v, q->ctx);
        if (rank > best_rank) {
            best = i;
            best_rank = rank;
        }
    }
    if (best < 0)
        *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "no %s variant of this build takes this call on compute "
                            "capability %d.%d", q->what, caps->cc_major, caps->cc_minor);
    return best;
}
