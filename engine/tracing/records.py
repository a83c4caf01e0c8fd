"""The trace: one row per memory access of every traced thread. This docstring is the schema.

Fields of TRACE_DTYPE (kept column by column in Trace.columns, 32 bytes per record in memory:
`line` and `space` are not stored, they follow from `site`; Trace.records packs them all into one
numpy structured array on demand, for export and tests):
  launch            which launch of the kernel's pipeline (0 unless it has a preparation step)
  block_x, block_y  blockIdx of the thread, in the kernel's full grid
  thread_x, thread_y threadIdx of the thread
  warp, lane        (threadIdx.y * blockDim.x + threadIdx.x) // 32 and % 32: the hardware's warp split
  site              index into Trace.sites: which access macro in the source
  line              its 1-based source line (Trace.sites[site].line; in records and exports only)
  ordinal           how many times this thread had already executed this site (0 for the first)
  epoch             how many SYNC() (__syncthreads) the thread had passed: tiled kernels alternate
                    a load epoch (2p) and a compute epoch (2p + 1) for phase p
  group             how many cp.async groups the thread had committed (CP_ASYNC_COMMIT): for an
                    asynchronous copy, the group it belongs to, which CP_ASYNC_WAIT waits for
  space             0 global, 1 shared
  op                0 load, 1 store
  array             index into Trace.arrays (A, B, C, As, ...: the traced arrays of the trace's kernels)
  row, col          the element, in the array's own row-major shape (shared arrays: their padded
                    pitch, so col can reach TILE + PAD - 1; a 1-D shared array is one row). row is 32
                    bits: an array may have more rows than a matrix (split_k's partial sums, SPLITK x
                    M); a row has at most 65,536 elements (plan.array_shapes refuses longer ones)
  offset            byte offset of the element from the start of its array (its allocation, for a
                    global array whose pointer the kernel moved)

Order: by launch, then traced block (in request order), then thread (x fastest), then program
order within the thread, the same on GPU and CPU. Records come from the kernels as 16-byte
RAW_DTYPE rows (cuda/trace.cuh's TraceRecord: element index, the kernel's site number, line, epoch,
group, ordinal) and are assembled here, for both sources alike: a site number gives the site's array
and load/store (engine/kernels/sources.py KernelSource.sites); the trace renumbers sites and arrays
into Trace.sites and Trace.arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from engine import parallel
from engine.kernels.sources import Array, Site

# cuda/trace.cuh's TraceRecord. Its 32-bit epoch counts SYNC()s in the low 16 bits and cp.async
# commits in the high 16: read here as two 16-bit fields (both machines are little-endian).
RAW_DTYPE = np.dtype([("index", "<u4"), ("site", "<u2"), ("line", "<u2"), ("epoch", "<u2"), ("group", "<u2"),
                      ("ordinal", "<u4")])

TRACE_DTYPE = np.dtype([
    ("launch", "u1"), ("block_x", "<u2"), ("block_y", "<u2"), ("thread_x", "<u2"), ("thread_y", "<u2"),
    ("warp", "u1"), ("lane", "u1"), ("site", "u1"), ("line", "<u2"), ("ordinal", "<u4"), ("epoch", "<u2"),
    ("space", "u1"), ("op", "u1"), ("array", "u1"), ("row", "<u4"), ("col", "<u2"), ("offset", "<u4"), ("group", "<u2"),
])
# What Trace.columns holds: every field but line and space, which Trace.sites gives for each site.
DERIVED_FIELDS = ("line", "space")
STORED_FIELDS = tuple(name for name in TRACE_DTYPE.names if name not in DERIVED_FIELDS)
STORED_BYTES = sum(TRACE_DTYPE.fields[name][0].itemsize for name in STORED_FIELDS)
SPACES = ("global", "shared")
OPS = ("load", "store")


@dataclass(frozen=True)
class TraceSite:
    launch: int
    kernel: str
    site: Site

    @property
    def label(self) -> str:
        s = self.site
        return f"{self.kernel}:{s.line} {s.op} {s.array} ({s.space})"


@dataclass
class LaunchInfo:
    kernel: str
    file: str
    grid: tuple[int, int]
    block: tuple[int, int]
    traced: bool
    blocks: np.ndarray            # (n, 2) uint32 blockIdx of the launched blocks, in order


@dataclass
class Trace:
    kernel: str
    problem: object
    source: str                  # "gpu" or "cpu"
    device: str                  # e.g. "NVIDIA H200" or "CPU (x86_64, g++)"
    columns: dict[str, np.ndarray]   # one contiguous array per STORED_FIELDS field
    sites: list[TraceSite]
    arrays: tuple[str, ...]
    shapes: dict[str, tuple[int, int]]   # array -> (rows, cols) as traced (shared: padded pitch)
    launches: list[LaunchInfo]
    rel_error: float              # traced outputs vs float64 numpy
    checked_outputs: int
    # Helpers for analysis, not part of the schema: records per traced thread (in record order)
    # and each thread's warp, numbered across the whole trace.
    thread_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    thread_warp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    timings: dict[str, float] = field(default_factory=dict)
    # Per site (index into sites): the warp-level instructions issued there, counting those whose
    # lanes all had it off (a SKIP_ on every lane: ptxas predicated the access instead of branching
    # around it). A site missing here issued what its records show.
    issued: dict[int, int] = field(default_factory=dict)
    # Lazily built index (see block_records): where each traced thread's records start.
    _thread_starts: np.ndarray | None = field(default=None, repr=False, compare=False)
    # Results worked out from the records once and kept with them (analysis.merged_rows: the
    # hardware instructions of a merged site), keyed by what was asked.
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.columns["site"])

    @property
    def records(self) -> np.ndarray:
        """The trace as one TRACE_DTYPE structured array (built on each call: for export and tests)."""
        out = np.empty(len(self), dtype=TRACE_DTYPE)
        for name in STORED_FIELDS:
            out[name] = self.columns[name]
        out["line"] = self.lines()
        out["space"] = self.spaces()
        return out

    def lines(self) -> np.ndarray:
        """Each record's source line (from its site)."""
        return np.array([ts.site.line for ts in self.sites], dtype=np.uint16)[self.columns["site"]]

    def spaces(self, site: np.ndarray | None = None) -> np.ndarray:
        """Each record's memory space (0 global, 1 shared), from its site (default: every record's,
        worked out once and kept, read-only, as the stored columns are: a byte a record, as when it
        was stored, and the analyses ask for it again and again)."""
        if "site_spaces" not in self.derived:   # per site: select() asks for it on every masked view
            self.derived["site_spaces"] = np.array([SPACES.index(ts.site.space) for ts in self.sites], dtype=np.uint8)
        of_site = self.derived["site_spaces"]
        if site is not None:
            return of_site[site]
        if "spaces" not in self.derived:
            every = of_site[self.columns["site"]]
            every.flags.writeable = False
            self.derived["spaces"] = every
        return self.derived["spaces"]

    def thread_starts(self) -> np.ndarray:
        """Where each traced thread's records start (one more entry: the end), computed once."""
        if self._thread_starts is None:
            starts = np.zeros(len(self.thread_counts) + 1, dtype=np.int64)
            np.cumsum(self.thread_counts, out=starts[1:])
            self._thread_starts = starts
        return self._thread_starts

    def block_runs(self, block_x: int, block_y: int, launch: int | None = None) -> list[tuple[int, int]]:
        """Where one block's records lie in one launch (default: the last): a (start, end) run of
        the trace per time the block was traced, in trace order.

        Records are in trace order (launch, traced block, thread), so a block's records are one
        contiguous run per time it was traced: found from the per-thread counts in a few
        microseconds, instead of comparing three columns of the whole trace (views of one block
        on a whole-kernel trace of millions of records)."""
        launch = len(self.launches) - 1 if launch is None else launch
        starts = self.thread_starts()
        first_thread = 0
        for i, info in enumerate(self.launches):
            if not info.traced:
                continue
            tpb = info.block[0] * info.block[1]
            if i == launch:
                js = np.flatnonzero((info.blocks[:, 0] == block_x) & (info.blocks[:, 1] == block_y))
                return [(int(starts[first_thread + j * tpb]), int(starts[first_thread + (j + 1) * tpb])) for j in js]
            first_thread += len(info.blocks) * tpb
        return []

    def block_records(self, block_x: int, block_y: int, launch: int | None = None) -> np.ndarray:
        """Positions of one block's records in one launch (default: the last), ascending."""
        runs = [np.arange(start, end) for start, end in self.block_runs(block_x, block_y, launch)]
        return np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)

    def block_columns(self, block_x: int, block_y: int, launch: int | None = None) -> dict[str, np.ndarray]:
        """One block's records in one launch (default: the last), column by column. A block traced
        once is one run of the trace: its columns are views of the trace's, so a one-block trace of
        millions of records is not copied to be looked at (the views are read-only: the trace is
        shared; space is a view of Trace.spaces())."""
        runs = self.block_runs(block_x, block_y, launch)
        if len(runs) != 1:
            return self.select(self.block_records(block_x, block_y, launch))
        start, end = runs[0]
        views = {k: v[start:end] for k, v in self.columns.items()}
        views["space"] = self.spaces()[start:end]
        for view in views.values():
            view.flags.writeable = False
        return views

    def select(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The records mask picks, column by column, space among them (derived from site)."""
        out = {k: v[mask] for k, v in self.columns.items()}
        out["space"] = self.spaces(out["site"])
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """The records with names instead of codes, for display and export."""
        import pandas as pd  # noqa: PLC0415 - here only: the trace workers import this module, and need no pandas
        df = pd.DataFrame(self.columns, copy=False)
        df.insert(list(TRACE_DTYPE.names).index("line"), "line", self.lines())
        df.insert(list(TRACE_DTYPE.names).index("space"), "space", pd.Categorical.from_codes(self.spaces(), SPACES))
        df["op"] = pd.Categorical.from_codes(df["op"], OPS)
        df["array"] = pd.Categorical.from_codes(df["array"], self.arrays)
        return df


def empty_columns(n: int = 0) -> dict[str, np.ndarray]:
    return {name: np.zeros(n, dtype=TRACE_DTYPE.fields[name][0]) for name in STORED_FIELDS}


@dataclass(frozen=True)
class ArrayTable:
    """What the assembly needs to know of each array of a trace, by its id in Trace.arrays."""
    names: tuple[str, ...]
    pitch: np.ndarray           # uint32: row pitch in elements (1-D: the whole array)
    element_bytes: np.ndarray   # uint32: size of one element

    @staticmethod
    def of(arrays: list[Array], shapes: dict[str, tuple[int, int]]) -> ArrayTable:
        return ArrayTable(tuple(a.name for a in arrays),
                          np.array([max(shapes.get(a.name, (1, 1))[1], 1) for a in arrays], dtype=np.uint32),
                          np.array([a.element_bytes for a in arrays], dtype=np.uint32))


# Records assembled at a time: each step's temporaries (a few bytes a record) stay in the core's
# cache instead of passing through memory, and the steps of a launch share out over the cores.
_CHUNK = 1 << 16


def assemble_launch(launch: int, raw: np.ndarray, counts: np.ndarray, info: LaunchInfo,
                    sites: np.ndarray, table: ArrayTable) -> dict[str, np.ndarray]:
    """Raw records of one launch -> TRACE_DTYPE columns. sites: per site number of the kernel, its
    (trace site id, trace array id, op) as a (n, 3) array."""
    n = len(raw)
    if n == 0:
        return empty_columns()
    dt = TRACE_DTYPE.fields
    bx, by = info.block
    tpb = bx * by
    j, t = np.divmod(np.arange(len(counts), dtype=np.uint32), tpb)
    per_thread = {"block_x": info.blocks[j, 0], "block_y": info.blocks[j, 1], "thread_x": t % bx,
                  "thread_y": t // bx, "warp": t // 32, "lane": t % 32}
    per_thread = {name: values.astype(dt[name][0]) for name, values in per_thread.items()}
    starts = np.zeros(len(counts) + 1, dtype=np.int64)   # where each thread's records start
    np.cumsum(counts, out=starts[1:])
    cols = {name: np.empty(n, dtype=dt[name][0]) for name in STORED_FIELDS}
    # Everything of a site, by the site: tiny tables, one gather each.
    site_of, array_of, op_of = (sites[:, i].astype(np.uint8) for i in range(3))
    element_bytes = table.element_bytes
    # One element size for every array (all float): a scalar multiply, no gather.
    same_size = bool((element_bytes == element_bytes[0]).all())

    def assemble(lo: int, hi: int) -> None:
        r = raw[lo:hi]
        kernel_site = r["site"]
        if int(kernel_site.max()) >= len(sites):      # cuda/trace.cuh: a site the source reading missed
            bad = r["line"][np.flatnonzero(kernel_site >= len(sites))[0]]
            raise ValueError(f"{info.file}: a record from line {bad} matches no access site")
        out = {name: column[lo:hi] for name, column in cols.items()}
        out["launch"][...] = launch
        # The threads whose records these are (first and last perhaps in part): each one's fields
        # repeated for each of its records here.
        t0, t1 = np.searchsorted(starts, lo, "right") - 1, np.searchsorted(starts, hi, "left")
        repeats = np.minimum(starts[t0 + 1:t1 + 1], hi) - np.maximum(starts[t0:t1], lo)
        for name, values in per_thread.items():
            out[name][...] = np.repeat(values[t0:t1], repeats)
        np.take(site_of, kernel_site, out=out["site"], mode="clip")   # checked above: clip never clips
        np.take(op_of, kernel_site, out=out["op"], mode="clip")
        array = np.take(array_of, kernel_site, out=out["array"], mode="clip")
        index = r["index"]
        np.divmod(index, table.pitch[array], out=(out["row"], out["col"]), casting="unsafe")
        np.multiply(index, element_bytes[0] if same_size else element_bytes[array], out=out["offset"])
        for name in ("ordinal", "epoch", "group"):
            out[name][...] = r[name]

    def assemble_span(span: tuple[int, int]) -> None:
        for lo in range(span[0], span[1], _CHUNK):
            assemble(lo, min(lo + _CHUNK, span[1]))

    parallel.each(assemble_span, parallel.spans(n, 4 * parallel.THREADS))
    return cols


def thread_warps(counts: np.ndarray, block: tuple[int, int], first_warp: int) -> np.ndarray:
    """Warp number of each traced thread of a launch, counting on from first_warp."""
    tpb = block[0] * block[1]
    j, t = np.divmod(np.arange(len(counts), dtype=np.uint32), tpb)
    return first_warp + j * (-(-tpb // 32)) + t // 32
