/*
 * For GPU tests that force several plans in one process. The library reads
 * its switches (MGPU_LOG, MGPU_FORCE_*, MGPU_*_PDL, ...) once per process;
 * force_setenv / force_unsetenv change the environment and hand the new
 * values, all of them read again (mgpu_env_parse), to the library
 * (mgpu_env_override), so a test reads like the environment it sets. These
 * tests link the library's static core.
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
    mgpu_env_parse(&force_env, force_variant_name, sizeof force_variant_name);
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
