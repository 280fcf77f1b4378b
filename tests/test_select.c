/*
 * Variant selection as a pure function of (problem, device capabilities),
 * with made-up devices: Hopper (9.0), Blackwell (10.0), and devices this
 * library has no kernels for (8.0, 10.3, 12.0).
 */
#include <string.h>

#include "check.h"
#include "internal.h"

static const struct mgpu_device_caps hopper = {9, 0, 132, 232448};
static const struct mgpu_device_caps blackwell = {10, 0, 148, 232448};

static int has_cc(int major, int minor)
{
    for (int i = 0; i < mgpu_variant_count; i++)
        if (mgpu_variants[i].cc_major == major && mgpu_variants[i].cc_minor == minor)
            return 1;
    return 0;
}

static struct mgpu_gemm_problem problem(int transa, int transb, int dtype)
{
    static const float one = 1.0f, zero = 0.0f;
    struct mgpu_gemm_problem p = {
        .transa = transa, .transb = transb, .m = 1000, .n = 1000, .k = 1000, .batch = 1,
        .a_dtype = dtype, .b_dtype = dtype, .c_dtype = MGPU_DTYPE_F32,
        .a = 0x7f0000000000, .b = 0x7f1000000000, .c = 0x7f2000000000,
        .alpha = &one, .beta = &zero,
    };
    p.lda = transa == MGPU_OP_N ? p.m : p.k;
    p.ldb = transb == MGPU_OP_N ? p.k : p.n;
    p.ldc = p.m;
    return p;
}

static const struct mgpu_variant *pick(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                                       const char *force, mgpu_status *status)
{
    *status = MGPU_STATUS_SUCCESS;
    int i = mgpu_select_gemm(p, caps, force, status);
    return i < 0 ? NULL : &mgpu_variants[i];
}

static void check_tensor_core_choice(const struct mgpu_device_caps *caps, enum mgpu_kernel_kind kind)
{
    mgpu_status s;
    const int ops[2] = {MGPU_OP_N, MGPU_OP_T};
    const int dtypes[2] = {MGPU_DTYPE_F16, MGPU_DTYPE_BF16};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int dt = 0; dt < 2; dt++) {
                struct mgpu_gemm_problem p = problem(ops[ta], ops[tb], dtypes[dt]);
                CHECK(mgpu_gemm_validate(&p) == MGPU_STATUS_SUCCESS, "valid problem rejected: %s",
                      mgpu_last_error_message());
                const struct mgpu_variant *v = pick(&p, caps, NULL, &s);
                CHECK(v && v->kind == kind, "cc %d.%d %c%c dtype %d: got %s", caps->cc_major, caps->cc_minor,
                      "NT"[ta], "NT"[tb], dtypes[dt], v ? v->name : mgpu_status_string(s));
                if (!v)
                    continue;
                CHECK(v->dtype == dtypes[dt], "%s: wrong dtype", v->name);
                CHECK(v->a_kmajor == (ops[ta] == MGPU_OP_T), "%s: wrong A layout", v->name);
                CHECK(v->b_kmajor == (ops[tb] == MGPU_OP_N), "%s: wrong B layout", v->name);
                CHECK(v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor, "%s: wrong arch", v->name);
                /* pure: the same question gets the same answer */
                CHECK(pick(&p, caps, NULL, &s) == v, "selection not deterministic");
            }
}

static void check_portable_paths(const struct mgpu_device_caps *caps)
{
    mgpu_status s;
    struct mgpu_gemm_problem base = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    const struct mgpu_variant *v;

    struct mgpu_gemm_problem p = base;
    p.lda = 1001; /* not a multiple of 8 elements */
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "odd lda: got %s", v ? v->name : "none");

    p = base;
    p.b += 2; /* element-aligned, not 16-byte aligned */
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "unaligned B: got %s", v ? v->name : "none");

    p = base;
    p.k = 0;
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "k = 0: got %s", v ? v->name : "none");

    p = base;
    p.batch = 4;
    p.stride_a = 0; /* A broadcast over the batch */
    p.stride_b = 1000 * 1000;
    p.stride_c = 1000 * 1000;
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "broadcast A: got %s", v ? v->name : "none");
    p.stride_a = 1000 * 1000;
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind != MGPU_KIND_GEMM_PORTABLE, "aligned batch: got %s", v ? v->name : "none");
    p.stride_a = 1000 * 1000 + 1; /* odd batch stride */
    v = pick(&p, caps, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "odd batch stride: got %s", v ? v->name : "none");

    /* a device with too little shared memory for the tensor-core tiles */
    struct mgpu_device_caps small = *caps;
    small.max_smem_per_block = 48 * 1024;
    v = pick(&base, &small, NULL, &s);
    CHECK(v && v->kind == MGPU_KIND_GEMM_PORTABLE, "small smem: got %s", v ? v->name : "none");
}

static void check_force(const struct mgpu_device_caps *caps)
{
    mgpu_status s;
    struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_F16);
    const struct mgpu_variant *tc = pick(&p, caps, NULL, &s);
    struct mgpu_gemm_problem odd = p;
    odd.lda = 1001;
    const struct mgpu_variant *portable = pick(&odd, caps, NULL, &s);
    if (!tc || !portable)
        return;
    CHECK(pick(&p, caps, portable->name, &s) == portable, "forcing the portable variant failed");
    CHECK(pick(&p, caps, tc->name, &s) == tc, "forcing the chosen variant failed");
    CHECK(pick(&odd, caps, tc->name, &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
          "forcing a TMA variant on unaligned input: %s", mgpu_status_string(s));
    CHECK(pick(&p, caps, "mgpu_no_such_kernel", &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
          "forcing an unknown name: %s", mgpu_status_string(s));
    struct mgpu_gemm_problem bf = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
    CHECK(pick(&bf, caps, tc->name, &s) == NULL && s == MGPU_STATUS_NOT_SUPPORTED,
          "forcing an f16 variant on bf16 input: %s", mgpu_status_string(s));
}

int main(void)
{
    if (has_cc(9, 0)) {
        check_tensor_core_choice(&hopper, MGPU_KIND_GEMM_SM90_TMA);
        check_portable_paths(&hopper);
        check_force(&hopper);
    }
    if (has_cc(10, 0)) {
        check_tensor_core_choice(&blackwell, MGPU_KIND_GEMM_SM100_TMA);
        check_portable_paths(&blackwell);
        check_force(&blackwell);
        /* a Hopper-only name cannot be forced onto Blackwell */
        mgpu_status s;
        struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_F16);
        CHECK(pick(&p, &blackwell, "mgpu_gemm_sm90_f16_tn_128x128x64_s4", &s) == NULL, "sm90 forced on cc 10.0");
    }
    const struct mgpu_device_caps others[] = {{8, 0, 108, 166912}, {12, 0, 84, 101376}, {10, 3, 148, 232448},
                                              {9, 1, 132, 232448}, {7, 5, 40, 65536}};
    for (unsigned i = 0; i < sizeof others / sizeof others[0]; i++) {
        mgpu_status s;
        struct mgpu_gemm_problem p = problem(MGPU_OP_T, MGPU_OP_N, MGPU_DTYPE_BF16);
        const struct mgpu_variant *v = pick(&p, &others[i], NULL, &s);
        CHECK(v == NULL && s == MGPU_STATUS_ARCH_MISMATCH, "cc %d.%d: got %s / %s", others[i].cc_major,
              others[i].cc_minor, v ? v->name : "none", mgpu_status_string(s));
        CHECK(strstr(mgpu_last_error_message(), "compute capability") != NULL, "message: %s",
              mgpu_last_error_message());
    }
    return check_exit();
}
