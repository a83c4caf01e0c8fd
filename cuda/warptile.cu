// warptile.cu: warp tiling: each warp owns a WM x WN sub-tile of the block's tile.
// Fixes: in the vectorized kernel a warp's 32 lanes lie along one row of the block's tile: each
// warp reads 32 x TN columns of Bs, and with TN 8 its 128-bit loads share banks. Here the block's
// tile is split among warps, each warp's tile into WMITER x WNITER sub-tiles of WSUBM x WSUBN, and
// a lane owns a TM x TN piece of every sub-tile. A warp's lanes read consecutive 16-byte pieces of
// a few rows of As and Bs (128-bit loads without bank conflicts), and the tile a warp reads from
// shared memory is the one it computes. Conflict-free is not the fewest wavefronts: lanes that read
// Bs in pairs (lane n what lane n ^ 1 reads) are served 16 at a time, 2 wavefronts a load, but its
// B fragments are 8 distinct pieces per 8 lanes, served 8 lanes (128 bytes) at a time: 4 wavefronts
// (3 on average, as Nsight Compute measures). Its transposed scalar stores of A conflict too (about
// 5.6 extra wavefronts a store). So on its own it is slower than the vectorized kernel at the
// defaults (the Ladder page counts why); the double-buffered rung builds on its layout.
// Loads and the fallback for sizes that are not multiples of 4 or of the tile are the vectorized
// kernel's.
#include "trace.cuh"

#ifndef BM
#define BM 128   // one of: 32 64 128 256
#endif
#ifndef BN
#define BN 128   // one of: 32 64 128 256
#endif
#ifndef BK
#define BK 32   // one of: 8 16 32
#endif
#ifndef WM
#define WM 32   // one of: 32 64 128
#endif
#ifndef WN
#define WN 64   // one of: 32 64 128
#endif
#ifndef WNITER
#define WNITER 2   // one of: 1 2 4
#endif
#ifndef TM
#define TM 4   // one of: 4 8
#endif
#ifndef TN
#define TN 4   // one of: 4 8
#endif

constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
constexpr int kWMIter = (WM * WN) / (32 * TM * TN * WNITER);   // sub-tiles down a warp's tile
constexpr int kSubM = WM / kWMIter;
constexpr int kSubN = WN / WNITER;

#define OUTPUTS_DOWN (WM * WN / (32 * TN * WNITER))   // a thread's outputs down (rows of C) and across
#define OUTPUTS_ACROSS (WNITER * TN)
REQUIRE(BM % WM == 0 && BN % WN == 0, "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)");
REQUIRE(kThreads >= 32 && kThreads <= 1024 && kThreads % 32 == 0,
        "needs a multiple of 32 threads per block, up to 1024 (it would run {kThreads})");
REQUIRE(OUTPUTS_DOWN * OUTPUTS_ACROSS <= 128, "needs at most 128 outputs per thread: a thread has at most 255 registers, and "
        "over 128 outputs they spill to local memory (it would keep {OUTPUTS_DOWN * OUTPUTS_ACROSS})");
REQUIRE(WM * WN % (32 * TM * TN * WNITER) == 0 && WN % WNITER == 0,
        "needs a warp tile that its 32 lanes' TM x TN pieces and WNITER sub-tiles divide exactly");
REQUIRE(kWMIter != 0 && WM % kWMIter == 0 && kSubN % TN == 0 && kSubN / TN != 0 && 32 % (kSubN / TN) == 0 &&
        32 / (kSubN / TN) * TM == kSubM, "needs each warp sub-tile to be exactly its 32 lanes' TM x TN pieces");
REQUIRE(4 * BK * (BM + BN) <= 48 * 1024,
        "needs at most 48 KB of shared memory, the static limit (it would take {4 * BK * (BM + BN) / 1024} KB)");
REQUIRE(BK % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "needs BK, TM and TN multiples of 4 (it moves float4s)");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(kThreads, 1);
// Per K tile its share of the tiles' 4-float chunks (counted in chunks: a thread with any copies a whole
// one), A's a float4 load (four where K % 4) and four transposed stores, B's a float4 load (four where
// N % 4) and store; its shared loads (4 elements each), then its outputs (one float each where N % 4).
TRACE_RECORDS(CDIV(K, BK) * ((K % 4 ? 8 : 5) * CDIV(BM * BK / 4, kThreads) + (N % 4 ? 5 : 2) * CDIV(BK * BN / 4, kThreads) +
                             BK * (OUTPUTS_DOWN + OUTPUTS_ACROSS) / 4) + (N % 4 ? 4 : 1) * OUTPUTS_DOWN * OUTPUTS_ACROSS / 4);

extern "C" __global__ void __launch_bounds__(kThreads) warptile(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];   // transposed: As[k][m] = A[row0 + m][k0 + k]
    __shared__ __align__(16) float Bs[BK][BN];
    int tid = threadIdx.x;
    int warp = tid / 32, lane = tid % 32;
    int warp_row = (warp / (BN / WN)) * WM;   // this warp's tile, within the block's
    int warp_col = (warp % (BN / WN)) * WN;
    int lane_row = (lane / (kSubN / TN)) * TM;   // this lane's piece, within each sub-tile
    int lane_col = (lane % (kSubN / TN)) * TN;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;
    float acc[kWMIter * TM][WNITER * TN] = {{0.0f}};
    float a[kWMIter * TM];
    float b[WNITER * TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK / 4; i += kThreads) {
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
            STS(As, c, r, v.x);
            STS(As, c + 1, r, v.y);
            STS(As, c + 2, r, v.z);
            STS(As, c + 3, r, v.w);
        }
        for (int i = tid; i < BK * BN / 4; i += kThreads) {
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
            // This lane's column of A and row of B in every sub-tile of its warp, into registers.
            for (int wm = 0; wm < kWMIter; wm++) {
                for (int m = 0; m < TM; m += 4) {
                    float4 v = LDS4(As, k, warp_row + wm * kSubM + lane_row + m);
                    a[wm * TM + m] = v.x;
                    a[wm * TM + m + 1] = v.y;
                    a[wm * TM + m + 2] = v.z;
                    a[wm * TM + m + 3] = v.w;
                }
            }
            for (int wn = 0; wn < WNITER; wn++) {
                for (int n = 0; n < TN; n += 4) {
                    float4 v = LDS4(Bs, k, warp_col + wn * kSubN + lane_col + n);
                    b[wn * TN + n] = v.x;
                    b[wn * TN + n + 1] = v.y;
                    b[wn * TN + n + 2] = v.z;
                    b[wn * TN + n + 3] = v.w;
                }
            }
            for (int m = 0; m < kWMIter * TM; m++) {
                for (int n = 0; n < WNITER * TN; n++) {
                    acc[m][n] += a[m] * b[n];
                }
            }
        }
        SYNC();
    }
    for (int wm = 0; wm < kWMIter; wm++) {
        for (int m = 0; m < TM; m++) {
            int gr = row0 + warp_row + wm * kSubM + lane_row + m;
            for (int wn = 0; wn < WNITER; wn++) {
                for (int n = 0; n < TN; n += 4) {
                    int gc = col0 + warp_col + wn * kSubN + lane_col + n;
                    float *out = &acc[wm * TM + m][wn * TN + n];
                    if (N % 4 == 0 && gr < M && gc + 3 < N) {
                        STG4(C, gr * N + gc, make_float4(out[0], out[1], out[2], out[3]));
                    } else {
                        for (int j = 0; j < 4; j++) {
                            if (gr < M && gc + j < N) STG(C, gr * N + gc + j, out[j]); else SKIP_STG(C);
                        }
                    }
                }
            }
        }
    }
}
