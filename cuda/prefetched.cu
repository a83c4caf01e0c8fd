// prefetched.cu: the shared loads of step k + 1 are issued before the FMAs of step k.
// Fixes: in the double-buffered kernel the loop over k inside a tile stays a loop in the SASS: each
// step's six LDS.128 are followed by the 128 FFMAs that need them, so every step waits out the
// shared-memory latency, and with two warps per scheduler (209 registers a thread, 8 warps an SM)
// there is rarely another warp ready to issue meanwhile. Here each thread keeps two sets of
// fragment registers (a[2][..], b[2][..]): while it multiplies from one set it loads step k + 1 into
// the other, and the k loop is unrolled (#pragma unroll) so the compiler can keep them in
// registers and interleave the loads with the FFMAs. Tiles, copies and the fallback are the
// double-buffered kernel's.
// Two more things close most of the rest of the gap to cuBLAS SGEMM at 4096^3 (Nsight Compute on
// an H100: 79% of issue slots used against cuBLAS's 90%, the difference stalls on branches, on the
// instruction cache and on fixed-latency dependencies). A block wholly inside C, with K a multiple
// of BK, runs a copy of the tile loop compiled without the guards on A's loads and B's copies
// (multiply<false>): no branch per float4 of A, and B's LDGSTS in one straight run instead of each
// behind its own branch. And each row of the FMAs walks b back and forth (m odd: n from the right),
// which the compiler schedules with fewer stalls than rows all left to right. % of cuBLAS SGEMM at
// 4096^3 and 8192^3 (tests/benchmarks/tune_fp32.py, size_sweep.py; cuBLAS timed in the same process)
// on an H100: 89.7 and 90.2 without either; 93 to 94 with the rows and A unguarded; 94.9 to 95.7 with
// B unguarded too, at warp tiles of WM 32 x WN 128; 95.7 to 96.7 at WM 64 x WN 64, the default since
// it ran a point faster in every run. On an H200: 95.6 to 97.6 at WM 32 x WN 128, 96.6 to 99.2 at 64 x 64.
// ptxas puts three never-executing shared loads (@!PT LDS) before each run of LDGSTS: before every
// guarded copy, once before the unguarded run. The warps issue them and Nsight Compute counts them,
// so the unguarded copy has a source line of its own, where the SASS listing places its run's.
#include "trace.cuh"

#ifndef BM
#define BM 128   // one of: 32 64 128 256
#endif
#ifndef BN
#define BN 256   // one of: 32 64 128 256
#endif
#ifndef BK
#define BK 16   // one of: 8 16 32
#endif
#ifndef WM
#define WM 64   // one of: 32 64 128
#endif
#ifndef WN
#define WN 64   // one of: 32 64 128
#endif
#ifndef WNITER
#define WNITER 2   // one of: 1 2 4
#endif
#ifndef TM
#define TM 8   // one of: 4 8
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
template <bool kGuard>   // false: a block inside C and K, which needs no guard
__device__ void load_a(const float *A, float4 (&ra)[kALoads], int M, int K, int row0, int k0) {
    for (int l = 0; l < kALoads; l++) {
        int i = threadIdx.x + l * kThreads;
        int gr = row0 + i / (BK / 4), gc = k0 + (i % (BK / 4)) * 4;
        if (!kGuard || (K % 4 == 0 && gr < M && gc + 3 < K)) {
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
template <bool kGuard>   // false: a block inside C and K, which needs no guard
__device__ void copy_b(float (&Bs)[2][BK * BN], const float *B, int N, int K, int col0, int k0, int buf) {
    for (int l = 0; l < kBLoads; l++) {
        int i = threadIdx.x + l * kThreads;
        int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        int gr = k0 + r, gc = col0 + c;
        if (!kGuard) {
            // A line of its own: this run has its three @!PT LDS once, the guarded line below before
            // every copy, and the SASS listing counts them by line.
            CP_ASYNC4(Bs, buf, r * BN + c, B, gr * N + gc);
        } else if (N % 4 == 0 && gr < K && gc + 3 < N) {
            CP_ASYNC4(Bs, buf, r * BN + c, B, gr * N + gc);
        } else {
            for (int j = 0; j < 4; j++) {
                STS(Bs, buf, r * BN + c + j, (gr < K && gc + j < N) ? LDG(B, gr * N + gc + j) : (SKIP_LDG(B), 0.0f));
            }
        }
    }
    CP_ASYNC_COMMIT();
}

// This lane's column of A and row of B at step k of buffer buf, for every sub-tile of its warp.
__device__ void load_fragments(const float (&As)[2][BK * BM], const float (&Bs)[2][BK * BN], float (&a)[kWMIter * TM],
                               float (&b)[WNITER * TN], int buf, int k, int warp_row, int warp_col, int lane_row,
                               int lane_col) {
    for (int wm = 0; wm < kWMIter; wm++) {
        for (int m = 0; m < TM; m += 4) {
            float4 v = LDS4(As, buf, k * BM + warp_row + wm * kSubM + lane_row + m);
            a[wm * TM + m] = v.x;
            a[wm * TM + m + 1] = v.y;
            a[wm * TM + m + 2] = v.z;
            a[wm * TM + m + 3] = v.w;
        }
    }
    for (int wn = 0; wn < WNITER; wn++) {
        for (int n = 0; n < TN; n += 4) {
            float4 v = LDS4(Bs, buf, k * BN + warp_col + wn * kSubN + lane_col + n);
            b[wn * TN + n] = v.x;
            b[wn * TN + n + 1] = v.y;
            b[wn * TN + n + 2] = v.z;
            b[wn * TN + n + 3] = v.w;
        }
    }
}

// The loop over the tiles of K, with the guards on A's loads and B's copies (kGuard) or without them.
template <bool kGuard>
__device__ __forceinline__ void multiply(const float *A, const float *B, float (&As)[2][BK * BM], float (&Bs)[2][BK * BN],
                                         float (&acc)[kWMIter * TM][WNITER * TN], int M, int N, int K, int row0,
                                         int col0, int warp_row, int warp_col, int lane_row, int lane_col) {
    float a[2][kWMIter * TM];   // two sets: step k's fragments and step k + 1's
    float b[2][WNITER * TN];
    float4 ra[kALoads];
    // Tile 0 into buffer 0, the one time nothing overlaps.
    copy_b<kGuard>(Bs, B, N, K, col0, 0, 0);
    load_a<kGuard>(A, ra, M, K, row0, 0);
    store_a(As, ra, 0);
    CP_ASYNC_WAIT(0);
    SYNC();
    int tiles = (K + BK - 1) / BK;
    for (int t = 0; t < tiles; t++) {
        int cur = t % 2, next = 1 - cur;
        bool more = t + 1 < tiles;
        if (more) {
            copy_b<kGuard>(Bs, B, N, K, col0, (t + 1) * BK, next);   // in flight during the FMAs below
            load_a<kGuard>(A, ra, M, K, row0, (t + 1) * BK);         // so are these loads, into registers
        }
        load_fragments(As, Bs, a[0], b[0], cur, 0, warp_row, warp_col, lane_row, lane_col);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            if (k + 1 < BK) {   // step k + 1's fragments, in flight during step k's FMAs
                load_fragments(As, Bs, a[(k + 1) % 2], b[(k + 1) % 2], cur, k + 1, warp_row, warp_col, lane_row,
                               lane_col);
            }
            for (int m = 0; m < kWMIter * TM; m++) {
                for (int j = 0; j < WNITER * TN; j++) {
                    int n = m % 2 ? WNITER * TN - 1 - j : j;   // back and forth along the row
                    acc[m][n] += a[k % 2][m] * b[k % 2][n];
                }
            }
        }
        if (more) {
            store_a(As, ra, next);   // buffer `next` was last read before the previous barrier
            CP_ASYNC_WAIT(0);        // this thread's copies of B's next tile have landed
        }
        SYNC();                      // ... and everyone's: the next tile is whole
    }
}

// Min. blocks 1: one block an SM is all its registers allow anyway; the variants tune_fp32.py timed
// were built so (ptxas then allocates a few registers more, and schedules differently).
extern "C" __global__ void __launch_bounds__(kThreads, 1) prefetched(const float *A, const float *B, float *C, int M, int N, int K) {
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
    // The same for every thread of the block, so its warps take one branch together.
    if (row0 + BM <= M && col0 + BN <= N && K % BK == 0 && K % 4 == 0 && N % 4 == 0) {
        multiply<false>(A, B, As, Bs, acc, M, N, K, row0, col0, warp_row, warp_col, lane_row, lane_col);
    } else {
        multiply<true>(A, B, As, Bs, acc, M, N, K, row0, col0, warp_row, warp_col, lane_row, lane_col);
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
