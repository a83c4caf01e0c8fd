// fault_out_of_bounds.cu (tests only): writes 4 GiB past C. On the GPU an illegal address poisons
// the context (the worker must be replaced); on the CPU the bounds check reports it.
#include "trace.cuh"

extern "C" __global__ void fault_out_of_bounds(const float *A, const float *B, float *C, int M, int N, int K) {
    long long far = 1LL << 30;
    STG(C, far + threadIdx.x, 1.0f);
}
