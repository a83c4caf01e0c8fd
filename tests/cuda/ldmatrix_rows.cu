// ldmatrix_rows.cu (tests only): ldmatrix (LDMATRIX_X4, X2, X1), as the ladder's tensor-core rungs
// use it, checked by the product itself. Like half_rows.cu, a block of 32 threads (one warp) owns
// 32 columns of one row of C. Per 16 rows of K it stages that 16 x 32 tile of B in shared memory
// as halves, loads it back with ldmatrix, and puts each half a lane received in a float tile Bf
// where the PTX ISA says it came from: lane t receives, of each matrix m, elements 2 (t % 4) and
// 2 (t % 4) + 1 of the row lane 8m + t / 4 named. The product is then multiplied from Bf, so a lane
// that received anything else makes C wrong.
//
// The lanes name Bs's rows (64 bytes long) in two ways, for Nsight Compute to count
// (tests/benchmarks/ncu_vector.py):
//   rows 0-7, X4: matrix m is the 8 x 8 tile of columns 8m .. 8m + 7. A tile's 8 rows lie 64 bytes
//     apart, in the same 8 banks four times over: 4 wavefronts a matrix.
//   rows 8-15, X2 then X1 twice: lane s names the s-th 16 bytes of the rows, so each matrix is 128
//     consecutive bytes: one wavefront a matrix.
#include "trace.cuh"

// A lane's share of one matrix, elements (k, n) and (k, n + 1) of the tile: the two halves of one
// ldmatrix register (the first in the low 16 bits), stored as two floats in one 64-bit store (two
// scalar stores nvcc would merge into one anyway).
__device__ void keep(float (&Bf)[16][32], unsigned int fragment, int k, int n) {
    float first = __half2float(__ushort_as_half((unsigned short)(fragment & 0xffff)));
    float second = __half2float(__ushort_as_half((unsigned short)(fragment >> 16)));
    STS2(Bf, k, n, make_float2(first, second));
}

extern "C" __global__ void ldmatrix_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) __half Bs[16][32];
    __shared__ __align__(8) float Bf[16][32];
    int row = blockIdx.y, lane = threadIdx.x, col = blockIdx.x * 32 + lane;
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        // B's rows k0 .. k0 + 15 of this block's columns, as halves (zeros past the edges).
        for (int k = 0; k < 16; k++) {
            float b = k0 + k < K && col < N ? LDG(B, (k0 + k) * N + col) : 0.0f;
            STS(Bs, k, lane, __float2half(b));
        }
        SYNC();
        // Rows 0-7 as four tiles: lane 8m + j names row j of tile m; lane t gets row t / 4.
        unsigned int tiles[4];
        LDMATRIX_X4(tiles, Bs, lane % 8, lane / 8 * 8);
        for (int m = 0; m < 4; m++) {
            keep(Bf, tiles[m], lane / 4, 8 * m + 2 * (lane % 4));
        }
        // Rows 8-11: lane s (of 16) names bytes 16s .. 16s + 15 of them; lane t gets matrix m's
        // row t / 4, the one lane 8m + t / 4 named: row 8 + 2m + t / 16, columns 2 (t % 16) + 0, 1.
        unsigned int pair[2];
        LDMATRIX_X2(pair, Bs, 8 + lane % 16 / 4, lane % 4 * 8);
        for (int m = 0; m < 2; m++) {
            keep(Bf, pair[m], 8 + 2 * m + lane / 16, 2 * (lane % 16));
        }
        // Rows 12-15, two at a time, by lanes 0-7 alone.
        for (int h = 0; h < 2; h++) {
            unsigned int one[1];
            LDMATRIX_X1(one, Bs, 12 + 2 * h + lane % 8 / 4, lane % 4 * 8);
            keep(Bf, one[0], 12 + 2 * h + lane / 16, 2 * (lane % 16));
        }
        SYNC();   // Bf is whole
        for (int k = 0; k < 16 && k0 + k < K; k++) {
            float a = LDG(A, row * K + k0 + k);
            float b = LDS(Bf, k, lane);
            sum += a * b;
        }
        SYNC();   // Bs and Bf are free for the next rows of K
    }
    if (col < N) {
        STG(C, row * N + col, sum);
    }
}
