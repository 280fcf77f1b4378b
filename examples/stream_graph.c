/*
 * The library on your own stream, and inside a CUDA graph.
 *
 * mgpu_set_stream() makes a handle queue its work on a stream of yours
 * (a cudaStream_t or CUstream), ordered with the rest of your work there.
 * The operations allocate nothing and never synchronise, so they can be
 * captured into a CUDA graph and replayed: here a GEMM (h = x * w) and a
 * row gather (y = rows of h picked by an index) are captured once and the
 * graph is launched several times with new x each time.
 *
 * One rule: run each operation once before capturing it. The first use of a
 * kernel loads its module (a one-time driver call that capture does not
 * allow); after that, calls only launch kernels.
 *
 * Build:  cc stream_graph.c $(pkg-config --cflags --libs mgpukernels) -lcudart
 * Run:    ./stream_graph    exits 0 (checked), 77 (no GPU) or 1 (error)
 */
#include "example_util.h"

#define M 256    /* h: M x N, fp32, column-major */
#define N 64
#define K 64
#define PICK 16  /* rows of y */
#define REPLAYS 3

/* Queues h = x * w and y[r, :] = h_rows[index[r], :] on the handle's stream.
 * h is column-major M x N, so its "rows" for the gather are the N columns
 * (each M floats long): y holds PICK columns of h. */
static void step(mgpu_handle *h, const void *x, const void *w, float *hbuf, float *y, const int32_t *index)
{
    const float one = 1.0f, zero = 0.0f;
    MGPU_CHECK(mgpu_gemm(h, MGPU_OP_N, MGPU_OP_N, M, N, K, &one, x, MGPU_DTYPE_BF16, M, w, MGPU_DTYPE_BF16, K, &zero,
                         hbuf, MGPU_DTYPE_F32, M));
    mgpu_gather_desc g = MGPU_GATHER_DESC_INIT;
    g.src = hbuf;
    g.src_rows = N;
    g.src_row_stride = M * sizeof(float);
    g.dst = y;
    g.dst_row_stride = M * sizeof(float);
    g.index = index;
    g.index_type = MGPU_INDEX_I32;
    g.n_indices = PICK;
    g.row_elems = M;
    g.elem_size = sizeof(float);
    MGPU_CHECK(mgpu_gather(h, &g));
}

int main(void)
{
    mgpu_handle *h = create_handle(); /* exits 77 without a GPU */

    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    MGPU_CHECK(mgpu_set_stream(h, stream));

    /* x: M x K, w: K x N (bf16, small integers: exact results). */
    static float x[M * K], w[K * N], y[PICK * M];
    int32_t index[PICK];
    for (int i = 0; i < M * K; i++)
        x[i] = (float)(i % 3 - 1);
    for (int i = 0; i < K * N; i++)
        w[i] = (float)(i % 5 - 2);
    for (int r = 0; r < PICK; r++)
        index[r] = (r * 7) % N;

    void *dx = upload_bf16(x, M * K), *dw = upload_bf16(w, K * N);
    float *dh, *dy;
    int32_t *didx;
    CUDA_CHECK(cudaMalloc((void **)&dh, sizeof(float) * M * N));
    CUDA_CHECK(cudaMalloc((void **)&dy, sizeof y));
    CUDA_CHECK(cudaMalloc((void **)&didx, sizeof index));
    CUDA_CHECK(cudaMemcpy(didx, index, sizeof index, cudaMemcpyHostToDevice));

    /* 1. On the user's stream, eagerly. This also loads the kernels' modules. */
    step(h, dx, dw, dh, dy, didx);
    CUDA_CHECK(cudaStreamSynchronize(stream));

    /* 2. Capture the same step into a graph. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    step(h, dx, dw, dh, dy, didx);
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

    /* 3. Replay it with new inputs: x scaled by r + 1 in round r. */
    int wrong = 0;
    for (int r = 0; r < REPLAYS; r++) {
        static float xr[M * K];
        for (int i = 0; i < M * K; i++)
            xr[i] = x[i] * (float)(r + 1);
        void *dxr = upload_bf16(xr, M * K);
        CUDA_CHECK(cudaMemcpyAsync(dx, dxr, sizeof(uint16_t) * M * K, cudaMemcpyDeviceToDevice, stream));
        CUDA_CHECK(cudaGraphLaunch(exec, stream));
        CUDA_CHECK(cudaMemcpyAsync(y, dy, sizeof y, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        CUDA_CHECK(cudaFree(dxr));
        for (int p = 0; p < PICK; p++)
            for (int i = 0; i < M; i++) {
                float ref = 0.0f;
                for (int q = 0; q < K; q++)
                    ref += xr[i + q * M] * w[q + index[p] * K];
                wrong += y[i + p * M] != ref;
            }
    }
    MGPU_CHECK(mgpu_check_index_errors(h)); /* no bad index in any replay */
    printf("graph of gemm + gather replayed %d times on a user stream: %d elements wrong\n", REPLAYS, wrong);

    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    MGPU_CHECK(mgpu_destroy(h));
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(dw));
    CUDA_CHECK(cudaFree(dh));
    CUDA_CHECK(cudaFree(dy));
    CUDA_CHECK(cudaFree(didx));
    return wrong == 0 ? 0 : 1;
}
