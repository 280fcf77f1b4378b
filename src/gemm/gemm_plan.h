/*
 * The pure half of the GEMM: argument validation and the complete plan of a
 * call (variant, split-K, band, grid, operand packs and their geometry, the
 * workspace layout, the kernel arguments and the tensor maps to encode).
 * Nothing here touches a device, so tests run it with made-up devices;
 * gemm.c encodes the maps and launches what the plan says.
 */
#ifndef MGPU_SRC_GEMM_GEMM_PLAN_H
#define MGPU_SRC_GEMM_GEMM_PLAN_H

#include "dispatch.h"
#include "gemm_abi.h"

/* One GEMM call, as the public functions received it. */
struct mgpu_gemm_problem {
    int transa, transb;          /* mgpu_operation values */
    int64_t m, n, k, batch;
    int a_dtype, b_dtype, c_dtype;
    uintptr_t a, b, c;           /* device addresses */
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
    const float *alpha, *beta;
    /* mgpu_gemm_ex only (zero from the BLAS-style calls): */
    uintptr_t scale_a, scale_b, scale_d; /* device addresses of one float each; 0: 1.0 */
    uintptr_t bias;              /* device address of the bias vector; 0: none */
    int bias_dtype, bias_mode;   /* mgpu_dtype, mgpu_bias_mode */
    int64_t bias_stride;         /* elements between the biases of consecutive batches */
    int activation;              /* mgpu_activation */
};

/* Fills *p from a descriptor of mgpu_gemm_ex (alpha and beta point into it).
 * SUCCESS, or NULL_POINTER / INVALID_VALUE (struct_size) with the message set. */
mgpu_status mgpu_gemm_problem_from_desc(const mgpu_gemm_desc *desc, struct mgpu_gemm_problem *p);

/* SUCCESS when the call is valid, else the status with its message set.
 * Every product of the caller's sizes is checked before use. */
mgpu_status mgpu_gemm_validate(const struct mgpu_gemm_problem *p);

/* 1 when nothing is to be done (m, n or batch is 0). */
int mgpu_gemm_problem_empty(const struct mgpu_gemm_problem *p);

/* 1 when the call asks for more than D = alpha * op(A) op(B) + beta * C on
 * 16-bit inputs: fp8 operands, a scale, a bias or an activation. The
 * compute capability 9.0 and 10.0 kernels (persistent, portable) do these. */
int mgpu_gemm_needs_extensions(const struct mgpu_gemm_problem *p);

/* 1 when A and B can be read through TMA: 16-byte aligned bases, leading
 * dimensions and batch strides multiples of 16 bytes, no broadcast batch, k > 0. */
int mgpu_gemm_tma_eligible(const struct mgpu_gemm_problem *p);

/* 1 when D can leave through a TMA store: C 16-byte aligned, m, ldc (and for
 * batches stride_c) multiples of 16 bytes. */
int mgpu_gemm_c_tma_eligible(const struct mgpu_gemm_problem *p);

/* Settings that override the heuristic (MGPU_FORCE_VARIANT,
 * MGPU_FORCE_SPLIT_K, MGPU_FORCE_BAND); zero / NULL fields leave it alone. */
/* The sm_90a persistent kernel's consumer schedule for large problems. */
enum { MGPU_SCHEDULE_DEFAULT = 0, MGPU_SCHEDULE_COOPERATIVE = 1, MGPU_SCHEDULE_PINGPONG = 2 };

struct mgpu_gemm_force {
    const char *variant; /* a variant's entry name */
    int splits;          /* split-K factor, clamped to [1, number of k-tiles] */
    int band;            /* band width in (cluster) tile rows, clamped to [1, tile rows] */
    int schedule;        /* MGPU_SCHEDULE_*: large 16-bit problems on cooperative or ping-pong rows */
    int fp8_no_promotion; /* debugging: fp8 without the per-k-tile fp32 promotion (loses accuracy) */
    int programmatic;    /* MGPU_GEMM_PDL: 1 / -1 the sm_90a persistent and small-m kernels launched
                            with / without programmatic dependent launch, 0 the plan's choice */
    int tail_split;      /* MGPU_FORCE_TAIL_SPLIT: 1 / -1 the split-K tail wherever the rows have it / never,
                            0 the plan's choice */
};

/* What the handle lends a call. */
struct mgpu_gemm_resources {
    uint64_t workspace;       /* device address, 256-byte aligned (0: none) */
    size_t workspace_bytes;
    uint64_t split_counters;  /* MGPU_SPLIT_COUNTERS int32, zero between launches */
};

/* One operand copied into the workspace before the persistent kernel. */
struct mgpu_gemm_pack_launch {
    struct mgpu_gemm_pack_args args;
    unsigned grid;
};

#define MGPU_GEMM_MAP_A 0
#define MGPU_GEMM_MAP_B 1
#define MGPU_GEMM_MAP_C 2

/* workspace_wanted of a plan whose preferred workspace does not fit in an int64_t */
#define MGPU_GEMM_WANTED_OVER_LIMIT SIZE_MAX

/* How one GEMM call runs. */
struct mgpu_gemm_plan {
    int variant;          /* the GEMM kernel: index into mgpu_variants */
    int forced;           /* MGPU_FORCE_VARIANT chose it */
    int persistent;       /* the persistent kernel (else one CTA per tile or small_m) */
    int programmatic;     /* launch the sm_90a persistent or small-m kernel for programmatic
                           * dependent launch (the plan's rule, or MGPU_GEMM_PDL) */
    int small_m;          /* the small-m kernel: grid (grid_x, grid_y, grid_z), the arguments (and the
                           * maps of A and B where use_map says: its tensor-map ring) */
    int splits;           /* K slices (1: no split-K; > 1: partials summed in the kernel) */
    int tail_tiles;       /* units beyond the last full wave shared out along K (0: none; splits == 1) */
    int band;             /* (cluster) tile rows per band of the persistent kernel's tile order */
    int64_t grid;         /* CTAs of the persistent launch (a multiple of the cluster size) */
    int pack_variant;     /* the operand copy, or -1 */
    int pack_a, pack_b;   /* 1: that operand is copied into the workspace first */
    struct mgpu_gemm_pack_launch pack[2]; /* [0] A, [1] B, where packed */
    size_t workspace_bytes;  /* used by this plan: packed operands, then split-K partials */
    size_t workspace_wanted; /* what the preferred plan wanted (more than available when degraded);
                              * MGPU_GEMM_WANTED_OVER_LIMIT when its size overflows */
    const char *shape_class; /* why this plan: for MGPU_LOG */
    const char *degraded;    /* NULL, or what was given up to fit the workspace: for MGPU_LOG */
    /* The kernel's arguments and tensor maps, built here once. The maps
     * used: A and B for the persistent kernels, C for them when c_tma. */
    struct mgpu_gemm_args args;
    struct mgpu_tensor_map_desc maps[3];
    int use_map[3];
    /* one CTA per tile: grid x over m; grid y over one chunk of columns
     * (the launch limit of grid y), grid z over one chunk of batches */
    unsigned grid_x;
    int64_t cols_per_launch, batches_per_launch;
    /* small-m kernel: grid y over K slices, grid z over batches */
    unsigned grid_y, grid_z;
};

/* The full plan for a valid, non-empty problem on a device with the
 * handle's resources; `force` (may be NULL) fixes what it names. Plans never
 * need more workspace than res->workspace_bytes (they degrade instead).
 * Returns 0, or -1 with *status (and the message) set. */
int mgpu_plan_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                   const struct mgpu_gemm_force *force, const struct mgpu_gemm_resources *res,
                   struct mgpu_gemm_plan *plan, mgpu_status *status);

/* The workspace mgpu_plan_gemm's preferred plan wants for a valid,
 * non-empty problem (0: none; MGPU_GEMM_WANTED_OVER_LIMIT: beyond int64):
 * the plan made with an unlimited workspace. Returns 0, or -1 with *status
 * set (as mgpu_plan_gemm). */
int mgpu_gemm_workspace_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                               const struct mgpu_gemm_force *force, size_t *wanted, mgpu_status *status);

/* The variant mgpu_plan_gemm picks with an unlimited workspace (tests). */
int mgpu_select_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, const char *force,
                     mgpu_status *status);

/* For one-CTA-per-tile plans: the arguments, B map and grid of the launch
 * covering columns [col0, col0 + cols_per_launch) of batches
 * [batch0, batch0 + batches_per_launch) (clipped to n and batch). */
void mgpu_gemm_plan_chunk(const struct mgpu_gemm_plan *plan, const struct mgpu_gemm_problem *p, int64_t col0,
                          int64_t batch0, struct mgpu_gemm_args *args, struct mgpu_tensor_map_desc *map_b,
                          unsigned *grid_y, unsigned *grid_z);

#endif
