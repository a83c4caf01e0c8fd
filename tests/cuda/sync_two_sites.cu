// sync_two_sites.cu (tests only): the first warp waits at one SYNC(), the rest of the block at
// another: every thread reaches a barrier, but not the same one.
#include "trace.cuh"

extern "C" __global__ void sync_two_sites(const float *A, const float *B, float *C, int M, int N, int K) {
    float a = LDG(A, threadIdx.x);
    if (threadIdx.x < 32) {
        SYNC();
    } else {
        SYNC();
    }
    STG(C, threadIdx.x, a);
}
