// wmma_block.cu: WMMA from shared-memory tiles, several warps per block.
// Fixes: in wmma_warp each warp loads its own A and B tiles from global memory, so a row of A is
// fetched once per warp that needs it. Here a block of (BM / WM) x (BN / WN) warps owns a BM x BN
// tile of C: its threads copy A's BM x 32 and B's 32 x BN tiles into shared memory (16 bytes per
// thread per copy), and each warp multiplies a WM x WN piece from there as (WM / 16) x (WN / 16)
// fragments, reusing each A fragment WN / 16 times and each B fragment WM / 16 times. Rows are
// padded by 8 halves (16 bytes), so the fragment loads of consecutive rows start in different banks.
// Sizes: any M, N and K. Tiles that overhang A or B are zero-filled; where rows are not a multiple
// of 8 halves (16 bytes) they are copied half by half. A fragment is stored straight to C only
// where it lies wholly inside C on 32-byte-aligned rows (what store_matrix_sync needs); an edge
// fragment goes through shared memory (the warp's 16 x 16 floats, in the tiles' own space, free by
// then) and is copied out element by element, inside C only.
#include <mma.h>
using namespace nvcuda;
#include "contract.cuh"

#ifndef BM
#define BM 64   // one of: 64 128 256
#endif
#ifndef BN
#define BN 64   // one of: 64 128 256
#endif
#ifndef WM
#define WM 32   // one of: 32 64
#endif
#ifndef WN
#define WN 64   // one of: 32 64
#endif

constexpr int kBK = 32;
constexpr int kPad = 8;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kFragM = WM / 16, kFragN = WN / 16;
// Shared memory: the tiles of A and B while the block multiplies, then each warp's 16 x 16 floats
// for an edge fragment on its way to C.
constexpr int kABytes = BM * (kBK + kPad) * 2, kTileBytes = kABytes + kBK * (BN + kPad) * 2;
constexpr int kStageBytes = kThreads / 32 * 16 * 16 * 4;
constexpr int kSharedBytes = kTileBytes > kStageBytes ? kTileBytes : kStageBytes;

REQUIRE(BM % WM == 0 && BN % WN == 0, "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)");
REQUIRE(kThreads / 32 >= 1 && kThreads / 32 <= 16, "needs 1 to 16 warps per block (it would run {kThreads / 32})");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(kThreads, 1);

// The first n of the 8 halves from p, zeros after (n < 8 at the end of a row; all 8 where the row
// is not 16-byte aligned and a 16-byte load would fault).
__device__ __forceinline__ uint4 edge_chunk(const __half *p, int n) {
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < 8; e++)
        if (e < n) w[e / 2] |= (unsigned)__half_as_ushort(p[e]) << (16 * (e % 2));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <bool kAligned> __device__ __forceinline__ void multiply(const __half *A, const __half *B, float *C, int M, int N, int K,
                                                                  unsigned char (&smem)[kSharedBytes]) {
    auto &As = *reinterpret_cast<__half (*)[BM][kBK + kPad]>(smem);
    auto &Bs = *reinterpret_cast<__half (*)[kBK][BN + kPad]>(smem + kABytes);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int wrow = (warp / kWarpsN) * WM, wcol = (warp % kWarpsN) * WN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][kFragN];
    for (int i = 0; i < kFragM; i++)
        for (int j = 0; j < kFragN; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += kBK) {
        // The tiles, 8 halves (16 bytes) per copy; outside A or B: zeros.
        for (int i = threadIdx.x; i < BM * kBK / 8; i += kThreads) {
            int r = i / (kBK / 8), c = i % (kBK / 8) * 8, row = row0 + r, k = k0 + c;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (row < M && k < K && (kAligned || K % 8 == 0)) v = *reinterpret_cast<const uint4 *>(A + row * K + k);
            else if (row < M && k < K) v = edge_chunk(A + row * K + k, K - k);
            *reinterpret_cast<uint4 *>(&As[r][c]) = v;
        }
        for (int i = threadIdx.x; i < kBK * BN / 8; i += kThreads) {
            int r = i / (BN / 8), c = i % (BN / 8) * 8, k = k0 + r, col = col0 + c;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (k < K && col < N && (kAligned || N % 8 == 0)) v = *reinterpret_cast<const uint4 *>(B + k * N + col);
            else if (k < K && col < N) v = edge_chunk(B + k * N + col, N - col);
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
    float *stage = reinterpret_cast<float *>(smem) + warp * 16 * 16;   // the tiles are done with
#pragma unroll
    for (int i = 0; i < kFragM; i++)
#pragma unroll
        for (int j = 0; j < kFragN; j++) {
            int r = row0 + wrow + 16 * i, c = col0 + wcol + 16 * j;
            if (r + 16 <= M && c + 16 <= N && N % 8 == 0) {
                wmma::store_matrix_sync(C + r * N + c, acc[i][j], N, wmma::mem_row_major);
            } else if (r < M && c < N) {
                wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 16 * 16; e += 32)
                    if (r + e / 16 < M && c + e % 16 < N) C[(r + e / 16) * N + c + e % 16] = stage[e];
                __syncwarp();
            }
        }
}

// kAligned: K and N multiples of 8, so every row of A and B starts on 16 bytes and a copy is one
// predicated 16-byte load. Decided once per launch, not per copy: with the half-by-half branch in
// the copy loops nvcc leaves them rolled, each load waited for before the next is issued (4096^3
// on an H100: half the speed).
extern "C" __global__ void __launch_bounds__(kThreads) wmma_block(const __half *A, const __half *B, float *C, int M, int N, int K) {
    __shared__ __align__(32) unsigned char smem[kSharedBytes];   // one buffer for both versions
    if (K % 8 == 0 && N % 8 == 0) multiply<true>(A, B, C, M, N, K, smem);
    else multiply<false>(A, B, C, M, N, K, smem);
}
