// mma_swizzled.cu: mma.sync and ldmatrix on swizzled shared tiles: no bank conflicts.
// Fixes: in mma_ldmatrix the 8 rows one ldmatrix matrix names sit in the same banks (As rows are
// 64 bytes apart: 4-way conflicts; Bs rows BN x 2 bytes: 8-way), so each matrix costs 4 or 8
// shared wavefronts instead of 1. Here the 16-byte chunk a copy stores (and ldmatrix later names)
// moves within its row by an XOR with the row: chunk c of row r of Bs goes to chunk c ^ (r % 8), of
// As (two 64-byte rows to a 128-byte line) to c ^ ((r / 2) % 4). Eight consecutive rows then name
// eight different 16-byte bank groups: one wavefront per matrix. No padding, no extra memory;
// everything else is mma_ldmatrix's, its edges too. Sizes: any M, N and K; BN at least 64.
#include "trace.cuh"

#ifndef BM
#define BM 128   // one of: 64 128 256
#endif
#ifndef BN
#define BN 128   // one of: 64 128 256
#endif
#ifndef WM
#define WM 64   // one of: 32 64
#endif
#ifndef WN
#define WN 64   // one of: 32 64
#endif

constexpr int kBK = 32;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kTilesM = WM / 16, kTilesN = WN / 8;

REQUIRE(BM % WM == 0 && BN % WN == 0, "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)");
REQUIRE(kThreads / 32 >= 1 && kThreads / 32 <= 16, "needs 1 to 16 warps per block (it would run {kThreads / 32})");
REQUIRE(2 * kBK * (BM + BN) <= 48 * 1024,
        "needs at most 48 KB of shared memory, the static limit (it would take {2 * kBK * (BM + BN) / 1024} KB)");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(kThreads, 1);
// Per K tile its 16-byte copies of A's and B's tiles (two records each: a load and a store, or a
// cp.async's pair; nine where the rows are not 16-byte aligned and a copy goes half by half), its
// lane's ldmatrix rows, then its outputs (per 16 x 8 tile two float2 stores, or four floats where N is odd).
TRACE_RECORDS(CDIV(K, kBK) * ((K % 8 == 0 ? 2 : 9) * CDIV(BM * kBK / 8, kThreads) +
                              (N % 8 == 0 ? 2 : 9) * CDIV(kBK * BN / 8, kThreads) + kBK / 16 * (kTilesM + kTilesN / 2)) +
              (N % 2 == 0 ? 2 : 4) * kTilesM * kTilesN);

// Where column c (a multiple of 8: a 16-byte chunk) of row r is stored.
__device__ __forceinline__ int swizzle_a(int r, int c) { return ((c / 8) ^ ((r / 2) % 4)) * 8; }
__device__ __forceinline__ int swizzle_b(int r, int c) { return ((c / 8) ^ (r % 8)) * 8; }

// C[r][c] and C[r][c + 1] where they are inside C. Where N is even the pair is 8-byte aligned and
// both or neither inside: one 8-byte store. Where N is odd every other row starts at an odd float,
// so the pair is stored as two floats, the second only inside C.
__device__ __forceinline__ void store_pair(float *C, int M, int N, int r, int c, float x, float y) {
    bool inside = r < M && c < N;   // lanes outside still take part in the warp's stores, predicated off
    if (N % 2 == 0) {
        if (inside) STG2(C, r * N + c, make_float2(x, y)); else SKIP_STG(C);
        return;
    }
    if (inside) STG(C, r * N + c, x); else SKIP_STG(C);
    if (inside && c + 1 < N) STG(C, r * N + c + 1, y); else SKIP_STG(C);
}

template <bool kAligned> __device__ __forceinline__ void multiply(const __half *A, const __half *B, float *C, int M, int N, int K,
                                                                  __half (&As)[BM][32],    // kBK columns
                                                                  __half (&Bs)[32][BN]) {  // kBK rows
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int wrow = (warp / kWarpsN) * WM, wcol = (warp % kWarpsN) * WN;
    const uint4 zero = make_uint4(0, 0, 0, 0);

    float acc[kTilesM][kTilesN][4] = {};
    for (int k0 = 0; k0 < K; k0 += kBK) {
        for (int i = tid; i < BM * kBK / 8; i += kThreads) {   // A's tile, 8 halves per copy
            int r = i / (kBK / 8), c = i % (kBK / 8) * 8, row = row0 + r, k = k0 + c;
            uint4 v = zero;
            if (row < M && k < K && (kAligned || K % 8 == 0)) {
                v = LDG8(A, row * K + k);
            } else if (row < M && k < K) {   // rows not 16-byte aligned: half by half, zeros past K
#pragma unroll
                for (int e = 0; e < 8; e++)
                    if (k + e < K) set_half(v, e, LDG(A, row * K + k + e)); else SKIP_LDG(A);
            }
            STS8(As, r, swizzle_a(r, c), v);
        }
        for (int i = tid; i < kBK * BN / 8; i += kThreads) {   // B's tile
            int r = i / (BN / 8), c = i % (BN / 8) * 8, k = k0 + r, col = col0 + c;
            uint4 v = zero;
            if (k < K && col < N && (kAligned || N % 8 == 0)) {
                v = LDG8(B, k * N + col);
            } else if (k < K && col < N) {   // rows not 16-byte aligned: half by half, zeros past N
#pragma unroll
                for (int e = 0; e < 8; e++)
                    if (col + e < N) set_half(v, e, LDG(B, k * N + col + e)); else SKIP_LDG(B);
            }
            STS8(Bs, r, swizzle_b(r, c), v);
        }
        SYNC();
        for (int kk = 0; kk < kBK; kk += 16) {
            unsigned a[kTilesM][4], b[kTilesN][2];
            // A: matrices 0-3 are rows 0-7 / 8-15 at k 0-7, then at k 8-15: lane l names row l % 16, k 8 (l / 16).
            for (int i = 0; i < kTilesM; i++) {
                int r = wrow + 16 * i + lane % 16;
                LDMATRIX_X4(a[i], As, r, swizzle_a(r, kk + lane / 16 * 8));
            }
            // B (row-major, k by n): .trans hands out columns; one x4 covers two n tiles of 8.
            for (int j = 0; j < kTilesN; j += 2) {
                unsigned r[4];
                int k = kk + lane % 16;
                LDMATRIX_X4_T(r, Bs, k, swizzle_b(k, wcol + 8 * j + lane / 16 * 8));
                b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
            }
            for (int i = 0; i < kTilesM; i++)
                for (int j = 0; j < kTilesN; j++) MMA_16816(acc[i][j], a[i], b[j]);
        }
        SYNC();
    }
    // Lane l holds rows l / 4 and l / 4 + 8 of each tile, columns 2 (l % 4) and 2 (l % 4) + 1.
    // Unrolled: a loop left rolled would index acc at run time and put it in local memory.
#pragma unroll
    for (int i = 0; i < kTilesM; i++)
#pragma unroll
        for (int j = 0; j < kTilesN; j++) {
            int r = row0 + wrow + 16 * i + lane / 4, c = col0 + wcol + 8 * j + 2 * (lane % 4);
            store_pair(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
            store_pair(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
        }
}

// kAligned: K and N multiples of 8, so every row of A and B starts on 16 bytes and a copy is one
// predicated 16-byte load. Decided once per launch, not per copy: with the half-by-half branch in
// the copy loops nvcc leaves them rolled, each load waited for before the next is issued (4096^3
// on an H100: half the speed). A function of its own, so the trace's line-numbered sites stay
// where they were.
extern "C" __global__ void __launch_bounds__(kThreads) mma_swizzled(const __half *A, const __half *B, float *C, int M, int N, int K) {
    // The tiles, declared here: one pair for both versions (in each they would be two).
    __shared__ __align__(16) __half As[BM][32];
    __shared__ __align__(16) __half Bs[32][BN];
    if (K % 8 == 0 && N % 8 == 0) multiply<true>(A, B, C, M, N, K, As, Bs);
    else multiply<false>(A, B, C, M, N, K, As, Bs);
}
