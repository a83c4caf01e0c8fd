// bf16_inputs.cu (tests only): half_inputs.cu with A and B in bfloat16 (8 exponent bits, 7 of
// mantissa), the input type of the bf16 tensor-core rungs.
#include "trace.cuh"

LAUNCH_GRID(CDIV(N, 16), CDIV(M, 16));
LAUNCH_BLOCK(16, 16);
TRACE_RECORDS(2 * K + 1);   // a load of A and of B per k, one store of C

extern "C" __global__ void bf16_inputs(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N,
                                       int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = __bfloat162float(LDG(A, row * K + k));
            float b = __bfloat162float(LDG(B, k * N + col));
            sum += a * b;
        }
        STG(C, row * N + col, sum);
    }
}
