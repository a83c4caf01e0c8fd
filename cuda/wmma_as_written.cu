// wmma_as_written.cu: the WMMA kernel of "Matrix Multiplication in CUDA", exactly as that document writes
// it (only `extern "C"`, so the engine finds it by name, and the engine's contract block are added).
// What it gets wrong, measured (the Tensor cores page shows the evidence):
//   - warpM divides the thread's y index by 32, although a warp is 32 threads along x: the 32 warps
//     whose y indices share y / 32 all compute the same 16 x 16 tile of C. Whatever the launch,
//     every tile is computed by 32 warps: 32 times the work (and the stores) it needs.
//   - b_frag is declared col_major while B is stored row-major (K x N): each 16 x 16 block of B is
//     read transposed, so C = A B only where those blocks happen to be symmetric.
//   - no guards: M, N and K must be multiples of 16.
// The engine launches it with blocks of 32 x 4 threads and enough of them in y for warpM to reach
// the last row tile (registry: wmma_as_written).
#include <mma.h>
using namespace nvcuda::wmma;
#include "contract.cuh"

REQUIRE_SIZES(M % 16 == 0 && N % 16 == 0 && K % 16 == 0,
              "needs M, N and K to be multiples of 16 (M={M}, N={N}, K={K}): a tensor-core fragment is a "
              "whole 16 x 16 tile");
REQUIRE_SIZES(MAX(M, N) <= 2048, "is refused above 2048 (M={M}, N={N}): it computes every tile of C 32 times, so "
              "a larger run would take the GPU for seconds per call");
// Blocks of 32 x 4 threads and 8 x M / 16 blocks in y, so that warpM reaches every row tile.
LAUNCH_GRID(CDIV(N, 16), 8 * CDIV(M, 16));
LAUNCH_BLOCK(32, 4);

// Tensor cores operate on matrix fragments
// Ampere: 16×16×16 for FP16, meaning:
//   A is 16×16, B is 16×16, accumulator C is 16×16

extern "C" __global__ void matmul_wmma(half* A, half* B, float* C, int M, int N, int K) {
    // Declare matrix fragments
    fragment<matrix_a, 16, 16, 16, half, row_major> a_frag;
    fragment<matrix_b, 16, 16, 16, half, col_major> b_frag;
    fragment<accumulator, 16, 16, 16, float> c_frag;

    // Initialize accumulator to zero
    fill_fragment(c_frag, 0.0f);

    int warpM = (blockIdx.y * blockDim.y + threadIdx.y) / 32 * 16;
    int warpN = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * 16;

    // Loop over K dimension
    for (int k = 0; k < K; k += 16) {
        // Load 16×16 tiles into fragments
        load_matrix_sync(a_frag, A + warpM * K + k, K);
        load_matrix_sync(b_frag, B + k * N + warpN, N);

        // Tensor core matrix multiply-accumulate
        // This single instruction does 16×16×16 = 4096 FMAs
        mma_sync(c_frag, a_frag, b_frag, c_frag);
    }

    // Store result
    store_matrix_sync(C + warpM * N + warpN, c_frag, N, mem_row_major);
}
