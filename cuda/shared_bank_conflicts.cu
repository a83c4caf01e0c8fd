// shared_bank_conflicts.cu: "CUDA Kernel for Non-Square Matrix Multiplication"'s kernel; its inner line is
// `sum += tile_A[threadIdx.x][p] * tile_B[p][threadIdx.y]` under `#pragma unroll`.
// The document shows only that line; the rest follows its thread mapping (threadIdx.x walks rows of C).
// Lesson: shared memory has 32 banks of 4-byte words. Lane x reads tile_A[x][p], one row of
// TILE + PAD words further on per lane: with PAD 0 and TILE 32 all 32 lanes hit one bank (32-way
// conflict, 32 wavefronts); padding each row by one word (PAD 1) spreads them over all 32 banks.
// tile_B[p][threadIdx.y] is the same word for the lanes of one y: a broadcast, no conflict.
// TILE and PAD are set at compile time. The global loads stay uncoalesced (lanes walk rows).
#include "trace.cuh"

#ifndef TILE
#define TILE 16   // one of: 8 16 32
#endif
#ifndef PAD
#define PAD 0   // one of: 0 1
#endif
LAUNCH_GRID(CDIV(M, TILE), CDIV(N, TILE));
LAUNCH_BLOCK(TILE, TILE);
TRACE_RECORDS(CDIV(K, TILE) * (4 + 2 * TILE) + 1);   // per phase 2 loads, 2 stores, 2 TILE shared loads

extern "C" __global__ void shared_bank_conflicts(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float tile_A[TILE][TILE + PAD];
    __shared__ float tile_B[TILE][TILE + PAD];
    int row = blockIdx.x * TILE + threadIdx.x;  // that document's mapping: lane -> row of C
    int col = blockIdx.y * TILE + threadIdx.y;
    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        int a_col = t * TILE + threadIdx.y;
        int b_row = t * TILE + threadIdx.x;
        STS(tile_A, threadIdx.x, threadIdx.y, (row < M && a_col < K) ? LDG(A, row * K + a_col) : 0.0f);
        STS(tile_B, threadIdx.x, threadIdx.y, (b_row < K && col < N) ? LDG(B, b_row * N + col) : 0.0f);
        SYNC();
#pragma unroll
        for (int p = 0; p < TILE; p++) {
            float a = LDS(tile_A, threadIdx.x, p);  // lanes TILE + PAD words apart: the bank conflict
            float b = LDS(tile_B, p, threadIdx.y);  // one word for the whole row of lanes: broadcast
            sum += a * b;
        }
        SYNC();
    }
    if (row < M && col < N) {
        STG(C, row * N + col, sum);
    }
}
