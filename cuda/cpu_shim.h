// cpu_shim.h: lets a kernel from cuda/ compile as host C++ and run on the CPU, for traces on
// machines without an NVIDIA GPU. Included before the kernel, with MATMUL_CPU and MATMUL_TRACE set.
//
// Each CUDA thread of a block runs as a fiber (ucontext). __syncthreads() switches back to the
// scheduler; once every live thread of the block has reached the barrier (or returned), the next
// round resumes them all, which is the barrier's meaning on the GPU. Blocks run one after another:
// they never talk to each other in these kernels. State is thread_local, so several host threads
// (several app sessions) can trace at the same time.
#pragma once
#include <stdlib.h>
#include <stdint.h>
#include <ucontext.h>

struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef dim3 uint3;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static thread_local
#define TRACE_FN static inline
#define TRACE_GLOBAL static thread_local

struct CpuFiber {
    ucontext_t context;
    uint3 thread;
    int done;
};

struct CpuBlockRunner {
    ucontext_t scheduler;
    CpuFiber *fibers;
    CpuFiber *current;
    dim3 block, block_dim, grid_dim;
    unsigned int launched_block;
    void (*body)(void);
};
static thread_local CpuBlockRunner cpu;

#define threadIdx (cpu.current->thread)
#define blockIdx (cpu.block)
#define blockDim (cpu.block_dim)
#define gridDim (cpu.grid_dim)

static inline void __syncthreads() { swapcontext(&cpu.current->context, &cpu.scheduler); }
static inline unsigned int trace_launched_block() { return cpu.launched_block; }

static void cpu_fiber_entry() {
    cpu.body();
    cpu.current->done = 1;  // uc_link then returns control to the scheduler
}

enum { CPU_FIBER_STACK = 64 * 1024 };

// Runs every thread of the current block to completion, barrier round by barrier round.
static void cpu_run_block(char *stacks) {
    unsigned int n = cpu.block_dim.x * cpu.block_dim.y * cpu.block_dim.z;
    for (unsigned int t = 0; t < n; ++t) {
        CpuFiber *f = &cpu.fibers[t];
        f->thread = uint3(t % cpu.block_dim.x, (t / cpu.block_dim.x) % cpu.block_dim.y,
                          t / (cpu.block_dim.x * cpu.block_dim.y));
        f->done = 0;
        getcontext(&f->context);
        f->context.uc_stack.ss_sp = stacks + (size_t)t * CPU_FIBER_STACK;
        f->context.uc_stack.ss_size = CPU_FIBER_STACK;
        f->context.uc_link = &cpu.scheduler;
        makecontext(&f->context, cpu_fiber_entry, 0);
    }
    unsigned int alive = n;
    while (alive) {
        for (unsigned int t = 0; t < n; ++t) {
            CpuFiber *f = &cpu.fibers[t];
            if (f->done) continue;
            cpu.current = f;
            swapcontext(&cpu.scheduler, &f->context);
            if (f->done) --alive;
        }
    }
}
