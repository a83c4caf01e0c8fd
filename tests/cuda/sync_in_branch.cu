// sync_in_branch.cu (tests only): SYNC() where only the block's first warp goes; the other threads
// return while it waits there. CUDA leaves this undefined (the GPU may hang): the CPU trace reports it.
#include "trace.cuh"

extern "C" __global__ void sync_in_branch(const float *A, const float *B, float *C, int M, int N, int K) {
    float a = LDG(A, threadIdx.x);
    if (threadIdx.x < 32) SYNC();
    STG(C, threadIdx.x, a);
}
