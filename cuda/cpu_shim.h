// cpu_shim.h: lets a kernel from cuda/ compile as host C++ and run on the CPU, for traces on
// machines without an NVIDIA GPU. Included before the kernel, with MATMUL_CPU and MATMUL_TRACE set.
//
// Each CUDA thread of a block runs as a fiber (its own stack, switched by cpu_switch or ucontext),
// and gives the host thread back only where it must wait for others, saying why:
//   __syncthreads()        at the block's barrier: it waits until every live thread of the block
//                          has reached a barrier (or returned), as on the GPU;
//   a warp-collective op   (ldmatrix, mma, __syncwarp, the shuffles and votes): it waits until every
//                          live thread of its mask (the whole warp for ldmatrix and mma) has arrived
//                          at the same one; the last to arrive computes every lane's result into
//                          that lane's own slot, so lanes that then run on ahead cannot change what
//                          another lane reads.
// cpu_run_block resumes the threads that are ready, round after round, and releases the barrier
// when all the block's live threads wait there (threads that returned do not hold it: since compute
// capability 7.0 __syncthreads() waits for the block's threads that have not exited); threads that
// meet there from different SYNC()s make the block's barrier fault (cpu.barrier_fault), which the GPU
// would not report but run as it happens to. Blocks run one after another: they never talk to
// each other in these kernels. State is thread_local, so several host threads (several app
// sessions) can trace at the same time.
#pragma once
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
// What device code calls and the host has under the same names (sqrtf, fmaxf, expf, fabsf, ...;
// printf, assert): a student's kernel uses them as nvcc allows. printf writes to the process's
// stdout, which is never a channel of the engine's: the sandbox job answers on a descriptor of its
// own (engine/sandbox/job.py) and keeps what is printed only to quote it; a failed assert aborts
// the job with its message, as a GPU's assert ends the kernel.
#include <math.h>
#include <stdio.h>
#include <assert.h>
#include <float.h>    // FLT_MAX, INT_MAX: nvcc's own headers bring them
#include <limits.h>

struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef dim3 uint3;
// CUDA's vector types, aligned to their size as on the GPU, so vector accesses compile and align
// the same way.
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned int x, y; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
    return uint4{x, y, z, w};
}

// Half and bfloat16 numbers as the GPU stores them (16 bits), converted with round-to-nearest-even
// as __float2half and __float2bfloat16 do, so the CPU trace computes what the GPU computes.
static inline unsigned int cpu_float_bits(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float cpu_bits_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
// Converting to and from float implicitly, as cuda_fp16.h and cuda_bf16.h allow (float v = A[i];
// __half h = 2.0f;), so a kernel that compiles with nvcc compiles here.
struct __half {
    unsigned short x;
    __half() = default;
    inline __half(float f);
    inline operator float() const;
};
struct __nv_bfloat16 {
    unsigned short x;
    __nv_bfloat16() = default;
    inline __nv_bfloat16(float f);
    inline operator float() const;
};
struct alignas(4) __half2 { __half x, y; };
struct alignas(4) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

static inline float __half2float(__half h) {
    unsigned int sign = (unsigned int)(h.x & 0x8000) << 16, exp = (h.x >> 10) & 0x1f, man = h.x & 0x3ff;
    if (exp == 0x1f) return cpu_bits_float(sign | 0x7f800000 | (man << 13));          // inf, NaN
    if (exp == 0) {                                                                    // zero, subnormal
        float f = (float)man * (1.0f / 16777216.0f);                                  // man * 2^-24
        return sign ? -f : f;
    }
    return cpu_bits_float(sign | ((exp + 112) << 23) | (man << 13));
}
static inline __half __float2half(float f) {
    unsigned int u = cpu_float_bits(f), sign = (u >> 16) & 0x8000, mag = u & 0x7fffffff;
    __half h;
    if (mag >= 0x7f800000) {                                                           // inf, NaN
        h.x = (unsigned short)(sign | 0x7c00 | (mag > 0x7f800000 ? 0x200 : 0));
    } else if (mag >= 0x477ff000) {                                                    // rounds past 65504
        h.x = (unsigned short)(sign | 0x7c00);
    } else if (mag < 0x38800000) {                                                     // subnormal or zero
        float scaled = cpu_bits_float(mag) * 16777216.0f;                              // in units of 2^-24
        unsigned int q = (unsigned int)scaled;
        float rest = scaled - (float)q;
        if (rest > 0.5f || (rest == 0.5f && (q & 1))) ++q;
        h.x = (unsigned short)(sign | q);
    } else {
        unsigned int r = mag - 0x38000000;                                             // rebias 127 -> 15
        r += 0xfff + ((r >> 13) & 1);                                                  // nearest even
        h.x = (unsigned short)(sign | (r >> 13));
    }
    return h;
}
static inline __half __float2half_rn(float f) { return __float2half(f); }
inline __half::__half(float f) { x = __float2half(f).x; }
inline __half::operator float() const { return __half2float(*this); }
static inline float __bfloat162float(__nv_bfloat16 b) { return cpu_bits_float((unsigned int)b.x << 16); }
static inline __nv_bfloat16 __float2bfloat16(float f) {
    unsigned int u = cpu_float_bits(f);
    __nv_bfloat16 b;
    if ((u & 0x7fffffff) > 0x7f800000) {
        b.x = (unsigned short)((u >> 16) | 0x40);                                      // NaN stays NaN
    } else {
        b.x = (unsigned short)((u + 0x7fff + ((u >> 16) & 1)) >> 16);                  // nearest even
    }
    return b;
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
inline __nv_bfloat16::__nv_bfloat16(float f) { x = __float2bfloat16(f).x; }
inline __nv_bfloat16::operator float() const { return __bfloat162float(*this); }
// The 16 bits of a half or a bfloat16 as one and back (ldmatrix hands out two of them in each 32-bit
// register, mma takes them so).
static inline __half __ushort_as_half(unsigned short u) { __half h; h.x = u; return h; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 b; b.x = u; return b; }
static inline unsigned short __half_as_ushort(__half h) { return h.x; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.x; }
#define __align__(n) __attribute__((aligned(n)))   // alignas cannot follow `thread_local`

// CUDA's fast-math and bit intrinsics that the host lacks, computed the host's way: in float, with
// the host's rounding (the GPU's approximate __expf and friends may differ in the last bits).
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// (glibc's math.h declares __expf and the like itself, as its own names for expf: macros, defined
// after it, so that they mean expf wherever the C library is another.)
#define __expf expf
#define __logf logf
#define __log2f log2f
#define __log10f log10f
#define __sinf sinf
#define __cosf cosf
#define __tanf tanf
#define __powf powf
static inline float __fdividef(float x, float y) { return x / y; }
static inline float fdividef(float x, float y) { return x / y; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x == x ? x : 0.0f; }
static inline float __fadd_rn(float x, float y) { return x + y; }
static inline float __fsub_rn(float x, float y) { return x - y; }
static inline float __fmul_rn(float x, float y) { return x * y; }
static inline float __fdiv_rn(float x, float y) { return x / y; }
static inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
template <typename T> static inline T __ldg(const T *p) { return *p; }

#define __global__
#define __device__
#define __launch_bounds__(...)   // a register-allocation hint for nvcc; nothing on the CPU
#define __host__
#define __forceinline__ inline
// (No __noinline__: libstdc++ writes __attribute__((__noinline__)), which a macro of that name breaks
// for a kernel that includes <memory> after this header.)
#define __restrict__ __restrict
// Constant memory is read-only to every thread of every block: one static the host threads share.
#define __constant__ static
using std::max;   // min and max of two ints or floats: built-ins in CUDA device code
using std::min;
// A block's threads are fibers of one host thread, so a host-thread static is the block's shared
// memory (thread_local at block scope is static). `extern __shared__` (the dynamic shared memory)
// then names the buffer the build defines at namespace scope, sized as the launch would be.
#define __shared__ thread_local
#define TRACE_FN static inline
#define TRACE_GLOBAL static thread_local

// Fiber switching. On x86-64 a hand-written switch saves only the callee-saved registers and the
// stack pointer: glibc's swapcontext also saves the signal mask with a system call on every switch,
// which made barriers (two switches per thread per SYNC) most of a tiled kernel's trace time.
// Elsewhere ucontext does it. Either way the fibers run on the calling host thread, one at a time.
#if defined(__x86_64__) && !defined(MATMUL_CPU_UCONTEXT)
#define CPU_FAST_SWITCH 1
// cpu_switch(&save, next): stores this fiber's stack pointer in *save and resumes the one at next.
extern "C" void cpu_switch(void **save, void *next) __attribute__((visibility("hidden")));
__asm__(
    ".text\n.p2align 4\n.hidden cpu_switch\n.globl cpu_switch\n.type cpu_switch,@function\n"
    "cpu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n  ret\n"
    ".size cpu_switch, .-cpu_switch\n");
#endif

// Why a fiber is not running: the scheduler resumes only READY ones.
enum CpuFiberState { CPU_READY, CPU_AT_BARRIER, CPU_AT_COLLECTIVE, CPU_DONE };

struct CpuFiber;
// A warp-collective operation's meaning: computes every lane's result from every lane's input.
// `lanes` are the warp's `count` threads, of which those in `group` (a lane mask) met at it; a lane
// of the mask that never arrived (it returned) has input 0.
typedef void (*CpuCollective)(CpuFiber *lanes, unsigned int count, unsigned int group);

struct CpuFiber {
#ifdef CPU_FAST_SWITCH
    void *sp;
#else
    ucontext_t context;
#endif
    uint3 thread;
    int state;                  // CpuFiberState
    // At a warp-collective operation: which one (all lanes must be at the same one), this lane's
    // input, and its result, which the last lane to arrive writes.
    CpuCollective collective;
    int tag;
    unsigned int mask;          // the lanes that take part (__shfl_sync's mask; all of them for ldmatrix)
    const void *input;
    unsigned int result[4];
    unsigned int barrier_line;  // at __syncthreads(): the line of its SYNC() (0: a bare __syncthreads())
};

// Per warp, as lane masks: threads that have not returned, and those that wait at a collective.
struct CpuWarp {
    unsigned int live, arrived;
};

struct CpuBlockRunner {
#ifdef CPU_FAST_SWITCH
    void *scheduler;
#else
    ucontext_t scheduler;
#endif
    CpuFiber *fibers;
    CpuWarp *warps;
    CpuFiber *current;
    unsigned int at_barrier;    // threads waiting at __syncthreads()
    int stuck;                  // the block's threads wait for each other forever (the GPU would hang)
    // Threads met at SYNC()s of different lines, line and line2: 1 + 2 (line + CPU_LINES line2). Lines
    // past CPU_LINES - 1 read 0 (unknown): the code must fit an int (cpu_entry.h returns it negated;
    // engine/devices/cpu.py reads it back).
    int barrier_fault;
    size_t stack_stride;        // fiber stacks: CPU_FIBER_STACK each, a guard page below each (cpu_entry.h)
    dim3 block, block_dim, grid_dim;
    unsigned int launched_block;
    void (*body)(void);
};
static thread_local CpuBlockRunner cpu;

#define threadIdx (cpu.current->thread)
#define blockIdx (cpu.block)
#define blockDim (cpu.block_dim)
#define gridDim (cpu.grid_dim)

static inline unsigned int trace_launched_block() { return cpu.launched_block; }
enum { CPU_FIBER_STACK = 64 * 1024, CPU_WARP = 32, CPU_LINES = 16384 };
static constexpr int warpSize = CPU_WARP;

#ifdef CPU_FAST_SWITCH
// Back to the scheduler; returns when the scheduler resumes this fiber.
static inline void cpu_yield() { cpu_switch(&cpu.current->sp, cpu.scheduler); }

static void cpu_fiber_entry() {
    cpu.body();
    cpu.current->state = CPU_DONE;
    cpu_yield();  // never resumed
    __builtin_trap();
}

// A new fiber's stack as cpu_switch leaves a suspended one: MXCSR and x87 control word, six
// registers, then the address it "returns" to, cpu_fiber_entry, entered with the stack aligned as
// after a call.
static void cpu_fiber_init(CpuFiber *f, char *stack) {
    unsigned int mxcsr;
    unsigned short fpucw;
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fpucw));
    uintptr_t top = ((uintptr_t)(stack + CPU_FIBER_STACK)) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = 0;                          // the fake return address of cpu_fiber_entry
    *--sp = (void *)cpu_fiber_entry;
    for (int i = 0; i < 6; ++i) *--sp = 0;
    --sp;
    ((unsigned int *)sp)[0] = mxcsr;
    ((unsigned short *)sp)[2] = fpucw;
    f->sp = sp;
}

static inline void cpu_resume(CpuFiber *f) { cpu_switch(&cpu.scheduler, f->sp); }
#else
static inline void cpu_yield() { swapcontext(&cpu.current->context, &cpu.scheduler); }

static void cpu_fiber_entry() {
    cpu.body();
    cpu.current->state = CPU_DONE;  // uc_link then returns control to the scheduler
}

static void cpu_fiber_init(CpuFiber *f, char *stack) {
    getcontext(&f->context);
    f->context.uc_stack.ss_sp = stack;
    f->context.uc_stack.ss_size = CPU_FIBER_STACK;
    f->context.uc_link = &cpu.scheduler;
    makecontext(&f->context, cpu_fiber_entry, 0);
}

static inline void cpu_resume(CpuFiber *f) { swapcontext(&cpu.scheduler, &f->context); }
#endif

// A thread arrives at the block's barrier from the SYNC() of `line` (0: a bare __syncthreads()).
static inline void cpu_syncthreads(unsigned int line) {
    cpu.current->state = CPU_AT_BARRIER;
    cpu.current->barrier_line = line;
    ++cpu.at_barrier;
    cpu_yield();
}
static inline void __syncthreads() { cpu_syncthreads(0); }

// The lanes of warp w that wait at a collective with lane `from`: if every live lane of its mask
// has arrived, at the same one, the operation happens now, all at once, and they are ready again
// (true). Otherwise they wait on: lanes of the mask still running may yet arrive, and lanes waiting
// at another collective may yet come here once theirs is done; where no thread of the block can
// go on, cpu_run_block finds the block stuck.
static bool cpu_complete_collective(unsigned int w, unsigned int from) {
    unsigned int n = cpu.block_dim.x * cpu.block_dim.y * cpu.block_dim.z;
    CpuFiber *lanes = cpu.fibers + w * CPU_WARP;
    unsigned int count = n - w * CPU_WARP < CPU_WARP ? n - w * CPU_WARP : CPU_WARP;
    CpuWarp *warp = &cpu.warps[w];
    const CpuFiber *first = &lanes[from];
    unsigned int group = first->mask & warp->live;
    if (group & ~warp->arrived) return false;
    for (unsigned int t = 0; t < count; ++t) {
        if (!(first->mask >> t & 1)) continue;
        if (!(group >> t & 1)) {
            lanes[t].input = 0;      // returned: it names nothing
            continue;
        }
        // .aligned (ldmatrix, mma), or shfl.sync's "same qualifiers and same membermask": every lane
        // of the mask must be at the same operation
        if (lanes[t].collective != first->collective || lanes[t].tag != first->tag || lanes[t].mask != first->mask)
            return false;
    }
    first->collective(lanes, count, group);
    warp->arrived &= ~group;
    for (unsigned int t = 0; t < count; ++t)
        if (group >> t & 1) lanes[t].state = CPU_READY;
    return true;
}

// Lane `gone` of warp w returned: lanes waiting at a collective no longer wait for it.
static void cpu_lane_returned(unsigned int w, unsigned int gone) {
    CpuWarp *warp = &cpu.warps[w];
    warp->live &= ~(1u << gone);
    for (unsigned int t = 0; t < CPU_WARP && warp->arrived; ++t)
        if ((warp->arrived >> t & 1) && (cpu.fibers[w * CPU_WARP + t].mask >> gone & 1)) cpu_complete_collective(w, t);
}

// The calling thread arrives at a warp-collective operation (tag: which one, e.g. its source
// line) with its input and the lanes that take part (mask; the caller is always one); returns once
// they have all done it, its result in cpu.current->result.
static void cpu_warp_collective(CpuCollective collective, int tag, const void *input, unsigned int mask = ~0u) {
    CpuFiber *me = cpu.current;
    unsigned int t = (unsigned int)(me - cpu.fibers), w = t / CPU_WARP, lane = t % CPU_WARP;
    me->collective = collective;
    me->tag = tag;
    me->mask = mask | 1u << lane;
    me->input = input;
    me->state = CPU_AT_COLLECTIVE;
    cpu.warps[w].arrived |= 1u << lane;
    // The last to arrive completes it and runs on; the others wait to be made ready.
    if (!cpu_complete_collective(w, lane)) cpu_yield();
}

static void cpu_no_result(CpuFiber *, unsigned int, unsigned int) {}
// __syncwarp(mask): the mask's lanes wait for each other.
static inline void __syncwarp(unsigned int mask = 0xffffffffu) { cpu_warp_collective(cpu_no_result, -1, 0, mask); }

// The warp shuffles (shfl.sync), as the PTX ISA defines them: each lane reads `var` of lane j, where
// for lane l, with b its lane operand and c = ((32 - width) << 8) | clamp its width operand as CUDA's
// __shfl_*_sync build it (clamp 31, 0 for up), segmask = c[12:8]:
//   maxLane = (l & segmask) | (clamp & ~segmask)   minLane = l & segmask
//   idx  j = minLane | (b & ~segmask)   pval = j <= maxLane    (srcLane modulo width, in l's segment)
//   up   j = l - b                      pval = j >= maxLane    (maxLane: the segment's first lane)
//   down j = l + b                      pval = j <= maxLane    (the segment's last lane)
//   bfly j = l ^ b                      pval = j <= maxLane    (earlier segments readable, later not)
// and where !pval it reads its own var (j = l). A source lane outside the mask, or returned, gives
// 0 bits: the GPU leaves that value undefined.
enum CpuShflMode { CPU_SHFL_IDX, CPU_SHFL_UP, CPU_SHFL_DOWN, CPU_SHFL_BFLY };
struct CpuShflInput {
    unsigned long long bits;
    unsigned int b, c;
};

template <int MODE> static void cpu_shfl(CpuFiber *lanes, unsigned int count, unsigned int group) {
    for (unsigned int l = 0; l < count; ++l) {
        if (!(group >> l & 1)) continue;
        const CpuShflInput *in = (const CpuShflInput *)lanes[l].input;
        int b = (int)(in->b & 31), segmask = (int)((in->c >> 8) & 31), clamp = (int)(in->c & 31), lane = (int)l;
        int max_lane = (lane & segmask) | (clamp & ~segmask), min_lane = lane & segmask, j;
        bool pval;
        if (MODE == CPU_SHFL_IDX) { j = min_lane | (b & ~segmask); pval = j <= max_lane; }
        else if (MODE == CPU_SHFL_UP) { j = lane - b; pval = j >= max_lane; }
        else if (MODE == CPU_SHFL_DOWN) { j = lane + b; pval = j <= max_lane; }
        else { j = lane ^ b; pval = j <= max_lane; }
        if (!pval) j = lane;
        unsigned long long bits = 0;
        if (j >= 0 && j < (int)count && (group >> j & 1)) bits = ((const CpuShflInput *)lanes[j].input)->bits;
        memcpy(lanes[l].result, &bits, sizeof bits);
    }
}

template <int MODE, typename T> static inline T cpu_shfl_sync(unsigned int mask, T var, int b, unsigned int c) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 64 bits (int, float, double, __half2, ...)");
    CpuShflInput mine = {0, (unsigned int)b, c};
    memcpy(&mine.bits, &var, sizeof(T));
    cpu_warp_collective(cpu_shfl<MODE>, -2 - MODE, &mine, mask);
    T out;
    memcpy(&out, cpu.current->result, sizeof(T));
    return out;
}
template <typename T> static inline T __shfl_sync(unsigned int mask, T var, int src_lane, int width = CPU_WARP) {
    return cpu_shfl_sync<CPU_SHFL_IDX>(mask, var, src_lane, ((CPU_WARP - width) << 8) | 0x1f);
}
template <typename T> static inline T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = CPU_WARP) {
    return cpu_shfl_sync<CPU_SHFL_UP>(mask, var, (int)delta, (CPU_WARP - width) << 8);
}
template <typename T> static inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = CPU_WARP) {
    return cpu_shfl_sync<CPU_SHFL_DOWN>(mask, var, (int)delta, ((CPU_WARP - width) << 8) | 0x1f);
}
template <typename T> static inline T __shfl_xor_sync(unsigned int mask, T var, int lane_mask, int width = CPU_WARP) {
    return cpu_shfl_sync<CPU_SHFL_BFLY>(mask, var, lane_mask, ((CPU_WARP - width) << 8) | 0x1f);
}

// The warp votes (vote.sync): every lane of the mask receives the ballot of their predicates (and,
// for __all_sync, which lanes voted).
static void cpu_ballot(CpuFiber *lanes, unsigned int count, unsigned int group) {
    unsigned int ballot = 0;
    for (unsigned int l = 0; l < count; ++l)
        if ((group >> l & 1) && *(const int *)lanes[l].input) ballot |= 1u << l;
    for (unsigned int l = 0; l < count; ++l) {
        if (!(group >> l & 1)) continue;
        lanes[l].result[0] = ballot;
        lanes[l].result[1] = group;
    }
}
static inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
    int mine = predicate != 0;
    cpu_warp_collective(cpu_ballot, -6, &mine, mask);
    return cpu.current->result[0];
}
static inline int __any_sync(unsigned int mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
static inline int __all_sync(unsigned int mask, int predicate) {
    __ballot_sync(mask, predicate);
    return cpu.current->result[0] == cpu.current->result[1];
}

// The tensor cores' warp instructions, as warp collectives: ldmatrix (trace.cuh's trace_load_matrix
// records each lane's row, then meets its warp in cpu_ldmatrix) and mma.sync (MMA_16816).

// Element e (16 bits, as memory holds it) of the row lane s named for an ldmatrix; 0 for a row
// nobody valid named.
static unsigned int cpu_named_element(CpuFiber *lanes, unsigned int count, unsigned int s, unsigned int e) {
    const char *row = s < count ? (const char *)lanes[s].input : 0;
    unsigned short element = 0;
    if (row) memcpy(&element, row + 2 * e, 2);
    return element;
}

// What ldmatrix hands each lane, computed by the last lane of the warp to arrive
// (cpu_warp_collective) from the rows all lanes named. Row j of matrix m is the row lane 8m + j
// named; lane t receives in regs[m] two elements of matrix m, the first in the low 16 bits:
//   plain   elements 2 (t % 4) and 2 (t % 4) + 1 of row t / 4 (a 32-bit word of the row, as memory
//           holds it);
//   .trans  element t / 4 of rows 2 (t % 4) and 2 (t % 4) + 1: the same places of the transposed
//           matrix (PTX ISA: .trans loads the matrix "in column-major format").
template <int N, bool TRANS> static void cpu_ldmatrix(CpuFiber *lanes, unsigned int count, unsigned int) {
    for (unsigned int t = 0; t < count; ++t) {
        for (unsigned int m = 0; m < N; ++m) {
            unsigned int i = t / 4, j = 2 * (t % 4), word = 0;   // (i, j) and (i, j + 1) of the matrix
            for (unsigned int h = 0; h < 2; ++h) {
                unsigned int element = TRANS ? cpu_named_element(lanes, count, 8 * m + j + h, i)
                                             : cpu_named_element(lanes, count, 8 * m + i, j + h);
                word |= element << (16 * h);
            }
            lanes[t].result[m] = word;
        }
    }
}

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32, done by the last lane of the warp to arrive
// from every lane's fragments. Which lane holds which element is the PTX ISA's table ("Matrix
// Fragments for mma.m16n8k16 with floating point type"; engine/metrics/fragments.py has it too),
// with g = lane / 4 and q = lane % 4, each register's first element in its low 16 bits:
//   a[0] A(g, 2q .. 2q + 1)   a[1] A(g + 8, 2q ..)   a[2] A(g, 2q + 8 ..)   a[3] A(g + 8, 2q + 8 ..)
//   b[0] B(2q .. 2q + 1, g)   b[1] B(2q + 8 .., g)
//   d[0], d[1] D(g, 2q), D(g, 2q + 1)   d[2], d[3] D(g + 8, 2q), D(g + 8, 2q + 1)
// Each new d is d plus the 16 products, summed in double (where each product of two halves is
// exact) and rounded once to float. The tensor core's own order and rounding of the sum are not
// documented and may differ in the last bits: results are compared within a tolerance; records do
// not depend on them.
struct CpuMmaOperands {
    const unsigned int *a, *b;
    const float *d;
};

static double cpu_half_of(unsigned int word, unsigned int h) {
    return (double)__half2float(__ushort_as_half((unsigned short)(word >> (16 * h))));
}

static void cpu_mma_16816(CpuFiber *lanes, unsigned int count, unsigned int) {
    double a[16][16] = {}, b[16][8] = {};   // a lane that never arrived holds zeros
    for (unsigned int t = 0; t < count; ++t) {
        const CpuMmaOperands *in = (const CpuMmaOperands *)lanes[t].input;
        if (!in) continue;
        unsigned int g = t / 4, q = t % 4;
        for (unsigned int h = 0; h < 2; ++h) {
            for (unsigned int r = 0; r < 4; ++r) a[g + 8 * (r % 2)][2 * q + h + 8 * (r / 2)] = cpu_half_of(in->a[r], h);
            for (unsigned int r = 0; r < 2; ++r) b[2 * q + h + 8 * r][g] = cpu_half_of(in->b[r], h);
        }
    }
    for (unsigned int t = 0; t < count; ++t) {
        const CpuMmaOperands *in = (const CpuMmaOperands *)lanes[t].input;
        if (!in) continue;
        for (unsigned int i = 0; i < 4; ++i) {
            unsigned int row = t / 4 + 8 * (i / 2), col = 2 * (t % 4) + i % 2;
            double sum = in->d[i];
            for (unsigned int k = 0; k < 16; ++k) sum += a[row][k] * b[k][col];
            lanes[t].result[i] = cpu_float_bits((float)sum);
        }
    }
}

// d += a b on the warp's fragments (trace.cuh's MMA_16816 on the CPU): a warp collective (its tag:
// the source line) with no memory access, so nothing to record.
static inline void cpu_mma_sync_16816(float (&d)[4], const unsigned int (&a)[4], const unsigned int (&b)[2], int line) {
    CpuMmaOperands mine = {a, b, d};
    cpu_warp_collective(cpu_mma_16816, line, &mine);
    for (int i = 0; i < 4; ++i) d[i] = cpu_bits_float(cpu.current->result[i]);
}

// Fiber t's stack: CPU_FIBER_STACK bytes above a guard page (cpu_entry.h maps them so).
static inline char *cpu_stack(char *stacks, unsigned int t) {
    return stacks + (size_t)t * cpu.stack_stride + (cpu.stack_stride - CPU_FIBER_STACK);
}

// The barrier opens for every live thread of the block, all waiting there: a fault (cpu.barrier_fault)
// unless all came from the same SYNC(). CUDA allows __syncthreads() in conditional code only where the
// condition is the same across the whole block: elsewhere what a GPU does is undefined (one since
// compute capability 7.0 lets threads of different barriers through together), and the trace would
// show one way of it as if it were the kernel's. Threads that returned are no fault: the barrier waits
// for the threads that have not exited (the CUDA programming guide, compute capability 7.x), so
// `if (row >= M) return;` before a tiled loop's SYNC()s is a kernel the GPU runs as written.
static void cpu_open_barrier(unsigned int n) {
    const CpuFiber *first = 0;
    for (unsigned int t = 0; t < n; ++t) {
        CpuFiber *f = &cpu.fibers[t];
        if (f->state != CPU_AT_BARRIER) continue;
        if (!first) first = f;
        if (f->barrier_line != first->barrier_line && !cpu.barrier_fault) {
            unsigned int a = first->barrier_line < CPU_LINES ? first->barrier_line : 0;
            unsigned int b = f->barrier_line < CPU_LINES ? f->barrier_line : 0;
            cpu.barrier_fault = 1 + 2 * (int)(a + CPU_LINES * b);
        }
        f->state = CPU_READY;
    }
    cpu.at_barrier = 0;
}

// Runs every thread of the current block to completion: round after round it resumes the threads
// that are ready; when none is, either every live thread waits at the barrier (it opens) or the
// block is stuck (cpu.stuck: threads wait at collectives their warp never completes). A barrier
// fault stops the block where it is found.
static void cpu_run_block(char *stacks) {
    unsigned int n = cpu.block_dim.x * cpu.block_dim.y * cpu.block_dim.z;
    for (unsigned int t = 0; t < n; ++t) {
        CpuFiber *f = &cpu.fibers[t];
        f->thread = uint3(t % cpu.block_dim.x, (t / cpu.block_dim.x) % cpu.block_dim.y,
                          t / (cpu.block_dim.x * cpu.block_dim.y));
        f->state = CPU_READY;
        cpu_fiber_init(f, cpu_stack(stacks, t));
    }
    for (unsigned int w = 0; w * CPU_WARP < n; ++w) {
        unsigned int lanes = n - w * CPU_WARP < CPU_WARP ? n - w * CPU_WARP : CPU_WARP;
        cpu.warps[w].live = lanes == CPU_WARP ? ~0u : (1u << lanes) - 1;
        cpu.warps[w].arrived = 0;
    }
    cpu.at_barrier = 0;
    cpu.stuck = 0;
    cpu.barrier_fault = 0;
    unsigned int alive = n;
    while (alive) {
        bool ran = false;
        for (unsigned int t = 0; t < n && !cpu.stuck; ++t) {
            CpuFiber *f = &cpu.fibers[t];
            if (f->state != CPU_READY) continue;
            cpu.current = f;
            cpu_resume(f);
            ran = true;
            if (f->state != CPU_DONE) continue;
            --alive;
            // A lane that returns no longer holds up its warp's collectives.
            cpu_lane_returned(t / CPU_WARP, t % CPU_WARP);
        }
        if (cpu.stuck) return;
        if (alive && cpu.at_barrier == alive) {        // everyone left is at the barrier: it opens
            cpu_open_barrier(n);
            if (cpu.barrier_fault) return;
        } else if (alive && !ran) {
            cpu.stuck = 1;
            return;
        }
    }
}
