/*
 * The table of every kernel variant, and the few facts derived from a row
 * (its group, entry name and shared-memory size). Adding a kernel starts here.
 */
#include "variants.h"

#include <stdio.h>

const struct gen_arch_info gen_archs[GEN_ARCH_COUNT] = {
    [GEN_SM90A] = {"sm90a", 9, 0},
    [GEN_SM100A] = {"sm100a", 10, 0},
};

/* Layout shorthands, in cuBLAS's transa/transb letters (column-major):
 * A is K-major when transa == T, B is K-major when transb == N. */
#define TN 1, 1
#define NN 0, 1
#define TT 1, 0
#define NT 0, 0

#define SM90_GEMM(dt, layout) {GEN_GEMM_SM90_TMA, GEN_SM90A, dt, layout, 128, 128, 64, 4, 384}
#define SM100_GEMM(dt, layout) {GEN_GEMM_SM100_TMA, GEN_SM100A, dt, layout, 128, 128, 64, 4, 128}
#define PORTABLE_GEMM(arch) {GEN_GEMM_PORTABLE, arch, GEN_ANY_DTYPE, -1, -1, 64, 64, 16, 1, 256}

const struct gen_variant gen_variants[] = {
    SM90_GEMM(GEN_F16, TN), SM90_GEMM(GEN_F16, NN), SM90_GEMM(GEN_F16, TT), SM90_GEMM(GEN_F16, NT),
    SM90_GEMM(GEN_BF16, TN), SM90_GEMM(GEN_BF16, NN), SM90_GEMM(GEN_BF16, TT), SM90_GEMM(GEN_BF16, NT),
    PORTABLE_GEMM(GEN_SM90A),

    SM100_GEMM(GEN_F16, TN), SM100_GEMM(GEN_F16, NN), SM100_GEMM(GEN_F16, TT), SM100_GEMM(GEN_F16, NT),
    SM100_GEMM(GEN_BF16, TN), SM100_GEMM(GEN_BF16, NN), SM100_GEMM(GEN_BF16, TT), SM100_GEMM(GEN_BF16, NT),
    PORTABLE_GEMM(GEN_SM100A),
};

const int gen_variant_count = (int)(sizeof gen_variants / sizeof gen_variants[0]);

const char *gen_group_name(const struct gen_variant *v)
{
    switch (v->kind) {
    case GEN_GEMM_SM90_TMA: return "gemm_sm90";
    case GEN_GEMM_SM100_TMA: return "gemm_sm100";
    case GEN_GEMM_PORTABLE: return v->arch == GEN_SM90A ? "gemm_portable_sm90" : "gemm_portable_sm100";
    }
    return "?";
}

static const char *dtype_tag(enum gen_dtype d)
{
    return d == GEN_F16 ? "f16" : d == GEN_BF16 ? "bf16" : "any";
}

/* cuBLAS letters for the layout: "tn" means transa = T, transb = N. */
static void layout_tag(const struct gen_variant *v, char out[3])
{
    out[0] = v->a_kmajor ? 't' : 'n';
    out[1] = v->b_kmajor ? 'n' : 't';
    out[2] = 0;
}

void gen_entry_name(const struct gen_variant *v, char *buf, unsigned size)
{
    char lt[3];
    switch (v->kind) {
    case GEN_GEMM_SM90_TMA:
    case GEN_GEMM_SM100_TMA:
        layout_tag(v, lt);
        snprintf(buf, size, "mgpu_gemm_%s_%s_%s_%dx%dx%d_s%d",
                 v->kind == GEN_GEMM_SM90_TMA ? "sm90" : "sm100", dtype_tag(v->dtype), lt,
                 v->tile_m, v->tile_n, v->tile_k, v->stages);
        return;
    case GEN_GEMM_PORTABLE:
        snprintf(buf, size, "mgpu_gemm_portable_%s_%dx%d", v->arch == GEN_SM90A ? "sm90" : "sm100",
                 v->tile_m, v->tile_n);
        return;
    }
    snprintf(buf, size, "?");
}

/* Bytes of 16-bit A and B tiles for all stages, plus 1 KiB for rounding the
 * base up to the 1 KiB alignment 128-byte swizzling needs and 1 KiB for the
 * barriers. The kernel's own count is checked against this at compile time. */
int gen_smem_bytes(const struct gen_variant *v)
{
    switch (v->kind) {
    case GEN_GEMM_SM90_TMA:
    case GEN_GEMM_SM100_TMA:
        return v->stages * (v->tile_m + v->tile_n) * v->tile_k * 2 + 2048;
    case GEN_GEMM_PORTABLE:
        return 0;
    }
    return 0;
}
