// deep_stack.cu (tests only): no one function's locals are over the CPU build's limit, but the last
// thread's calls nest eight deep with 16 KB each, past its 64 KB fiber stack; the others return at
// once. The overflow must fault, not run on over another thread's stack.
#include "trace.cuh"

__device__ float deep(int depth) {
    float local[4096];
    for (int i = 0; i < 4096; ++i) local[i] = (float)(depth + i);
    float below = depth ? deep(depth - 1) : 0.0f;
    return below + local[(int)below & 4095];
}

extern "C" __global__ void deep_stack(const float *A, const float *B, float *C, int M, int N, int K) {
    float a = LDG(A, 0);
    STG(C, threadIdx.x, threadIdx.x == 31 ? deep(K) + a : a);
}
