// mma_pipelined.cu: a STAGES-deep ring of shared tiles filled by cp.async.
// Fixes: in mma_swizzled every K tile is loaded (global -> registers -> shared), waited for at a
// barrier, multiplied, and waited for again before the next load: the tensor cores sit idle for a
// whole global-memory latency per tile. Here the block keeps STAGES tiles of A and B in shared
// memory: while it multiplies tile t, the copies of tiles t + 1 .. t + STAGES - 1 are in flight
// (cp.async: global -> shared directly, one commit group per tile), and one barrier per tile both
// publishes tile t and frees the slot that tile t + STAGES - 1 is copied into. A ring deep and wide
// enough to hide the latency is more than the 48 KB a block may declare statically, so it lives in
// dynamic shared memory, sized at launch. Swizzle and multiply are mma_swizzled's, for K tiles of
// BK = 32 or 64 halves. Sizes: any M, N and K; BN at least 64. Edges: a zero-filling cp.async for a
// matrix whose rows start on 16 bytes (see copy_tiles), elsewhere half-by-half copies, as in mma_ldmatrix.
// Once the copies overlap the multiply, what is left around the 64 HMMA of a tile is integer work:
// the copy loops have a count fixed at compile time and one column per thread, and each lane's
// swizzled ldmatrix columns are worked out once (cuobjdump, 128 x 128 tiles, 64 x 32 warp tiles:
// 1,160 SASS instructions before, 704 after). Blocks run in groups of kGroupRows block rows, so
// the blocks on the GPU together share B's columns in L2 (H200, 4096^3: 367 -> 408 TFLOP/s).
// Last, the wait for ldmatrix: each k step read its fragments and multiplied them, so every step's
// first HMMA waited for its ldmatrix, and after each tile's barrier all warps of the block read at
// once. Here the fragments come in two sets, the next step's read while this step's multiply, and
// the barrier sits before a tile's last step, so the next tile's first fragments are read under that
// step's multiplies (H200, 4096^3: 402 -> 441 TFLOP/s at 128 x 128, 347 -> 449 at 128 x 256).
// After the last tile there is no next tile, but its reads stay: they read a slot of the ring whose
// fragments nobody uses, instead of being skipped. Skipped, ptxas chose per build between branching
// around them and issuing them predicated off (at BK 32, 128 x 128 tiles: 5 of the 8 branched
// around, 3 issued off), and Nsight Compute's instruction count moved with it. Read, every build
// issues all 8 with their wavefronts, as the trace records them: one k step's ldmatrix more per
// warp in the whole kernel. The slot read holds no copy in flight: no tile after the last is copied.
// Where in a tile's k steps its thread issues the copies of tile t + STAGES - 1 (COPY_AT): 0, all
// before the first step's fragment reads; 1 (the default), all behind the first step's multiplies,
// so the next step's fragment reads go ahead of them and the tensor cores have that step's
// multiplies to work through while they are issued. Tried and not offered: in shares, one behind
// each step's multiplies but the last's (slower, and for its build the trace read as compiled and
// Nsight Compute disagreed on the shared-load instructions, not understood). Medians of 3 rounds
// (wgmma_beyond.py; TFLOP/s, before / behind / in shares), 128 x 256 tiles, STAGES 4: H200 456.7 /
// 460.0 / 415.2 at 4096^3 and 489.0 / 493.1 / 440.1 at 8192^3; H100 454.2 / 459.3 / 414.5 and 491.9
// / 494.4 / 442.6. On both cards and at both sizes behind beat before by 0.5 to 1.5% in 5 of the 6
// tile shapes that fit (128 x 128 at STAGES 4 the exception, 1.0 to 1.5% slower; 256 x 256 runs at
// 7 to 9 whichever: 16 warps leave a thread at most 128 registers, as many as its accumulators
// take), and in shares lost 7 to 24% to before (with 7% more SASS instructions in the kernel; where
// the rest goes was not looked into). A percent of the ~60% of cuBLAS FP16 this rung reaches: what
// holds it there is the ring itself, a barrier and every thread's copies each tile
// (tests/benchmarks/mma_costs.py).
// Tried and not offered: the copies moved out of the consumers into a producer warpgroup of their own
// (128 more threads; setmaxnreg 40 for them, 232 for the 8 consumer warps), each thread's cp.async
// of a slot completing on the slot's mbarrier (cp.async.mbarrier.arrive.noinc), every consumer warp
// waiting on that mbarrier and handing the slot back on its own, as mma_tma's warps do: no barrier
// across the block and no copies among the multiplies. Slower on an H200 (128 x 256 tiles, STAGES 4,
// medians of 3 rounds, one machine): 422 TFLOP/s at 4096^3 against 459 as written, 448 against 495
// at 8192^3; its best build (copy loops unrolled, 56 registers for the producer) 315.8 us against
// 306.8 in Nsight Compute on another H200, the tensor pipe busy 73% of cycles against 75%, warps
// stalled on the long scoreboard 2.6 cycles per issued instruction against 0.7. Why was not pinned
// down; one producer warp per scheduler issues 24 cp.async a thread a tile where 8 warps issued 12
// each between their multiplies. The same producer asking TMA for the tile is mma_tma.
// Tried and not offered: copies without the inside test where a block's tile lies inside C and K is
// whole K tiles (a copy_tiles template per case, picked by a branch a tile the same for the whole
// block): 7% fewer SASS instructions at 128 x 256 tiles, STAGES 4, BK 64 (4,832 -> 4,480 with the test
// removed outright), but with both cases in the kernel 6,960, and 11 to 14% slower (H200, medians of
// 7 rounds, tests/benchmarks/source_ab.py: 451.5 -> 400.5 TFLOP/s at 4096^3, 473.8 -> 422.2 at 8192^3,
// 386.1 -> 331.0 at 4096 x 4096 x 1024).
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
#ifndef STAGES
#define STAGES 3   // one of: 2 3 4 5
#endif
#ifndef BK
#define BK 64   // one of: 32 64
#endif
#ifndef COPY_AT
#define COPY_AT 1   // one of: 0 1
#endif

constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kTilesM = WM / 16, kTilesN = WN / 8;
constexpr int kGroupRows = 8;

REQUIRE(BM % WM == 0 && BN % WN == 0, "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)");
REQUIRE(kThreads / 32 >= 1 && kThreads / 32 <= 16, "needs 1 to 16 warps per block (it would run {kThreads / 32})");
#define RING_BYTES (STAGES * (BM * BK + BK * BN) * 2)   // As and Bs, the views of the dynamic shared memory
REQUIRE(RING_BYTES <= 227 * 1024, "needs at most 227 KB of shared memory, a block's most (it would take {RING_BYTES / 1024} KB)");
#define PASS_ROWS_A (kThreads / (BK / 8))   // the rows of A's and of B's tile one pass of all threads copies
#define PASS_ROWS_B (kThreads / (BN / 8))
REQUIRE(PASS_ROWS_A % 8 == 0 && BM % PASS_ROWS_A == 0 && BK % PASS_ROWS_B == 0,
        "needs its threads to copy whole rows of the tiles per pass ({kThreads} threads copy "
        "{PASS_ROWS_A} rows of A and {PASS_ROWS_B} of B a pass, for tiles of {BM} x {BK} and {BK} x {BN})");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(kThreads, 1);
LAUNCH_SHARED(RING_BYTES);
// Per K tile its 16-byte copies of A's and B's tiles (two records each: a load and a store, or a
// cp.async's pair; nine where the rows are not 16-byte aligned and a copy goes half by half), its
// lane's ldmatrix rows, then the one k step's ldmatrix rows read after the last tile (see the header),
// then its outputs (per 16 x 8 tile two float2 stores, or four floats where N is odd).
TRACE_RECORDS(CDIV(K, BK) * ((K % 8 == 0 ? 2 : 9) * CDIV(BM * BK / 8, kThreads) +
                              (N % 8 == 0 ? 2 : 9) * CDIV(BK * BN / 8, kThreads) + BK / 16 * (kTilesM + kTilesN / 2)) +
              (kTilesM + kTilesN / 2) + (N % 2 == 0 ? 2 : 4) * kTilesM * kTilesN);

// Where column c (a multiple of 8: a 16-byte chunk) of row r is stored. The 8 rows one ldmatrix
// matrix reads land in 8 different 16-byte bank groups: A's rows hold BK / 8 chunks, so 8 / (BK / 8)
// rows share a 128-byte line, and the chunk is XORed with the line's number.
constexpr int kChunksA = BK / 8;
// (Unsigned: the divisions are shifts and masks, with no rounding towards zero to correct.)
__device__ __forceinline__ int swizzle_a(unsigned r, unsigned c) { return ((c / 8) ^ ((r / (8 / kChunksA)) % kChunksA)) * 8; }
__device__ __forceinline__ int swizzle_b(unsigned r, unsigned c) { return ((c / 8) ^ (r % 8)) * 8; }

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

// Tile kt of A and B into ring slot s (rows s * BM .. of As, s * BK .. of Bs): 16-byte copies in
// flight until waited for; chunks outside A or B are stored as zeros. Thread tid copies the chunk in
// column tid % (BK / 8) of row tid / (BK / 8) of A's tile, then of the rows kPassRowsA, 2 kPassRowsA,
// ... further down: the same column each pass, and (passes a multiple of 8 rows apart) the same swizzle.
// Where a matrix's rows start on 16 bytes (K, or N, a multiple of 8) each chunk is one cp.async with
// zero fill: every lane takes part, none predicated off; outside the matrix it reads nothing and
// writes 16 zero bytes, so the edges cost no store of zeros, no predicate and no branch. The choice is
// made once per matrix, outside its loop, so each loop unrolls into one straight run of copies.
template <bool kCopies> __device__ __forceinline__ void copy_tiles(__half (&As)[STAGES * BM][BK], __half (&Bs)[STAGES * BK][BN], const __half *A,
                           const __half *B, int M, int N, int K, int row0, int col0, int kt, int s) {
    constexpr int kPassRowsA = kThreads / (BK / 8), kPassRowsB = kThreads / (BN / 8);
    static_assert(kPassRowsA % 8 == 0 && BM % kPassRowsA == 0 && BK % kPassRowsB == 0, "whole passes");
    const uint4 zero = make_uint4(0, 0, 0, 0);
    int k0 = kt * BK;
    unsigned ra = threadIdx.x / (BK / 8), ca = threadIdx.x % (BK / 8) * 8, sca = swizzle_a(ra, ca);
    if (kCopies && K % 8 == 0) {
        _Pragma("unroll") for (int pass = 0; pass < BM / kPassRowsA; pass++) {   // _Pragma: the trace numbers sites by line
            int r = ra + pass * kPassRowsA, row = row0 + r, k = k0 + ca;
            bool inside = row < M && k < K;
            CP_ASYNC4_ZFILL(inside, As, s * BM + r, sca, A, row * K + k);
        }
    } else {   // rows not 16-byte aligned: half by half, zeros past K and outside A
        _Pragma("unroll") for (int pass = 0; pass < BM / kPassRowsA; pass++) {
            int r = ra + pass * kPassRowsA, row = row0 + r, k = k0 + ca;
            uint4 v = zero; bool inside = row < M && k < K;   // tested once a chunk (see kCopies)
#pragma unroll
            for (int e = 0; e < 8; e++)
                if (inside && k + e < K) set_half(v, e, LDG(A, row * K + k + e)); else SKIP_LDG(A);
            STS8(As, s * BM + r, sca, v);
        }
    }
    unsigned rb = threadIdx.x / (BN / 8), cb = threadIdx.x % (BN / 8) * 8;
    if (kCopies && N % 8 == 0) {   // as A's
        _Pragma("unroll") for (int pass = 0; pass < BK / kPassRowsB; pass++) {
            int r = rb + pass * kPassRowsB, sc = swizzle_b(r, cb), k = k0 + r, col = col0 + cb;
            bool inside = k < K && col < N;
            CP_ASYNC4_ZFILL(inside, Bs, s * BK + r, sc, B, k * N + col);
        }
    } else {   // rows not 16-byte aligned: half by half, zeros past N and outside B
        _Pragma("unroll") for (int pass = 0; pass < BK / kPassRowsB; pass++) {
            int r = rb + pass * kPassRowsB, sc = swizzle_b(r, cb), k = k0 + r, col = col0 + cb;
            uint4 v = zero; bool inside = k < K && col < N;
#pragma unroll
            for (int e = 0; e < 8; e++)
                if (inside && col + e < N) set_half(v, e, LDG(B, k * N + col + e)); else SKIP_LDG(B);
            STS8(Bs, s * BK + r, sc, v);
        }
    }
}

template <bool kCopies> __device__ __forceinline__ void multiply(const __half *A, const __half *B, float *C, int M, int N, int K,
                                                                  // the ring, the kernel's dynamic shared memory:
                                                                  __half (&As)[STAGES * BM][BK],    // STAGES tiles of A
                                                                  __half (&Bs)[STAGES * BK][BN]) {  // then of B
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // The launch's block-th block (x fastest) takes tile (block % rows, block / rows) of its group
    // of kGroupRows block rows: the blocks resident together cover a few block columns, whose B
    // tiles they share in L2, instead of a whole row of them.
    int block = blockIdx.y * gridDim.x + blockIdx.x, per_group = kGroupRows * gridDim.x;
    int first = block / per_group * kGroupRows, rows = min((int)gridDim.y - first, kGroupRows);
    int row0 = (first + block % per_group % rows) * BM, col0 = block % per_group / rows * BN;
    int wrow = (warp / kWarpsN) * WM, wcol = (warp % kWarpsN) * WN;
    int tiles = (K + BK - 1) / BK;

    // Fill the ring but one slot: STAGES - 1 tiles in flight before the first multiply.
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles) copy_tiles<kCopies>(As, Bs, A, B, M, N, K, row0, col0, s, s);
        CP_ASYNC_COMMIT();
    }
    // A lane's swizzled ldmatrix columns depend on its row only mod 8 (every slot, warp row and
    // fragment starts at a multiple of 8): one per k step for A, one per pair of 8-column tiles for B.
    int a_col[BK / 16], b_col[kTilesN / 2];
    for (int step = 0; step < BK / 16; step++) a_col[step] = swizzle_a(lane % 16, 16 * step + lane / 16 * 8);
    for (int j = 0; j < kTilesN; j += 2) b_col[j / 2] = swizzle_b(lane % 16, wcol + 8 * j + lane / 16 * 8);
    float acc[kTilesM][kTilesN][4] = {};
    // Two sets of fragments: while the tensor cores multiply one k step's, the next step's are read
    // from shared memory into the other, so no multiply waits for its ldmatrix (see the header).
    constexpr int kSteps = BK / 16;
    unsigned a[2][kTilesM][4], b[2][kTilesN][2];
    // One k step's fragments, of the tile in ring slot s, into set f.
    auto fragments = [&](int f, int s, int step) {
        _Pragma("unroll") for (int i = 0; i < kTilesM; i++)
            LDMATRIX_X4(a[f][i], As, s * BM + wrow + 16 * i + lane % 16, a_col[step]);
        _Pragma("unroll") for (int j = 0; j < kTilesN; j += 2) {
            unsigned r[4];
            LDMATRIX_X4_T(r, Bs, s * BK + 16 * step + lane % 16, b_col[j / 2]);
            b[f][j][0] = r[0], b[f][j][1] = r[1], b[f][j + 1][0] = r[2], b[f][j + 1][1] = r[3];
        }
    };
    CP_ASYNC_WAIT(STAGES - 2);   // tile 0 has landed
    SYNC();
    fragments(0, 0, 0);   // K >= 1: there is a tile 0
    for (int t = 0; t < tiles; t++) {
        int s = t % STAGES;
        _Pragma("unroll") for (int step = 0; step < kSteps; step++) {
            // Tile t + STAGES - 1's copies, into the slot tile t - 1 used, freed at the last barrier:
            // with COPY_AT 0 here, before this step's fragment reads; with 1 behind its multiplies,
            // below (see the header).
            int next = t + STAGES - 1;
            auto copy_next = [&]() {
                if (next < tiles) copy_tiles<kCopies>(As, Bs, A, B, M, N, K, row0, col0, next, next % STAGES);
            };
            if (COPY_AT == 0 && step == 0) copy_next();
            // Every thread commits once a tile, copies or none: group n is tile n. With the copies
            // behind the multiplies, at the last step, before the wait that counts the groups.
            if (step == (COPY_AT == 0 ? 0 : kSteps - 1)) CP_ASYNC_COMMIT();
            // Before the last step's multiplies: tile t + 1 has landed (at most STAGES - 2 younger
            // groups in flight), and the barrier makes every thread's copies of it visible, so its
            // first fragments can be read now, under this step's multiplies. Every warp is past its
            // reads of tile t there too (this last step's fragments were read a step before: BK is
            // 32 or 64, two steps or more), so tile t + 1's copies may overwrite tile t's slot.
            if (step == kSteps - 1) {
                CP_ASYNC_WAIT(STAGES - 2);
                SYNC();
            }
            // After the last tile, the next slot's reads go unused (see the header): no branch.
            if (step < kSteps - 1) fragments((step + 1) % 2, s, step + 1);
            else fragments((step + 1) % 2, (t + 1) % STAGES, 0);
            _Pragma("unroll") for (int i = 0; i < kTilesM; i++)
                _Pragma("unroll") for (int j = 0; j < kTilesN; j++) MMA_16816(acc[i][j], a[step % 2][i], b[step % 2][j]);
            if (COPY_AT == 1 && step == 0) copy_next();
        }
    }
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

// The ring is the kernel's dynamic shared memory, declared here and handed down as its two views
// (the CPU build makes it a thread_local, which inside a function template had crashed the trace).
// kCopies: some matrix has rows on 16 bytes, so some copies are cp.async; where neither has, a version
// without them. A half-by-half chunk tests whether it is inside the matrix once, not per half: with
// `row < M && k + e < K` per half mma_pipelined ran 46 TFLOP/s at 4095^3 on an H100, 69 with `inside`.
extern "C" __global__ void __launch_bounds__(kThreads) mma_pipelined(const __half *A, const __half *B, float *C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    auto &As = *reinterpret_cast<__half (*)[STAGES * BM][BK]>(smem);
    auto &Bs = *reinterpret_cast<__half (*)[STAGES * BK][BN]>(smem + sizeof(As));
    if (K % 8 == 0 || N % 8 == 0) multiply<true>(A, B, C, M, N, K, As, Bs);
    else multiply<false>(A, B, C, M, N, K, As, Bs);
}
