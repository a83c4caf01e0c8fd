// contract.cuh: the macros a kernel declares its contract with, once, in its own source. The
// compiler checks every line (a REQUIRE is a static_assert; the other lines become small constexpr
// functions of the sizes, so their expressions must be real C++ over names the file defines), and
// engine/kernels/declared.py reads the same lines to launch the kernel and to refuse a request.
//
//   #ifndef BM
//   #define BM 64        // one of: 32 64 128 256   (a parameter: its default, what the pages offer)
//   #endif
//   REQUIRE(BM % WM == 0, "needs BM to be a multiple of WM");          the parameters alone
//   REQUIRE_SIZES(M % 16 == 0, "needs M to be a multiple of 16 (M={M})");   over M, N, K too
//   LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));   LAUNCH_BLOCK(THREADS, 1);
//   LAUNCH_SHARED(bytes);                    dynamic shared memory, where the kernel has any
//   LAUNCH_TMA_BOX(A_map, cols, rows);       the box one TMA copy of A_map moves
//   TRACE_RECORDS(n);                        at most n trace records per thread (traced kernels)
//
// A message is what a user reads after the kernel's name ("tiled_unguarded needs ..."); {expr}
// in it quotes a value (the engine fills it in; the compiler prints it as written). The launch
// lines may read M, N, K and BLOCK_X, BLOCK_Y (a block shape chosen at launch, not compiled in).
#pragma once

#define CDIV(a, b) (((a) + (b) - 1) / (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define CONTRACT_JOIN2(a, b) a##b
#define CONTRACT_JOIN(a, b) CONTRACT_JOIN2(a, b)
// A function of a problem's sizes and launch block: so nvcc type-checks the expression it returns.
#define CONTRACT_FN(name) \
    [[maybe_unused]] static constexpr long long name(long long M, long long N, long long K, long long BLOCK_X, \
                                                     long long BLOCK_Y)

#define REQUIRE(cond, why) static_assert(cond, why)
#define REQUIRE_SIZES(cond, why) CONTRACT_FN(CONTRACT_JOIN(contract_sizes_, __LINE__)) { return (cond); }
#define LAUNCH_GRID(x, y) \
    CONTRACT_FN(contract_grid_x) { return (x); } \
    CONTRACT_FN(contract_grid_y) { return (y); }
#define LAUNCH_BLOCK(x, y) \
    CONTRACT_FN(contract_block_x) { return (x); } \
    CONTRACT_FN(contract_block_y) { return (y); }
#define LAUNCH_SHARED(bytes) CONTRACT_FN(contract_shared_bytes) { return (bytes); }
#define LAUNCH_TMA_BOX(map, cols, rows) \
    CONTRACT_FN(CONTRACT_JOIN(contract_box_cols_, map)) { return (cols); } \
    CONTRACT_FN(CONTRACT_JOIN(contract_box_rows_, map)) { return (rows); }
#define TRACE_RECORDS(n) CONTRACT_FN(contract_trace_records) { return (n); }
