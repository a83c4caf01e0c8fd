// mma_pipelined.cu: a STAGES-deep ring of shared tiles filled by cp.async.
// Fixes: in mma_swizzled every K tile is loaded (global -> registers -> shared), waited for at a
// barrier, multiplied, and waited for again before the next load: the tensor cores sit idle for a
// whole global-memory latency per tile. Here the block keeps STAGES tiles of A and B in shared
// memory: while it multiplies tile t, the copies of tiles t + 1 .. t + STAGES - 1 are in flight
// (cp.async: global -> shared directly, one commit group per tile), and one barrier per tile both
// publishes tile t and frees the slot that tile t + STAGES - 1 is copied into. A ring deep and wide
// enough to hide the latency is more than the 48 KB a block may declare statically, so it lives in
// dynamic shared memory, sized at launch. Swizzle and multiply are mma_swizzled's, for K tiles of
// BK = 32 or 64 halves. Sizes: M, N and K multiples of 16; BN at least 64.
#include "trace.cuh"

constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kTilesM = WM / 16, kTilesN = WN / 8;

// Where column c (a multiple of 8: a 16-byte chunk) of row r is stored. The 8 rows one ldmatrix
// matrix reads land in 8 different 16-byte bank groups: A's rows hold BK / 8 chunks, so 8 / (BK / 8)
// rows share a 128-byte line, and the chunk is XORed with the line's number.
constexpr int kChunksA = BK / 8;
__device__ __forceinline__ int swizzle_a(int r, int c) { return ((c / 8) ^ ((r / (8 / kChunksA)) % kChunksA)) * 8; }
__device__ __forceinline__ int swizzle_b(int r, int c) { return ((c / 8) ^ (r % 8)) * 8; }

// Tile kt of A and B into ring slot s (rows s * BM .. of As, s * BK .. of Bs): 16-byte copies in
// flight until waited for; chunks outside A or B are stored as zeros.
__device__ void copy_tiles(__half (&As)[STAGES * BM][BK], __half (&Bs)[STAGES * BK][BN], const __half *A,
                           const __half *B, int M, int N, int K, int row0, int col0, int kt, int s) {
    const uint4 zero = make_uint4(0, 0, 0, 0);
    int k0 = kt * BK;
    for (int i = threadIdx.x; i < BM * BK / 8; i += kThreads) {
        int r = i / (BK / 8), c = i % (BK / 8) * 8, sr = s * BM + r, sc = swizzle_a(sr, c);
        if (row0 + r < M && k0 + c < K) {
            CP_ASYNC4(As, sr, sc, A, (row0 + r) * K + k0 + c);
        } else {
            STS8(As, sr, sc, zero);
        }
    }
    for (int i = threadIdx.x; i < BK * BN / 8; i += kThreads) {
        int r = i / (BN / 8), c = i % (BN / 8) * 8, sr = s * BK + r, sc = swizzle_b(sr, c);
        if (k0 + r < K && col0 + c < N) {
            CP_ASYNC4(Bs, sr, sc, B, (k0 + r) * N + col0 + c);
        } else {
            STS8(Bs, sr, sc, zero);
        }
    }
}

extern "C" __global__ void __launch_bounds__(kThreads) mma_pipelined(const __half *A, const __half *B, float *C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];   // the ring: STAGES tiles of A, then of B
    auto &As = *reinterpret_cast<__half (*)[STAGES * BM][BK]>(smem);
    auto &Bs = *reinterpret_cast<__half (*)[STAGES * BK][BN]>(smem + sizeof(As));
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int wrow = (warp / kWarpsN) * WM, wcol = (warp % kWarpsN) * WN;
    int tiles = (K + BK - 1) / BK;

    // Fill the ring but one slot: STAGES - 1 tiles in flight before the first multiply.
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles) copy_tiles(As, Bs, A, B, M, N, K, row0, col0, s, s);
        CP_ASYNC_COMMIT();
    }
    float acc[kTilesM][kTilesN][4] = {};
    for (int t = 0; t < tiles; t++) {
        // Tile t's group has landed (at most STAGES - 2 younger ones still in flight); the barrier
        // makes every thread's copies visible and says every warp is done with tile t - 1.
        CP_ASYNC_WAIT(STAGES - 2);
        SYNC();
        int next = t + STAGES - 1;   // into the slot tile t - 1 used
        if (next < tiles) copy_tiles(As, Bs, A, B, M, N, K, row0, col0, next, next % STAGES);
        CP_ASYNC_COMMIT();           // every thread commits every time: group n is tile n
        int s = t % STAGES;
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[kTilesM][4], b[kTilesN][2];
            for (int i = 0; i < kTilesM; i++) {
                int r = s * BM + wrow + 16 * i + lane % 16;
                LDMATRIX_X4(a[i], As, r, swizzle_a(r, kk + lane / 16 * 8));
            }
            for (int j = 0; j < kTilesN; j += 2) {
                unsigned r[4];
                int k = s * BK + kk + lane % 16;
                LDMATRIX_X4_T(r, Bs, k, swizzle_b(k, wcol + 8 * j + lane / 16 * 8));
                b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
            }
            for (int i = 0; i < kTilesM; i++)
                for (int j = 0; j < kTilesN; j++) MMA_16816(acc[i][j], a[i], b[j]);
        }
    }
    for (int i = 0; i < kTilesM; i++)
        for (int j = 0; j < kTilesN; j++) {
            int r = row0 + wrow + 16 * i + lane / 4, c = col0 + wcol + 8 * j + 2 * (lane % 4);
            if (c < N && r < M) STG2(C, r * N + c, make_float2(acc[i][j][0], acc[i][j][1]));
            if (c < N && r + 8 < M) STG2(C, (r + 8) * N + c, make_float2(acc[i][j][2], acc[i][j][3]));
        }
}
