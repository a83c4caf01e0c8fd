// big_local_array.cu (tests only): a thread's local array of 80 KB, more than the CPU tracer's
// 64 KB fiber stack holds (the GPU would keep it in local memory).
#include "trace.cuh"

extern "C" __global__ void big_local_array(const float *A, const float *B, float *C, int M, int N, int K) {
    float acc[20000];
    for (int i = 0; i < 20000; ++i) acc[i] = LDG(A, i % 4);
    float s = 0.0f;
    for (int i = 0; i < K; ++i) s += acc[(i * 7919) % 20000];
    STG(C, threadIdx.x, s);
}
