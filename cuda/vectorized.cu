// vectorized.cu: 128-bit accesses: float4 global loads, and A's tile stored transposed.
// Fixes: 2-D register tiling issues TM + TN scalar global loads per tile element and, as written, TM +
// TN scalar shared loads per k (nvcc already merged those into LDS.128 there). Here A and B are read
// from global memory four floats at a time
// (LDG.128: a quarter of the load instructions), and A's tile is stored transposed (As[k][m]), so a
// thread's TM values of A's column are consecutive words, like its TN values of B's row: both come
// from shared memory as float4 (LDS.128), TM / 4 + TN / 4 loads per k. A 128-bit load serves at
// most 8 lanes per wavefront, so a warp needs at least 4 (2 where lanes pair up on one address);
// with TN 8, lanes 8 words apart share banks. The price: A's transposed tile is stored one float at a
// time, As[k][m] with a warp's lanes writing down a column of the tile, so those scalar stores conflict
// (about 3.5 extra wavefronts per store at the defaults, which Nsight Compute confirms).
// Fallback: a float4 load needs 4 elements inside the matrix at a 16-byte-aligned address, so rows
// whose length (K for A, N for B) is not a multiple of 4, and the last partial tiles, are loaded one
// float at a time with guards; any M, N, K work.
#include "trace.cuh"

#ifndef BM
#define BM 64   // one of: 32 64 128 256
#endif
#ifndef BN
#define BN 256   // one of: 32 64 128 256
#endif
#ifndef BK
#define BK 32   // one of: 8 16 32
#endif
#ifndef TM
#define TM 8   // one of: 4 8
#endif
#ifndef TN
#define TN 4   // one of: 4 8
#endif
#define THREADS (BM * BN / (TM * TN))
#define OUTPUTS_DOWN TM   // a thread's outputs down (rows of C) and across
#define OUTPUTS_ACROSS TN
REQUIRE(BM * BN % (TM * TN) == 0, "needs TM x TN to divide BM x BN");
REQUIRE(THREADS >= 32 && THREADS <= 1024 && THREADS % 32 == 0,
        "needs a multiple of 32 threads per block, up to 1024 (it would run {THREADS})");
REQUIRE(OUTPUTS_DOWN * OUTPUTS_ACROSS <= 128, "needs at most 128 outputs per thread: a thread has at most 255 registers, and "
        "over 128 outputs they spill to local memory (it would keep {OUTPUTS_DOWN * OUTPUTS_ACROSS})");
REQUIRE(4 * BK * (BM + BN) <= 48 * 1024,
        "needs at most 48 KB of shared memory, the static limit (it would take {4 * BK * (BM + BN) / 1024} KB)");
REQUIRE(BK % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "needs BK, TM and TN multiples of 4 (it moves float4s)");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(THREADS, 1);
// Per K tile its share of the tiles' 4-float chunks (counted in chunks: a thread with any copies a whole
// one), A's a float4 load (four where K % 4) and four transposed stores, B's a float4 load (four where
// N % 4) and store; its shared loads (4 elements each), then its outputs (one float each where N % 4).
TRACE_RECORDS(CDIV(K, BK) * ((K % 4 ? 8 : 5) * CDIV(BM * BK / 4, THREADS) + (N % 4 ? 5 : 2) * CDIV(BK * BN / 4, THREADS) +
                             BK * (OUTPUTS_DOWN + OUTPUTS_ACROSS) / 4) + (N % 4 ? 4 : 1) * OUTPUTS_DOWN * OUTPUTS_ACROSS / 4);

extern "C" __global__ void __launch_bounds__(BM * BN / (TM * TN)) vectorized(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];   // transposed: As[k][m] = A[row0 + m][k0 + k]
    __shared__ __align__(16) float Bs[BK][BN];
    const int threads = BM * BN / (TM * TN);
    int tid = threadIdx.x;
    int row = (tid / (BN / TN)) * TM;
    int col = (tid % (BN / TN)) * TN;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float a[TM];
    float b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK / 4; i += threads) {
            int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
            int gr = row0 + r, gc = k0 + c;
            float4 v;
            if (K % 4 == 0 && gr < M && gc + 3 < K) {
                v = LDG4(A, gr * K + gc);
            } else {
                v.x = (gr < M && gc < K) ? LDG(A, gr * K + gc) : (SKIP_LDG(A), 0.0f);
                v.y = (gr < M && gc + 1 < K) ? LDG(A, gr * K + gc + 1) : (SKIP_LDG(A), 0.0f);
                v.z = (gr < M && gc + 2 < K) ? LDG(A, gr * K + gc + 2) : (SKIP_LDG(A), 0.0f);
                v.w = (gr < M && gc + 3 < K) ? LDG(A, gr * K + gc + 3) : (SKIP_LDG(A), 0.0f);
            }
            // The transpose happens here, on the way into shared memory.
            STS(As, c, r, v.x);
            STS(As, c + 1, r, v.y);
            STS(As, c + 2, r, v.z);
            STS(As, c + 3, r, v.w);
        }
        for (int i = tid; i < BK * BN / 4; i += threads) {
            int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
            int gr = k0 + r, gc = col0 + c;
            float4 v;
            if (N % 4 == 0 && gr < K && gc + 3 < N) {
                v = LDG4(B, gr * N + gc);
            } else {
                v.x = (gr < K && gc < N) ? LDG(B, gr * N + gc) : (SKIP_LDG(B), 0.0f);
                v.y = (gr < K && gc + 1 < N) ? LDG(B, gr * N + gc + 1) : (SKIP_LDG(B), 0.0f);
                v.z = (gr < K && gc + 2 < N) ? LDG(B, gr * N + gc + 2) : (SKIP_LDG(B), 0.0f);
                v.w = (gr < K && gc + 3 < N) ? LDG(B, gr * N + gc + 3) : (SKIP_LDG(B), 0.0f);
            }
            STS4(Bs, r, c, v);
        }
        SYNC();
        for (int k = 0; k < BK; k++) {
            for (int m = 0; m < TM; m += 4) {
                float4 v = LDS4(As, k, row + m);
                a[m] = v.x;
                a[m + 1] = v.y;
                a[m + 2] = v.z;
                a[m + 3] = v.w;
            }
            for (int n = 0; n < TN; n += 4) {
                float4 v = LDS4(Bs, k, col + n);
                b[n] = v.x;
                b[n + 1] = v.y;
                b[n + 2] = v.z;
                b[n + 3] = v.w;
            }
            for (int m = 0; m < TM; m++) {
                for (int n = 0; n < TN; n++) {
                    acc[m][n] += a[m] * b[n];
                }
            }
        }
        SYNC();
    }
    for (int m = 0; m < TM; m++) {
        int gr = row0 + row + m;
        for (int n = 0; n < TN; n += 4) {
            int gc = col0 + col + n;
            if (N % 4 == 0 && gr < M && gc + 3 < N) {
                STG4(C, gr * N + gc, make_float4(acc[m][n], acc[m][n + 1], acc[m][n + 2], acc[m][n + 3]));
            } else {
                for (int j = 0; j < 4; j++) {
                    if (gr < M && gc + j < N) STG(C, gr * N + gc + j, acc[m][n + j]); else SKIP_STG(C);
                }
            }
        }
    }
}
