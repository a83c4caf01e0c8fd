"""What a kernel entry is made of, and the contract every entry of the catalog keeps.

An entry (KernelSpec) says where its source lives (cuda/), which source documents it comes from
(`seeds`: ids of engine/kernels/documents.py, whose titles are what users read), the lesson it
teaches, and:
- its compile-time parameters by name, with their allowed values (`params`, `defaults`) and rules
  between them or on the sizes (`rules`), and its launches (Launch: grid, block, dynamic shared
  memory, the trace's bound per thread): all of these are read from the contract block of its
  sources (engine/kernels/declared.py reads what cuda/contract.cuh's macros declare), so that the
  C++ the compiler checks and what the engine launches are one text; each parameter is a macro
  with a default in the source, set with -D;
- its kind (Kind): CUDA kernels run from cuda/ sources and can be traced; CUBLAS entries call cuBLAS
  on the same buffers (timed, not traced); TORCH entries call torch.mm where the GPU machine has
  PyTorch (timed, not traced); REFERENCE is the float64 numpy product every result is checked
  against;
- its number types (`inputs`, `compute` (the multiply), `accumulate`): what the tolerance of its
  result check follows;
- which views of the app show it (`shows`): a page lists the kernels that name it.

check() is the contract: engine/kernels/catalog.py runs it on every entry when it is imported, so a
broken entry stops the engine at start-up with what is wrong, not a page later.
"""
from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

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


# The C element type of a kernel's A and B (and BT, AP, BP) for each input precision; C is float.
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

# The launch block shapes a page offers a kernel whose block is chosen at launch (its contract
# reads BLOCK_X and BLOCK_Y: the naive kernels).
NAIVE_BLOCKS = ((16, 16), (32, 32), (32, 8), (8, 32), (32, 16), (16, 8), (32, 1))


@dataclass(frozen=True)
class Launch:
    """One kernel launch: the source file (in cuda/, or a path; kernel name = file stem) and its
    geometry, read from a problem bound to the kernel (every parameter it declares is in params):
    functions of the source's contract block (declared.launch makes them)."""

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
    # Whether a problem needs this launch at all: a padding pass that only some sizes need.
    runs: Callable[[Problem], bool] = lambda p: True
    # The arrays its tensor maps read instead of those they are named after, by problem: {"A": "AP",
    # "B": "BP"} where a padding launch before it made padded copies (TMA: rows of 16-byte multiples).
    maps_read: Callable[[Problem], dict[str, str]] = lambda p: {}

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

    def launches_for(self, problem: Problem) -> tuple[Launch, ...]:
        """The launches that run for this problem, in order (a padding pass only where it is needed)."""
        return tuple(launch for launch in self.launches if launch.runs(problem))

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

    def accepts(self, chosen: Mapping[str, int]) -> bool:
        """Whether one choice of every parameter is among combinations(): each value allowed, and no
        parameter rule refusing it. (combinations() asks every rule of every choice: 1.5 s for the
        catalog's default views, where this asks of the one choice.)"""
        if set(chosen) != set(self.params) or any(chosen[n] not in allowed for n, allowed in self.params.items()):
            return False
        probe = Problem(1, 1, 1, params=dict(chosen))
        return not any(rule.check(probe) for rule in self.rules if not rule.sizes)

    def _accepted(self):
        names = list(self.params)
        for values in itertools.product(*(self.params[n] for n in names)):
            chosen = dict(zip(names, values))
            if self.accepts(chosen):
                yield chosen


_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]*")


def check(spec: KernelSpec) -> None:
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
            want = ("float",) if a.name in ("C", "CP", "WS") else INPUT_TYPES[spec.inputs] if a.name in ("A", "B", "BT", "AP", "BP") else None
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
