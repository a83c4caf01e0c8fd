// rows_1d.cu (tests only): one thread per element of C, in 1-D blocks of BS threads, BS set at
// compile time. Not in the catalog: tests/test_contract.py registers it to show that a kernel with a
// parameter the engine has never heard of needs this file, its contract block, and nothing else.
#include "trace.cuh"

#ifndef BS
#define BS 64   // one of: 64 128
#endif
LAUNCH_GRID(CDIV(M * N, BS), 1);
LAUNCH_BLOCK(BS, 1);
TRACE_RECORDS(2 * K + 1);   // a load of A and of B per k, one store of C

extern "C" __global__ void rows_1d(const float *A, const float *B, float *C, int M, int N, int K) {
    int i = blockIdx.x * BS + threadIdx.x;  // row-major over C: lanes on consecutive columns
    if (i < M * N) {
        int row = i / N, col = i % N;
        float sum = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = LDG(A, row * K + k);
            float b = LDG(B, k * N + col);
            sum += a * b;
        }
        STG(C, row * N + col, sum);
    }
}
