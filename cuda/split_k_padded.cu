// split_k_padded.cu: split_k on copies of A and B whose rows are padded to 64 floats (any size).
// Fixes: in the split-K kernel a K or N that is not a multiple of 4 leaves the rows of A or B off
// 16-byte boundaries, so every float4 load of A and every cp.async of B falls back to four scalar
// loads (B's, synchronous ones: the copy of the next tile no longer overlaps the multiply); at
// 4095^3 it runs at two thirds of its speed at 4096^3. A first launch (pad_rows.cu) copies A and B
// into AP (M x Kp) and BP (K x Np), Kp and Np rounded up to 64 floats with zeros after each row:
// every row starts on a 256-byte boundary, A's zeros past K need no guard, and only the tiles'
// overhang past M, Kp or Np is filled with zeros instead of copied. The copy reads and writes A
// and B once, a few percent of the multiply at these sizes; split_k_sum.cu then adds the slices.
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
#define WM 32   // one of: 32 64 128
#endif
#ifndef WN
#define WN 128   // one of: 32 64 128
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
#ifndef SPLITK
#define SPLITK 4   // one of: 1 2 3 4 6 8
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
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM) * SPLITK);   // y: the row tile, then the slice
LAUNCH_BLOCK(kThreads, 1);
// Per K tile its share of the tiles' elements, each loaded and stored once (at an edge a float4 is
// four scalar loads; a cp.async is one record of a copy and one of its store), its shared loads
// (4 elements each), then its outputs; one tile more, double-buffered.
TRACE_RECORDS((CDIV(CDIV(K, BK), SPLITK) + 1) * (2 * (CDIV(BM * BK, kThreads) + CDIV(BK * BN, kThreads)) + BK * (OUTPUTS_DOWN + OUTPUTS_ACROSS) / 4) +
              OUTPUTS_DOWN * OUTPUTS_ACROSS);

// This thread's float4s of A's tile at k0 (4 consecutive k of one row each), into registers.
// Past K a row of AP holds zeros up to Kp, and a tile that starts before kend ends by Kp (BK
// divides 64): no guard but the row's and the slice's (an empty slice, past K, loads nothing).
// Columns of the next slice in a slice's last tile meet B's rows past kend, zeros.
__device__ void load_a(const float *AP, float4 (&ra)[kALoads], int M, int kp, int kend, int row0, int k0) {
    for (int l = 0; l < kALoads; l++) {
        int i = threadIdx.x + l * kThreads;
        int gr = row0 + i / (BK / 4), gc = k0 + (i % (BK / 4)) * 4;
        if (gr < M && k0 < kend) {
            ra[l] = LDG4(AP, gr * kp + gc);
        } else {
            ra[l] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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

// B's tile at k0 into buffer buf: 16-byte asynchronous copies of BP's aligned rows (one commit
// group), zeros past the slice's last row or past Np. There is no branch in the compiled copy:
// ptxas predicates the cp.async and the 16-byte store of zeros by lane, so every warp issues both,
// each time, even where all of its lanes copy, or all store zeros (the SKIPs say so to the trace).
__device__ void copy_b(float (&Bs)[2][BK * BN], const float *BP, int np, int kend, int col0, int k0, int buf) {
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int l = 0; l < kBLoads; l++) {
        int i = threadIdx.x + l * kThreads;
        int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        int gr = k0 + r, gc = col0 + c;
        bool inside = gr < kend && gc < np;
        if (inside) CP_ASYNC4(Bs, buf, r * BN + c, BP, gr * np + gc); else SKIP_CP_ASYNC(Bs, BP);
        if (inside) SKIP_STS(Bs); else STS4(Bs, buf, r * BN + c, zero);
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

extern "C" __global__ void __launch_bounds__(kThreads) split_k_padded(const float *AP, const float *BP, float *CP, int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];
    int tid = threadIdx.x;
    int warp = tid / 32, lane = tid % 32;
    int warp_row = (warp / (BN / WN)) * WM;
    int warp_col = (warp % (BN / WN)) * WN;
    int lane_row = (lane / (kSubN / TN)) * TM;
    int lane_col = (lane % (kSubN / TN)) * TN;
    int row_tiles = (M + BM - 1) / BM;
    int slice = blockIdx.y / row_tiles;
    int row0 = (blockIdx.y % row_tiles) * BM;
    int col0 = blockIdx.x * BN;
    // The slice's K range, whole BK tiles (so float4s stay aligned); a slice past K is empty and
    // stores zeros, so that every partial the sum reads was written.
    int per = (K + BK - 1) / BK;
    per = (per + SPLITK - 1) / SPLITK * BK;
    int kbeg = slice * per, kend = MIN(K, kbeg + per);
    int kp = (K + 63) / 64 * 64, np = (N + 63) / 64 * 64;   // AP's and BP's row lengths
    float acc[kWMIter * TM][WNITER * TN] = {{0.0f}};
    float a[2][kWMIter * TM];   // two sets: step k's fragments and step k + 1's
    float b[2][WNITER * TN];
    float4 ra[kALoads];
    // Tile 0 into buffer 0, the one time nothing overlaps.
    copy_b(Bs, BP, np, kend, col0, kbeg, 0);
    load_a(AP, ra, M, kp, kend, row0, kbeg);
    store_a(As, ra, 0);
    CP_ASYNC_WAIT(0);
    SYNC();
    int tiles = kend > kbeg ? (kend - kbeg + BK - 1) / BK : 0;
    for (int t = 0; t < tiles; t++) {
        int cur = t % 2, next = 1 - cur;
        bool more = t + 1 < tiles;
        if (more) {
            copy_b(Bs, BP, np, kend, col0, kbeg + (t + 1) * BK, next);   // in flight during the FMAs below
            load_a(AP, ra, M, kp, kend, row0, kbeg + (t + 1) * BK);         // so are these loads, into registers
        }
        load_fragments(As, Bs, a[0], b[0], cur, 0, warp_row, warp_col, lane_row, lane_col);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            if (k + 1 < BK) {   // step k + 1's fragments, in flight during step k's FMAs
                load_fragments(As, Bs, a[(k + 1) % 2], b[(k + 1) % 2], cur, k + 1, warp_row, warp_col, lane_row,
                               lane_col);
            }
            for (int m = 0; m < kWMIter * TM; m++) {
                for (int n = 0; n < WNITER * TN; n++) {
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
    for (int wm = 0; wm < kWMIter; wm++) {
        for (int m = 0; m < TM; m++) {
            int gr = row0 + warp_row + wm * kSubM + lane_row + m;
            for (int wn = 0; wn < WNITER; wn++) {
                for (int n = 0; n < TN; n += 4) {
                    int gc = col0 + warp_col + wn * kSubN + lane_col + n;
                    float *out = &acc[wm * TM + m][wn * TN + n];
                    int at = (slice * M + gr) * N + gc;   // this slice's partial of C[gr][gc]
                    if (N % 4 == 0 && gr < M && gc + 3 < N) {
                        STG4(CP, at, make_float4(out[0], out[1], out[2], out[3]));
                    } else {
                        for (int j = 0; j < 4; j++) {
                            if (gr < M && gc + j < N) STG(CP, at + j, out[j]); else SKIP_STG(CP);
                        }
                    }
                }
            }
        }
    }
}
