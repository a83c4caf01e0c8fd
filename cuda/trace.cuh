// trace.cuh: the access macros every kernel in cuda/ is written with.
//
// One source, two builds:
//   plain (default)   each macro is the bare access, so the timing build carries no tracing cost;
//   -DMATMUL_TRACE    each access is also recorded: source line, array, load/store, element index
//                     and the thread's barrier epoch (how many SYNC()s it has passed).
// The same file is compiled for the GPU by nvcc and for the CPU by a host C++ compiler through
// cpu_shim.h, so both trace sources run literally the same kernel code.
//
// The macros:
//   LDG(A, i)  STG(C, i, v)                 global: element i of A (A may have been moved: A += row * K)
//   SKIP_LDG(A)  SKIP_STG(C)                a lane whose guard skips the line's LDG of A (STG of C):
//                                           `in ? LDG(A, i) : (SKIP_LDG(A), 0.0f)`, `if (in) STG(C, i, v);
//                                           else SKIP_STG(C);`. The warp runs the access as one
//                                           instruction with that lane predicated off; recorded so,
//                                           the lane's later accesses there pair with the same
//                                           instructions as its neighbours' (nothing else is recorded).
//   SKIP_LDS(As)  SKIP_STS(As)  SKIP_CP_ASYNC(As, A)
//                                           the same for a shared load (an LDS or an ldmatrix), store or cp.async, where the
//                                           compiled kernel has no branch around the access (ptxas
//                                           predicated it): every warp that gets there issues the
//                                           instruction, even one whose lanes all have it off, and
//                                           Nsight Compute counts each issue. The trace counts such
//                                           issues from these skips (Trace.issued).
//   LDS(As, i)  LDS(As, r, c)               shared, 1-D or 2-D: As[i], As[r][c]
//   STS(As, i, v)  STS(As, r, c, v)
//   LDG4, STG4, LDS4, STS4 (and 2, 8)       N consecutive elements from the one named, in one vector
//                                           instruction (float4: 128 bits, LDG.128 / STS.128)
//   CP_ASYNC4(As, r, c, A, i)  CP_ASYNC4(As, i, A, j)
//                                           cp.async: 16 bytes global -> shared, in flight until waited for
//   CP_ASYNC4_ZFILL(in, As, r, c, A, i)  CP_ASYNC4_ZFILL(in, As, i, A, j)
//                                           cp.async with PTX's zero fill: every lane takes part, none
//                                           predicated off; where `in` it copies the 16 bytes, elsewhere
//                                           it reads nothing (src-size 0) and writes 16 zero bytes. A
//                                           lane's source is not read where `in` is false, so it may
//                                           point outside A. Recorded: the write always, the read
//                                           only where `in` (Nsight Compute counts no request or
//                                           sector for a zero-filling lane; measured on an H100).
//   CP_ASYNC_COMMIT()  CP_ASYNC_WAIT(n)  SYNC()
//   LDMATRIX_X4(regs, As, r, c)  LDMATRIX_X4(regs, As, i)   (and X1, X2; regs: unsigned regs[4], [1], [2])
//                                           ldmatrix: the warp loads 4 (1, 2) 8x8 matrices of 16-bit
//                                           elements from shared memory together. Lane 8m + j names
//                                           row j of matrix m: the 8 elements (16 bytes) from the one
//                                           given; lane t receives in regs[m] elements 2 (t % 4) and
//                                           2 (t % 4) + 1 of row t / 4 of matrix m (the first in the
//                                           low 16 bits: __ushort_as_half(regs[m] & 0xffff)).
//   LDMATRIX_X4_T(regs, Bs, r, c)  (and X1_T, X2_T)
//                                           ldmatrix .trans: the same rows named, each matrix handed
//                                           out transposed: lane t receives elements t / 4 of rows
//                                           2 (t % 4) and 2 (t % 4) + 1 (a row-major K x N tile read
//                                           as the "col" operand of mma).
//   MMA_16816(d, a, b)                      mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 on a
//                                           warp's fragments: float d[4] += a (unsigned a[4]: A's
//                                           16 x 16 halves) times b (unsigned b[2]: B's 16 x 8).
//                                           Which lane holds which element is the PTX ISA's table
//                                           for this shape (engine/metrics/fragments.py). No
//                                           memory access: nothing is recorded. On the CPU a warp
//                                           collective computes it (summed in double, rounded once
//                                           to float: the GPU may differ in the last bits).
// A traced array is a pointer parameter of the kernel (global) or a __shared__ array, of float,
// __half, __nv_bfloat16, int or double; engine/kernels/sources.py checks these rules when it loads a
// kernel and names the file and line of any break.
//
// Write at most one access macro per statement: C++ leaves the order of operands of `*` unspecified,
// and two compilers could then record the same thread's accesses in different orders.
#pragma once

#include "contract.cuh"   // the macros a kernel declares its parameters, rules and launch with

#ifndef MATMUL_CPU
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>   // __pipeline_memcpy_async: cp.async
#define TRACE_FN __device__ __forceinline__
#define TRACE_GLOBAL __device__
#endif

// What one vector access of N elements of T moves, as one value: float4 for four floats (128
// bits), uint4 for eight halves, ...
template <typename T, int N> struct TraceVec;
template <> struct TraceVec<float, 2> { typedef float2 type; };
template <> struct TraceVec<float, 4> { typedef float4 type; };
template <> struct TraceVec<int, 2> { typedef int2 type; };
template <> struct TraceVec<int, 4> { typedef int4 type; };
template <> struct TraceVec<double, 2> { typedef double2 type; };
template <> struct TraceVec<__half, 2> { typedef __half2 type; };
template <> struct TraceVec<__half, 4> { typedef uint2 type; };
template <> struct TraceVec<__half, 8> { typedef uint4 type; };
template <> struct TraceVec<__nv_bfloat16, 2> { typedef __nv_bfloat162 type; };
template <> struct TraceVec<__nv_bfloat16, 4> { typedef uint2 type; };
template <> struct TraceVec<__nv_bfloat16, 8> { typedef uint4 type; };

// The N elements from p, as one vector value (its address must be a multiple of its size).
template <int N, typename T> TRACE_FN typename TraceVec<T, N>::type &trace_vec(T *p) {
    return *reinterpret_cast<typename TraceVec<T, N>::type *>(p);
}
template <int N, typename T> TRACE_FN const typename TraceVec<T, N>::type &trace_vec(const T *p) {
    return *reinterpret_cast<const typename TraceVec<T, N>::type *>(p);
}

// Puts half h at element e (0 .. 7) of the 8 halves a uint4 holds, where a 16-byte copy would put
// it: how a kernel builds a 16-byte chunk half by half where its rows are not 16-byte aligned.
// (Bits, not a pointer into v: with e known after unrolling, v stays in registers.)
TRACE_FN void set_half(uint4 &v, int e, __half h) {
    unsigned int bits = (unsigned int)__half_as_ushort(h) << (16 * (e % 2));
    if (e < 2) v.x |= bits; else if (e < 4) v.y |= bits; else if (e < 6) v.z |= bits; else v.w |= bits;
}

// Argument picking, so one macro takes a 1-D or a 2-D shared element: LDS(As, i) or LDS(As, r, c),
// STS(As, i, v) or STS(As, r, c, v) (the value comes last), CP_ASYNC4(As, i, A, j) or
// CP_ASYNC4(As, r, c, A, j). TRACE_PICKn names the macro for the count of arguments given.
#define TRACE_PICK3(_1, _2, _3, NAME, ...) NAME
#define TRACE_PICK4(_1, _2, _3, _4, NAME, ...) NAME
#define TRACE_PICK5(_1, _2, _3, _4, _5, NAME, ...) NAME
#define TRACE_FIRST(arr, ...) arr
#define TRACE_ID_OF(arr, ...) TRACE_ID_##arr
#define TRACE_E2(arr, i) (arr)[i]
#define TRACE_E3(arr, r, c) (arr)[r][c]
#define TRACE_V3(arr, i, v) v
#define TRACE_V4(arr, r, c, v) v
// The element LDS names, the element STS names, and the value STS stores.
#define TRACE_LDS_ELEM(...) TRACE_PICK3(__VA_ARGS__, TRACE_E3, TRACE_E2, _)(__VA_ARGS__)
#define TRACE_STS_ELEM(...) TRACE_PICK4(__VA_ARGS__, TRACE_STS_E4, TRACE_STS_E3, _)(__VA_ARGS__)
#define TRACE_STS_E3(arr, i, v) (arr)[i]
#define TRACE_STS_E4(arr, r, c, v) (arr)[r][c]
#define TRACE_STS_VALUE(...) TRACE_PICK4(__VA_ARGS__, TRACE_V4, TRACE_V3, _)(__VA_ARGS__)
// CP_ASYNC4's shared destination element and global source element.
#define TRACE_CP_DST(...) TRACE_PICK5(__VA_ARGS__, TRACE_CP_D5, TRACE_CP_D4, _)(__VA_ARGS__)
#define TRACE_CP_D4(dst, i, src, j) (dst)[i]
#define TRACE_CP_D5(dst, r, c, src, j) (dst)[r][c]
#define TRACE_CP_SRC(...) TRACE_PICK5(__VA_ARGS__, TRACE_CP_S5, TRACE_CP_S4, _)(__VA_ARGS__)
#define TRACE_CP_S4(dst, i, src, j) (src)[j]
#define TRACE_CP_S5(dst, r, c, src, j) (src)[j]
#define TRACE_CP_SRC_ARRAY(...) TRACE_PICK5(__VA_ARGS__, TRACE_CP_A5, TRACE_CP_A4, _)(__VA_ARGS__)
#define TRACE_CP_A4(dst, i, src, j) src
#define TRACE_CP_A5(dst, r, c, src, j) src

#ifndef MATMUL_CPU
// ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16 (sm_75 and later): `row` is this lane's row, in
// shared memory (its 32-bit shared-window address is what the instruction takes). On sm_80 and
// later only lanes 0 .. 8N - 1 name rows; the others' addresses are not read. "memory": the
// compiler must not move shared stores across it.
template <int N, bool TRANS = false, typename T> TRACE_FN void trace_ldmatrix(unsigned int (&regs)[N], const T *row) {
    static_assert(sizeof(T) == 2, "ldmatrix loads 16-bit elements (__half, __nv_bfloat16)");
    unsigned int address = (unsigned int)__cvta_generic_to_shared(row);
    if constexpr (N == 1 && !TRANS) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];"
                     : "=r"(regs[0]) : "r"(address) : "memory");
    } else if constexpr (N == 1) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
                     : "=r"(regs[0]) : "r"(address) : "memory");
    } else if constexpr (N == 2 && !TRANS) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                     : "=r"(regs[0]), "=r"(regs[1]) : "r"(address) : "memory");
    } else if constexpr (N == 2) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                     : "=r"(regs[0]), "=r"(regs[1]) : "r"(address) : "memory");
    } else if constexpr (!TRANS) {
        static_assert(N == 4, "ldmatrix loads 1, 2 or 4 matrices");
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3]) : "r"(address) : "memory");
    } else {
        static_assert(N == 4, "ldmatrix loads 1, 2 or 4 matrices");
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3]) : "r"(address) : "memory");
    }
}

// cp.async.cg (LDGSTS.BYPASS.128, as __pipeline_memcpy_async), its source size a register: 16 bytes
// where `copy`, else 0, which reads nothing and fills the 16 bytes with zeros. ptxas makes the size
// the instruction's own predicate operand (LDGSTS ..., !P0): no branch, no lane off.
TRACE_FN void trace_cp_async_zfill(void *dst, const void *src, bool copy) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(src), "r"(copy ? 16 : 0) : "memory");
}

// mma.sync m16n8k16, f16 inputs, f32 accumulate, in place: d += a b. A warp-wide instruction with
// no memory access, so nothing to record; on the CPU a helper of cpu_shim.h does the arithmetic.
TRACE_FN void trace_mma_16816(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#define MMA_16816(d, a, b) trace_mma_16816(d, a, b)
#else
#define MMA_16816(d, a, b) cpu_mma_sync_16816(d, a, b, __LINE__)   // a warp collective of cpu_shim.h
#endif

#ifndef MATMUL_TRACE

#define LDG(arr, i) ((arr)[i])
#define STG(arr, i, v) ((arr)[i] = (v))
#define SKIP_LDG(arr) ((void)0)
#define SKIP_STG(arr) ((void)0)
#define SKIP_LDS(arr) ((void)0)
#define SKIP_STS(arr) ((void)0)
#define SKIP_CP_ASYNC(dst, src) ((void)0)
#define LDS(...) (TRACE_LDS_ELEM(__VA_ARGS__))
#define STS(...) (TRACE_STS_ELEM(__VA_ARGS__) = (TRACE_STS_VALUE(__VA_ARGS__)))
#define TRACE_LDGN(N, arr, i) trace_vec<N>(&(arr)[i])
#define TRACE_STGN(N, arr, i, v) (trace_vec<N>(&(arr)[i]) = (v))
#define TRACE_LDSN(N, ...) trace_vec<N>(&TRACE_LDS_ELEM(__VA_ARGS__))
#define TRACE_STSN(N, ...) (trace_vec<N>(&TRACE_STS_ELEM(__VA_ARGS__)) = (TRACE_STS_VALUE(__VA_ARGS__)))
#define SYNC() __syncthreads()
// Asynchronous copies global -> shared (cp.async, LDGSTS on sm_80+): 16 bytes, in flight until the
// thread waits for its group. COMMIT closes the copies issued since the last one into a group;
// WAIT(n) returns once at most n groups are still in flight (then SYNC() makes every thread's
// copies visible to the block).
#define CP_ASYNC4(...) __pipeline_memcpy_async(&TRACE_CP_DST(__VA_ARGS__), &TRACE_CP_SRC(__VA_ARGS__), 16)
#define CP_ASYNC4_ZFILL(in, ...) trace_cp_async_zfill(&TRACE_CP_DST(__VA_ARGS__), &TRACE_CP_SRC(__VA_ARGS__), (in))
#define CP_ASYNC_COMMIT() __pipeline_commit()
#define CP_ASYNC_WAIT(n) __pipeline_wait_prior(n)
#define TRACE_LDMATRIX(N, regs, ...) trace_ldmatrix<N>(regs, &TRACE_LDS_ELEM(__VA_ARGS__))
#define TRACE_LDMATRIX_T(N, regs, ...) trace_ldmatrix<N, true>(regs, &TRACE_LDS_ELEM(__VA_ARGS__))

#else

// 16 bytes per record; engine/tracing/records.py mirrors this layout (RAW_DTYPE).
struct TraceRecord {
    unsigned int index;    // element index from the start of the array's allocation
    unsigned short site;   // the access site's number (its array and load/store follow from it)
    unsigned short line;   // its source line: to name a site the engine did not find
    unsigned int epoch;    // barriers this thread had passed (low 16 bits) and cp.async groups it had
                           // committed (high 16 bits): a copy's group is the commits before it
    unsigned int ordinal;  // times this thread had executed this access site before
};

// Each access site's number, 0 .. TRACE_SITE_COUNT - 1: the build defines TRACE_SITE_OF(line, array,
// op) from the sites engine/kernels/sources.py found, and every macro's arguments are constants, so
// it folds to a constant. It goes in the record and picks the thread's counter of that site's
// executions (the ordinal). A site the engine did not find is number TRACE_SITE_COUNT (a counter
// of its own too), which the assembly refuses by its line.

// Per traced thread ("slot" = launched block * threads per block + thread): a record counter and an
// epoch counter. The count pass runs with trace_records == 0 and only counts; the engine turns the
// counts into offsets (an exclusive scan) and the write pass stores each thread's records in
// program order at its offset. Both passes give the same order on GPU and CPU.
TRACE_GLOBAL unsigned int *trace_counts;
TRACE_GLOBAL unsigned int *trace_epochs;     // per slot: SYNC()s passed + 65536 x CP_ASYNC_COMMIT()s made
TRACE_GLOBAL const unsigned long long *trace_offsets;
TRACE_GLOBAL TraceRecord *trace_records;
TRACE_GLOBAL unsigned int *trace_ordinals;   // write pass: TRACE_SITE_COUNT + 1 counters per slot
// Traced blocks: launched block j runs as block (trace_block_map[2j], trace_block_map[2j+1]) of a
// grid of trace_grid_x by trace_grid_y, so one block of a 4096^2 product costs one block's work.
TRACE_GLOBAL const unsigned int *trace_block_map;
TRACE_GLOBAL unsigned int trace_grid_x;
TRACE_GLOBAL unsigned int trace_grid_y;
// Where each global array's allocation starts, as the engine passed it: records count elements
// from there, so a kernel that moves its pointer (A += row * K) still records the element it
// touched. (Shared arrays cannot move; they count from their own start.)
TRACE_GLOBAL const char *trace_bases[TRACE_ARRAY_COUNT];
// CPU builds only: element counts of the arrays (global and shared), to turn an out-of-bounds access
// into an error.
TRACE_GLOBAL unsigned long long trace_bounds[TRACE_ARRAY_COUNT];
TRACE_GLOBAL int trace_fault;
// CPU builds only: where the launch's first fault was, its line, thread (x, y) and block (x, y), for
// the message (a student's kernel is told its line, not only the array).
TRACE_GLOBAL unsigned int trace_fault_at[5];

#ifndef MATMUL_CPU
TRACE_FN unsigned int trace_launched_block() { return blockIdx.x; }
#endif

// The thread's number in its block: x fastest, as the hardware splits a block into warps of 32.
TRACE_FN unsigned int trace_thread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

TRACE_FN unsigned int trace_slot() {
    return trace_launched_block() * (blockDim.x * blockDim.y * blockDim.z) + trace_thread();
}

TRACE_FN void trace_record(unsigned long long index, unsigned int line, unsigned int array,
                           unsigned int op, unsigned int site) {
    unsigned int s = trace_slot();
    unsigned int n = trace_counts[s]++;
    if (trace_records) {
        TraceRecord r;
        r.index = (unsigned int)index;
        r.site = (unsigned short)site;
        r.line = (unsigned short)line;
        r.epoch = trace_epochs[s];
        r.ordinal = trace_ordinals[(unsigned long long)s * (TRACE_SITE_COUNT + 1) + site]++;
        trace_records[trace_offsets[s] + n] = r;
    }
}

// Where an array's records count from: a shared array (an array type) from its own first byte; a
// global one (a pointer, maybe moved) from its allocation. The pointer is taken by reference so
// that an array never decays into it: each array picks exactly one of the two (for an array the
// first is the more specialised). Any pointer type: `T *const &` did not match a
// `const float *__restrict__` parameter (restrict is a qualifier neither g++ nor nvcc deduces
// through), and a student's kernel commonly declares its pointers so.
template <typename T, unsigned long long N>
TRACE_FN const char *trace_origin(T (&arr)[N], unsigned int) { return (const char *)arr; }
template <typename P>
TRACE_FN const char *trace_origin(const P &, unsigned int array) { return trace_bases[array]; }

// An element's index: its distance from the origin, in elements of its type.
template <typename T>
TRACE_FN long long trace_index(const T *p, const char *origin) {
    return (long long)((const char *)p - origin) / (long long)sizeof(T);
}

#ifdef MATMUL_CPU
// The CPU build checks bounds of global and shared arrays (shared ones are thread_local statics
// there: a stray store overwrites the host thread's own state), so a wrong index is reported as an
// error instead of crashing the process that hosts the tracer; the access itself is then skipped.
// Elements index .. index + n - 1 must all lie in the array (a negative index wraps to a huge one).
// The first fault of a launch is the one reported, with where it was (`line`: every access function's own).
TRACE_FN bool trace_note_fault(int code, unsigned int line) {
    if (!trace_fault) {
        trace_fault = code;
        trace_fault_at[0] = line;
        trace_fault_at[1] = threadIdx.x, trace_fault_at[2] = threadIdx.y;
        trace_fault_at[3] = blockIdx.x, trace_fault_at[4] = blockIdx.y;
    }
    return true;
}
#define TRACE_OUT_OF_BOUNDS(array, index, n) \
    (((unsigned long long)(index) >= trace_bounds[array] || (unsigned long long)(index) + (n) > trace_bounds[array]) \
     && trace_note_fault(1 + (array), line))
// A vector access must be aligned to its size (the GPU faults otherwise, with "misaligned
// address"): reported as its own fault, after the out-of-bounds ones.
#define TRACE_MISALIGNED(array, address, bytes) \
    (((unsigned long long)(address) & ((bytes) - 1)) != 0 && trace_note_fault(1 + TRACE_ARRAY_COUNT + (array), line))
#else
#define TRACE_OUT_OF_BOUNDS(array, index, n) false
#define TRACE_MISALIGNED(array, address, bytes) false
#endif

template <typename T>
TRACE_FN T trace_load(const T *p, const char *origin, unsigned int line, unsigned int array, unsigned int site) {
    long long index = trace_index(p, origin);
    trace_record(index, line, array, 0, site);
    if (TRACE_OUT_OF_BOUNDS(array, index, 1)) return T();
    return *p;
}

template <typename T, typename V>
TRACE_FN void trace_store(T *p, V value, const char *origin, unsigned int line, unsigned int array,
                          unsigned int site) {
    long long index = trace_index(p, origin);
    trace_record(index, line, array, 1, site);
    if (TRACE_OUT_OF_BOUNDS(array, index, 1)) return;
    *p = value;
}

// A vector access is one record, at its first element: the site says how wide it is
// (engine/kernels/sources.py reads the macro's name), so the record layout is the same for every width.
template <int N, typename T>
TRACE_FN typename TraceVec<T, N>::type trace_load_vec(const T *p, const char *origin, unsigned int line,
                                                      unsigned int array, unsigned int site) {
    typedef typename TraceVec<T, N>::type V;
    long long index = trace_index(p, origin);
    trace_record(index, line, array, 0, site);
    if (TRACE_OUT_OF_BOUNDS(array, index, N) || TRACE_MISALIGNED(array, p, sizeof(V))) return V();
    return trace_vec<N>(p);
}

template <int N, typename T>
TRACE_FN void trace_store_vec(T *p, typename TraceVec<T, N>::type value, const char *origin, unsigned int line,
                              unsigned int array, unsigned int site) {
    long long index = trace_index(p, origin);
    trace_record(index, line, array, 1, site);
    if (TRACE_OUT_OF_BOUNDS(array, index, N) || TRACE_MISALIGNED(array, p, sizeof(value))) return;
    trace_vec<N>(p) = value;
}

// cp.async: two records, in this order: the global read, then the shared write (16 bytes each).
// On the GPU the copy is the real asynchronous one; on the CPU it happens at once, which a kernel
// that waits for its group before reading cannot tell apart.
template <typename T, typename S>
TRACE_FN void trace_copy_async(T *dst, const char *dst_origin, const S *src, const char *src_origin,
                               unsigned int line, unsigned int dst_array, unsigned int src_array) {
    long long s = trace_index(src, src_origin), d = trace_index(dst, dst_origin);
    trace_record(s, line, src_array, 0, TRACE_SITE_OF(line, src_array, 0));
    trace_record(d, line, dst_array, 1, TRACE_SITE_OF(line, dst_array, 1));
    if (TRACE_OUT_OF_BOUNDS(src_array, s, 16 / sizeof(S)) || TRACE_MISALIGNED(src_array, src, 16)) return;
    if (TRACE_OUT_OF_BOUNDS(dst_array, d, 16 / sizeof(T)) || TRACE_MISALIGNED(dst_array, dst, 16)) return;
#ifdef MATMUL_CPU
    memcpy(dst, src, 16);
#else
    __pipeline_memcpy_async(dst, src, 16);
#endif
}

// ldmatrix, recorded: each lane that names a row (lanes 0 .. 8N - 1) records one 16-byte shared
// load at its row (the site says 16 bytes and ldmatrix); the other lanes record nothing. On the
// GPU it is the instruction itself; on the CPU the warp meets in cpu_warp_collective, where the
// last lane to arrive hands every lane its share.
template <int N, bool TRANS = false, typename T>
TRACE_FN void trace_load_matrix(unsigned int (&regs)[N], const T *row, const char *origin, unsigned int line,
                                unsigned int array, unsigned int site) {
    static_assert(sizeof(T) == 2, "ldmatrix loads 16-bit elements (__half, __nv_bfloat16)");
    bool names_a_row = trace_thread() % 32 < 8 * N;
    long long index = trace_index(row, origin);
    if (names_a_row) trace_record(index, line, array, 0, site);
#ifdef MATMUL_CPU
    bool usable = names_a_row && !TRACE_OUT_OF_BOUNDS(array, index, 8) && !TRACE_MISALIGNED(array, row, 16);
    cpu_warp_collective(cpu_ldmatrix<N, TRANS>, (int)line, usable ? row : 0);
    for (int m = 0; m < N; ++m) regs[m] = cpu.current->result[m];
#else
    trace_ldmatrix<N, TRANS>(regs, row);
#endif
}

// A lane that skips the line's access (its guard is false) still takes part in the warp's
// instruction, predicated off: its count of the site's executions goes on, so that its next access
// there pairs with its neighbours' of the same instruction, not with their next one.
TRACE_FN void trace_skip(unsigned int site) {
    if (trace_records) trace_ordinals[(unsigned long long)trace_slot() * (TRACE_SITE_COUNT + 1) + site]++;
}

// cp.async with zero fill, recorded: a copying lane as trace_copy_async; a zero-filling one records
// only its shared write (its read site's count goes on, as a skip's: it reads nothing) and stores
// 16 zero bytes. Nothing of the source is looked at, so it may lie outside its array.
template <typename T, typename S>
TRACE_FN void trace_copy_async_zfill(bool copy, T *dst, const char *dst_origin, const S *src, const char *src_origin,
                                     unsigned int line, unsigned int dst_array, unsigned int src_array) {
    if (copy) {
        trace_copy_async(dst, dst_origin, src, src_origin, line, dst_array, src_array);
        return;
    }
    trace_skip(TRACE_SITE_OF(line, src_array, 0));
    long long d = trace_index(dst, dst_origin);
    trace_record(d, line, dst_array, 1, TRACE_SITE_OF(line, dst_array, 1));
    if (TRACE_OUT_OF_BOUNDS(dst_array, d, 16 / sizeof(T)) || TRACE_MISALIGNED(dst_array, dst, 16)) return;
#ifdef MATMUL_CPU
    memset(dst, 0, 16);
#else
    trace_cp_async_zfill(dst, src, false);
#endif
}

// line: the SYNC()'s own, so that the CPU tracer can tell threads that meet at different barriers
// (cpu_shim.h cpu_syncthreads).
TRACE_FN void trace_sync(unsigned int line) {
#ifdef MATMUL_CPU
    cpu_syncthreads(line);
#else
    __syncthreads();
#endif
    trace_epochs[trace_slot()]++;
}

// Closes the thread's cp.async group: the copies issued since the last commit are group n (the
// n-th commit, from 0), which their records carry.
TRACE_FN void trace_commit() {
#ifndef MATMUL_CPU
    __pipeline_commit();
#endif
    trace_epochs[trace_slot()] += 1u << 16;
}

// What every recording macro passes last (after the element, and a store's value): where its array
// counts from, the line, the array's number and the site's.
#define TRACE_AT(arr, op) trace_origin(arr, TRACE_ID_##arr), __LINE__, TRACE_ID_##arr, \
                          TRACE_SITE_OF(__LINE__, TRACE_ID_##arr, op)
#define TRACE_SHARED_AT(op, arr, ...) TRACE_AT(arr, op)
#define LDG(arr, i) trace_load(&(arr)[i], TRACE_AT(arr, 0))
#define STG(arr, i, v) trace_store(&(arr)[i], (v), TRACE_AT(arr, 1))
#define SKIP_LDG(arr) trace_skip(TRACE_SITE_OF(__LINE__, TRACE_ID_##arr, 0))
#define SKIP_STG(arr) trace_skip(TRACE_SITE_OF(__LINE__, TRACE_ID_##arr, 1))
#define SKIP_LDS(arr) trace_skip(TRACE_SITE_OF(__LINE__, TRACE_ID_##arr, 0))
#define SKIP_STS(arr) trace_skip(TRACE_SITE_OF(__LINE__, TRACE_ID_##arr, 1))
#define SKIP_CP_ASYNC(dst, src) (trace_skip(TRACE_SITE_OF(__LINE__, TRACE_ID_##src, 0)), \
                                 trace_skip(TRACE_SITE_OF(__LINE__, TRACE_ID_##dst, 1)))
#define LDS(...) trace_load(&TRACE_LDS_ELEM(__VA_ARGS__), TRACE_SHARED_AT(0, __VA_ARGS__))
#define STS(...) trace_store(&TRACE_STS_ELEM(__VA_ARGS__), (TRACE_STS_VALUE(__VA_ARGS__)), TRACE_SHARED_AT(1, __VA_ARGS__))
#define TRACE_SHARED_ORIGIN(arr, ...) trace_origin(arr, TRACE_ID_##arr)
#define TRACE_LDGN(N, arr, i) trace_load_vec<N>(&(arr)[i], TRACE_AT(arr, 0))
#define TRACE_STGN(N, arr, i, v) trace_store_vec<N>(&(arr)[i], (v), TRACE_AT(arr, 1))
#define TRACE_LDSN(N, ...) trace_load_vec<N>(&TRACE_LDS_ELEM(__VA_ARGS__), TRACE_SHARED_AT(0, __VA_ARGS__))
#define TRACE_STSN(N, ...) trace_store_vec<N>(&TRACE_STS_ELEM(__VA_ARGS__), (TRACE_STS_VALUE(__VA_ARGS__)), \
                                              TRACE_SHARED_AT(1, __VA_ARGS__))
#define CP_ASYNC4(...) trace_copy_async(&TRACE_CP_DST(__VA_ARGS__), TRACE_SHARED_ORIGIN(__VA_ARGS__), \
                                        &TRACE_CP_SRC(__VA_ARGS__), \
                                        trace_origin(TRACE_CP_SRC_ARRAY(__VA_ARGS__), TRACE_CP_SRC_ID(__VA_ARGS__)), \
                                        __LINE__, TRACE_ID_OF(__VA_ARGS__), TRACE_CP_SRC_ID(__VA_ARGS__))
#define CP_ASYNC4_ZFILL(in, ...) trace_copy_async_zfill((in), &TRACE_CP_DST(__VA_ARGS__), TRACE_SHARED_ORIGIN(__VA_ARGS__), \
                                                   &TRACE_CP_SRC(__VA_ARGS__), \
                                                   trace_origin(TRACE_CP_SRC_ARRAY(__VA_ARGS__), TRACE_CP_SRC_ID(__VA_ARGS__)), \
                                                   __LINE__, TRACE_ID_OF(__VA_ARGS__), TRACE_CP_SRC_ID(__VA_ARGS__))
#define TRACE_CP_SRC_ID(...) TRACE_PICK5(__VA_ARGS__, TRACE_CP_I5, TRACE_CP_I4, _)(__VA_ARGS__)
#define TRACE_CP_I4(dst, i, src, j) TRACE_ID_##src
#define TRACE_CP_I5(dst, r, c, src, j) TRACE_ID_##src
#define CP_ASYNC_COMMIT() trace_commit()
#ifdef MATMUL_CPU
#define CP_ASYNC_WAIT(n) ((void)0)   // the CPU's copies have landed when they return
#else
#define CP_ASYNC_WAIT(n) __pipeline_wait_prior(n)
#endif
#define SYNC() trace_sync(__LINE__)
#define TRACE_LDMATRIX(N, regs, ...) trace_load_matrix<N>(regs, &TRACE_LDS_ELEM(__VA_ARGS__), \
                                                          TRACE_SHARED_AT(0, __VA_ARGS__))
#define TRACE_LDMATRIX_T(N, regs, ...) trace_load_matrix<N, true>(regs, &TRACE_LDS_ELEM(__VA_ARGS__), \
                                                                  TRACE_SHARED_AT(0, __VA_ARGS__))

#ifndef MATMUL_CPU
// The launched grid is 1-D over the traced blocks; kernels see the block they stand for.
__device__ __forceinline__ uint3 trace_block_idx() {
    return make_uint3(trace_block_map[2 * blockIdx.x], trace_block_map[2 * blockIdx.x + 1], 0);
}
__device__ __forceinline__ dim3 trace_grid_dim() { return dim3(trace_grid_x, trace_grid_y, 1); }
#define blockIdx trace_block_idx()
#define gridDim trace_grid_dim()
#endif

#endif  // MATMUL_TRACE

// The vector forms: N consecutive elements in one instruction.
#define LDG2(arr, i) TRACE_LDGN(2, arr, i)
#define LDG4(arr, i) TRACE_LDGN(4, arr, i)
#define LDG8(arr, i) TRACE_LDGN(8, arr, i)
#define STG2(arr, i, v) TRACE_STGN(2, arr, i, v)
#define STG4(arr, i, v) TRACE_STGN(4, arr, i, v)
#define STG8(arr, i, v) TRACE_STGN(8, arr, i, v)
#define LDS2(...) TRACE_LDSN(2, __VA_ARGS__)
#define LDS4(...) TRACE_LDSN(4, __VA_ARGS__)
#define LDS8(...) TRACE_LDSN(8, __VA_ARGS__)
#define STS2(...) TRACE_STSN(2, __VA_ARGS__)
#define STS4(...) TRACE_STSN(4, __VA_ARGS__)
#define STS8(...) TRACE_STSN(8, __VA_ARGS__)

// ldmatrix: 1, 2 or 4 8x8 matrices of 16-bit elements, one row named by each of lanes 0 .. 8N - 1.
#define LDMATRIX_X1(regs, ...) TRACE_LDMATRIX(1, regs, __VA_ARGS__)
#define LDMATRIX_X2(regs, ...) TRACE_LDMATRIX(2, regs, __VA_ARGS__)
#define LDMATRIX_X4(regs, ...) TRACE_LDMATRIX(4, regs, __VA_ARGS__)
#define LDMATRIX_X1_T(regs, ...) TRACE_LDMATRIX_T(1, regs, __VA_ARGS__)
#define LDMATRIX_X2_T(regs, ...) TRACE_LDMATRIX_T(2, regs, __VA_ARGS__)
#define LDMATRIX_X4_T(regs, ...) TRACE_LDMATRIX_T(4, regs, __VA_ARGS__)
