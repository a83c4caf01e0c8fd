// my_kernel.cu: your kernel, one thread per element of C. Change anything, then Build (Ctrl+Enter).
// What a traced kernel keeps to: every read and write of global memory goes through LDG and STG, of
// shared memory through LDS and STS, and __syncthreads() is SYNC(), so that each access is recorded.
#include "trace.cuh"

// The contract: the parameters (default, and the values the page offers), the launch and its rules.
// The engine reads these lines and nvcc compiles them, so they cannot drift apart.
#ifndef BX
#define BX 32   // one of: 8 16 32
#endif
#ifndef BY
#define BY 8    // one of: 1 2 4 8 16 32
#endif
REQUIRE(BX * BY <= 1024, "needs at most 1024 threads per block (BX x BY = {BX * BY})");
LAUNCH_GRID(CDIV(N, BX), CDIV(M, BY));
LAUNCH_BLOCK(BX, BY);
TRACE_RECORDS(2 * K + 1);   // the most accesses one thread records: a load of A and of B per k, one store

extern "C" __global__ void my_kernel(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * BY + threadIdx.y;
    int col = blockIdx.x * BX + threadIdx.x;   // lane -> column: a warp reads consecutive floats of B
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) {
            sum += LDG(A, row * K + k) * LDG(B, k * N + col);
        }
        STG(C, row * N + col, sum);
    }
}
