// half_inputs.cu (tests only): A and B stored in half precision, C in float, one thread per element
// of C (the naive rung's indexing, 2-D blocks). With its registry entry (inputs fp16), the engine
// stores A and B rounded to half, on the CPU and on the GPU alike.
#include "trace.cuh"

LAUNCH_GRID(CDIV(N, 16), CDIV(M, 16));
LAUNCH_BLOCK(16, 16);
TRACE_RECORDS(2 * K + 1);   // a load of A and of B per k, one store of C

extern "C" __global__ void half_inputs(const __half *A, const __half *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = __half2float(LDG(A, row * K + k));
            float b = LDG(B, k * N + col);   // converts implicitly, as cuda_fp16.h allows
            sum += a * b;
        }
        STG(C, row * N + col, sum);
    }
}
