"""The kernel catalog: the one list of kernels that the pages, benchmarks, tests and README read,
and the contract every entry keeps (checked when this module is imported, by _check).

Each entry says where its source lives (cuda/), which source documents it comes from (`seeds`: ids
of engine/kernels/documents.py, whose titles are what users read), the lesson it teaches, and:
- its compile-time parameters by name, with their allowed values (`params`, `defaults`) and rules
  between them or on the sizes (`rules`); each name is a macro its source uses, set with -D;
- its kind (Kind): CUDA kernels run from cuda/ sources and can be traced; CUBLAS entries call cuBLAS
  on the same buffers (timed, not traced); TORCH entries call torch.mm where the GPU machine has
  PyTorch (timed, not traced); REFERENCE is the float64 numpy product every result is checked
  against;
- its number types (`inputs`, `compute` (the multiply), `accumulate`): what the tolerance of its
  result check follows;
- its launch geometry (Launch.grid/block, read from the problem's sizes, block and params; kept
  here, not in the .cu files);
- which views of the app show it (`shows`): a page lists the kernels that name it.
Adding a kernel is a .cu file and an entry here.
"""
from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from engine.errors import EngineError, lookup
from engine.kernels import sources
from engine.kernels.documents import cite
from engine.kernels.problem import Problem


class Kind(enum.StrEnum):
    CUDA = "cuda"             # a cuda/ source: traced and timed
    OPAQUE = "opaque"         # a cuda/ source whose loads the hardware addresses (WMMA fragments,
                              # wgmma descriptors, TMA): timed and checked, not traced
    CUBLAS = "cublas"         # a cuBLAS call on the same buffers: timed, not traced
    TORCH = "torch"           # torch.mm on the GPU where PyTorch is installed: timed, not traced
    REFERENCE = "reference"   # float64 numpy on the host: what results are checked against


class Precision(enum.StrEnum):
    FP32 = "fp32"
    TF32 = "tf32"     # FP32 storage, a 10-bit-mantissa multiply (tensor cores)
    FP16 = "fp16"
    BF16 = "bf16"


# The C element type of a kernel's A and B (and BT) for each input precision; C is float.
INPUT_TYPES = {Precision.FP32: ("float",), Precision.TF32: ("float",), Precision.FP16: ("__half", "half"),
               Precision.BF16: ("__nv_bfloat16", "nv_bfloat16")}

# Largest relative error against float64 that passes, by the precision of the multiply: FP32
# accumulation; TF32 and FP16 round the inputs to 10 mantissa bits, BF16 to 7.
TOLERANCE = {Precision.FP32: 1e-4, Precision.TF32: 5e-3, Precision.FP16: 5e-3, Precision.BF16: 4e-2}

# The app's views. Those that draw a trace need a traceable kernel; a view may also need parameters.
VIEWS = ("coalescing", "tile_phases", "bank_conflicts", "ladder", "tensor_cores", "benchmarks")
TRACED_VIEWS = ("coalescing", "tile_phases", "bank_conflicts", "ladder")
# The phase picture steps through K by TILE. (The bank page lets you choose TILE where a kernel
# has one; the ladder's rungs it shows run with their own tile shapes.)
VIEW_NEEDS = {"tile_phases": ("TILE",)}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Launch:
    """One kernel launch: the source file (in cuda/, or a path; kernel name = file stem) and its
    geometry, read from a problem bound to the kernel (every parameter it declares is in params)."""

    file: str
    grid: Callable[[Problem], tuple[int, int]]
    block: Callable[[Problem], tuple[int, int]]
    # Upper bound of accesses one thread records: used to refuse a trace before running it.
    records_per_thread: Callable[[Problem], int]
    # A preparation launch: its blocks whose output the given blocks of the main launch read, (n, 2)
    # uint32, so that tracing a few blocks runs only those. None: all of them.
    prepares: Callable[[Problem, np.ndarray], np.ndarray] | None = None
    # Dynamic shared memory in bytes (over 48 KB needs it), 0 for none.
    shared_bytes: Callable[[Problem], int] = lambda p: 0
    # The GPU architecture to build for, where the source needs more than GPU_ARCH (wgmma: sm_90a).
    arch: str | None = None
    # TMA: for each array X whose tensor map the kernel takes (a `CUtensorMap X_map` parameter), the
    # box one copy moves, (columns, rows); the GPU worker encodes the map with the 128-byte swizzle.
    tensor_maps: Callable[[Problem], dict[str, tuple[int, int]]] = lambda p: {}

    @property
    def kernel(self) -> str:
        return Path(self.file).stem


@dataclass(frozen=True)
class Rule:
    """A condition a problem must meet beyond each parameter's own allowed values."""

    says: str                                 # in words, for the catalog
    check: Callable[[Problem], str | None]    # why the problem breaks it (after the kernel's name), or None
    sizes: bool = False                       # reads M, N, K too, not only the parameters


@dataclass(frozen=True)
class KernelSpec:
    name: str
    title: str
    seeds: tuple[str, ...]
    lesson: str
    kind: Kind = Kind.CUDA
    launches: tuple[Launch, ...] = ()      # in order; the last one computes C
    params: Mapping[str, tuple[int, ...]] = field(default_factory=dict)   # compile-time, name -> allowed
    defaults: Mapping[str, int] = field(default_factory=dict)             # when not the first allowed value
    rules: tuple[Rule, ...] = ()
    block_shapes: tuple[tuple[int, int], ...] = ()   # launch block shapes (naive kernels)
    default_block: tuple[int, int] = (16, 16)
    inputs: Precision = Precision.FP32
    compute: Precision = Precision.FP32      # the multiply: TF32 for tensor-op math on FP32 storage
    accumulate: Precision = Precision.FP32
    shows: frozenset[str] = frozenset()      # the views (VIEWS) that list it
    rows_from_block_x: bool = False        # blockIdx.x walks the rows of C (seeds 000 and 001's mapping)
    notes: tuple[str, ...] = field(default=())

    @property
    def source_titles(self) -> str:
        """The titles of the documents it comes from, in words: what users read instead of the ids."""
        return cite(self.seeds)

    @property
    def traceable(self) -> bool:
        return self.kind is Kind.CUDA

    @property
    def timed(self) -> bool:
        return self.kind in (Kind.CUDA, Kind.OPAQUE, Kind.CUBLAS, Kind.TORCH)

    @property
    def compiled(self) -> bool:
        """Built from a cuda/ source (traced or not)."""
        return self.kind in (Kind.CUDA, Kind.OPAQUE)

    @property
    def precision(self) -> Precision:
        """What a benchmark row is labelled with and compared at: the precision of the multiply."""
        return self.compute

    @property
    def tolerance(self) -> float:
        """The loosest of what its inputs' storage and its multiply allow (bf16 inputs with an FP32
        multiply are still bf16's error)."""
        return max(TOLERANCE[self.inputs], TOLERANCE[self.compute])

    def default_params(self) -> dict[str, int]:
        return {name: self.defaults.get(name, allowed[0]) for name, allowed in self.params.items()}

    def takes(self, settings: Mapping[str, int]) -> dict[str, int]:
        """Of settings meant for many kernels (a page's TILE select), those this kernel declares."""
        return {name: value for name, value in settings.items() if name in self.params}

    def combinations(self) -> list[dict[str, int]]:
        """Every allowed choice of its parameters that its parameter rules accept."""
        return list(self._accepted())

    def _accepted(self):
        names = list(self.params)
        for values in itertools.product(*(self.params[n] for n in names)):
            chosen = dict(zip(names, values))
            probe = Problem(1, 1, 1, params=chosen)
            if not any(rule.check(probe) for rule in self.rules if not rule.sizes):
                yield chosen

    def block_of(self, problem: Problem) -> tuple[int, int]:
        return self.launches[-1].block(problem)


NAIVE_BLOCKS = ((16, 16), (32, 32), (32, 8), (8, 32), (32, 16), (16, 8), (32, 1))
TILES = (8, 16, 32)


def _naive_records(p: Problem) -> int:
    return 2 * p.k + 1


def _tiled_records(p: Problem) -> int:
    tile = p.params["TILE"]
    return _cdiv(p.k, tile) * (4 + 2 * tile) + 1


def _transposes_read_by(p: Problem, blocks: np.ndarray) -> np.ndarray:
    """naive_transposed_b's block (x, y) reads rows x*bx .. x*bx+bx-1 of BT (its columns of C), all
    K of them; transpose_b's block (x, y), of the same block shape, writes those rows for columns
    y*by .. y*by+by-1 of BT. So: the transpose blocks of the same x, every y."""
    xs = np.unique(blocks[:, 0])
    return np.array([(x, y) for y in range(_cdiv(p.k, p.block[1])) for x in xs], dtype=np.uint32).reshape(-1, 2)


def _tile_block(p: Problem) -> tuple[int, int]:
    return (p.params["TILE"], p.params["TILE"])


def _tile_grid(x: str, y: str) -> Callable[[Problem], tuple[int, int]]:
    """TILE x TILE blocks over C: blockIdx.x over size x ("m" or "n"), blockIdx.y over size y."""
    return lambda p: (_cdiv(getattr(p, x), p.params["TILE"]), _cdiv(getattr(p, y), p.params["TILE"]))


def _multiples_of_tile(p: Problem) -> str | None:
    tile = p.params["TILE"]
    bad = [f"{n}={v}" for n, v in (("M", p.m), ("N", p.n), ("K", p.k)) if v % tile]
    if not bad:
        return None
    return (f"needs M, N and K to be multiples of TILE={tile} ({', '.join(bad)} {'is' if len(bad) == 1 else 'are'} "
            "not): it has no boundary guards, so edge threads would read and write outside A, B and C, and its "
            "K / TILE phase loop would drop the last partial tile. Use tiled_guarded for these sizes.")


# The FP32 ladder after tiling (cuda/blocktile_1d.cu ... prefetched.cu): a block of THREADS
# threads (1-D) owns a BM x BN tile of C and walks K in steps of BK; each thread owns TM (x TN)
# outputs; the warp-tiled rungs split the block's tile into WM x WN warp tiles of WNITER sub-tiles
# across. The defaults are the winners of the autotuning sweep (tests/benchmarks/tune_ladder.py) at
# 4096^3 on the H200, recorded in engine/bench/recorded/tuning/ (the Benchmarks page shows it).
LADDER_VIEWS = frozenset({"ladder", "coalescing", "benchmarks"})
# The rungs whose shared loads the Bank conflicts page also shows, at their own shapes:
# blocktile_2d's scalar loads of As and Bs (lanes a row or TN words apart: in conflict), and the
# 128-bit loads of vectorized and warptile, served a half-warp at a time.
BANK_RUNGS = ("blocktile_2d", "vectorized", "warptile")
SHARED_LIMIT = 48 * 1024   # static shared memory per block


def _ladder_threads(p: Problem) -> int:
    q = p.params
    if "WM" in q:
        return (q["BM"] // q["WM"]) * (q["BN"] // q["WN"]) * 32
    return q["BM"] * q["BN"] // (q["TM"] * q.get("TN", 1))


def _ladder_grid(p: Problem) -> tuple[int, int]:
    return (_cdiv(p.n, p.params["BN"]), _cdiv(p.m, p.params["BM"]))


def _ladder_block(p: Problem) -> tuple[int, int]:
    return (_ladder_threads(p), 1)


def _per_thread(p: Problem, elements: int) -> int:
    return _cdiv(elements, _ladder_threads(p))


def _thread_outputs(p: Problem) -> tuple[int, int]:
    """A thread's outputs down (rows of C) and across (columns of C)."""
    q = p.params
    if "WM" in q:
        return (q["WM"] * q["WN"] // (32 * q["TN"] * q["WNITER"]), q["WNITER"] * q["TN"])
    return (q["TM"], q.get("TN", 1))


def _ladder_records(vec: int, buffers: int) -> Callable[[Problem], int]:
    """Per thread at most: per K tile, its share of the tiles' elements, each loaded and stored once
    (at an edge a float4 is four scalar loads, each stored; a cp.async is one record of a copy and
    one of its store per 4), the shared loads of the multiply (vec elements each), then its
    outputs; a double-buffered rung loads one tile more."""
    def records(p: Problem) -> int:
        q = p.params
        down, across = _thread_outputs(p)
        tiles = _cdiv(p.k, q["BK"]) + buffers - 1
        loads = 2 * (_per_thread(p, q["BM"] * q["BK"]) + _per_thread(p, q["BK"] * q["BN"]))
        return tiles * (loads + q["BK"] * (down + across) // vec) + down * across
    return records


def _ladder_shapes(p: Problem) -> str | None:
    """The shapes a rung's thread and warp arithmetic needs (integer divisions that must be exact)."""
    q = p.params
    threads = _ladder_threads(p)
    if "WM" not in q and threads * q["TM"] * q.get("TN", 1) != q["BM"] * q["BN"]:
        return f"needs TM{' x TN' if 'TN' in q else ''} to divide BM x BN"
    if not 32 <= threads <= 1024 or threads % 32:
        return f"would run {threads} threads per block (it needs a multiple of 32, up to 1024)"
    down, across = _thread_outputs(p)
    if down * across > 128:
        return (f"would keep {down * across} outputs per thread in registers (a thread has at most 255; over 128 "
                "they spill to local memory)")
    if "WM" in q:
        if q["BM"] % q["WM"] or q["BN"] % q["WN"]:
            return "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)"
        per_warp = 32 * q["TM"] * q["TN"] * q["WNITER"]
        if (q["WM"] * q["WN"]) % per_warp or q["WN"] % q["WNITER"]:
            return "needs a warp tile that its 32 lanes' TM x TN pieces and WNITER sub-tiles divide exactly"
        wm_iter = q["WM"] * q["WN"] // per_warp
        sub_m, sub_n = q["WM"] // wm_iter, q["WN"] // q["WNITER"]
        lanes_across = sub_n // q["TN"]
        if q["WM"] % wm_iter or sub_n % q["TN"] or not lanes_across or 32 % lanes_across or \
                32 // lanes_across * q["TM"] != sub_m:
            return "needs each warp sub-tile to be exactly its 32 lanes' TM x TN pieces"
    return None


def _float4_shapes(p: Problem) -> str | None:
    q = p.params
    if q["BK"] % 4 or q["TM"] % 4 or q["TN"] % 4:
        return "needs BK, TM and TN multiples of 4 (it moves float4s)"
    return None


def _fits_shared(buffers: int) -> Rule:
    def check(p: Problem) -> str | None:
        q = p.params
        need = 4 * buffers * q["BK"] * (q["BM"] + q["BN"])
        return f"needs {need // 1024} KB of shared memory (48 KB is the static limit)" if need > SHARED_LIMIT else None
    return Rule("fits 48 KB of static shared memory", check)


def _even_loads(p: Problem) -> str | None:
    q = p.params
    threads = _ladder_threads(p)
    if (q["BM"] * q["BK"] // 4) % threads or (q["BK"] * q["BN"] // 4) % threads:
        return f"needs A's and B's tiles to be whole float4s for each of its {threads} threads (fixed register arrays)"
    return None


def _ladder_rung(name: str, title: str, lesson: str, params: dict, defaults: dict, vec: int = 1,
                 buffers: int = 1) -> KernelSpec:
    rules = [Rule("thread and warp shapes", _ladder_shapes), _fits_shared(buffers)]
    if vec == 4:
        rules.append(Rule("float4 shapes", _float4_shapes))
    if buffers == 2:
        rules.append(Rule("whole float4s per thread", _even_loads))
    return KernelSpec(
        name=name, title=title, seeds=("002",), lesson=lesson,
        launches=(Launch(f"{name}.cu", grid=_ladder_grid, block=_ladder_block,
                         records_per_thread=_ladder_records(vec, buffers)),),
        params=params, defaults=defaults, rules=tuple(rules),
        shows=LADDER_VIEWS | ({"bank_conflicts"} if name in BANK_RUNGS else set()))


_BLOCK_SIDES = (32, 64, 128, 256)
_WARP_PARAMS = {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (8, 16, 32), "WM": (32, 64, 128),
                "WN": (32, 64, 128), "WNITER": (1, 2, 4), "TM": (4, 8), "TN": (4, 8)}
LADDER = (
    _ladder_rung("blocktile_1d", "1-D register tiling (TM outputs per thread)",
                 "Each thread computes TM outputs of one column: one b from shared memory serves TM FMAs.",
                 {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (4, 8, 16, 32), "TM": (4, 8, 16, 32)},
                 {"BM": 64, "BN": 64, "BK": 32, "TM": 16}),
    _ladder_rung("blocktile_2d", "2-D register tiling (TM x TN outputs per thread)",
                 "Each thread computes a TM x TN tile as outer products of registers: TM + TN loads per TM x TN FMAs.",
                 {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
                 {"BM": 64, "BN": 64, "BK": 32, "TM": 8, "TN": 4}),
    _ladder_rung("vectorized", "float4 loads, A transposed in shared memory",
                 "128-bit global and shared loads: a quarter of the load instructions, A's column as consecutive words.",
                 {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
                 {"BM": 64, "BN": 256, "BK": 32, "TM": 8, "TN": 4}, vec=4),
    _ladder_rung("warptile", "Warp tiling",
                 "Each warp owns a sub-tile: its lanes read consecutive 16-byte pieces of shared memory, conflict-free.",
                 _WARP_PARAMS, {"BM": 128, "BN": 128, "BK": 32, "WM": 32, "WN": 64, "WNITER": 2, "TM": 4, "TN": 4},
                 vec=4),
    _ladder_rung("double_buffered", "Double-buffered, cp.async",
                 "Two shared buffers: tile t + 1 is copied (cp.async) while tile t is multiplied; one barrier per tile.",
                 _WARP_PARAMS, {"BM": 128, "BN": 128, "BK": 16, "WM": 128, "WN": 32, "WNITER": 4, "TM": 4, "TN": 4},
                 vec=4, buffers=2),
    _ladder_rung("prefetched", "Prefetched fragments (register double buffering)",
                 "Step k + 1's shared loads are issued before step k's FMAs: the multiply no longer waits on shared memory.",
                 _WARP_PARAMS, {"BM": 128, "BN": 256, "BK": 16, "WM": 32, "WN": 128, "WNITER": 2, "TM": 8, "TN": 4},
                 vec=4, buffers=2),
)


# The tensor-core ladder (cuda/wmma_seed.cu ... wgmma_tma.cu): FP16 inputs, FP32 accumulate. Defaults:
# the winners of the sweep at 4096^3 on the H200 (engine/bench/recorded/tuning/h200-tensor-*). Every
# rung needs M, N and K multiples of 16 (a fragment, and an mma, is a whole 16-wide tile); tiles
# that overhang C are zero-filled and not stored.
TENSOR_VIEWS = frozenset({"tensor_cores", "benchmarks"})
TENSOR_K = 32            # the K step of mma_ldmatrix's and mma_swizzled's shared tiles (kBK in their sources)
WGMMA_K = 64             # wgmma_tma's: one 128-byte swizzle row of halves
SHARED_LIMIT_DYNAMIC = 227 * 1024   # per block on sm_90, with the opt-in attribute


def _multiples_of_16(p: Problem) -> str | None:
    bad = [f"{n}={v}" for n, v in (("M", p.m), ("N", p.n), ("K", p.k)) if v % 16]
    if not bad:
        return None
    return (f"needs M, N and K to be multiples of 16 ({', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not): a "
            "tensor-core fragment is a whole 16 x 16 tile")


SEED_WMMA_MAX = 2048


def _seed_sizes(p: Problem) -> str | None:
    if max(p.m, p.n) > SEED_WMMA_MAX:
        return (f"is refused above {SEED_WMMA_MAX} (M={p.m}, N={p.n}): it computes every tile of C 32 times, so a "
                "larger run would take the GPU for seconds per call")
    return None


def _warps_of(p: Problem) -> int:
    q = p.params
    return (q["BM"] // q["WM"]) * (q["BN"] // q["WN"])


def _warp_shapes(p: Problem) -> str | None:
    q = p.params
    if q["BM"] % q["WM"] or q["BN"] % q["WN"]:
        return "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)"
    if not 1 <= _warps_of(p) <= 16:
        return f"would run {_warps_of(p)} warps per block (1 to 16 fit)"
    return None


def _mma_shared(p: Problem) -> str | None:
    q = p.params
    need = 2 * TENSOR_K * (q["BM"] + q["BN"])
    return f"needs {need // 1024} KB of shared memory (48 KB is the static limit)" if need > SHARED_LIMIT else None


def _ring_bytes(p: Problem) -> int:
    """mma_pipelined's dynamic shared memory: what its source's views of it add up to."""
    return sources.load("mma_pipelined.cu").dynamic_shared_bytes(p.params)


def _ring_fits(p: Problem) -> str | None:
    need = _ring_bytes(p)
    return (f"needs {need // 1024} KB of shared memory ({SHARED_LIMIT_DYNAMIC // 1024} KB is a block's most)"
            if need > SHARED_LIMIT_DYNAMIC else None)


def _copy_passes(p: Problem) -> str | None:
    """mma_pipelined's copies: each thread takes one 16-byte column of the A and B tiles, every
    pass of all the block's threads covering whole rows; A's passes must be a multiple of 8 rows
    apart (so the swizzle is the same in each) and divide BM, and B's divide BK."""
    q, threads = p.params, 32 * _warps_of(p)
    rows_a, rows_b = threads // (q["BK"] // 8), threads // (q["BN"] // 8)
    if rows_a % 8 or q["BM"] % rows_a or q["BK"] % rows_b:
        return (f"needs its {threads} threads to copy whole rows per pass ({rows_a} rows of A, {rows_b} of B, "
                f"for tiles of {q['BM']} x {q['BK']} and {q['BK']} x {q['BN']})")
    return None


def _mma_records(p: Problem) -> int:
    """Per thread at most: per K tile its 16-byte copies of A's and B's tiles (two records each: a
    load and a store, or a cp.async's pair), its lane's ldmatrix rows (BK / 16 k steps of 16), then
    its outputs (two float2 stores per 16 x 8 tile)."""
    q = p.params
    threads, bk = 32 * _warps_of(p), q.get("BK", TENSOR_K)
    tiles_m, tiles_n = q["WM"] // 16, q["WN"] // 8
    copies = _cdiv(q["BM"] * bk // 8, threads) + _cdiv(bk * q["BN"] // 8, threads)
    return _cdiv(p.k, bk) * (2 * copies + bk // 16 * (tiles_m + tiles_n // 2)) + 2 * tiles_m * tiles_n


def _tensor_block(p: Problem) -> tuple[int, int]:
    return (32 * _warps_of(p), 1)


def _tensor_grid(p: Problem) -> tuple[int, int]:
    return (_cdiv(p.n, p.params["BN"]), _cdiv(p.m, p.params["BM"]))


_MMA_PARAMS = {"BM": (64, 128, 256), "BN": (64, 128, 256), "WM": (32, 64), "WN": (32, 64)}


def _mma_rung(name: str, title: str, lesson: str, defaults: dict, ring: dict | None = None) -> KernelSpec:
    """An mma.sync rung; ring: the parameters of a cp.async ring in dynamic shared memory (STAGES, BK)."""
    fits = (Rule("fits a block's shared memory", _ring_fits), Rule("copies in whole passes", _copy_passes)) if ring \
        else (Rule("fits 48 KB of static shared memory", _mma_shared),)
    return KernelSpec(
        name=name, title=title, seeds=("002",), lesson=lesson,
        launches=(Launch(f"{name}.cu", grid=_tensor_grid, block=_tensor_block, records_per_thread=_mma_records,
                         shared_bytes=_ring_bytes if ring else (lambda p: 0)),),
        params={**_MMA_PARAMS, **(ring or {})}, defaults=defaults,
        rules=(Rule("warp shapes", _warp_shapes), *fits, Rule("sizes multiple of 16", _multiples_of_16, sizes=True)),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS)


def _wgmma_shared(p: Problem) -> int:
    q = p.params
    stage = 2 * WGMMA_K * (q["BM"] + q["BN"])
    return q["STAGES"] * (stage + 16) + 1024   # the ring, its mbarriers, and room to align it to 1 KB


def _wgmma_fits(p: Problem) -> str | None:
    need = _wgmma_shared(p)
    return (f"needs {need // 1024} KB of shared memory ({SHARED_LIMIT_DYNAMIC // 1024} KB is a block's most)"
            if need > SHARED_LIMIT_DYNAMIC else None)


TENSOR_LADDER = (
    KernelSpec(
        name="wmma_seed", title="WMMA as the document writes it",
        seeds=("002",),
        lesson="The document's kernel, as written: its warps compute every tile 32 times, and it reads B's 16 x 16 "
               "blocks transposed.",
        kind=Kind.OPAQUE,
        launches=(Launch("wmma_seed.cu", grid=lambda p: (_cdiv(p.n, 16), 8 * _cdiv(p.m, 16)),
                         block=lambda p: (32, 4), records_per_thread=lambda p: 0),),
        rules=(Rule("sizes multiple of 16", _multiples_of_16, sizes=True),
               Rule(f"M and N at most {SEED_WMMA_MAX}", _seed_sizes, sizes=True)),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS,
        notes=("Launched with blocks of 32 x 4 threads and 8 x M / 16 blocks in y, so that warpM reaches every row "
               "tile: 32 warps then share each tile.",)),
    KernelSpec(
        name="wmma_warp", title="WMMA, one warp per 16 x 16 tile",
        seeds=("002",),
        lesson="The same instructions, indexed right: each warp owns one 16 x 16 tile of C and walks K.",
        kind=Kind.OPAQUE,
        launches=(Launch("wmma_warp.cu", grid=lambda p: (_cdiv(p.n, 64), _cdiv(p.m, 16)), block=lambda p: (128, 1),
                         records_per_thread=lambda p: 0),),
        rules=(Rule("sizes multiple of 16", _multiples_of_16, sizes=True),),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS),
    KernelSpec(
        name="wmma_block", title="WMMA from shared-memory tiles",
        seeds=("002",),
        lesson="A block's warps share A's and B's tiles through shared memory; each warp reuses its fragments "
               "across a WM x WN piece.",
        kind=Kind.OPAQUE,
        launches=(Launch("wmma_block.cu", grid=_tensor_grid, block=_tensor_block, records_per_thread=lambda p: 0),),
        params=_MMA_PARAMS, defaults={"BM": 64, "BN": 64, "WM": 32, "WN": 64},
        rules=(Rule("warp shapes", _warp_shapes), Rule("sizes multiple of 16", _multiples_of_16, sizes=True)),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS),
    _mma_rung("mma_ldmatrix", "mma.sync m16n8k16 with ldmatrix",
              "The instruction under WMMA, written out: ldmatrix hands each lane its fragment, mma.sync multiplies "
              "16 x 8 x 16.", {"BM": 128, "BN": 128, "WM": 64, "WN": 64}),
    _mma_rung("mma_swizzled", "mma.sync on swizzled shared tiles",
              "An XOR of each 16-byte chunk with its row puts ldmatrix's 8 rows in 8 different bank groups: one "
              "wavefront per matrix.", {"BM": 128, "BN": 128, "WM": 64, "WN": 64}),
    _mma_rung("mma_pipelined", "mma.sync with a cp.async pipeline",
              "STAGES tiles in flight: the copies of the next tiles overlap the multiply of this one, one barrier "
              "per tile; blocks run in groups of 8 block rows, sharing B's tiles in L2.",
              {"BM": 128, "BN": 128, "WM": 64, "WN": 64, "STAGES": 3, "BK": 64},
              ring={"STAGES": (2, 3, 4, 5), "BK": (32, 64)}),
    KernelSpec(
        name="wgmma_tma", title="wgmma with TMA and warp specialisation",
        seeds=("002",),
        lesson="Hopper's path: TMA copies whole tiles, wgmma multiplies 64 x BN x 16 from shared memory, a producer "
               "warpgroup feeds consumer warpgroups.",
        kind=Kind.OPAQUE,
        launches=(Launch("wgmma_tma.cu", grid=_tensor_grid, block=lambda p: (128 * (p.params["BM"] // 64 + 1), 1),
                         records_per_thread=lambda p: 0, shared_bytes=_wgmma_shared, arch="sm_90a",
                         tensor_maps=lambda p: {"A": (WGMMA_K, p.params["BM"]), "B": (64, WGMMA_K)}),),
        params={"BM": (128,), "BN": (128, 256), "STAGES": (3, 4, 5, 6)}, defaults={"BN": 256, "STAGES": 3},
        rules=(Rule("fits a block's shared memory", _wgmma_fits),
               Rule("sizes multiple of 16", _multiples_of_16, sizes=True)),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS),
)
TENSOR_RUNGS = tuple(k.name for k in TENSOR_LADDER)


NAIVE_VIEWS = frozenset({"coalescing", "benchmarks"})
TILED_VIEWS = frozenset({"coalescing", "tile_phases", "bank_conflicts", "benchmarks"})


CATALOG: tuple[KernelSpec, ...] = (
    KernelSpec(
        name="naive_x_rows",
        title="Naive, threadIdx.x walks rows",
        seeds=("000",),
        lesson="One thread per output, lanes on consecutive rows: every lane reads its own 32-byte sector of A.",
        launches=(Launch("naive_x_rows.cu",
                         grid=lambda p: (_cdiv(p.m, p.block[0]), _cdiv(p.n, p.block[1])),
                         block=lambda p: p.block, records_per_thread=_naive_records),),
        block_shapes=NAIVE_BLOCKS,
        shows=NAIVE_VIEWS,
        rows_from_block_x=True,
        notes=(f"{cite('000')} says A is read coalesced and B strided; with its own mapping it is the reverse.",
               f"{cite('000')}'s launch line `matMul<<<blocksPerGridX, blocksPerGridY>>>` passes a block count "
               "where the threads per block belong; the engine launches the 2-D grid the kernel expects."),
    ),
    KernelSpec(
        name="naive_x_cols",
        title="Naive, threadIdx.x walks columns",
        seeds=("002", "003", "004"),
        lesson="Same arithmetic, lanes on consecutive columns: B and C accesses coalesce into 4 sectors per warp.",
        launches=(Launch("naive_x_cols.cu",
                         grid=lambda p: (_cdiv(p.n, p.block[0]), _cdiv(p.m, p.block[1])),
                         block=lambda p: p.block, records_per_thread=_naive_records),),
        block_shapes=NAIVE_BLOCKS,
        shows=NAIVE_VIEWS,
    ),
    KernelSpec(
        name="naive_transposed_b",
        title="Naive on pre-transposed B",
        seeds=("001",),
        lesson="Transposing B makes each thread walk a row, but a warp's 32 lanes still land K floats apart.",
        launches=(
            Launch("transpose_b.cu",
                   grid=lambda p: (_cdiv(p.n, p.block[0]), _cdiv(p.k, p.block[1])),
                   block=lambda p: p.block, records_per_thread=lambda p: 2, prepares=_transposes_read_by),
            Launch("naive_transposed_b.cu",
                   grid=lambda p: (_cdiv(p.n, p.block[0]), _cdiv(p.m, p.block[1])),
                   block=lambda p: p.block, records_per_thread=_naive_records),
        ),
        block_shapes=NAIVE_BLOCKS,
        default_block=(32, 32),
        shows=NAIVE_VIEWS,
        notes=(f"{cite('001')} models a speed-up of about the warp size from the transpose; measured, the "
               "kernel is as slow as the uncoalesced naive one.",
               "Its timings include the transpose launch, which that document counts as part of the method."),
    ),
    KernelSpec(
        name="tiled_guarded",
        title="Shared-memory tiled (guarded)",
        seeds=("000", "002"),
        lesson="Each block loads a tile of A and of B per phase and reuses every element TILE times from shared memory.",
        launches=(Launch("tiled_guarded.cu", grid=_tile_grid("n", "m"), block=_tile_block,
                         records_per_thread=_tiled_records),),
        params={"TILE": TILES},
        defaults={"TILE": 16},
        shows=TILED_VIEWS | {"ladder"},   # the ladder's first rung
    ),
    KernelSpec(
        name="tiled_unguarded",
        title="Shared-memory tiled, no guards",
        seeds=("003", "004"),
        lesson="The tiled kernel as these documents write it, without boundary guards: right only when M, N and K "
               "are multiples of TILE.",
        launches=(Launch("tiled_unguarded.cu", grid=_tile_grid("n", "m"), block=_tile_block,
                         records_per_thread=_tiled_records),),
        params={"TILE": TILES},
        defaults={"TILE": 16},
        rules=(Rule("sizes multiple of TILE", _multiples_of_tile, sizes=True),),
        shows=TILED_VIEWS,
    ),
    KernelSpec(
        name="shared_bank_conflicts",
        title="Shared-memory tiled, threadIdx.x walks rows (bank conflicts, padding)",
        seeds=("001",),
        lesson="tile_A[threadIdx.x][p] puts a warp's lanes TILE words apart, in one bank; one word of padding spreads them.",
        launches=(Launch("shared_bank_conflicts.cu", grid=_tile_grid("m", "n"), block=_tile_block,
                         records_per_thread=_tiled_records),),
        params={"TILE": TILES, "PAD": (0, 1)},
        defaults={"TILE": 16},
        shows=TILED_VIEWS,
        rows_from_block_x=True,
    ),
    *LADDER,
    *TENSOR_LADDER,
    KernelSpec(
        name="cublas_sgemm",
        title="cuBLAS SGEMM (FP32)",
        seeds=("002",),
        lesson="What you should actually use: NVIDIA's tuned FP32 GEMM, on the same buffers.",
        kind=Kind.CUBLAS,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cublas_sgemm_tf32",
        title="cuBLAS SGEMM, TF32 tensor-op math",
        seeds=("002",),
        lesson="The same call with TF32 tensor cores allowed: FP32 storage, a 10-bit-mantissa multiply.",
        kind=Kind.CUBLAS,
        compute=Precision.TF32,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cublas_gemm_fp16",
        title="cuBLAS GemmEx, FP16 inputs, FP32 accumulate",
        seeds=("002",),
        lesson="Half-precision A and B on tensor cores, summed in FP32: the cuBLAS FP16 row of the A100 table.",
        kind=Kind.CUBLAS,
        inputs=Precision.FP16,
        compute=Precision.FP16,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cublas_gemm_bf16",
        title="cuBLAS GemmEx, BF16 inputs, FP32 accumulate",
        seeds=("002",),
        lesson="The same call on bfloat16 A and B: FP32's exponent range with 7 mantissa bits, on the same tensor cores.",
        kind=Kind.CUBLAS,
        inputs=Precision.BF16,
        compute=Precision.BF16,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="torch_mm_fp16",
        title="torch.mm, FP16",
        seeds=("002",),
        lesson="torch.mm on half tensors, which the PyTorch connection says ends in a cuBLAS GEMM: timed where the GPU "
               "machine has PyTorch.",
        kind=Kind.TORCH,
        inputs=Precision.FP16,
        compute=Precision.FP16,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cpu_reference",
        title="CPU reference (numpy, float64)",
        seeds=("000", "002"),
        lesson=f"The float64 product every GPU result is checked against (relative error, as {cite('001')} "
               "reports).",
        kind=Kind.REFERENCE,
    ),
)

_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]*")


def _check(spec: KernelSpec) -> None:
    """The contract of one entry; a broken one stops the import with what is wrong."""
    def bad(why: str):
        raise ValueError(f"registry entry {spec.name}: {why}")
    for what in ("inputs", "compute", "accumulate"):
        if not isinstance(getattr(spec, what), Precision):
            bad(f"{what} must be a Precision, not {getattr(spec, what)!r}")
    if not isinstance(spec.kind, Kind):
        bad(f"kind must be a Kind, not {spec.kind!r}")
    if spec.compiled != bool(spec.launches):
        bad("kernels built from cuda/ sources, and only they, have launches")
    if spec.params and not spec.compiled:
        bad("only kernels built from cuda/ sources have compile-time parameters")
    for launch in spec.launches:
        if sources.load(launch.file).traced != spec.traceable:
            bad(f"{launch.file} {'does not include' if spec.traceable else 'includes'} trace.cuh, and a "
                f"{spec.kind} entry {'is' if spec.traceable else 'is not'} traced")
    for name, allowed in spec.params.items():
        if not _NAME_RE.fullmatch(name):
            bad(f"parameter {name!r} is not an upper-case macro name")
        if not allowed or not all(isinstance(v, int) and not isinstance(v, bool) for v in allowed):
            bad(f"{name} must allow one or more whole numbers, not {allowed!r}")
        if not any(sources.load(launch.file).uses(name) for launch in spec.launches):
            bad(f"no source of it uses {name}")
    for name, value in spec.defaults.items():
        if value not in spec.params.get(name, ()):
            bad(f"the default {name}={value} is not one of its allowed values")
    for launch in spec.launches:   # the sources store what the entry says they take
        for a in sources.load(launch.file).arrays:
            want = ("float",) if a.name == "C" else INPUT_TYPES[spec.inputs] if a.name in ("A", "B", "BT") else None
            if a.space == "global" and want and a.element not in want:
                bad(f"{launch.file} declares {a.name} as {a.element}, and its inputs are {spec.inputs} "
                    f"({' or '.join(want)})")
    unknown = set(spec.shows) - set(VIEWS)
    if unknown:
        bad(f"shows {', '.join(sorted(unknown))}, which are not views ({', '.join(VIEWS)})")
    for view in spec.shows:
        if view in TRACED_VIEWS and not spec.traceable:
            bad(f"the {view} view draws a trace, and a {spec.kind} entry has none")
        if view == "benchmarks" and not spec.timed:
            bad(f"the benchmarks view times kernels, and a {spec.kind} entry is not timed")
        missing = [n for n in VIEW_NEEDS.get(view, ()) if n not in spec.params]
        if missing:
            bad(f"the {view} view needs the parameter(s) {', '.join(missing)}")
    if spec.params and next(spec._accepted(), None) is None:   # the first one will do: this runs at import
        bad("its rules leave no allowed choice of parameters")


for _spec in CATALOG:
    _check(_spec)

_BY_NAME = {k.name: k for k in CATALOG}

# What a live sweep on the Benchmarks page starts with: the story in five timings (uncoalesced,
# coalesced, tiled, and cuBLAS without and with tensor cores).
SWEEP_DEFAULT = ("naive_x_rows", "naive_x_cols", "tiled_guarded", "cublas_sgemm", "cublas_sgemm_tf32")
if not all("benchmarks" in _BY_NAME[k].shows for k in SWEEP_DEFAULT):
    raise ValueError("SWEEP_DEFAULT names a kernel the benchmarks view does not show")


# The FP32 ladder in order: the tiled kernel, then each rung of LADDER, each fixing what holds the
# one before it back (its .cu header says what). The Ladder page lists them so and diffs each rung's
# source against the one before.
LADDER_RUNGS = ("tiled_guarded", *(k.name for k in LADDER))
if [k.name for k in CATALOG if "ladder" in k.shows] != list(LADDER_RUNGS):
    raise ValueError("the kernels the ladder view shows are not LADDER_RUNGS, in that order")


def previous_rung(name: str) -> str | None:
    """The rung before this one on the ladder (None for the first)."""
    i = LADDER_RUNGS.index(name)
    return LADDER_RUNGS[i - 1] if i else None


def get(name: str) -> KernelSpec:
    return lookup(_BY_NAME, name, "kernel")


def traceable() -> list[KernelSpec]:
    return [k for k in _BY_NAME.values() if k.traceable]


def showing(view: str) -> list[str]:
    """The kernels a view lists, in catalog order."""
    if view not in VIEWS:
        raise ValueError(f"{view!r} is not a view ({', '.join(VIEWS)})")
    return [k.name for k in _BY_NAME.values() if view in k.shows]


@contextmanager
def registered(spec: KernelSpec):
    """A kernel outside CATALOG, known by name while the block runs (tests): checked like the rest."""
    _check(spec)
    if spec.name in _BY_NAME:
        raise ValueError(f"a kernel named {spec.name} is already registered")
    _BY_NAME[spec.name] = spec
    try:
        yield spec
    finally:
        del _BY_NAME[spec.name]


def bind(spec: KernelSpec, problem: Problem) -> Problem:
    """The problem with every parameter of the kernel set (defaults where not asked for), after checking
    what was asked for against the declaration; what the kernel cannot take gets a one-line reason."""
    for name, value in problem.params.items():
        if name not in spec.params:
            takes = ", ".join(spec.params) or "no compile-time parameters"
            raise EngineError(f"{spec.name} has no parameter {name} (it takes {takes})")
        if value not in spec.params[name]:
            raise EngineError(f"{spec.name} takes {name} {', '.join(map(str, spec.params[name]))}, not {value}")
    bound = replace(problem, params={**spec.default_params(), **problem.params})
    for rule in spec.rules:
        reason = rule.check(bound)
        if reason:
            raise EngineError(f"{spec.name} {reason}")
    return bound
