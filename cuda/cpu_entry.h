// cpu_entry.h: the CPU tracer's C entry point. Included after the kernel source and after
// CPU_KERNEL_CALL, the engine-written line that calls the kernel with its arguments from cpu_args.
#pragma once

struct CpuArgs {
    void *ptrs[8];
    int ints[8];
};
static thread_local CpuArgs cpu_args;

static void cpu_body(void) { CPU_KERNEL_CALL; }

// The fibers' stacks, each CPU_FIBER_STACK bytes above a page no access may touch: a thread whose
// stack overflows (local arrays past what the build's -Wframe-larger-than= lets one function have,
// or deep calls) faults at once in its guard page instead of writing over its neighbour's stack or
// the heap below (-fstack-clash-protection makes a large frame touch every page it takes, so it
// cannot step over the guard). The mapping is made once per call and reused by every block; its
// pages cost memory only where a fiber touches them, as malloc's did.
static char *cpu_map_stacks(unsigned int n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (page < 4096 || CPU_FIBER_STACK % page) page = 4096;
    cpu.stack_stride = CPU_FIBER_STACK + page;
    void *p = mmap(0, (size_t)n * cpu.stack_stride, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) return 0;
    for (unsigned int t = 0; t < n; ++t) {
        if (mprotect((char *)p + (size_t)t * cpu.stack_stride, page, PROT_NONE)) {
            munmap(p, (size_t)n * cpu.stack_stride);
            return 0;
        }
    }
    return (char *)p;
}

// Runs the traced blocks. Returns 0, or 1 + the id of the array an access fell outside of
// (1 + TRACE_ARRAY_COUNT + id: a misaligned vector access), -1 when memory for the fibers could not
// be had, -2 when a block's threads waited for each other forever (cpu_shim.h cpu.stuck), or
// -2 - cpu.barrier_fault (-3 and below) when threads met at SYNC()s of different lines.
extern "C" int cpu_trace_run(unsigned int block_x, unsigned int block_y, unsigned int grid_x,
                             unsigned int grid_y, const unsigned int *block_map, unsigned int blocks,
                             unsigned int *counts, unsigned int *epochs,
                             const unsigned long long *offsets, void *records,
                             unsigned int *ordinals, void *const *ptrs,
                             const int *ints, const unsigned long long *bounds,
                             const unsigned long long *bases, unsigned int *fault_at) {
    for (int i = 0; i < 8; ++i) {
        cpu_args.ptrs[i] = ptrs[i];
        cpu_args.ints[i] = ints[i];
    }
    for (int a = 0; a < TRACE_ARRAY_COUNT; ++a) {
        trace_bounds[a] = bounds[a];
        trace_bases[a] = (const char *)bases[a];
    }
    trace_counts = counts;
    trace_epochs = epochs;
    trace_offsets = offsets;
    trace_records = (TraceRecord *)records;
    trace_ordinals = ordinals;
    trace_fault = 0;
    unsigned int n = block_x * block_y;
    char *stacks = cpu_map_stacks(n);
    cpu.fibers = (CpuFiber *)malloc(n * sizeof(CpuFiber));
    cpu.warps = (CpuWarp *)malloc((n + CPU_WARP - 1) / CPU_WARP * sizeof(CpuWarp));
    if (!stacks || !cpu.fibers || !cpu.warps) {
        if (stacks) munmap(stacks, (size_t)n * cpu.stack_stride);
        free(cpu.fibers);
        free(cpu.warps);
        return -1;
    }
    cpu.block_dim = dim3(block_x, block_y, 1);
    cpu.grid_dim = dim3(grid_x, grid_y, 1);
    cpu.body = cpu_body;
    int stuck = 0, barrier = 0;
    for (unsigned int j = 0; j < blocks && !trace_fault && !stuck && !barrier; ++j) {
        cpu.launched_block = j;
        cpu.block = dim3(block_map[2 * j], block_map[2 * j + 1], 0);
        cpu_run_block(stacks);
        stuck = cpu.stuck;
        barrier = cpu.barrier_fault;
    }
    munmap(stacks, (size_t)n * cpu.stack_stride);
    free(cpu.fibers);
    free(cpu.warps);
    for (int i = 0; i < 5; ++i) fault_at[i] = trace_fault_at[i];   // (the fault's line, thread and block)
    return trace_fault ? trace_fault : stuck ? -2 : barrier ? -2 - barrier : 0;
}
