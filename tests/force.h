/*
 * For GPU tests that force several plans in one process. The library reads
 * MGPU_FORCE_VARIANT, MGPU_FORCE_SPLIT_K, MGPU_FORCE_BAND, MGPU_FORCE_SCHEDULE,
 * MGPU_DEBUG_FP8_NO_PROMOTION, MGPU_FORCE_PACK_GQA, MGPU_FORCE_NUM_SPLITS,
 * MGPU_FORCE_PAGED_GATHER, MGPU_FORCE_SPLIT_MERGE and MGPU_FORCE_TAIL_SPLIT once per process; force_setenv / force_unsetenv change the environment
 * and hand the new values to the library (mgpu_env_override), so a test
 * reads like the environment it sets. These tests link the library's
 * static core.
 */
#ifndef MGPU_TESTS_FORCE_H
#define MGPU_TESTS_FORCE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"

static struct mgpu_env force_env;
static char force_variant_name[256];

static void force_apply(void)
{
    const char *variant = getenv("MGPU_FORCE_VARIANT");
    const char *splits = getenv("MGPU_FORCE_SPLIT_K");
    const char *band = getenv("MGPU_FORCE_BAND");
    force_env.log = mgpu_env()->log;
    snprintf(force_variant_name, sizeof force_variant_name, "%s", variant ? variant : "");
    force_env.force_variant = force_variant_name[0] ? force_variant_name : NULL;
    force_env.force_split_k = splits ? atoi(splits) : 0;
    force_env.force_band = band ? atoi(band) : 0;
    const char *no_promotion = getenv("MGPU_DEBUG_FP8_NO_PROMOTION");
    force_env.debug_fp8_no_promotion = no_promotion && no_promotion[0] && no_promotion[0] != '0';
    const char *schedule = getenv("MGPU_FORCE_SCHEDULE");
    force_env.force_schedule = !schedule                              ? 0
                               : strcmp(schedule, "cooperative") == 0 ? 1
                               : strcmp(schedule, "pingpong") == 0    ? 2
                                                                      : 0;
    const char *pack = getenv("MGPU_FORCE_PACK_GQA");
    const char *nsplits = getenv("MGPU_FORCE_NUM_SPLITS");
    force_env.force_pack_gqa = pack && pack[0] ? (atoi(pack) ? 1 : -1) : 0;
    force_env.force_num_splits = nsplits ? atoi(nsplits) : 0;
    const char *gather = getenv("MGPU_FORCE_PAGED_GATHER");
    force_env.force_paged_gather = gather && gather[0] ? (atoi(gather) ? 1 : -1) : 0;
    const char *merge = getenv("MGPU_FORCE_SPLIT_MERGE");
    force_env.force_split_merge = merge && merge[0] ? (atoi(merge) ? 1 : -1) : 0;
    const char *tail = getenv("MGPU_FORCE_TAIL_SPLIT");
    force_env.force_tail_split = tail && tail[0] ? (atoi(tail) ? 1 : -1) : 0;
    mgpu_env_override(&force_env);
}

static inline void force_setenv(const char *name, const char *value)
{
    setenv(name, value, 1);
    force_apply();
}

static inline void force_unsetenv(const char *name)
{
    unsetenv(name);
    force_apply();
}

#endif
