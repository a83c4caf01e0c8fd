// trace.cuh: the access macros every kernel in cuda/ is written with.
//
// One source, two builds:
//   plain (default)   each macro is the bare access, so the timing build carries no tracing cost;
//   -DMATMUL_TRACE    each access is also recorded: source line, array, load/store, element index
//                     and the thread's barrier epoch (how many SYNC()s it has passed).
// The same file is compiled for the GPU by nvcc and for the CPU by a host C++ compiler through
// cpu_shim.h, so both trace sources run literally the same kernel code.
//
// Write at most one access macro per statement: C++ leaves the order of operands of `*` unspecified,
// and two compilers could then record the same thread's accesses in different orders.
#pragma once

// The arrays a kernel may trace. engine/kernels/sources.py reads this list, so keep it on one line.
#define TRACE_ARRAYS(X) X(A) X(B) X(C) X(BT) X(As) X(Bs) X(Asub) X(Bsub) X(tile_A) X(tile_B)

#define TRACE_ENUM_ENTRY(name) TRACE_ID_##name,
enum TraceArrayId { TRACE_ARRAYS(TRACE_ENUM_ENTRY) TRACE_ARRAY_COUNT };
#undef TRACE_ENUM_ENTRY

#ifndef MATMUL_CPU
#include <cuda_pipeline.h>   // __pipeline_memcpy_async: cp.async
#define TRACE_FN __device__ __forceinline__
#define TRACE_GLOBAL __device__
#endif

#ifndef MATMUL_TRACE

#define LDG(arr, i) ((arr)[i])
#define STG(arr, i, v) ((arr)[i] = (v))
#define LDS(arr, r, c) ((arr)[r][c])
#define STS(arr, r, c, v) ((arr)[r][c] = (v))
// 128-bit accesses: four consecutive floats from element i (a multiple of 4, so 16-byte aligned),
// one instruction (LDG.128, STS.128, ...) for the four.
#define LDG4(arr, i) (*reinterpret_cast<const float4 *>(&(arr)[i]))
#define STG4(arr, i, v) (*reinterpret_cast<float4 *>(&(arr)[i]) = (v))
#define LDS4(arr, r, c) (*reinterpret_cast<const float4 *>(&(arr)[r][c]))
#define STS4(arr, r, c, v) (*reinterpret_cast<float4 *>(&(arr)[r][c]) = (v))
#define SYNC() __syncthreads()
// Asynchronous copies global -> shared (cp.async, LDGSTS on sm_80+): 16 bytes from src[i] to
// dst[r][c], in flight until the thread waits for its group. COMMIT closes the copies issued
// since the last one into a group; WAIT(n) returns once at most n groups are still in flight
// (then SYNC() makes every thread's copies visible to the block).
#define CP_ASYNC4(dst, r, c, src, i) __pipeline_memcpy_async(&(dst)[r][c], &(src)[i], 16)
#define CP_ASYNC_COMMIT() __pipeline_commit()
#define CP_ASYNC_WAIT(n) __pipeline_wait_prior(n)

#else

// 16 bytes per record; engine/tracing/records.py mirrors this layout (RAW_DTYPE).
struct TraceRecord {
    unsigned int index;    // element index in the array (row * pitch + col)
    unsigned short line;   // source line of the access macro
    unsigned char array;   // TraceArrayId
    unsigned char op;      // 0 load, 1 store
    unsigned int epoch;    // barriers this thread had passed
    unsigned int ordinal;  // times this thread had executed this access site before
};

// Per-thread counters of each site's executions, TRACE_SITE_SLOTS per thread, indexed by this
// hash. engine/kernels/sources.py computes the same hash and refuses a kernel whose sites collide.
#define TRACE_SITE_SLOTS 32
#define TRACE_SITE_HASH(line, array, op) (((line) * 2u + (op) + (array) * 17u) & (TRACE_SITE_SLOTS - 1))

// Per traced thread ("slot" = launched block * threads per block + thread): a record counter and an
// epoch counter. The count pass runs with trace_records == 0 and only counts; the engine turns the
// counts into offsets (an exclusive scan) and the write pass stores each thread's records in
// program order at its offset. Both passes give the same order on GPU and CPU.
TRACE_GLOBAL unsigned int *trace_counts;
TRACE_GLOBAL unsigned int *trace_epochs;
TRACE_GLOBAL const unsigned long long *trace_offsets;
TRACE_GLOBAL TraceRecord *trace_records;
TRACE_GLOBAL unsigned int *trace_ordinals;   // write pass: TRACE_SITE_SLOTS counters per slot
// Traced blocks: launched block j runs as block (trace_block_map[2j], trace_block_map[2j+1]) of a
// grid of trace_grid_x by trace_grid_y, so one block of a 4096^2 product costs one block's work.
TRACE_GLOBAL const unsigned int *trace_block_map;
TRACE_GLOBAL unsigned int trace_grid_x;
TRACE_GLOBAL unsigned int trace_grid_y;
// CPU builds only: element counts of the arrays (global and shared), to turn an out-of-bounds access
// into an error.
TRACE_GLOBAL unsigned long long trace_bounds[TRACE_ARRAY_COUNT];
TRACE_GLOBAL int trace_fault;

#ifndef MATMUL_CPU
TRACE_FN unsigned int trace_launched_block() { return blockIdx.x; }
#endif

TRACE_FN unsigned int trace_slot() {
    unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
    unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return trace_launched_block() * threads + t;
}

TRACE_FN void trace_record(unsigned long long index, unsigned int line, unsigned int array,
                           unsigned int op) {
    unsigned int s = trace_slot();
    unsigned int n = trace_counts[s]++;
    if (trace_records) {
        TraceRecord r;
        r.index = (unsigned int)index;
        r.line = (unsigned short)line;
        r.array = (unsigned char)array;
        r.op = (unsigned char)op;
        r.epoch = trace_epochs[s];
        r.ordinal = trace_ordinals[(unsigned long long)s * TRACE_SITE_SLOTS + TRACE_SITE_HASH(line, array, op)]++;
        trace_records[trace_offsets[s] + n] = r;
    }
}

#ifdef MATMUL_CPU
// The CPU build checks bounds of global and shared arrays (shared ones are thread_local statics
// there: a stray store overwrites the host thread's own state), so a wrong index is reported as an
// error instead of crashing the process that hosts the tracer; the access itself is then skipped.
#define TRACE_OUT_OF_BOUNDS(array, index) \
    ((index) >= trace_bounds[array] && (trace_fault = 1 + (array)))
// A 128-bit access must start 16 bytes into its array's alignment (the GPU faults otherwise, with
// "misaligned address"): reported as its own fault, after the out-of-bounds ones.
#define TRACE_MISALIGNED16(array, address) \
    (((unsigned long long)(address) & 15) != 0 && (trace_fault = 1 + TRACE_ARRAY_COUNT + (array)))
#else
#define TRACE_OUT_OF_BOUNDS(array, index) false
#define TRACE_MISALIGNED16(array, address) false
#endif

template <typename T>
TRACE_FN T trace_load(const T *base, long long index, unsigned int line, unsigned int array) {
    trace_record(index, line, array, 0);
    if (TRACE_OUT_OF_BOUNDS(array, (unsigned long long)index)) return T(0);
    return base[index];
}

template <typename T, typename V>
TRACE_FN void trace_store(T *base, long long index, V value, unsigned int line, unsigned int array) {
    trace_record(index, line, array, 1);
    if (TRACE_OUT_OF_BOUNDS(array, (unsigned long long)index)) return;
    base[index] = value;
}

// A 128-bit access is one record, at its first element: the site says how wide it is (engine/kernels/sources.py
// reads the macro's name), so the record layout is the same for every width.
TRACE_FN float4 trace_load4(const float *base, long long index, unsigned int line, unsigned int array) {
    trace_record(index, line, array, 0);
    // index < 0 wraps to a huge unsigned number: out of bounds too.
    if (TRACE_OUT_OF_BOUNDS(array, (unsigned long long)index) || TRACE_OUT_OF_BOUNDS(array, (unsigned long long)index + 3)
        || TRACE_MISALIGNED16(array, base + index)) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    return *reinterpret_cast<const float4 *>(base + index);
}

TRACE_FN void trace_store4(float *base, long long index, float4 value, unsigned int line, unsigned int array) {
    trace_record(index, line, array, 1);
    if (TRACE_OUT_OF_BOUNDS(array, (unsigned long long)index) || TRACE_OUT_OF_BOUNDS(array, (unsigned long long)index + 3)
        || TRACE_MISALIGNED16(array, base + index)) return;
    *reinterpret_cast<float4 *>(base + index) = value;
}

// cp.async: two records, in this order: the global read, then the shared write (both 16 bytes wide).
// On the GPU the copy is the real asynchronous one; on the CPU it happens at once, which a kernel
// that waits for its group before reading cannot tell apart.
TRACE_FN void trace_copy_async4(float *dst, long long dst_index, const float *src, long long src_index,
                                unsigned int line, unsigned int dst_array, unsigned int src_array) {
    trace_record(src_index, line, src_array, 0);
    trace_record(dst_index, line, dst_array, 1);
    if (TRACE_OUT_OF_BOUNDS(src_array, (unsigned long long)src_index)
        || TRACE_OUT_OF_BOUNDS(src_array, (unsigned long long)src_index + 3)
        || TRACE_MISALIGNED16(src_array, src + src_index)) return;
    if (TRACE_OUT_OF_BOUNDS(dst_array, (unsigned long long)dst_index)
        || TRACE_OUT_OF_BOUNDS(dst_array, (unsigned long long)dst_index + 3)
        || TRACE_MISALIGNED16(dst_array, dst + dst_index)) return;
#ifdef MATMUL_CPU
    *reinterpret_cast<float4 *>(dst + dst_index) = *reinterpret_cast<const float4 *>(src + src_index);
#else
    __pipeline_memcpy_async(dst + dst_index, src + src_index, 16);
#endif
}

TRACE_FN void trace_sync() {
    __syncthreads();
    trace_epochs[trace_slot()]++;
}

// Row pitch of a 2-D shared array in elements: padding included, so bank maths sees real addresses.
#define TRACE_PITCH(arr) (sizeof((arr)[0]) / sizeof((arr)[0][0]))

#define LDG(arr, i) trace_load((arr), (i), __LINE__, TRACE_ID_##arr)
#define STG(arr, i, v) trace_store((arr), (i), (v), __LINE__, TRACE_ID_##arr)
#define LDS(arr, r, c) trace_load(&(arr)[0][0], (long long)(r) * TRACE_PITCH(arr) + (c), __LINE__, TRACE_ID_##arr)
#define STS(arr, r, c, v) trace_store(&(arr)[0][0], (long long)(r) * TRACE_PITCH(arr) + (c), (v), __LINE__, TRACE_ID_##arr)
#define LDG4(arr, i) trace_load4((arr), (i), __LINE__, TRACE_ID_##arr)
#define STG4(arr, i, v) trace_store4((arr), (i), (v), __LINE__, TRACE_ID_##arr)
#define LDS4(arr, r, c) trace_load4(&(arr)[0][0], (long long)(r) * TRACE_PITCH(arr) + (c), __LINE__, TRACE_ID_##arr)
#define STS4(arr, r, c, v) trace_store4(&(arr)[0][0], (long long)(r) * TRACE_PITCH(arr) + (c), (v), __LINE__, TRACE_ID_##arr)
#define CP_ASYNC4(dst, r, c, src, i) trace_copy_async4(&(dst)[0][0], (long long)(r) * TRACE_PITCH(dst) + (c), (src), (i), \
                                                    __LINE__, TRACE_ID_##dst, TRACE_ID_##src)
#ifdef MATMUL_CPU
#define CP_ASYNC_COMMIT() ((void)0)
#define CP_ASYNC_WAIT(n) ((void)0)
#else
#define CP_ASYNC_COMMIT() __pipeline_commit()
#define CP_ASYNC_WAIT(n) __pipeline_wait_prior(n)
#endif
#define SYNC() trace_sync()

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
