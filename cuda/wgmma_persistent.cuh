// wgmma_persistent.cuh: the product of the persistent wgmma rungs (wgmma_persistent.cu,
// wgmma_cluster.cu), on wgmma.cuh's machinery. A grid of at most SMS blocks, one per SM, each
// walking C's BM x BN tiles in a grouped order: a producer warpgroup whose one thread copies every
// k-tile of every tile the block owns into a ring of STAGES slots, and BM / 64 consumer warpgroups
// that keep one k-tile's wgmma in flight while the next is issued. CLUSTER blocks (1 or 2) form a
// thread-block cluster: with 2, the two blocks own tiles one above the other, which need the same
// k-tile of B, and each block copies half of that B tile into both blocks' slots (TMA multicast);
// with 4, a 2 x 2 square of tiles: the two blocks of a column share B as with 2, and the two of a
// row share A the same way, each copying half of A's tile into both, so a block reads 24 KB of a
// 48 KB k-tile from L2 (32 KB with 2, all 48 alone).
// With TMA_STORE 1, C leaves through shared memory by TMA stores that run on while the next tile
// is multiplied (wgmma_epilogue.cu), where its rows are 16-byte multiples (N a multiple of 4; elsewhere
// each warp stores its rows of the staged pieces itself). Any M, N and K: TMA zero-fills what overhangs A and B,
// and where their rows are not 16-byte multiples the engine first pads them (pad_ab.cu) and hands
// over tensor maps of the padded copies. With STREAM_K 1 the tiles left over after the last whole wave
// are shared out by k-tiles (wgmma_stream_k.cu). Parameters are the including kernel's: BM, BN,
// STAGES, GROUP, SMS, CLUSTER, TMA_STORE (and LAG, SUSPEND, DESC_STEP, STREAM_K, SPLITS, STAGE_IN_RING where
// a kernel sets them).
#pragma once
#include "wgmma.cuh"

#ifndef TMA_STORE
#define TMA_STORE 0
#endif
#ifndef LAG
#define LAG 0
#endif
#ifndef DESC_STEP
#define DESC_STEP 0
#endif
#ifndef STREAM_K
#define STREAM_K 0
#endif
// A cluster's blocks as a square: kClusterM blocks one above the other (sharing B), kClusterN side
// by side (sharing A). Block `rank` is row rank % kClusterM, column rank / kClusterM of it.
constexpr int kClusterM = CLUSTER == 4 ? 2 : CLUSTER, kClusterN = CLUSTER == 4 ? 2 : 1;
// The blocks whose consumers hand a slot back to a block: those its copies land in (itself, the
// block sharing its B, the one sharing its A), so its empty mbarrier counts their arrivals.
constexpr int kPeers = CLUSTER == 4 ? 3 : CLUSTER;
constexpr int kABoxRows = BM / kClusterN;   // the rows of A one copy moves: half the tile where two blocks share it
// TMA_STORE's staging: per consumer warpgroup STORE_BUFS buffers of a 64 x 32 piece of C (128-byte
// rows, the widest a 128-byte-swizzled box has), one filled while the others' stores are still reading
// them. STORE_ROWS 16 cuts the pieces a warp's 16 rows high instead, STORE_BUFS buffers per warp: each
// warp then fills and stores its own (one thread of it waits and asks), with no barrier across the warpgroup.
#ifndef STORE_ROWS
#define STORE_ROWS 64
#endif
// C_BY_TMA 0: the staged pieces are always stored by the warps, a row at a time, never by TMA.
#ifndef C_BY_TMA
#define C_BY_TMA 1
#endif
// STORE_BUFS: the buffers each (a warpgroup's, or with STORE_ROWS 16 a warp's) pieces take turns in.
#ifndef STORE_BUFS
#define STORE_BUFS 2
#endif
constexpr int kChunkCols = 32, kChunkRows = STORE_ROWS, kChunkBytes = kChunkRows * kChunkCols * 4;
constexpr int kStoreBytes = TMA_STORE ? kConsumers * STORE_BUFS * 64 * kChunkCols * 4 : 0;
// STAGE_IN_RING 1: a tile's pieces of C are also staged in the ring slot its last k-tile used (each
// consumer warpgroup its share of the slot), which is handed back to the producer only once the
// stores have read it, at the next tile's first k-tile. With 2 buffers of its own a warpgroup waits,
// from its third piece on, for the store two pieces back to have read its buffer; with the slot's 3
// more (BN 256) only its sixth to eighth pieces wait, each for the store five back (BN 128: none).
// Where C is stored by the warps (C_BY_TMA 0, or N not a multiple of 4) nothing is held: it does
// nothing; where the warpgroup's own buffers hold all its pieces (BN 128, STORE_BUFS 4) it holds the
// slot without staging in it.
#ifndef STAGE_IN_RING
#define STAGE_IN_RING 0
#endif
static_assert(!STAGE_IN_RING || (TMA_STORE && STORE_ROWS == 64 && !LAG && !STREAM_K),
              "STAGE_IN_RING needs TMA_STORE, pieces of 64 rows, no LAG and no STREAM_K");
constexpr int kSlotPieces = STAGE_IN_RING ? kStageBytes / kConsumers / kChunkBytes : 0;   // a warpgroup's share of a slot
constexpr int kStoreBufs = STORE_BUFS + kSlotPieces;   // buffers a warpgroup's pieces take turns in
static_assert(!STAGE_IN_RING || kStageBytes / kConsumers % 1024 == 0,
              "a warpgroup's share of a slot starts where the 128-byte swizzle does");

// Cluster-wide pieces (PTX ISA: mapa, mbarrier.arrive with .shared::cluster, barrier.cluster,
// cp.async.bulk.tensor's .multicast::cluster).
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// Every thread of the cluster: what each block wrote to its shared memory before (mbarrier
// initialisation) is seen by the other before it goes on.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// An arrival on the mbarrier at the same offset in block `rank` of the cluster. Release at the
// block's scope (the default), not the cluster's: what it hands over is a slot that wgmma has
// finished reading, and a cluster-scope release orders every earlier access of the thread (its
// stores of C too) at that scope: with .release.cluster wgmma_cluster ran 498 TFLOP/s at 4096^3
// on an H200, against 748 without (wgmma_persistent: 745).
__device__ __forceinline__ void bar_arrive_at(uint64_t *bar, uint32_t rank) {
    asm volatile("{ .reg .b32 remote; mapa.shared::cluster.u32 remote, %0, %1; "
                 "mbarrier.arrive.shared::cluster.b64 _, [remote]; }"
                 :: "r"(smem(bar)), "r"(rank) : "memory");
}
// The box at (x, y) into shared memory at dst in every block of `mask`, each block's mbarrier at
// bar's offset counting the bytes that land in that block.
__device__ __forceinline__ void tma_load_multicast(void *dst, const CUtensorMap *map, int x, int y, uint64_t *bar,
                                                   uint16_t mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 :: "r"(smem(dst)), "l"((uint64_t)map), "r"(x), "r"(y), "r"(smem(bar)), "h"(mask) : "memory");
}

// The tile (row, column of tiles) that the cluster's `i`-th tile is, in grouped order: GROUP rows
// of cluster tiles at a time, walked down each column of the group before the next column, so the
// tiles that run at once share few B columns and few A rows, and what they read stays in L2.
__device__ __forceinline__ void grouped_tile(int i, int rows, int cols, int &row, int &col) {
    int per_group = GROUP * cols, first = (i / per_group) * GROUP;
    int height = min(rows - first, GROUP);
    row = first + (i % per_group) % height;
    col = (i % per_group) / height;
}

// The first row and column of C in the cluster's `i`-th tile that this block (`rank`) computes.
__device__ __forceinline__ void tile_origin(int i, int rows, int cols, int rank, int &row0, int &col0) {
    int row, col;
    grouped_tile(i, rows, cols, row, col);
    if (kClusterN == 1) row0 = (row * CLUSTER + rank) * BM, col0 = col * BN;
    else row0 = (row * kClusterM + rank % kClusterM) * BM, col0 = (col * kClusterN + rank / kClusterM) * BN;
}

// What a cluster multiplies. Without STREAM_K, whole tiles: its `cluster`-th, then every
// `clusters`-th. With it, the whole waves the same way (the first `whole` tiles, a multiple of
// `clusters`), then the tiles left over, cut into units of one k-tile laid end to end (unit u:
// k-tile u % ktiles of tile whole + u / ktiles) and dealt out in runs of equal length to `workers`
// clusters: a tile may be shared by several clusters, each multiplying a run of its k-tiles
// (wgmma_stream_k.cu says how they are added up). SPLITS caps how many clusters share a tile: the
// one that stores it reads the others' partial sums one after the other.
#ifndef SPLITS
#define SPLITS 1
#endif
__device__ __forceinline__ int stream_workers(int rest, int clusters) { return min(clusters, rest * SPLITS); }
// The first unit of cluster c's run, of the `units` shared by `workers` clusters (c >= workers: none).
__device__ __forceinline__ long long run_start(int c, int workers, long long units) {
    return c >= workers ? units : units * c / workers;
}
// Handing partial sums over costs about as much as kHandOver k-tiles of multiplying (measured on an
// H200, wgmma_stream_k.cu's header): the tiles left over are shared out only where a run plus that
// is shorter than the last wave of whole tiles it replaces (ktiles); elsewhere they go whole too.
constexpr int kHandOver = 16;
__device__ __forceinline__ int whole_tiles(int tiles, int clusters, int ktiles) {
    int whole = tiles / clusters * clusters, rest = tiles - whole;
    if (!STREAM_K || rest == 0) return tiles;
    long long run = ((long long)rest * ktiles + stream_workers(rest, clusters) - 1) / stream_workers(rest, clusters);
    return run + kHandOver < ktiles ? whole : tiles;
}
// A cluster's run, an item at a time: k-tiles k0 .. k1 - 1 of cluster tile `tile`.
struct StreamRun {
    int tile, k0, k1;
    long long unit, end;   // the units left: unit .. end - 1
};
__device__ __forceinline__ StreamRun stream_run(int cluster, int clusters, int tiles, int whole, int ktiles) {
    int rest = tiles - whole, workers = stream_workers(rest, clusters);
    long long units = (long long)rest * ktiles;
    return StreamRun{0, 0, 0, run_start(cluster, workers, units), run_start(cluster + 1, workers, units)};
}
__device__ __forceinline__ bool next_item(StreamRun &r, int whole, int ktiles) {
    if (r.unit >= r.end) return false;
    r.tile = whole + (int)(r.unit / ktiles), r.k0 = (int)(r.unit % ktiles);
    r.k1 = (int)min((long long)ktiles, r.k0 + (r.end - r.unit));
    r.unit += r.k1 - r.k0;
    return true;
}

// The ring slot of a consumer's it-th k-tile, and the phase its full mbarrier is in then. With
// DESC_STEP, in unsigned arithmetic (it never is negative): % and / by a STAGES that is no power of
// two then take fewer instructions. Without it, the signed form the other rungs were measured with
// (their cubins stay as they were).
__device__ __forceinline__ int ring_slot(int it) { return DESC_STEP ? (int)((unsigned)it % STAGES) : it % STAGES; }
__device__ __forceinline__ int ring_phase(int it) { return DESC_STEP ? (int)((unsigned)it / STAGES & 1) : (it / STAGES) & 1; }

// The ring's mbarriers, made by thread 0 before any copy: a slot is full when its bytes have come
// in, and free (empty) once `arrivals` consumers of every block it is copied into are done with it.
__device__ __forceinline__ void init_ring(uint64_t *full, uint64_t *empty, int arrivals) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) bar_init(&full[s], 1), bar_init(&empty[s], arrivals * kPeers);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER > 1) cluster_sync();   // the other block's mbarriers exist before anything lands there
    else __syncthreads();
}

// The producer's one thread: every k-tile of every item the cluster multiplies (whole tiles, then
// with STREAM_K its run), into the ring of STAGES slots at `ring`. The ring runs on across tiles,
// so the next tile's first k-tiles are copied while the consumers finish (and store) this one.
__device__ __forceinline__ void produce(const CUtensorMap *A_map, const CUtensorMap *B_map, unsigned char *ring,
                                        uint64_t *full, uint64_t *empty, int rank, int cluster, int clusters,
                                        int rows, int cols, int ktiles) {
    int it = 0;   // k-tiles asked for so far
    auto copy = [&](int i, int k0, int k1) {   // k-tiles k0 .. k1 - 1 of the cluster's tile i
        int row0, col0;
        tile_origin(i, rows, cols, rank, row0, col0);
        for (int t = k0; t < k1; t++, it++) {
            int s = it % STAGES;
            if (it >= STAGES) bar_wait(&empty[s], (it / STAGES - 1) & 1);   // its last k-tile is used
            unsigned char *slot = ring + s * kStageBytes;
            bar_expect_bytes(&full[s], kStageBytes);   // all of A and B, halves of them from the other blocks
            if (kClusterN == 1) {
                tma_load(slot, A_map, t * kBK, row0, &full[s]);
            } else {   // half of A's rows, into this block and the one beside it (ranks rank % 2 and + 2)
                int half = rank / kClusterM;
                tma_load_multicast(slot + half * kABoxRows * 128, A_map, t * kBK, row0 + half * kABoxRows, &full[s],
                                   (uint16_t)(0b101 << (rank % kClusterM)));
            }
            constexpr int kMine = BN / 64 / kClusterM;   // B boxes this block copies
            int mine = kClusterN == 1 ? rank : rank % kClusterM;   // this block's row in the cluster
            for (int j = mine * kMine; j < (mine + 1) * kMine; j++) {
                if (kClusterM == 1) tma_load(slot + kABytes + j * kBBoxBytes, B_map, col0 + 64 * j, t * kBK, &full[s]);
                else tma_load_multicast(slot + kABytes + j * kBBoxBytes, B_map, col0 + 64 * j, t * kBK, &full[s],
                                        kClusterN == 1 ? (1 << CLUSTER) - 1 : 0b11 << (rank - mine));   // this column's blocks
            }
        }
    };
    int whole = whole_tiles(rows * cols, clusters, ktiles);
    for (int i = cluster; i < whole; i += clusters) copy(i, 0, ktiles);
#if STREAM_K
    for (StreamRun r = stream_run(cluster, clusters, rows * cols, whole, ktiles); next_item(r, whole, ktiles);)
        copy(r.tile, r.k0, r.k1);
#endif
}

// A consumer's hand-back of a slot (its thread tid < kPeers's share): to its own block, or with
// clusters to each block whose copies land in it (thread 1 the block sharing B, thread 2 A).
__device__ __forceinline__ void release(uint64_t *bar, int rank, int tid) {
    if (CLUSTER == 1) bar_arrive(bar);
    else if (CLUSTER == 2) bar_arrive_at(bar, tid);   // thread r tells block r
    else bar_arrive_at(bar, tid == 0 ? rank : rank ^ tid);
}

// The same hand-back, every peer's share of it from one thread (STAGE_IN_RING: the thread that
// waited for the stores reading the slot).
__device__ __forceinline__ void release_all(uint64_t *bar, int rank) {
    for (int t = 0; t < kPeers; t++) release(bar, rank, t);
}

// TMA_STORE's pieces (PTX ISA: cp.async.bulk.tensor from shared to global, bulk async-groups):
// the box at (x, y) of the tensor map, from shared memory at src; a group of them; waiting until
// at most `n` groups still read shared memory.
__device__ __forceinline__ void tma_store(const CUtensorMap *map, int x, int y, const void *src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"((uint64_t)map), "r"(x), "r"(y), "r"(smem(src)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int n> __device__ __forceinline__ void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(n) : "memory");
}

// C[r][c] and C[r][c + 1] where they are inside C. N even: the pair is 8-byte aligned and both or
// neither inside, one 8-byte store. N odd: every other row starts at an odd float, so two floats, the
// second only inside C (slower: each 32-byte sector is written in halves, by two instructions).
__device__ __forceinline__ void store_pair(float *C, int M, int N, int r, int c, float x, float y) {
    if (r >= M || c >= N) return;
    if (N % 2 == 0) {
        *reinterpret_cast<float2 *>(C + (size_t)r * N + c) = make_float2(x, y);
        return;
    }
    C[(size_t)r * N + c] = x;
    if (c + 1 < N) C[(size_t)r * N + c + 1] = y;
}

#if STREAM_K
// STREAM_K's hand-over of partial sums, through WS: a row of kWsRow floats per block, BM x BN
// floats of sums (float4 j of consumer thread tid at float4 j * 128 + tid of its warpgroup's part:
// each store instruction writes 2 KB in a row) and then a flag per consumer warpgroup.
constexpr int kPartialFloats = BM * BN, kWsRow = kPartialFloats + 32;
__device__ __forceinline__ float4 *partial_of(float *WS, int block, int c) {
    return reinterpret_cast<float4 *>(WS + (size_t)block * kWsRow + c * 128 * kAccs);
}
__device__ __forceinline__ int *flag_of(float *WS, int block, int c) {
    return reinterpret_cast<int *>(WS + (size_t)block * kWsRow + kPartialFloats) + c;
}
// A run that began inside its tile (every such run is its cluster's first item after the whole
// waves): the sums go to this block's row, then its flag is set, at the GPU's scope, after the
// warpgroup's barrier, so that every thread's stores are seen before the flag. cg: through L2 only,
// where the block that adds them reads them.
__device__ __forceinline__ void hand_over(float *WS, const float (&d)[kAccs], int c, int tid) {
    float4 *mine = partial_of(WS, blockIdx.x, c);
    for (int j = 0; j < kAccs / 4; j++) __stcg(mine + j * 128 + tid, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    asm volatile("bar.sync %0, 128;" :: "r"(1 + c) : "memory");
    if (tid == 0) asm volatile("fence.acq_rel.gpu; st.relaxed.gpu.global.b32 [%0], 1;" :: "l"(flag_of(WS, blockIdx.x, c)) : "memory");
}
// The item that began a tile (k0 = 0) but ended before its last k-tile: the clusters after this one
// whose runs start inside the tile handed theirs over. In their order, wait for each one's flag,
// reset it for the next launch, and add its sums (every launch adds in the same order: C is the
// same bits each time). They wait on nothing themselves: a hand-over is a run's first item.
__device__ __forceinline__ void take_over(float *WS, float (&d)[kAccs], int c, int tid, int rank, int cluster,
                                          int clusters, int tiles, int whole, int ktiles, int tile) {
    int rest = tiles - whole, workers = stream_workers(rest, clusters);
    long long units = (long long)rest * ktiles, tile_end = (long long)(tile - whole + 1) * ktiles;
    for (int o = cluster + 1; o < workers && run_start(o, workers, units) < tile_end; o++) {
        if (run_start(o, workers, units) == run_start(o + 1, workers, units)) continue;   // an empty run hands nothing over
        int block = o * CLUSTER + rank;
        if (tid == 0) {
            int *flag = flag_of(WS, block, c), seen = 0;
            do asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
            while (seen != 1);
            *flag = 0;
        }
        asm volatile("bar.sync %0, 128;" :: "r"(1 + c) : "memory");
        const float4 *theirs = partial_of(WS, block, c);
        for (int j = 0; j < kAccs / 4; j++) {
            float4 v = __ldcg(theirs + j * 128 + tid);
            d[4 * j] += v.x, d[4 * j + 1] += v.y, d[4 * j + 2] += v.z, d[4 * j + 3] += v.w;
        }
    }
}
#endif

// The whole product, for a grid of CLUSTER x (clusters) blocks of kThreads threads with the ring's
// (and the staging's) shared bytes: A_map and B_map are the tensor maps of A (M x K) and B (K x N);
// C is M x N, stored through C_map (TMA_STORE 1, N a multiple of 4) or else through C; WS is STREAM_K's
// hand-over of partial sums (a row per block, see hand_over).
__device__ __forceinline__ void wgmma_persistent_gemm(const CUtensorMap *A_map, const CUtensorMap *B_map, float *C,
                                                      const CUtensorMap *C_map, int M, int N, int K,
                                                      float *WS = nullptr) {
    extern __shared__ unsigned char raw[];
    // 1024-byte aligned: the 128-byte swizzle repeats every 8 rows, and TMA and wgmma agree on it
    // only from such a boundary. The same offset in every block: a multicast lands at it in each.
    unsigned char *ring = (unsigned char *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    unsigned char *staging = ring + STAGES * kStageBytes;   // 1024-byte aligned too, as the swizzle wants
    uint64_t *full = (uint64_t *)(staging + kStoreBytes), *empty = full + STAGES;
    int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    int rank = CLUSTER == 1 ? 0 : (int)cluster_rank();
    int ktiles = (K + kBK - 1) / kBK;
    // Cluster tiles: kClusterM tiles one above the other, kClusterN side by side.
    int rows = (M + BM * kClusterM - 1) / (BM * kClusterM), cols = (N + BN * kClusterN - 1) / (BN * kClusterN);
    int tiles = rows * cols, cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    init_ring(full, empty, kConsumers);   // each consumer warpgroup hands a slot back once

    if (wg == 0) {   // the producer: one thread asks for every k-tile of every tile, across tiles
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) produce(A_map, B_map, ring, full, empty, rank, cluster, clusters, rows, cols, ktiles);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        int c = wg - 1;   // this consumer's rows: 64 c .. 64 c + 63 of the tile
        int w = tid / 32, lane = tid % 32;
        int it = 0;
        // STAGE_IN_RING: the slot of the last tile's last k-tile, holding pieces of C that its
        // stores may still be reading (-1: none).
        int held = -1;
        // LAG: the second consumer starts once the first has issued LAG k-tiles, and stays about
        // that far behind, so that one's epilogue (no wgmma) falls while the other still multiplies
        // (named barrier 3: consumer 0 arrives, consumer 1 waits).
        if (LAG && c == 1) asm volatile("bar.sync 3, 256;" ::: "memory");
        // DESC_STEP 1: the descriptors of slot 0's A rows and B, made once. Slot s's start s *
        // kStageBytes further and k step kk 32 (A) or 2048 (B) bytes further, and a descriptor's
        // start address counts 16-byte units in its low 14 bits (shared memory's 228 KB never
        // carries out of them), so every other descriptor is one of these plus a constant: an add
        // where descriptor() takes a mask, a shift and an or per operand (the SASS of the k-loop
        // was about 80 instructions a warp, 4 of them the wgmma).
        const uint64_t a_desc0 = descriptor(ring + c * 64 * 128, 16, 1024), b_desc0 = descriptor(ring + kABytes, BLBO, BSBO);
        int whole = whole_tiles(tiles, clusters, ktiles);
        auto multiply = [&](int i, int k0, int k1) {   // k-tiles k0 .. k1 - 1 of the cluster's tile i, then C
            int row0, col0;
            tile_origin(i, rows, cols, rank, row0, col0);
            // Not zeroed: a tile's first wgmma writes d without adding to it (accumulate false). The
            // CS2R a warp issued per tile to zero it (64 at BN 256, 32 at 128) came between the last
            // tile's stores and this tile's first wgmma, while the tensor cores waited. Medians of 11
            // rounds beside cuBLAS FP16 (TFLOP/s, zeroed -> not; tests/benchmarks/source_ab.py on the
            // H100, the probe it grew from, timed the same way, on the H200) moved by about the rounds'
            // own spread, 0.2%, or a little more: wgmma_stream_k at its chosen configurations 786.2 ->
            // 788.9 at 4096^3 and 590.3 -> 593.4 at 4096 x 4096 x 1024 (H200), 751.3 -> 753.6 and
            // 566.2 -> 567.9 (H100), 8192^3 +0.2% on both, 1024^3 228.5 both; wgmma_epilogue within
            // 0.1% at 4096^3 (792.0 and 755.7, cuBLAS 791.5 and 760.4) and 0.4% at 1000^3 and 1024^3.
            // One size went the other way: wgmma_stream_k at 1000^3 (BN 128, its last tiles shared out
            // by k-tiles), 181.9 -> 180.6 in 9 rounds and -1.4% paired in 3 (H200); not understood.
            float d[kAccs];   // k1 > k0: every item has a k-tile (K >= 1)
            for (int t = k0; t < k1; t++, it++) {
                int s = ring_slot(it);
                bar_wait(&full[s], ring_phase(it));
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
                if (DESC_STEP) {
                    uint64_t slot = (uint64_t)(s * (kStageBytes / 16));
                    for (int kk = 0; kk < kBK / 16; kk++) WGMMA(d, a_desc0 + slot + 2 * kk, b_desc0 + slot + 128 * kk, t > k0 || kk > 0);
                } else {
                    unsigned char *a = ring + s * kStageBytes + c * 64 * 128, *b = ring + s * kStageBytes + kABytes;
                    for (int kk = 0; kk < kBK / 16; kk++)
                        WGMMA(d, descriptor(a + 32 * kk, 16, 1024), descriptor(b + 2048 * kk, BLBO, BSBO), t > k0 || kk > 0);
                }
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                // This k-tile's products stay in flight; the previous k-tile's have retired, so
                // its slot (and only it) can be handed back. wgmma_tma waited for all (depth 0):
                // the tensor cores then drained at every k-tile.
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (t > k0 && tid < kPeers)
                    release(&empty[ring_slot(it + STAGES - 1)], rank, tid);
                else if (t == k0 && held >= 0) {   // the last tile's slot, once its stores are done reading it
                    if (tid == 0) {
                        tma_store_wait_read<0>();
                        release_all(&empty[held], rank);
                    }
                    held = -1;
                }
                if (LAG && c == 0 && it == LAG - 1) asm volatile("bar.arrive 3, 256;" ::: "memory");
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            // With STAGE_IN_RING (and C stored by TMA) the last k-tile's slot stays this warpgroup's
            // until the stores of the pieces staged in it have read them (the next tile's first k-tile).
            bool by_tma = C_BY_TMA && N % 4 == 0;
            if (k1 > k0 && STAGE_IN_RING && by_tma) held = (it + STAGES - 1) % STAGES;
            else if (k1 > k0 && tid < kPeers) release(&empty[(it + STAGES - 1) % STAGES], rank, tid);
#if STREAM_K
            if (k0 > 0) {   // a run that began inside the tile: the cluster that began the tile stores it
                hand_over(WS, d, c, tid);
                return;
            }
            if (k1 < ktiles) take_over(WS, d, c, tid, rank, cluster, clusters, tiles, whole, ktiles, i);
#endif
            // Lane l of warp w holds rows 16 w + l / 4 (+ 8) and columns 8 j + 2 (l % 4) (+ 1) of
            // each 8-column piece j (wgmma's accumulator layout). Meanwhile the producer is already
            // copying the next tile's first k-tiles.
            if (TMA_STORE) {
                // A 64 x 32 piece at a time into a staging buffer, laid out as TMA's 128-byte swizzle
                // wants it (16-byte unit u of row r at u ^ (r % 8): a warp's 8 rows then land on
                // different banks), then one thread asks for its store; the warpgroup goes on to the
                // next piece (the other buffer) and, after the last, to the next tile's wgmma, while
                // the copy engine writes C. It also clips what lies outside C. Where C's rows are not
                // 16-byte multiples (N not a multiple of 4) no tensor map describes C: each warp then
                // reads its own 16 rows of the piece back, a row at a time, and its lanes store 32
                // floats in a row, whole lines, where the accumulators' pairs would write sectors in
                // halves.
                int rr = 16 * w + lane / 4, q = lane % 4;
                // The piece's first row in the warpgroup's 64, and the thread that waits and stores.
                int first = kChunkRows == 64 ? 0 : 16 * w;
                bool storer = kChunkRows == 64 ? tid == 0 : lane == 0;
                // Unrolled: a piece names its accumulators by number (d[4 * j]), and a loop left
                // rolled would put them all in local memory.
#pragma unroll
                for (int piece = 0; piece < BN / kChunkCols; piece++) {
                    int which = (kChunkRows == 64 ? c : c * 4 + w) * STORE_BUFS + piece % STORE_BUFS;
                    unsigned char *buf = staging + which * kChunkBytes - first * 128;   // buf + rr * 128: row rr's
                    // STAGE_IN_RING: buffer b of the warpgroup's kStoreBufs, its own STORE_BUFS and then
                    // its share of the held slot; a piece's first turn in a buffer waits for no store
                    // (the last tile's were done before its slot went back).
                    int b = piece % kStoreBufs;
                    if (STAGE_IN_RING && by_tma)
                        buf = b < STORE_BUFS ? staging + (c * STORE_BUFS + b) * kChunkBytes
                                             : ring + held * kStageBytes + c * (kStageBytes / kConsumers) + (b - STORE_BUFS) * kChunkBytes;
                    if (by_tma && storer && (!STAGE_IN_RING || piece >= kStoreBufs))
                        tma_store_wait_read<kStoreBufs - 1>();   // the store that last read buf is done with it
                    if (STAGE_IN_RING && by_tma && piece == STORE_BUFS)   // first into the slot: every consumer is past its wgmma
                        asm volatile("bar.sync 4, %0;" :: "n"(kConsumers * 128) : "memory");
                    else if (by_tma && kChunkRows == 64) asm volatile("bar.sync %0, 128;" :: "r"(1 + c) : "memory");
                    else __syncwarp();
                    for (int p = 0; p < kChunkCols / 8; p++) {
                        int j = piece * (kChunkCols / 8) + p, unit = 2 * p + q / 2, byte = (2 * q % 4) * 4;
                        *reinterpret_cast<float2 *>(buf + rr * 128 + ((unit ^ (rr % 8)) * 16) + byte) = make_float2(d[4 * j], d[4 * j + 1]);
                        *reinterpret_cast<float2 *>(buf + (rr + 8) * 128 + ((unit ^ ((rr + 8) % 8)) * 16) + byte) =
                            make_float2(d[4 * j + 2], d[4 * j + 3]);
                    }
                    if (by_tma) {
                        // Ordinary stores that the copy engine reads next: made visible to it, then counted.
                        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                        if (kChunkRows == 64) asm volatile("bar.sync %0, 128;" :: "r"(1 + c) : "memory");
                        else __syncwarp();
                        if (storer) tma_store(C_map, col0 + piece * kChunkCols, row0 + 64 * c + first, buf + first * 128);
                    } else {
                        __syncwarp();   // the warp's 16 rows are in (it wrote them, and only it reads them)
                        int col = col0 + piece * kChunkCols + lane;
#pragma unroll 1
                        for (int i = 0; i < 16; i++) {
                            int row = 16 * w + i, r = row0 + 64 * c + row;
                            float v = *reinterpret_cast<const float *>(buf + row * 128 + ((lane / 4) ^ (row % 8)) * 16 + q * 4);
                            if (r < M && col < N) C[(size_t)r * N + col] = v;
                        }
                    }
                }
            } else {
                // Straight from the accumulators: each lane's pairs of C.
                int r = row0 + 64 * c + 16 * w + lane / 4;
                for (int j = 0; j < BN / 8; j++) {
                    int cc = col0 + 8 * j + 2 * (lane % 4);
                    store_pair(C, M, N, r, cc, d[4 * j], d[4 * j + 1]);
                    store_pair(C, M, N, r + 8, cc, d[4 * j + 2], d[4 * j + 3]);
                }
            }
        };
        for (int i = cluster; i < whole; i += clusters) multiply(i, 0, ktiles);
#if STREAM_K
        for (StreamRun r = stream_run(cluster, clusters, tiles, whole, ktiles); next_item(r, whole, ktiles);)
            multiply(r.tile, r.k0, r.k1);
#endif
        if (LAG && c == 0 && it < LAG) asm volatile("bar.arrive 3, 256;" ::: "memory");   // fewer k-tiles than LAG
        if (held >= 0 && tid == 0) {   // the last tile's slot goes back too, as any other
            tma_store_wait_read<0>();
            release_all(&empty[held], rank);
        }
        // The last stores finish reading shared memory before the block leaves it.
        if (TMA_STORE && (kChunkRows == 64 ? tid == 0 : tid % 32 == 0)) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    // A block leaves only when the other can no longer arrive on its mbarriers or copy into it.
    if (CLUSTER > 1) cluster_sync();
}
