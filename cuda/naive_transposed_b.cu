// naive_transposed_b.cu: C = A * B computed as row-by-row dot products on a pre-transposed B,
// C[i][j] = sum_p A[i][p] * BT[j][p], the non-square document's method (transpose_b.cu makes BT).
// That document claims the transpose makes a warp's reads contiguous. Each THREAD now walks a row, but
// coalescing is about the 32 lanes of one load: with threadIdx.x walking columns, lane j reads
// BT[j][p], K floats from its neighbour, one sector per lane. As slow as rung 1, 12x slower than rung 2.
#include "trace.cuh"

// One thread per output, in blocks of the shape the user picks at launch (no rebuild per shape).
LAUNCH_GRID(CDIV(N, BLOCK_X), CDIV(M, BLOCK_Y));
LAUNCH_BLOCK(BLOCK_X, BLOCK_Y);
TRACE_RECORDS(2 * K + 1);   // a load of A and of B per k, one store of C

extern "C" __global__ void naive_transposed_b(const float *A, const float *BT, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int p = 0; p < K; p++) {
            float a = LDG(A, row * K + p);
            float bt = LDG(BT, col * K + p);  // lane -> col: a stride of K floats across the warp
            sum += a * bt;
        }
        STG(C, row * N + col, sum);
    }
}
