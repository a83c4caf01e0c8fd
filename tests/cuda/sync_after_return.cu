// sync_after_return.cu (tests only): the threads past the block's first warp store and return before
// the SYNC() the first warp then waits at. Since compute capability 7.0 __syncthreads() waits only for
// the threads that have not exited, so a GPU runs it as written; the CPU trace must too.
#include "trace.cuh"

extern "C" __global__ void sync_after_return(const float *A, const float *B, float *C, int M, int N, int K) {
    float a = LDG(A, threadIdx.x);
    if (threadIdx.x >= 32) {
        STG(C, threadIdx.x, a);
        return;
    }
    SYNC();
    STG(C, threadIdx.x, a);
}
