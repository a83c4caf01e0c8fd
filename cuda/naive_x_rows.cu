// naive_x_rows.cu: one thread per element of C, with threadIdx.x walking the ROWS of C.
// Rung 1, as "Matrix Multiplication" writes it (i = blockIdx.x * blockDim.x + threadIdx.x is the row).
// Lesson: "Matrix Multiplication" says A is read coalesced and B strided. With this mapping it is the other way
// round: the lanes of a warp hold consecutive rows, so their A reads land K floats apart (one
// 32-byte sector per lane) while their B reads share a sector. Measured: ~12x slower than rung 2.
#include "trace.cuh"

// One thread per output, in blocks of the shape the user picks at launch (no rebuild per shape).
LAUNCH_GRID(CDIV(M, BLOCK_X), CDIV(N, BLOCK_Y));
LAUNCH_BLOCK(BLOCK_X, BLOCK_Y);
TRACE_RECORDS(2 * K + 1);   // a load of A and of B per k, one store of C

extern "C" __global__ void naive_x_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // row of C: lane -> row, a stride of K in A
    int j = blockIdx.y * blockDim.y + threadIdx.y;  // column of C
    if (i < M && j < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = LDG(A, i * K + k);
            float b = LDG(B, k * N + j);
            sum += a * b;
        }
        STG(C, i * N + j, sum);
    }
}
