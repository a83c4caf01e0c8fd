// wrong_result.cu (tests only): naive_x_cols with an off-by-one that skips k = 0. The correctness
// gate must report it as wrong, never time it.
#include "trace.cuh"

extern "C" __global__ void wrong_result(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 1; k < K; k++) {
            float a = LDG(A, row * K + k);
            float b = LDG(B, k * N + col);
            sum += a * b;
        }
        STG(C, row * N + col, sum);
    }
}
