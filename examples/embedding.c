/*
 * Embedding lookup with mgpu_gather, and what happens to a bad token id.
 *
 * out[t, :] = table[ids[t], :] for a vocabulary of `vocab` rows of `dim`
 * floats. An id outside [0, vocab) never reads out of bounds: its output row
 * is filled with zeros, and the handle records it. The gather call cannot
 * know about it without waiting for the GPU, so it returns SUCCESS;
 * mgpu_check_index_errors() (which synchronises the handle's stream) then
 * returns MGPU_STATUS_INDEX_OUT_OF_RANGE and clears the record. Call it
 * where your program can afford a synchronisation: after a batch, in debug
 * builds, or before trusting the output of untrusted ids.
 *
 * Build:  cc embedding.c $(pkg-config --cflags --libs mgpukernels) -lcudart
 * Run:    ./embedding    exits 0 (checked), 77 (no GPU) or 1 (error)
 */
#include "example_util.h"

#define VOCAB 1000
#define DIM 96
#define TOKENS 8

int main(void)
{
    mgpu_handle *h = create_handle(); /* exits 77 without a GPU */

    static float table[VOCAB][DIM], out[TOKENS][DIM];
    for (int r = 0; r < VOCAB; r++)
        for (int c = 0; c < DIM; c++)
            table[r][c] = (float)r + (float)c / 1000.0f;
    int32_t ids[TOKENS] = {3, 999, 0, 42, 42, 7, VOCAB /* out of range */, 500};

    float *d_table, *d_out;
    int32_t *d_ids;
    CUDA_CHECK(cudaMalloc((void **)&d_table, sizeof table));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof out));
    CUDA_CHECK(cudaMalloc((void **)&d_ids, sizeof ids));
    CUDA_CHECK(cudaMemcpy(d_table, table, sizeof table, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_ids, ids, sizeof ids, cudaMemcpyHostToDevice));

    /* Rows are described in bytes (row strides), elements by their size: the
     * same call gathers bf16, fp8 or int64 rows. */
    mgpu_gather_desc g = MGPU_GATHER_DESC_INIT;
    g.src = d_table;
    g.src_rows = VOCAB;
    g.src_row_stride = sizeof table[0];
    g.dst = d_out;
    g.dst_row_stride = sizeof out[0];
    g.index = d_ids;
    g.index_type = MGPU_INDEX_I32;
    g.n_indices = TOKENS;
    g.row_elems = DIM;
    g.elem_size = sizeof(float);
    MGPU_CHECK(mgpu_gather(h, &g));

    /* The out-of-range id is reported here, not by mgpu_gather. */
    mgpu_status s = mgpu_check_index_errors(h);
    printf("mgpu_check_index_errors: %s%s%s\n", mgpu_status_string(s), s ? ": " : "",
           s ? mgpu_last_error_message() : "");
    if (s != MGPU_STATUS_INDEX_OUT_OF_RANGE)
        return 1;
    MGPU_CHECK(mgpu_check_index_errors(h)); /* the record was cleared */

    CUDA_CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int t = 0; t < TOKENS; t++)
        for (int c = 0; c < DIM; c++) {
            const int valid = ids[t] >= 0 && ids[t] < VOCAB;
            wrong += out[t][c] != (valid ? table[ids[t]][c] : 0.0f);
        }
    printf("embedding lookup of %d tokens: %d elements wrong (the bad id's row is zero)\n", TOKENS, wrong);

    CUDA_CHECK(cudaFree(d_table));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_ids));
    MGPU_CHECK(mgpu_destroy(h));
    return wrong == 0 ? 0 : 1;
}
