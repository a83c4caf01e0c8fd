// naive_x_cols.cu: one thread per element of C, with threadIdx.x walking the COLUMNS of C.
// Rung 2, as three of the documents write it (the catalog names them). Fixes rung 1's mapping: the lanes of a warp now
// hold consecutive columns, so their B reads (and C writes) are consecutive floats, 4 sectors per
// request, and their A reads are one broadcast address. Still reads every element of A and B
// from global memory once per output that uses it ("2 N^3 reads" in "Matrix Multiplication using Shared Memory Tiling").
#include "trace.cuh"

// One thread per output, in blocks of the shape the user picks at launch (no rebuild per shape).
LAUNCH_GRID(CDIV(N, BLOCK_X), CDIV(M, BLOCK_Y));
LAUNCH_BLOCK(BLOCK_X, BLOCK_Y);
TRACE_RECORDS(2 * K + 1);   // a load of A and of B per k, one store of C

extern "C" __global__ void naive_x_cols(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;  // lane -> column: consecutive addresses in B and C
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = LDG(A, row * K + k);
            float b = LDG(B, k * N + col);
            sum += a * b;
        }
        STG(C, row * N + col, sum);
    }
}
