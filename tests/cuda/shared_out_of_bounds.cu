// shared_out_of_bounds.cu (tests only): stores a million rows past its shared tile. On the CPU the
// tile is a thread_local static, and such a store would overwrite the host thread's memory: the
// bounds check must report it like a global one.
#include "trace.cuh"

extern "C" __global__ void shared_out_of_bounds(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    STS(As, threadIdx.x + (1 << 20), 0, 1.0f);
    SYNC();
    float a = LDS(As, 0, 0);
    STG(C, threadIdx.x, a);
}
