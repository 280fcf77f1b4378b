/*
 * Handles, their device state and their calls against the fake CUDA driver
 * (fake_cuda.c, found first through LD_LIBRARY_PATH), on any machine:
 *   - create, destroy, create on one thread with no other context holder:
 *     the second handle works (the first one's primary context was released
 *     and unset, the second retains it again);
 *   - double destroy, foreign pointers: INVALID_HANDLE from every entry
 *     point, nothing freed;
 *   - graph safety: under a pretended stream capture every operation
 *     (plain, split-K, packed and fp8 GEMM, gather, scatter-add, causal
 *     attention, KV-cache append, paged decode attention: the kernels of
 *     the fake device's architecture) is queued without an allocation or a
 *     synchronisation;
 *   - the workspace calls, and a GEMM that degrades instead of failing when
 *     the workspace is too small;
 *   - the GEMM workspace queries: their exact needs, the plan they restore,
 *     and the statuses of mgpu_gemm for bad arguments;
 *   - the order of argument checks (handle first), empty gathers with any
 *     strides, alpha == 0 reading neither A nor B, n beyond one launch's grid.
 * Kernels do not run: the fake records what was launched.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_cuda.h"
#include "mgpukernels.h"

#define A_ADDR ((const void *)(uintptr_t)0x7f0000000000)
#define B_ADDR ((const void *)(uintptr_t)0x7f1000000000)
#define C_ADDR ((void *)(uintptr_t)0x7f2000000000)
#define Q_ADDR ((const void *)(uintptr_t)0x7f3000000000)
#define K_ADDR ((const void *)(uintptr_t)0x7f4000000000)
#define V_ADDR ((const void *)(uintptr_t)0x7f5000000000)
#define O_ADDR ((void *)(uintptr_t)0x7f6000000000)
#define IDX_ADDR ((const void *)(uintptr_t)0x7f7000000000)

static struct fake_cuda fake;
static const float one = 1.0f, zero = 0.0f;

static struct fake_cuda_stats stats(void)
{
    struct fake_cuda_stats s;
    fake.get_stats(&s);
    return s;
}

/* Whether the last launch was a tensor-core GEMM of the fake device's
 * architecture (FAKE_CUDA_CC, set by tests/meson.build: 9.0 or 10.0). */
static int ran_tensor_core_gemm(void)
{
    const char *cc = getenv("FAKE_CUDA_CC");
    const char *prefix = cc != NULL && strcmp(cc, "10.0") == 0 ? "mgpu_gemm_sm100_" : "mgpu_gemm_sm90_";
    return strstr(stats().last_kernel, prefix) != NULL;
}

static mgpu_status gemm_tn(mgpu_handle *h, int64_t m, int64_t n, int64_t k, int64_t lda, const float *alpha)
{
    return mgpu_gemm(h, MGPU_OP_T, MGPU_OP_N, m, n, k, alpha, A_ADDR, MGPU_DTYPE_BF16, lda, B_ADDR, MGPU_DTYPE_BF16,
                     k, &zero, C_ADDR, MGPU_DTYPE_BF16, m);
}

static mgpu_status fp8_gemm(mgpu_handle *h)
{
    mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
    d.transa = MGPU_OP_T;
    d.m = d.n = d.k = 1024;
    d.A = A_ADDR, d.B = B_ADDR, d.C = C_ADDR;
    d.a_type = MGPU_DTYPE_E4M3, d.b_type = MGPU_DTYPE_E5M2, d.c_type = MGPU_DTYPE_BF16;
    d.lda = d.ldb = d.ldc = 1024;
    return mgpu_gemm_ex(h, &d);
}

static mgpu_gather_desc gather_desc(void)
{
    mgpu_gather_desc g = MGPU_GATHER_DESC_INIT;
    g.src = A_ADDR, g.src_rows = 1000, g.src_row_stride = 256;
    g.dst = C_ADDR, g.dst_row_stride = 256;
    g.index = IDX_ADDR, g.n_indices = 500, g.row_elems = 128, g.elem_size = 2;
    return g;
}

static mgpu_scatter_add_desc scatter_desc(void)
{
    mgpu_scatter_add_desc s = MGPU_SCATTER_ADD_DESC_INIT;
    s.src = A_ADDR, s.src_row_stride = 512;
    s.dst = C_ADDR, s.dst_rows = 100, s.dst_row_stride = 512;
    s.index = IDX_ADDR, s.n_indices = 500, s.row_elems = 128, s.dtype = MGPU_DTYPE_F32;
    return s;
}

static mgpu_status causal_attention(mgpu_handle *h)
{
    mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
    d.batch = 4, d.seqlen_q = d.seqlen_k = 1024, d.heads_q = d.heads_kv = 16, d.head_dim = 128;
    d.causal = 1;
    return mgpu_attention_fwd(h, &d, Q_ADDR, K_ADDR, V_ADDR, O_ADDR, NULL);
}

/* The serving calls (include/mgpukernels.h, "Paged K/V"): a decode step over
 * a paged cache, and the append into it. */
#define TABLE_ADDR ((const int32_t *)(uintptr_t)0x7f8000000000)
#define LENS_ADDR ((const int32_t *)(uintptr_t)0x7f9000000000)

static mgpu_status paged_decode_attention(mgpu_handle *h)
{
    mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
    d.batch = 8, d.seqlen_q = 1, d.seqlen_k = 4096, d.heads_q = 32, d.heads_kv = 8, d.head_dim = 128;
    d.causal = 1;
    d.seqused_k = LENS_ADDR, d.block_table = TABLE_ADDR;
    d.page_size = 64, d.max_blocks_per_seq = 64, d.num_pages = 1024;
    return mgpu_attention_fwd(h, &d, Q_ADDR, K_ADDR, V_ADDR, O_ADDR, NULL);
}

static mgpu_status paged_append(mgpu_handle *h)
{
    mgpu_kv_cache_append_desc a = MGPU_KV_CACHE_APPEND_DESC_INIT;
    a.batch = 8, a.seqlen_new = 1, a.heads_kv = 8, a.head_dim = 128;
    a.cache_seqlens = LENS_ADDR, a.block_table = TABLE_ADDR;
    a.page_size = 64, a.max_blocks_per_seq = 64, a.num_pages = 1024;
    return mgpu_kv_cache_append(h, &a, Q_ADDR, A_ADDR, C_ADDR, O_ADDR);
}

/* Whether the last launch was a kernel of the fake device's architecture
 * whose name starts with `what` (followed by _sm90 or _sm100). */
static int ran_arch_kernel(const char *what)
{
    const char *cc = getenv("FAKE_CUDA_CC");
    char want[96];
    snprintf(want, sizeof want, "%s_%s", what, cc != NULL && strcmp(cc, "10.0") == 0 ? "sm100" : "sm90");
    return strncmp(stats().last_kernel, want, strlen(want)) == 0;
}

/* The order: a handle that retained the primary context is
 * destroyed; the next one on the same thread must not work in a dead context. */
static void check_create_destroy_create(void)
{
    mgpu_handle *h1 = NULL, *h2 = NULL;
    CHECK_STATUS(mgpu_create(&h1), MGPU_STATUS_SUCCESS);
    CHECK(fake.primary_refs() == 1, "primary context references after create: %d", fake.primary_refs());
    CHECK_STATUS(mgpu_destroy(h1), MGPU_STATUS_SUCCESS);
    CHECK(fake.primary_refs() == 0, "primary context references after destroy: %d", fake.primary_refs());
    CHECK_STATUS(mgpu_create(&h2), MGPU_STATUS_SUCCESS);
    CHECK(fake.primary_refs() == 1, "the second handle did not retain the primary context");
    CHECK_STATUS(mgpu_reserve_workspace(h2, (size_t)64 << 20), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(gemm_tn(h2, 512, 512, 512, 512, &one), MGPU_STATUS_SUCCESS);
    /* two handles: the context lives until the last one goes */
    mgpu_handle *h3 = NULL;
    CHECK_STATUS(mgpu_create(&h3), MGPU_STATUS_SUCCESS);
    CHECK(fake.primary_refs() == 2, "two handles, %d references", fake.primary_refs());
    CHECK_STATUS(mgpu_destroy(h2), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(gemm_tn(h3, 512, 512, 512, 512, &one), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_destroy(h3), MGPU_STATUS_SUCCESS);
    CHECK(fake.primary_refs() == 0 && stats().live_allocations == 0, "after the last destroy: %d references, %ld "
          "allocations", fake.primary_refs(), stats().live_allocations);
}

static void check_dead_handles(void)
{
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_destroy(h), MGPU_STATUS_SUCCESS);
    const long live = stats().live_allocations;
    int not_a_handle[64] = {0};
    mgpu_handle *dead[2] = {h, (mgpu_handle *)not_a_handle};
    for (int i = 0; i < 2; i++) {
        mgpu_handle *x = dead[i];
        void *stream;
        mgpu_gather_desc g = gather_desc();
        mgpu_scatter_add_desc s = scatter_desc();
        CHECK_STATUS(mgpu_destroy(x), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(mgpu_set_stream(x, NULL), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(mgpu_get_stream(x, &stream), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(mgpu_set_workspace(x, NULL, 0), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(mgpu_reserve_workspace(x, 1), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(gemm_tn(x, 64, 64, 64, 64, &one), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(fp8_gemm(x), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(mgpu_gather(x, &g), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(mgpu_scatter_add(x, &s), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(mgpu_check_index_errors(x), MGPU_STATUS_INVALID_HANDLE);
        CHECK_STATUS(causal_attention(x), MGPU_STATUS_INVALID_HANDLE);
    }
    CHECK(not_a_handle[0] == 0 && stats().live_allocations == live, "a dead handle's call touched something");
}

/* Every operation under a (pretended) stream capture: no allocation, no
 * synchronisation, every call queued. */
static void check_graph_safe(void)
{
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    mgpu_gather_desc g = gather_desc();
    mgpu_scatter_add_desc s = scatter_desc();
    const struct fake_cuda_stats before = stats();
    fake.set_capturing(1);
    CHECK_STATUS(gemm_tn(h, 1024, 1024, 1024, 1024, &one), MGPU_STATUS_SUCCESS);   /* plain */
    /* the sm_90a persistent GEMM is launched for programmatic dependent launch
     * (src/gemm/gemm.c), the sm_100a one not (its kernel has no griddepcontrol) */
    CHECK(stats().last_programmatic == (getenv("FAKE_CUDA_CC") == NULL || strcmp(getenv("FAKE_CUDA_CC"), "10.0") != 0),
          "%s launched with programmatic serialization %d", stats().last_kernel, stats().last_programmatic);
    CHECK_STATUS(gemm_tn(h, 64, 2048, 4096, 4096, &one), MGPU_STATUS_SUCCESS);     /* split-K */
    /* the sm_90a small-m (decode) kernel too */
    CHECK_STATUS(gemm_tn(h, 16, 4096, 4096, 4096, &one), MGPU_STATUS_SUCCESS);
    CHECK(stats().last_programmatic == (getenv("FAKE_CUDA_CC") == NULL || strcmp(getenv("FAKE_CUDA_CC"), "10.0") != 0),
          "%s launched with programmatic serialization %d", stats().last_kernel, stats().last_programmatic);
    CHECK_STATUS(gemm_tn(h, 1000, 1000, 1000, 1001, &one), MGPU_STATUS_SUCCESS);   /* A packed */
    CHECK(ran_tensor_core_gemm(), "packed GEMM ran %s", stats().last_kernel);
    CHECK_STATUS(fp8_gemm(h), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_gather(h, &g), MGPU_STATUS_SUCCESS);
    CHECK(!stats().last_programmatic, "%s launched with programmatic serialization", stats().last_kernel);
    CHECK_STATUS(mgpu_scatter_add(h, &s), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(causal_attention(h), MGPU_STATUS_SUCCESS);
    CHECK(!stats().last_programmatic, "%s launched with programmatic serialization", stats().last_kernel);
    CHECK_STATUS(paged_append(h), MGPU_STATUS_SUCCESS);
    CHECK(ran_arch_kernel("mgpu_kv_cache_append"), "KV-cache append ran %s", stats().last_kernel);
    CHECK_STATUS(paged_decode_attention(h), MGPU_STATUS_SUCCESS);
    /* on 9.0 a split call ends with the combine, mgpu_attention_fwd_combine_sm90_*,
     * or runs the decode entry, mgpu_attention_fwd_decode_sm90_* or its
     * 64-row variants mgpu_attention_fwd_decode64_sm90_* */
    CHECK(ran_arch_kernel("mgpu_attention_fwd") || ran_arch_kernel("mgpu_attention_fwd_combine") ||
              ran_arch_kernel("mgpu_attention_fwd_decode") || ran_arch_kernel("mgpu_attention_fwd_decode64"),
          "paged decode attention ran %s", stats().last_kernel);
    /* an inference call's main kernel is launched for programmatic dependent
     * launch on 9.0 (the sm_100a kernel has no griddepcontrol); the combine
     * where it fits beside it (test_attention_select) */
    if (strstr(stats().last_kernel, "_combine_") == NULL)
        CHECK(stats().last_programmatic ==
                  (getenv("FAKE_CUDA_CC") == NULL || strcmp(getenv("FAKE_CUDA_CC"), "10.0") != 0),
              "%s launched with programmatic serialization %d", stats().last_kernel, stats().last_programmatic);
    fake.set_capturing(0);
    const struct fake_cuda_stats after = stats();
    CHECK(after.allocations == before.allocations && after.synchronizations == before.synchronizations,
          "under capture: %ld allocations, %ld synchronisations", after.allocations - before.allocations,
          after.synchronizations - before.synchronizations);
    /* a handle on a driver before 12.3 (no programmatic edges under capture) launches ordinarily */
    setenv("FAKE_CUDA_DRIVER_VERSION", "12020", 1);
    mgpu_handle *old_driver = NULL;
    CHECK_STATUS(mgpu_create(&old_driver), MGPU_STATUS_SUCCESS);
    unsetenv("FAKE_CUDA_DRIVER_VERSION");
    CHECK_STATUS(gemm_tn(old_driver, 1024, 1024, 1024, 1024, &one), MGPU_STATUS_SUCCESS);
    CHECK(!stats().last_programmatic, "%s launched with programmatic serialization on driver 12.2",
          stats().last_kernel);
    CHECK_STATUS(mgpu_destroy(old_driver), MGPU_STATUS_SUCCESS);
    CHECK(after.launches - before.launches >= 8, "only %ld launches", after.launches - before.launches);
    /* the error word exists from the start: a check needs nothing either */
    CHECK_STATUS(mgpu_check_index_errors(h), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_destroy(h), MGPU_STATUS_SUCCESS);
}

static void check_workspace(void)
{
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_set_workspace(h, (void *)(uintptr_t)0x7e0000000010, 1 << 20), MGPU_STATUS_INVALID_VALUE);
    CHECK_STATUS(mgpu_set_workspace(h, NULL, 1 << 20), MGPU_STATUS_NULL_POINTER);
    const long live = stats().live_allocations;
    CHECK_STATUS(mgpu_set_workspace(h, NULL, 0), MGPU_STATUS_SUCCESS);
    CHECK(stats().live_allocations == live - 1, "the handle's own workspace was not freed");
    /* no workspace: split-K and packing give way, the calls still succeed */
    CHECK_STATUS(gemm_tn(h, 64, 4096, 4096, 4096, &one), MGPU_STATUS_SUCCESS);
    CHECK(ran_tensor_core_gemm(), "unsplit GEMM ran %s", stats().last_kernel);
    CHECK_STATUS(gemm_tn(h, 1000, 1000, 1000, 1001, &one), MGPU_STATUS_SUCCESS);
    CHECK(strstr(stats().last_kernel, "portable") != NULL, "unaligned GEMM without workspace ran %s",
          stats().last_kernel);
    /* the caller's memory, then the handle's own again */
    CHECK_STATUS(mgpu_set_workspace(h, (void *)(uintptr_t)0x7e0000000000, (size_t)256 << 20), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(gemm_tn(h, 1000, 1000, 1000, 1001, &one), MGPU_STATUS_SUCCESS);
    CHECK(ran_tensor_core_gemm(), "packed GEMM ran %s", stats().last_kernel);
    CHECK_STATUS(mgpu_reserve_workspace(h, 1024), MGPU_STATUS_SUCCESS); /* has more already */
    CHECK(stats().live_allocations == live - 1, "reserve allocated though the workspace was large enough");
    CHECK_STATUS(mgpu_reserve_workspace(h, (size_t)512 << 20), MGPU_STATUS_SUCCESS);
    CHECK(stats().live_allocations == live, "reserve did not allocate");
    CHECK_STATUS(mgpu_destroy(h), MGPU_STATUS_SUCCESS);
}

static size_t gemm_need(mgpu_handle *h, mgpu_operation ta, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb)
{
    size_t bytes = 12345;
    CHECK_STATUS(mgpu_gemm_workspace_size(h, ta, MGPU_OP_N, m, n, k, A_ADDR, MGPU_DTYPE_BF16, lda, B_ADDR,
                                          MGPU_DTYPE_BF16, ldb, C_ADDR, MGPU_DTYPE_BF16, m, &bytes),
                 MGPU_STATUS_SUCCESS);
    return bytes;
}

/* Bytes of one bf16 operand's aligned copy: rows (contiguous) rounded up to
 * 8 elements (16 bytes), times cols, rounded up to 256 bytes. */
static size_t packed_bf16(int64_t rows, int64_t cols)
{
    const size_t b = (size_t)((rows + 7) / 8 * 8) * (size_t)cols * 2;
    return (b + 255) / 256 * 256;
}

static void check_workspace_query(void)
{
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    /* aligned, enough tiles: nothing */
    CHECK(gemm_need(h, MGPU_OP_T, 4096, 4096, 1024, 1024, 1024) == 0, "aligned GEMM wants workspace");
    /* A (T: k contiguous) unreadable by TMA: its copy, k = 999 rounded to 1000 */
    CHECK(gemm_need(h, MGPU_OP_T, 4096, 4096, 999, 999, 1000) == packed_bf16(999, 4096), "A pack: %zu",
          gemm_need(h, MGPU_OP_T, 4096, 4096, 999, 999, 1000));
    /* both unreadable, with the 256-byte rounding: 1001 x 1000 copies */
    CHECK(gemm_need(h, MGPU_OP_T, 1001, 8192, 1000, 1001, 1001) == packed_bf16(1000, 1001) + packed_bf16(1000, 8192),
          "A and B packs: %zu", gemm_need(h, MGPU_OP_T, 1001, 8192, 1000, 1001, 1001));
    CHECK(packed_bf16(1000, 1001) == 2002176u, "the 256-byte rounding");
    /* 8191^3 NN: 268 MB of copies, over the default 32 MiB: portable until reserved */
    const size_t big = gemm_need(h, MGPU_OP_N, 8191, 8191, 8191, 8191, 8191);
    CHECK(big == 2 * packed_bf16(8191, 8191) && big == 268402688u, "8191^3: %zu", big);
    CHECK_STATUS(mgpu_gemm(h, MGPU_OP_N, MGPU_OP_N, 8191, 8191, 8191, &one, A_ADDR, MGPU_DTYPE_BF16, 8191, B_ADDR,
                           MGPU_DTYPE_BF16, 8191, &zero, C_ADDR, MGPU_DTYPE_BF16, 8191),
                 MGPU_STATUS_SUCCESS);
    CHECK(strstr(stats().last_kernel, "portable") != NULL, "8191^3 in 32 MiB ran %s", stats().last_kernel);
    CHECK_STATUS(mgpu_reserve_workspace(h, big), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_gemm(h, MGPU_OP_N, MGPU_OP_N, 8191, 8191, 8191, &one, A_ADDR, MGPU_DTYPE_BF16, 8191, B_ADDR,
                           MGPU_DTYPE_BF16, 8191, &zero, C_ADDR, MGPU_DTYPE_BF16, 8191),
                 MGPU_STATUS_SUCCESS);
    CHECK(ran_tensor_core_gemm(), "8191^3 with its workspace ran %s", stats().last_kernel);

    /* split-K (small m, long k; 64 x 2048: 16 tiles of 64 x 128, four slices): the partials; exactly that much keeps every
     * slice (the grid of an unlimited workspace), one byte less gives some up */
    const size_t split = gemm_need(h, MGPU_OP_T, 64, 2048, 4096, 4096, 4096);
    CHECK(split > 0 && split % 256 == 0, "split-K need %zu", split);
    void *const ws = (void *)(uintptr_t)0x7e0000000000;
    CHECK_STATUS(mgpu_set_workspace(h, ws, (size_t)1 << 30), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(gemm_tn(h, 64, 2048, 4096, 4096, &one), MGPU_STATUS_SUCCESS);
    const unsigned full_grid = stats().last_grid[0];
    CHECK_STATUS(mgpu_set_workspace(h, ws, split), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(gemm_tn(h, 64, 2048, 4096, 4096, &one), MGPU_STATUS_SUCCESS);
    CHECK(stats().last_grid[0] == full_grid, "with the queried workspace: grid %u, not %u", stats().last_grid[0],
          full_grid);
    CHECK_STATUS(mgpu_set_workspace(h, ws, split - 1), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(gemm_tn(h, 64, 2048, 4096, 4096, &one), MGPU_STATUS_SUCCESS);
    CHECK(stats().last_grid[0] < full_grid, "one byte short: grid %u, full %u", stats().last_grid[0], full_grid);

    /* the _ex query: batches, alpha == 0, and the same answer for batch 1 */
    mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
    d.transa = MGPU_OP_T;
    d.m = d.n = 4096;
    d.k = 999;
    d.A = A_ADDR, d.B = B_ADDR, d.C = C_ADDR;
    d.lda = 999, d.ldb = 1000, d.ldc = 4096;
    size_t ex = 0;
    CHECK_STATUS(mgpu_gemm_ex_workspace_size(h, &d, &ex), MGPU_STATUS_SUCCESS);
    CHECK(ex == packed_bf16(999, 4096), "ex, batch 1: %zu", ex);
    d.batch_count = 3, d.stride_a = 999 * 4096, d.stride_b = 1000 * 4096, d.stride_c = 4096 * 4096;
    CHECK_STATUS(mgpu_gemm_ex_workspace_size(h, &d, &ex), MGPU_STATUS_SUCCESS);
    CHECK(ex == (3 * (size_t)1000 * 4096 * 2 + 255) / 256 * 256, "ex, 3 batches: %zu", ex);
    d.alpha = 0.0f;
    CHECK_STATUS(mgpu_gemm_ex_workspace_size(h, &d, &ex), MGPU_STATUS_SUCCESS);
    CHECK(ex == 0, "alpha = 0 wants %zu", ex);

    /* bad arguments: the statuses of mgpu_gemm, in its order */
    size_t bytes = 77;
    CHECK_STATUS(mgpu_gemm_workspace_size(NULL, MGPU_OP_N, MGPU_OP_N, 64, 64, 64, A_ADDR, MGPU_DTYPE_BF16, 64, B_ADDR,
                                          MGPU_DTYPE_BF16, 64, C_ADDR, MGPU_DTYPE_BF16, 64, &bytes),
                 MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_gemm_workspace_size(h, MGPU_OP_N, MGPU_OP_N, 64, 64, 64, A_ADDR, MGPU_DTYPE_BF16, 64, B_ADDR,
                                          MGPU_DTYPE_BF16, 64, C_ADDR, MGPU_DTYPE_BF16, 64, NULL),
                 MGPU_STATUS_NULL_POINTER);
    CHECK_STATUS(mgpu_gemm_ex_workspace_size(NULL, NULL, &bytes), MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_gemm_ex_workspace_size(h, NULL, &bytes), MGPU_STATUS_NULL_POINTER);
    static const struct {
        int64_t m, n, k, lda, ldb, ldc;
        mgpu_dtype a, b, c;
        int ta, null_a, null_c;
    } bad[] = {
        {-1, 64, 64, 64, 64, 64, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, 0, 0, 0},
        {64, 64, 64, 63, 64, 64, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, 0, 0, 0},
        {64, 64, 64, 64, 64, 32, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, 0, 0, 0},
        {64, 64, 64, 64, 64, 64, MGPU_DTYPE_F16, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, 0, 0, 0},
        {64, 64, 64, 64, 64, 64, (mgpu_dtype)99, (mgpu_dtype)99, MGPU_DTYPE_BF16, 0, 0, 0},
        {64, 64, 64, 64, 64, 64, MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3, MGPU_DTYPE_BF16, 0, 0, 0}, /* fp8 NN */
        {64, 64, 64, 64, 64, 64, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, 7, 0, 0},
        {64, 64, 64, 64, 64, 64, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, 0, 1, 0},
        {64, 64, 64, 64, 64, 64, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16, 0, 0, 1},
        {(int64_t)1 << 31, 64, 64, (int64_t)1 << 31, 64, (int64_t)1 << 31, MGPU_DTYPE_BF16, MGPU_DTYPE_BF16,
         MGPU_DTYPE_BF16, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const mgpu_operation ta = (mgpu_operation)bad[i].ta;
        const void *a = bad[i].null_a ? NULL : A_ADDR;
        void *c = bad[i].null_c ? NULL : C_ADDR;
        const mgpu_status want = mgpu_gemm(h, ta, MGPU_OP_N, bad[i].m, bad[i].n, bad[i].k, &one, a, bad[i].a,
                                           bad[i].lda, B_ADDR, bad[i].b, bad[i].ldb, &zero, c, bad[i].c, bad[i].ldc);
        CHECK(want != MGPU_STATUS_SUCCESS, "bad case %zu succeeded", i);
        bytes = 77;
        CHECK_STATUS(mgpu_gemm_workspace_size(h, ta, MGPU_OP_N, bad[i].m, bad[i].n, bad[i].k, a, bad[i].a, bad[i].lda,
                                              B_ADDR, bad[i].b, bad[i].ldb, c, bad[i].c, bad[i].ldc, &bytes),
                     want);
        CHECK(bytes == 77, "bad case %zu wrote *bytes", i);
    }
    /* empty: 0 */
    bytes = 77;
    CHECK_STATUS(mgpu_gemm_workspace_size(h, MGPU_OP_N, MGPU_OP_N, 0, 64, 64, A_ADDR, MGPU_DTYPE_BF16, 1, B_ADDR,
                                          MGPU_DTYPE_BF16, 64, C_ADDR, MGPU_DTYPE_BF16, 1, &bytes),
                 MGPU_STATUS_SUCCESS);
    CHECK(bytes == 0, "empty GEMM wants %zu", bytes);
    CHECK_STATUS(mgpu_destroy(h), MGPU_STATUS_SUCCESS);
}

static void check_argument_order(void)
{
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    /* handle first, then the descriptor */
    CHECK_STATUS(mgpu_gemm_ex(NULL, NULL), MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_gemm_ex(h, NULL), MGPU_STATUS_NULL_POINTER);
    CHECK_STATUS(mgpu_gather(NULL, NULL), MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_gather(h, NULL), MGPU_STATUS_NULL_POINTER);
    CHECK_STATUS(mgpu_scatter_add(NULL, NULL), MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_attention_fwd(NULL, NULL, NULL, NULL, NULL, NULL, NULL), MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_attention_fwd(h, NULL, NULL, NULL, NULL, NULL, NULL), MGPU_STATUS_NULL_POINTER);
    /* empty gather / scatter: SUCCESS whatever the strides and pointers, nothing launched */
    const long launches = stats().launches;
    mgpu_gather_desc g = MGPU_GATHER_DESC_INIT;
    g.elem_size = 4, g.row_elems = 16;
    CHECK_STATUS(mgpu_gather(h, &g), MGPU_STATUS_SUCCESS);
    mgpu_scatter_add_desc s = MGPU_SCATTER_ADD_DESC_INIT;
    s.row_elems = 16;
    CHECK_STATUS(mgpu_scatter_add(h, &s), MGPU_STATUS_SUCCESS);
    CHECK(stats().launches == launches, "an empty gather launched");
    /* alpha == 0: A and B are not read (the k == 0 kernel) */
    CHECK_STATUS(gemm_tn(h, 1024, 1024, 1024, 1024, &zero), MGPU_STATUS_SUCCESS);
    CHECK(strstr(stats().last_kernel, "portable") != NULL, "alpha = 0 ran %s", stats().last_kernel);
    /* no limit on n: one-tile-per-CTA kernels launch in column chunks (grid y <= 65535) */
    const long before = stats().launches;
    CHECK_STATUS(mgpu_gemm(h, MGPU_OP_N, MGPU_OP_N, 64, 5000000, 0, &one, NULL, MGPU_DTYPE_BF16, 64, NULL,
                           MGPU_DTYPE_BF16, 1, &one, C_ADDR, MGPU_DTYPE_BF16, 64),
                 MGPU_STATUS_SUCCESS);
    CHECK(stats().launches == before + 2 && stats().last_grid[1] <= 65535, "n = 5e6: %ld launches, last grid y %u",
          stats().launches - before, stats().last_grid[1]);
    CHECK_STATUS(mgpu_destroy(h), MGPU_STATUS_SUCCESS);
}

int main(void)
{
    mgpu_handle *h = NULL;
    const mgpu_status s = mgpu_create(&h);
    if (s != MGPU_STATUS_SUCCESS || !fake_cuda_open(&fake)) {
        printf("the fake driver is not the loaded libcuda.so.1 (%s: %s): skipped\n", mgpu_status_string(s),
               mgpu_last_error_message());
        mgpu_destroy(h);
        return MGPU_TEST_SKIP;
    }
    CHECK_STATUS(mgpu_destroy(h), MGPU_STATUS_SUCCESS);
    check_create_destroy_create();
    check_dead_handles();
    check_graph_safe();
    check_workspace();
    check_workspace_query();
    check_argument_order();
    return check_exit();
}
