// host_functions.cu (tests only): naive_x_cols written as students write kernels for nvcc: math
// functions (sqrtf, fmaxf, fminf, expf, fabsf), printf, assert, __restrict__ pointers, a
// __constant__ table and a __device__ __forceinline__ helper. The CPU build must take each as nvcc does.
#include "trace.cuh"
#include <cfloat>   // FLT_MAX, which nvcc too needs this for
#include <memory>   // a C++ header after trace.cuh (a __noinline__ macro of the CPU shim had broken it)

__constant__ float kOne[2] = {1.0f, 0.0f};

__device__ __forceinline__ float keep(float x) { return fminf(fmaxf(x, -FLT_MAX), FLT_MAX) * expf(kOne[1]); }

extern "C" __global__ void host_functions(const float *__restrict__ A, const float *__restrict__ B,
                                          float *__restrict__ C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) printf("host_functions: K = %d\n", K);
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = LDG(A, row * K + k);
            float b = LDG(B, k * N + col);
            sum += a * b;
        }
        assert(sum == sum);
        STG(C, row * N + col, keep(copysignf(sqrtf(fabsf(sum) * fabsf(sum)), sum)) * kOne[0]);
    }
}
