// wmma_warp.cu: the WMMA kernel written correctly: one warp per 16 x 16 tile of C.
// Fixes: in the document's kernel every tile is computed by 32 warps (warpM divides a y index by 32)
// and B's blocks are read transposed (a col_major fragment of a row-major B). Here each warp of a
// 4-warp block owns one tile: warp w of block (x, y) owns rows 16 y .. 16 y + 15 and columns
// 16 (4 x + w) ..; B is read as the row-major matrix it is. Every element of A and B still comes
// from global memory (through L1), once per tile that needs it: the next rung shares tiles through
// shared memory. Sizes: M, N and K multiples of 16 (a fragment is a whole 16 x 16 tile).
#include <mma.h>
using namespace nvcuda;
#include "contract.cuh"

REQUIRE_SIZES(M % 16 == 0 && N % 16 == 0 && K % 16 == 0,
              "needs M, N and K to be multiples of 16 (M={M}, N={N}, K={K}): a tensor-core fragment is a "
              "whole 16 x 16 tile");
// A block of 4 warps side by side, each owning one 16 x 16 tile of C.
LAUNCH_GRID(CDIV(N, 64), CDIV(M, 16));
LAUNCH_BLOCK(128, 1);

extern "C" __global__ void __launch_bounds__(128) wmma_warp(const __half *A, const __half *B, float *C, int M, int N, int K) {
    int warp = threadIdx.x / 32;
    int row = blockIdx.y * 16;
    int col = (blockIdx.x * 4 + warp) * 16;
    if (row >= M || col >= N) return;   // the whole warp: fragments are warp-wide

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + row * K + k, K);     // A[row .. row + 15][k .. k + 15]
        wmma::load_matrix_sync(b, B + k * N + col, N);     // B[k .. k + 15][col .. col + 15], row-major
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + row * N + col, acc, N, wmma::mem_row_major);
}
