"""Turns a request (kernel, problem, which blocks) into launches: geometry, buffers, record budget."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from engine.devices import line
from engine.errors import EngineError
from engine.kernels import registry, sources
from engine.kernels.problem import MAX_BLOCK_THREADS, Problem, pair, whole
from engine.tracing.records import RAW_DTYPE, STORED_BYTES

RECORD_CAP_ENV = "MATMUL_EXPLORER_RECORD_CAP"
# None: the cap is read from $MATMUL_EXPLORER_RECORD_CAP when a plan is made (record_cap()), so a
# bad value is a one-line error of that request, not an import that fails.
DEFAULT_RECORD_CAP = None


# One block of any FP32 ladder rung at 4096^3 with its default parameters fits (tests/test_cli.py
# checks it against the registry's bounds, up to 22 M), and a trace this size stays under 1 GB
# (records.STORED_BYTES a record).
RECORD_CAP = 30_000_000


def record_cap() -> int:
    """$MATMUL_EXPLORER_RECORD_CAP (default RECORD_CAP): a whole number, also written like 1e7."""
    raw = os.environ.get(RECORD_CAP_ENV, "").strip()
    if not raw:
        return RECORD_CAP
    return parse_cap(raw, RECORD_CAP_ENV)


def parse_cap(raw: str, name: str = "--cap") -> int:
    """A record cap as written (by name: the option or variable it came from): a whole number of at
    least 1, also written like 1e7. (The variable's 0 and --cap 0 had been refused in two wordings.)"""
    raw = raw.strip()
    try:   # digits as an exact integer; 1e7 and the like through float
        value = float(raw) if not raw.lstrip("+-").isdigit() else int(raw)
    except ValueError:
        value = None
    if value is None or (isinstance(value, float) and not value.is_integer()) or not abs(value) < 2**63:
        raise EngineError(f"{name} must be a whole number of records like 10000000 or 1e7, got {raw!r}")
    if value < 1:
        raise EngineError(f"{name} must be at least 1 record, got {raw}")
    return int(value)


@dataclass
class LaunchPlan:
    file: str
    kernel: str
    params: tuple[tuple[str, str], ...]
    grid: tuple[int, int]
    block: tuple[int, int]
    blocks: np.ndarray      # (n, 2) uint32: the blocks to run, in trace order
    traced: bool            # False: run for its result only (a preparation step outside the selection)
    defines: Mapping[str, int]   # the kernel's compile-time parameters (its build takes those its source uses)
    # The most records a thread may make, as its TRACE_RECORDS declares (None: not declared, a test's
    # own kernel): what the host memory is reserved by, so a thread past it is refused (execute.py).
    records_bound: int | None = None

    @property
    def threads(self) -> int:
        return len(self.blocks) * self.block[0] * self.block[1]


@dataclass
class TracePlan:
    kernel: str
    problem: Problem
    launches: list[LaunchPlan]
    shapes: dict[str, tuple[int, int]]
    cap: int
    estimate: int           # upper bound of the records, from the registry's per-thread bounds
    inputs: registry.Precision = registry.Precision.FP32   # how A and B are stored (array_dtype)
    # Whether the run checks the outputs its blocks stored against float64 (a trace made only to be
    # counted, engine/metrics/long_k.py, skips it: a matrix product per trace)
    check_outputs: bool = True


# The global arrays a kernel may name: the problem's A, B and C, B transposed (BT, the transposing
# pipeline's), and A and B with their rows padded to a multiple of 64 elements (AP and BP, which
# wgmma_padded's first launch writes: rows of 128-byte multiples, as TMA copies them fastest), and
# CP, split_k's SPLITK partial products of C stacked (SPLITK x M rows of N), which its second launch adds,
# and WS, wgmma_stream_k's hand-over of partial sums between blocks: a row per block (SMS of them),
# BM x BN sums and 32 floats of flags (cuda/wgmma_persistent.cuh's kWsRow).
GLOBAL_ARRAYS = ("A", "B", "C", "BT", "AP", "BP", "CP", "WS")


def padded(n: int) -> int:
    """n rounded up to a multiple of 64 (cuda/pad_ab.cu's): the row length of AP and BP."""
    return -(-n // 64) * 64


def global_shapes(p: Problem) -> dict[str, tuple[int, int]]:
    return {"A": (p.m, p.k), "B": (p.k, p.n), "C": (p.m, p.n), "BT": (p.n, p.k),
            "AP": (p.m, padded(p.k)), "BP": (p.k, padded(p.n)), "CP": (p.params.get("SPLITK", 1) * p.m, p.n),
            "WS": (p.params.get("SMS", 0), p.params.get("BM", 0) * p.params.get("BN", 0) + 32)}


# bfloat16 has no numpy type: its arrays are kept as their 16 bits, as cuda_bf16.h stores them.
BF16_BITS = np.dtype("<u2")
_STORAGE = {registry.Precision.FP32: np.dtype(np.float32), registry.Precision.TF32: np.dtype(np.float32),
            registry.Precision.FP16: np.dtype(np.float16), registry.Precision.BF16: BF16_BITS}
# The bits of a quiet NaN in each storage type: outputs start as NaN, so an element nothing wrote
# cannot pass the check.
NAN_BITS = {np.dtype(np.float32): 0x7FC00000, np.dtype(np.float16): 0x7E00, BF16_BITS: 0x7FC0}


def array_dtype(name: str, inputs: registry.Precision = registry.Precision.FP32) -> np.dtype:
    """The element type of a global array (GLOBAL_ARRAYS) in its buffers, on the host and on the GPU,
    for a kernel whose inputs are `inputs` (its registry entry's, checked against its source): A and
    B (and BT, B transposed, and AP and BP, A and B padded) in that precision, C in float32 (every kernel here accumulates and
    stores FP32, its partial products CP and WS too). Said here and nowhere else."""
    return np.dtype(np.float32) if name in ("C", "CP", "WS") else _STORAGE[registry.Precision(inputs)]


def to_storage(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Values (float32) as an array of that storage type, rounded to nearest even as the GPU's
    __float2half and __float2bfloat16 round."""
    if dtype != BF16_BITS:
        return np.ascontiguousarray(values, dtype=dtype)
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(BF16_BITS)


def array_bytes(name: str, shape: tuple[int, int], inputs: registry.Precision = registry.Precision.FP32) -> int:
    rows, cols = shape
    return array_dtype(name, inputs).itemsize * rows * cols


def source_inputs(src: sources.KernelSource) -> registry.Precision:
    """The input precision a source's A declares (float: FP32)."""
    element = next((a.element for a in src.arrays if a.name == "A"), "float")
    return next((p for p, types in registry.INPUT_TYPES.items() if element in types), registry.Precision.FP32)


def size_arguments(p: Problem) -> dict[str, int]:
    """The int parameters of a kernel's signature, by name (the only ones a source may have)."""
    return dict(zip(sources.SIZE_PARAMETERS, (p.m, p.n, p.k), strict=True))


def all_blocks(grid: tuple[int, int]) -> np.ndarray:
    gx, gy = grid
    ys, xs = np.divmod(np.arange(gx * gy, dtype=np.uint32), gx)
    return np.stack([xs, ys], axis=1)


def parse_blocks(text: str | None) -> list[tuple[int, int]] | None:
    """'0,0 3,1' -> [(0, 0), (3, 1)]; None or 'all' -> None (every block)."""
    if text is None or text.strip().lower() in ("", "all"):
        return None
    out = []
    for item in text.replace(";", " ").split():
        try:
            x, y = item.split(",")
            out.append((int(x), int(y)))
        except ValueError:
            raise EngineError(f"blocks are given as x,y pairs like '0,0 3,1', got {item!r}") from None
    return out


def make_plan(kernel: str, problem: Problem, blocks: list[tuple[int, int]] | None = None,
              cap: int | None = DEFAULT_RECORD_CAP) -> TracePlan:
    return plan_for(registry.get(kernel), problem, blocks, cap)


def plan_for(spec, problem: Problem, blocks: list[tuple[int, int]] | None = None,
             cap: int | None = DEFAULT_RECORD_CAP) -> TracePlan:
    """make_plan for an entry that need not be in the catalog (a Playground kernel's)."""
    kernel = spec.name
    cap = record_cap() if cap is None else whole("the record cap", cap)
    if cap < 1:   # --cap -5 was taken, and every trace then "over the cap of -5"
        raise EngineError(f"the record cap must be at least 1, got {cap:,}")
    if not spec.traceable:
        raise EngineError(f"{kernel} is not one of the explorer's CUDA sources ({spec.kind}): it has no trace")
    problem = registry.bind(spec, problem)
    check_geometry(spec, problem)
    runs = spec.launches_for(problem)
    last = runs[-1]
    main_blocks = all_blocks(last.grid(problem)) if blocks is None else _chosen_blocks(blocks, last.grid(problem), problem)
    launches = []
    for launch in runs:
        main = launch is last
        if main:
            chosen = main_blocks
        elif blocks is not None and launch.prepares is not None:
            # Only the preparation blocks whose output the traced blocks read: a one-block trace
            # does one block's work, not a transpose of all of B.
            chosen = launch.prepares(problem, main_blocks)
        else:
            chosen = all_blocks(launch.grid(problem))
        src = sources.load(launch.file)
        launches.append(LaunchPlan(launch.file, src.name, src.params, launch.grid(problem), launch.block(problem),
                                   chosen, traced=main or blocks is None, defines=problem.params,
                                   records_bound=launch.records_per_thread(problem)))
    shapes = array_shapes(launches, problem)
    estimate = sum(lp.threads * launch.records_per_thread(problem)
                   for lp, launch in zip(launches, runs) if lp.traced)
    if estimate > cap:
        # An upper bound, every thread of every traced block counted at the most a thread records: say
        # so, since a grid of one block (1 x 1 x 65535) is not helped by tracing fewer blocks.
        traced = [(lp.threads, launch.records_per_thread(problem)) for lp, launch in zip(launches, runs) if lp.traced]
        bound = f" ({traced[0][0]:,} threads of up to {traced[0][1]:,} each)" if len(traced) == 1 else ""
        fewer = "fewer blocks or " if sum(len(lp.blocks) for lp in launches if lp.traced) > 1 else ""
        raise EngineError(
            f"this trace would hold up to {estimate:,} records{bound}, over the cap of {cap:,}: "
            f"trace {fewer}a smaller size")
    return TracePlan(kernel, problem, launches, shapes, cap, estimate, spec.inputs)


# What a GPU launches (the CUDA programming guide's limits for compute capability 9.0): a block of 1 to
# MAX_BLOCK_THREADS threads, a grid of 1 to 2^31 - 1 blocks across and 1 to 65,535 down, and shared
# memory of at most 48 KB declared statically (__shared__ arrays of fixed size) and 227 KB in all.
MAX_GRID = (2**31 - 1, 65535)
MAX_STATIC_SHARED = 48 * 1024
MAX_SHARED = 227 * 1024


def check_geometry(spec, problem: Problem) -> None:
    """Refuses, in one line, a launch of the kernel at this problem that no GPU makes. A block of no
    threads had failed as "cannot reshape array of size 0", one of 2,048 had been traced and shown
    green, and a grid of no blocks left nothing to trace (the Playground's block pickers crashed)."""
    for launch in spec.launches_for(problem):
        src = sources.load(launch.file).name   # (the name in messages: a Playground kernel's is the student's)
        (bx, by), (gx, gy) = launch.block(problem), launch.grid(problem)
        if bx < 1 or by < 1 or bx * by > MAX_BLOCK_THREADS:
            raise EngineError(f"{src}'s LAUNCH_BLOCK is {bx} x {by} threads at these parameters: a block has 1 to "
                              f"{MAX_BLOCK_THREADS:,}")
        if gx < 1 or gy < 1:
            raise EngineError(f"{src} launches a grid of {gx} x {gy} blocks at {problem.describe()}: no block runs, so "
                              "there is nothing to trace (see its LAUNCH_GRID)")
        if gx > MAX_GRID[0] or gy > MAX_GRID[1]:
            raise EngineError(f"{src} launches a grid of {gx:,} x {gy:,} blocks at {problem.describe()}: a GPU "
                              f"launches at most {MAX_GRID[0]:,} across and {MAX_GRID[1]:,} down (see its LAUNCH_GRID)")
        # nvcc refuses the first (ptxas: "uses too much shared data") and the launch fails on the second,
        # while the CPU tracer, which has no such limit, had traced both and shown them green.
        try:
            fixed = sources.load(launch.file).static_shared_bytes(problem.params)
        except ValueError as exc:   # a size the reader cannot compute (sources.shared_shape says why)
            raise EngineError(str(exc)) from None
        if fixed > MAX_STATIC_SHARED:
            raise EngineError(f"{src}'s __shared__ arrays take {fixed / 1024:,.1f} KB at these parameters: a block "
                              f"declares at most {MAX_STATIC_SHARED // 1024} KB of them (more must be dynamic shared "
                              "memory: extern __shared__, sized by LAUNCH_SHARED)")
        if fixed + launch.shared_bytes(problem) > MAX_SHARED:
            raise EngineError(f"{src} takes {(fixed + launch.shared_bytes(problem)) / 1024:,.1f} KB of shared memory "
                              f"at these parameters: a block has at most {MAX_SHARED // 1024} KB")


def _chosen_blocks(blocks: list[tuple[int, int]], grid: tuple[int, int], problem: Problem) -> np.ndarray:
    if isinstance(blocks, (str, bytes)):   # a string's characters had been read as the blocks
        raise EngineError(f"blocks are a list of (x, y) pairs like [(0, 0), (3, 1)], got {blocks!r:.40}")
    blocks = [tuple(whole(f"a block's {axis}", v) for axis, v in zip("xy", pair("a block", b, "(3, 1)"))) for b in blocks]
    # Checked as Python integers first: a coordinate past 64 bits cannot even be a numpy index.
    bad = [f"{x},{y}" for x, y in blocks if not (0 <= x < grid[0] and 0 <= y < grid[1])]
    if bad or not blocks:
        raise EngineError(f"block {bad[0] if bad else '(none)'} is outside the grid of "
                          f"{grid[0]}x{grid[1]} blocks for {problem.describe()}")
    # Each block once, in the order asked: a block named twice was traced twice, every record and
    # metric of it doubled (128 outputs checked of an 8 x 8 C).
    once = list(dict.fromkeys((int(x), int(y)) for x, y in blocks))
    return np.array(once, dtype=np.uint32).reshape(-1, 2)


def buffer_bytes(problem: Problem, kernel: str) -> int:
    """Device memory a run needs: A, B, C, and BT, AP, BP, CP or WS where its launches name them."""
    spec = registry.get(kernel)
    names = {name.removesuffix("_map") for launch in spec.launches_for(problem) for _, name in sources.load(launch.file).params
             if name.removesuffix("_map") in GLOBAL_ARRAYS} or {"A", "B", "C"}   # library kernels: A, B and C
    shapes = global_shapes(problem)
    return sum(array_bytes(n, shapes[n], spec.inputs) for n in names)


# The longest row a trace record can place an element in: col is 16 bits.
ROW_LENGTH_LIMIT = 1 << 16


def array_shapes(launches: list[LaunchPlan], problem: Problem) -> dict[str, tuple[int, int]]:
    """(rows, cols) of every array the launches touch: the problem's matrices and each kernel's
    shared arrays (a 1-D one is one row)."""
    shapes = global_shapes(problem)
    used = set()   # the arrays the launches have (global_shapes names every kernel's: WS is wgmma_stream_k's)
    for lp in launches:
        src = sources.load(lp.file)
        used |= {a.name for a in src.arrays}
        for name in src.shared:
            shapes[name] = src.shared_shape(name, problem.params)
    for name in sorted(used & shapes.keys()):
        if shapes[name][1] > ROW_LENGTH_LIMIT:   # a record's col is 16 bits (records.TRACE_DTYPE)
            raise EngineError(f"{name} has rows of {shapes[name][1]:,} elements: a trace records rows of up to "
                              f"{ROW_LENGTH_LIMIT:,}")
    return shapes


def single_launch_plan(file: str, problem: Problem, grid: tuple[int, int], block: tuple[int, int],
                       cap: int | None = DEFAULT_RECORD_CAP) -> TracePlan:
    """A plan for one source outside the catalog (the tests' own kernels)."""
    src = sources.load(file)
    lp = LaunchPlan(file, src.name, src.params, grid, block, all_blocks(grid), True, problem.params)
    return TracePlan(src.name, problem, [lp], array_shapes([lp], problem), record_cap() if cap is None else cap, 0,
                     source_inputs(src))


def format_bytes(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{-(-n // 2**10)} KiB"


HOST_MEMORY_ENV = "MATMUL_EXPLORER_HOST_MEMORY"
# Per record: the 16-byte raw record the kernel writes, then the 32-byte assembled one.
RECORD_HOST_BYTES = RAW_DTYPE.itemsize + STORED_BYTES


def host_memory_limit() -> int:
    """$MATMUL_EXPLORER_HOST_MEMORY (bytes, or like 8GiB), by default the smaller of 4 GiB and half
    the machine's memory: one request must not take a classroom server's memory from the others."""
    raw = os.environ.get(HOST_MEMORY_ENV, "").strip()
    return line.parse_size(HOST_MEMORY_ENV, raw) if raw else min(4 * 2**30, line.machine_memory() // 2)


def host_bytes(plan: TracePlan) -> dict[str, int]:
    """What a run holds in host memory, by part: the inputs A and B (made whole, from the seed), the
    outputs the launches store (their traced blocks' share: output pages nothing writes are never
    touched), the trace records (raw, then assembled). On the GPU the outputs live on the device,
    so there it is an upper bound."""
    p = plan.problem
    shapes = global_shapes(p)
    parts = {name: array_bytes(name, shapes[name], plan.inputs) for name in ("A", "B")}
    for lp in plan.launches:
        share = len(lp.blocks) / (lp.grid[0] * lp.grid[1])
        for site in sources.load(lp.file).sites:
            if site.space == "global" and site.op == "store":
                whole = array_bytes(site.array, shapes[site.array], plan.inputs)
                parts[site.array] = max(parts.get(site.array, 0), int(whole * share))
    parts["records"] = plan.estimate * RECORD_HOST_BYTES
    return parts


# A record's offset is 32 bits (records.py): a byte offset past 4 GiB would wrap round.
MAX_TRACED_ARRAY_BYTES = 2**32


def check_fits_host(plan: TracePlan) -> None:
    """Refuses, before anything is allocated, a run over the host memory limit, with the estimate, or
    one with a traced array too large for a record's offset."""
    shapes = global_shapes(plan.problem)
    for lp in (lp for lp in plan.launches if lp.traced):   # only traced launches' records hold offsets
        for array in dict.fromkeys(site.array for site in sources.load(lp.file).sites if site.space == "global"):
            size = array_bytes(array, shapes[array], plan.inputs)
            if size > MAX_TRACED_ARRAY_BYTES:
                raise EngineError(f"{plan.problem.describe()}: {array} is {size:,} bytes, over the "
                                  f"{MAX_TRACED_ARRAY_BYTES:,} (4 GiB) a trace's byte offsets reach; trace a smaller size")
    parts = host_bytes(plan)
    need, limit = sum(parts.values()), host_memory_limit()
    if need > limit:
        what = ", ".join(f"{k} {format_bytes(v)}" for k, v in parts.items() if v)
        raise EngineError(f"{plan.problem.describe()} needs {format_bytes(need)} of host memory ({what}); the limit "
                          f"is {format_bytes(limit)} ({HOST_MEMORY_ENV}): trace a smaller size")


def check_fits_gpu(problem: Problem, kernel: str, status) -> None:
    """Refuses, with a one-line reason, a run whose matrices do not fit the GPU's free memory."""
    need = buffer_bytes(problem, kernel)
    if need > status.free_bytes:
        raise EngineError(f"{problem.describe()} needs {format_bytes(need)} of GPU memory for its matrices; "
                          f"{format_bytes(status.free_bytes)} is free on the {status.name}")


def host_need(kernel: str, problem: Problem, blocks: list[tuple[int, int]] | None = None) -> int:
    """The host bytes a trace of these blocks would take (host_bytes, summed): what it reserves of
    the server's memory budget (engine/devices/line.py) before it starts. Nothing runs."""
    return host_need_of(make_plan(kernel, problem, blocks))


def host_need_of(plan: TracePlan) -> int:
    return sum(host_bytes(plan).values())
