// wmma_block.cu: WMMA from shared-memory tiles, several warps per block.
// Fixes: in wmma_warp each warp loads its own A and B tiles from global memory, so a row of A is
// fetched once per warp that needs it. Here a block of (BM / WM) x (BN / WN) warps owns a BM x BN
// tile of C: its threads copy A's BM x 32 and B's 32 x BN tiles into shared memory (16 bytes per
// thread per copy), and each warp multiplies a WM x WN piece from there as (WM / 16) x (WN / 16)
// fragments, reusing each A fragment WN / 16 times and each B fragment WM / 16 times. Rows are
// padded by 8 halves (16 bytes), so the fragment loads of consecutive rows start in different banks.
// Sizes: M, N and K multiples of 16; tiles that overhang C are zero-filled and not stored.
#include <mma.h>
using namespace nvcuda;

constexpr int kBK = 32;
constexpr int kPad = 8;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kFragM = WM / 16, kFragN = WN / 16;

extern "C" __global__ void __launch_bounds__(kThreads) wmma_block(const __half *A, const __half *B, float *C, int M, int N, int K) {
    __shared__ __align__(32) __half As[BM][kBK + kPad];
    __shared__ __align__(32) __half Bs[kBK][BN + kPad];
    int warp = threadIdx.x / 32;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int wrow = (warp / kWarpsN) * WM, wcol = (warp % kWarpsN) * WN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][kFragN];
    for (int i = 0; i < kFragM; i++)
        for (int j = 0; j < kFragN; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += kBK) {
        // The tiles, 8 halves (16 bytes) per copy; outside A or B: zeros.
        for (int i = threadIdx.x; i < BM * kBK / 8; i += kThreads) {
            int r = i / (kBK / 8), c = i % (kBK / 8) * 8;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (row0 + r < M && k0 + c < K) v = *reinterpret_cast<const uint4 *>(A + (row0 + r) * K + k0 + c);
            *reinterpret_cast<uint4 *>(&As[r][c]) = v;
        }
        for (int i = threadIdx.x; i < kBK * BN / 8; i += kThreads) {
            int r = i / (BN / 8), c = i % (BN / 8) * 8;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (k0 + r < K && col0 + c < N) v = *reinterpret_cast<const uint4 *>(B + (k0 + r) * N + col0 + c);
            *reinterpret_cast<uint4 *>(&Bs[r][c]) = v;
        }
        __syncthreads();
        for (int kk = 0; kk < kBK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[kFragM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[kFragN];
            for (int i = 0; i < kFragM; i++) wmma::load_matrix_sync(a[i], &As[wrow + 16 * i][kk], kBK + kPad);
            for (int j = 0; j < kFragN; j++) wmma::load_matrix_sync(b[j], &Bs[kk][wcol + 16 * j], BN + kPad);
            for (int i = 0; i < kFragM; i++)
                for (int j = 0; j < kFragN; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < kFragM; i++)
        for (int j = 0; j < kFragN; j++) {
            int r = row0 + wrow + 16 * i, c = col0 + wcol + 16 * j;
            if (r < M && c < N) wmma::store_matrix_sync(C + r * N + c, acc[i][j], N, wmma::mem_row_major);
        }
}
