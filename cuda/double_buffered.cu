// double_buffered.cu: two shared buffers, so the loads of tile t + 1 are in flight while tile t
// is multiplied.
// Fixes: in the warp-tiled kernel every tile's loads are waited for before any FMA can start, and
// the FMAs wait at a barrier before the next tile can load: copy and compute take turns. Here the
// block owns two buffers of each tile. While it multiplies from one, B's next tile is copied into
// the other with cp.async (global -> shared directly, no registers; the thread waits for its copy
// group only when the tile is needed) and A's next tile is loaded into registers, stored transposed
// once the multiply is done (cp.async copies 16 bytes as they are, so it cannot transpose). One
// barrier per tile instead of two. Compute is the warp-tiled kernel's, and so are A's transposed
// scalar stores, which conflict in the banks (3 extra wavefronts a store). Fallback: B's pieces that
// are not 4 whole floats at a 16-byte-aligned address (N not a multiple of 4, the last partial
// tile) are loaded and stored one float at a time; any M, N, K work.
#include "trace.cuh"

#ifndef BM
#define BM 128   // one of: 32 64 128 256
#endif
#ifndef BN
#define BN 128   // one of: 32 64 128 256
#endif
#ifndef BK
#define BK 16   // one of: 8 16 32
#endif
#ifndef WM
#define WM 128   // one of: 32 64 128
#endif
#ifndef WN
#define WN 32   // one of: 32 64 128
#endif
#ifndef WNITER
#define WNITER 4   // one of: 1 2 4
#endif
#ifndef TM
#define TM 4   // one of: 4 8
#endif
#ifndef TN
#define TN 4   // one of: 4 8
#endif

constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
constexpr int kWMIter = (WM * WN) / (32 * TM * TN * WNITER);
constexpr int kSubM = WM / kWMIter;
constexpr int kSubN = WN / WNITER;
constexpr int kALoads = BM * BK / 4 / kThreads;   // float4s of A's tile per thread
constexpr int kBLoads = BK * BN / 4 / kThreads;

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
REQUIRE(4 * 2 * BK * (BM + BN) <= 48 * 1024,
        "needs at most 48 KB of shared memory, the static limit (it would take {4 * 2 * BK * (BM + BN) / 1024} KB)");
REQUIRE(BK % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "needs BK, TM and TN multiples of 4 (it moves float4s)");
REQUIRE(BM * BK / 4 % kThreads == 0 && BK * BN / 4 % kThreads == 0,
        "needs A's and B's tiles to be whole float4s for each thread, in fixed register "
        "arrays (it runs {kThreads} threads)");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(kThreads, 1);
// Per K tile its share of the tiles' elements, each loaded and stored once (at an edge a float4 is
// four scalar loads; a cp.async is one record of a copy and one of its store), its shared loads
// (4 elements each), then its outputs; one tile more, double-buffered.
TRACE_RECORDS((CDIV(K, BK) + 1) * (2 * (CDIV(BM * BK, kThreads) + CDIV(BK * BN, kThreads)) + BK * (OUTPUTS_DOWN + OUTPUTS_ACROSS) / 4) +
              OUTPUTS_DOWN * OUTPUTS_ACROSS);

// This thread's float4s of A's tile at k0 (4 consecutive k of one row each), into registers.
__device__ void load_a(const float *A, float4 (&ra)[kALoads], int M, int K, int row0, int k0) {
    for (int l = 0; l < kALoads; l++) {
        int i = threadIdx.x + l * kThreads;
        int gr = row0 + i / (BK / 4), gc = k0 + (i % (BK / 4)) * 4;
        if (K % 4 == 0 && gr < M && gc + 3 < K) {
            ra[l] = LDG4(A, gr * K + gc);
        } else {
            ra[l].x = (gr < M && gc < K) ? LDG(A, gr * K + gc) : (SKIP_LDG(A), 0.0f);
            ra[l].y = (gr < M && gc + 1 < K) ? LDG(A, gr * K + gc + 1) : (SKIP_LDG(A), 0.0f);
            ra[l].z = (gr < M && gc + 2 < K) ? LDG(A, gr * K + gc + 2) : (SKIP_LDG(A), 0.0f);
            ra[l].w = (gr < M && gc + 3 < K) ? LDG(A, gr * K + gc + 3) : (SKIP_LDG(A), 0.0f);
        }
    }
}

// The registers load_a filled, transposed into buffer buf: As[buf][k * BM + m].
__device__ void store_a(float (&As)[2][BK * BM], const float4 (&ra)[kALoads], int buf) {
    for (int l = 0; l < kALoads; l++) {
        int i = threadIdx.x + l * kThreads;
        int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        STS(As, buf, c * BM + r, ra[l].x);
        STS(As, buf, (c + 1) * BM + r, ra[l].y);
        STS(As, buf, (c + 2) * BM + r, ra[l].z);
        STS(As, buf, (c + 3) * BM + r, ra[l].w);
    }
}

// B's tile at k0 into buffer buf: 16-byte asynchronous copies (one commit group), or guarded
// scalar loads at the edges.
__device__ void copy_b(float (&Bs)[2][BK * BN], const float *B, int N, int K, int col0, int k0, int buf) {
    for (int l = 0; l < kBLoads; l++) {
        int i = threadIdx.x + l * kThreads;
        int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        int gr = k0 + r, gc = col0 + c;
        if (N % 4 == 0 && gr < K && gc + 3 < N) {
            CP_ASYNC4(Bs, buf, r * BN + c, B, gr * N + gc);
        } else {
            for (int j = 0; j < 4; j++) {
                STS(Bs, buf, r * BN + c + j, (gr < K && gc + j < N) ? LDG(B, gr * N + gc + j) : (SKIP_LDG(B), 0.0f));
            }
        }
    }
    CP_ASYNC_COMMIT();
}

extern "C" __global__ void __launch_bounds__(kThreads) double_buffered(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];
    int tid = threadIdx.x;
    int warp = tid / 32, lane = tid % 32;
    int warp_row = (warp / (BN / WN)) * WM;
    int warp_col = (warp % (BN / WN)) * WN;
    int lane_row = (lane / (kSubN / TN)) * TM;
    int lane_col = (lane % (kSubN / TN)) * TN;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;
    float acc[kWMIter * TM][WNITER * TN] = {{0.0f}};
    float a[kWMIter * TM];
    float b[WNITER * TN];
    float4 ra[kALoads];
    // Tile 0 into buffer 0, the one time nothing overlaps.
    copy_b(Bs, B, N, K, col0, 0, 0);
    load_a(A, ra, M, K, row0, 0);
    store_a(As, ra, 0);
    CP_ASYNC_WAIT(0);
    SYNC();
    int tiles = (K + BK - 1) / BK;
    for (int t = 0; t < tiles; t++) {
        int cur = t % 2, next = 1 - cur;
        bool more = t + 1 < tiles;
        if (more) {
            copy_b(Bs, B, N, K, col0, (t + 1) * BK, next);   // in flight during the FMAs below
            load_a(A, ra, M, K, row0, (t + 1) * BK);         // so are these loads, into registers
        }
        for (int k = 0; k < BK; k++) {
            for (int wm = 0; wm < kWMIter; wm++) {
                for (int m = 0; m < TM; m += 4) {
                    float4 v = LDS4(As, cur, k * BM + warp_row + wm * kSubM + lane_row + m);
                    a[wm * TM + m] = v.x;
                    a[wm * TM + m + 1] = v.y;
                    a[wm * TM + m + 2] = v.z;
                    a[wm * TM + m + 3] = v.w;
                }
            }
            for (int wn = 0; wn < WNITER; wn++) {
                for (int n = 0; n < TN; n += 4) {
                    float4 v = LDS4(Bs, cur, k * BN + warp_col + wn * kSubN + lane_col + n);
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
        if (more) {
            store_a(As, ra, next);   // buffer `next` was last read before the previous barrier
            CP_ASYNC_WAIT(0);        // this thread's copies of B's next tile have landed
        }
        SYNC();                      // ... and everyone's: the next tile is whole
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
