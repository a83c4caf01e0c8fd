// vec4_rows.cu (tests only): the 128-bit access macros, as the ladder's vectorized rungs use them.
// A block of 32 threads owns 128 consecutive columns of one row of C, each thread four of them:
// per k it stages B's 128 floats of row k in shared memory with 128-bit stores, reads its four
// back with a 128-bit load, and multiplies them by A[row][k]. Needs N to be a multiple of 4.
#include "trace.cuh"

extern "C" __global__ void vec4_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float Bs[1][128];
    int row = blockIdx.y;
    int c0 = blockIdx.x * 128 + threadIdx.x * 4;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int k = 0; k < K; k++) {
        if (c0 < N) {
            float4 b_row = LDG4(B, k * N + c0);
            STS4(Bs, 0, threadIdx.x * 4, b_row);
        }
        SYNC();
        if (c0 < N) {
            float a = LDG(A, row * K + k);
            float4 b = LDS4(Bs, 0, threadIdx.x * 4);
            acc.x += a * b.x;
            acc.y += a * b.y;
            acc.z += a * b.z;
            acc.w += a * b.w;
        }
        SYNC();
    }
    // Four outputs with one 128-bit store.
    if (c0 < N) {
        STG4(C, row * N + c0, acc);
    }
}
