// async_rows.cu (tests only): the cp.async macros, as the ladder's pipelined rungs use them. Like
// vec4_rows.cu (a block of 32 threads owns 128 columns of one row of C, each thread four), but B's
// row k + 1 is copied into shared memory asynchronously while row k is multiplied: two buffers,
// one copy group in flight. Needs N to be a multiple of 4.
#include "trace.cuh"

extern "C" __global__ void async_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float Bs[2][128];
    int row = blockIdx.y;
    int c0 = blockIdx.x * 128 + threadIdx.x * 4;
    bool mine = c0 < N;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (mine) {
        CP_ASYNC4(Bs, 0, threadIdx.x * 4, B, c0);             // row 0 into buffer 0
    }
    CP_ASYNC_COMMIT();
    for (int k = 0; k < K; k++) {
        if (mine && k + 1 < K) {
            CP_ASYNC4(Bs, (k + 1) % 2, threadIdx.x * 4, B, (k + 1) * N + c0);   // next row, other buffer
        }
        CP_ASYNC_COMMIT();
        CP_ASYNC_WAIT(1);                                      // row k has landed; row k + 1 may not have
        SYNC();
        if (mine) {
            // The multiply, from shared memory.
            float a = LDG(A, row * K + k);
            float4 b = LDS4(Bs, k % 2, threadIdx.x * 4);
            acc.x += a * b.x;
            acc.y += a * b.y;
            acc.z += a * b.z;
            acc.w += a * b.w;
        }
        SYNC();                                                // buffer k % 2 is free for row k + 2
    }
    // Four outputs with one 128-bit store.
    if (mine) {
        STG4(C, row * N + c0, acc);
    }
}
