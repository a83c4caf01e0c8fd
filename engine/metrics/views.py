"""Page-ready slices of a trace, as plain data (numpy, pandas, dataclasses of them): one warp's
instructions lane by lane, one block's tile phases, the whole-kernel tables under the figures. Each
page asks one of these per figure (through pages/lib/ui.py's caches) and hands it to a figure of
engine/plots/; nothing here draws, and no page computes on a trace itself."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_inputs
from engine.kernels.reference import matmul
from engine.metrics import analysis
from engine.metrics.analysis import BANKS, NCU_METRICS, SECTOR_BYTES, WARP, WORD_BYTES, served_lanes
from engine.tracing.records import Trace


@dataclass
class Step:
    """One warp-level instruction: what each active lane touched."""
    index: int            # position in the warp's program order
    site: int
    line: int
    kernel: str
    array: str
    space: str
    op: str
    epoch: int
    lanes: np.ndarray     # lane numbers of the active lanes
    rows: np.ndarray
    cols: np.ndarray
    offsets: np.ndarray   # byte offsets in the array
    sectors: int          # distinct 32-byte sectors (global)
    lines: int            # distinct 128-byte lines (global)
    wavefronts: int       # shared: most distinct words in one bank (wider: summed over the groups served)
    width: int = 1        # 4-byte words each lane reads or writes (4 for a 128-bit access)
    ideal: int = 1        # shared: the wavefronts it would need without bank conflicts

    @property
    def sector_ids(self) -> np.ndarray:
        return self.offsets // SECTOR_BYTES


def warps_of(trace: Trace, block_x: int, block_y: int, launch: int | None = None) -> list[int]:
    warps = trace.block_columns(block_x, block_y, launch)["warp"]
    return np.flatnonzero(analysis.counts_of(warps, 256)).tolist()    # warp: one byte


def _warp_rows(trace: Trace, inst: np.ndarray, block_x: int, block_y: int, warp: int, space: str | None,
               op: str | None, launch: int | None) -> np.ndarray:
    """The warp's instructions (rows of inst) in program order: of one memory space and one of load or
    store, where given."""
    launch = len(trace.launches) - 1 if launch is None else launch
    mine = inst[(inst["launch"] == launch) & (inst["block_x"] == block_x) & (inst["block_y"] == block_y)
                & (inst["warp"] == warp)]
    keep = np.array([(space is None or ts.site.space == space) and (op is None or ts.site.op == op)
                     for ts in trace.sites], dtype=bool)
    return mine[keep[mine["site"]]]


def warp_steps(trace: Trace, inst: np.ndarray, block_x: int, block_y: int, warp: int, space: str | None,
               start: int = 0, limit: int = 160, launch: int | None = None,
               op: str | None = None) -> tuple[list[Step], int]:
    """The warp's instructions in program order (optionally one memory space, and only its loads or its
    stores), a window of them, and how many there are in all. A step's index counts among those."""
    launch = len(trace.launches) - 1 if launch is None else launch
    mine = _warp_rows(trace, inst, block_x, block_y, warp, space, op, launch)
    total = len(mine)
    window = mine[start:start + limit]
    r = trace.columns
    in_block = trace.block_records(block_x, block_y, launch)
    in_warp = in_block[r["warp"][in_block] == warp]
    key = r["site"][in_warp].astype(np.int64) << 32 | r["ordinal"][in_warp]
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    steps = []
    for i, row in enumerate(window):
        k = int(row["site"]) << 32 | int(row["ordinal"])
        lo, hi = np.searchsorted(sorted_key, [k, k + 1])
        idx = in_warp[order[lo:hi]]
        ts = trace.sites[int(row["site"])]
        steps.append(Step(start + i, int(row["site"]), ts.site.line, ts.kernel, ts.site.array, ts.site.space,
                          ts.site.op, int(row["epoch"]), r["lane"][idx].astype(int), r["row"][idx].astype(int),
                          r["col"][idx].astype(int), r["offset"][idx].astype(np.int64), int(row["sectors"]),
                          int(row["lines"]), int(row["wavefronts"]), max(1, ts.site.bytes // WORD_BYTES),
                          int(row["ideal"])))
    return steps, total


def bank_layers(step: Step) -> dict[str, list]:
    """For a shared-memory step: each distinct word with its bank, its layer (its wavefront: 0 for
    the first word of a bank, 1 for the second ...), whether that wavefront is one beyond the
    conflict-free count (extra: a bank conflict) and the lanes that read it (broadcast). A lane of a
    wider access reads `step.width` consecutive words; such an access is served a group of lanes at
    a time (analysis.served_lanes: 128 bytes' worth, twice that for a load whose lanes pair up), so
    each group's layers follow the previous group's. Columns as lists: bank, word, layer, extra,
    lane (a list of lanes per word)."""
    first = np.full((1, WARP), -1, dtype=np.int64)
    first[0, step.lanes] = step.offsets // WORD_BYTES
    size = int(served_lanes(first, step.width, step.op == "load")[0]) if step.width > 1 else WARP
    groups = [(step.lanes >= g) & (step.lanes < g + size) for g in range(0, WARP, size)]
    out = {"bank": [], "word": [], "layer": [], "extra": [], "lane": []}
    below = 0
    for group in groups:
        lanes = np.repeat(step.lanes[group], step.width)
        words = ((step.offsets[group] // WORD_BYTES).astype(np.int64)[:, None] + np.arange(step.width)).ravel()
        if not len(words):
            continue
        part = _layers(words, lanes)
        ideal = -(-len(part["word"]) // BANKS)   # one wavefront serves at most a word of every bank
        out["bank"] += part["bank"]
        out["word"] += part["word"]
        out["layer"] += [below + y for y in part["layer"]]
        out["extra"] += [y >= ideal for y in part["layer"]]
        out["lane"] += part["lane"]
        below += max(part["layer"]) + 1
    return out


def _layers(words: np.ndarray, lanes: np.ndarray) -> dict[str, list]:
    """Each distinct word (with the lanes reading it) stacked on its bank: layer 0, 1, ..."""
    banks = words % BANKS
    order = np.lexsort((lanes, words, banks))
    w, b, lanes = words[order], banks[order], lanes[order]
    new_word = np.ones(len(w), dtype=bool)
    new_word[1:] = w[1:] != w[:-1]
    starts = np.flatnonzero(new_word)
    ub, uw = b[starts], w[starts]
    new_bank = np.ones(len(ub), dtype=bool)
    new_bank[1:] = ub[1:] != ub[:-1]
    pos = np.arange(len(ub))
    layer = pos - np.maximum.accumulate(np.where(new_bank, pos, 0))
    groups = np.split(lanes, starts[1:])
    return {"bank": ub.tolist(), "word": uw.tolist(), "layer": layer.tolist(),
            "lane": [sorted(set(g.tolist())) for g in groups]}


@dataclass
class Phase:
    phase: int
    a_rows: tuple[int, int]   # half-open ranges of the tiles the block asked for (may pass the edge)
    a_cols: tuple[int, int]
    b_rows: tuple[int, int]
    b_cols: tuple[int, int]
    a_loaded: int             # elements really read from global memory (inside the matrix)
    b_loaded: int
    zero_filled: int          # shared-memory elements stored as zeros (edges)


def tile_phases(trace: Trace, block_x: int, block_y: int) -> list[Phase]:
    """Per phase: which tile of A and of B the block loads, and the zero-filled part, from the trace."""
    tile = trace.problem.params["TILE"]
    names = trace.arrays
    # Only the block's own records: on a whole-kernel trace that is one 1/blocks-th of the columns.
    mine = trace.block_columns(block_x, block_y)
    epoch, array = mine["epoch"], mine["array"]
    gl = (mine["space"] == 0) & (mine["op"] == 0)
    st = (mine["space"] == 1) & (mine["op"] == 1)
    rows_c, cols_c = block_rows_cols(trace, block_x, block_y)
    phases = []
    for p in range(-(-trace.problem.k // tile)):
        ep = epoch == 2 * p
        loads = gl & ep
        a = loads & (array == names.index("A"))
        b = loads & (array == names.index("B"))
        stores = int((st & ep).sum())
        phases.append(Phase(p, rows_c, (p * tile, (p + 1) * tile), (p * tile, (p + 1) * tile), cols_c,
                            int(a.sum()), int(b.sum()), stores - int(a.sum()) - int(b.sum())))
    return phases


def block_rows_cols(trace: Trace, block_x: int, block_y: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The tile of C a block owns, from the kernel's launch geometry (rows, cols; half-open)."""
    tile = trace.problem.params["TILE"]
    if registry.get(trace.kernel).rows_from_block_x:   # threadIdx.x walks rows of C
        return (block_x * tile, (block_x + 1) * tile), (block_y * tile, (block_y + 1) * tile)
    return (block_y * tile, (block_y + 1) * tile), (block_x * tile, (block_x + 1) * tile)


def partial_sums(trace: Trace, block_x: int, block_y: int) -> list[np.ndarray]:
    """The block's C tile after each phase (float64 from the same inputs): what accumulates in `sum`."""
    p = trace.problem
    a, b = make_inputs(p)
    (r0, r1), (c0, c1) = block_rows_cols(trace, block_x, block_y)
    r1, c1 = min(r1, p.m), min(c1, p.n)
    out = []
    tile = p.params["TILE"]
    for ph in range(-(-p.k // tile)):
        k1 = min((ph + 1) * tile, p.k)
        out.append(matmul(a[r0:r1, :k1], b[:k1, c0:c1]))
    return out


def count_steps(trace: Trace, inst: np.ndarray, block_x: int, block_y: int, warp: int, space: str,
                op: str | None = None, launch: int | None = None) -> int:
    """How many instructions of one warp touch `space` (and, if given, are loads or stores)."""
    return len(_warp_rows(trace, inst, block_x, block_y, warp, space, op, launch))


def ncu_command(space: str, op: str, quantities: tuple[str, ...]) -> str:
    """The ncu command line that reads these quantities (of analysis.NCU_METRICS) off the GPU."""
    return "ncu --metrics " + ",".join(NCU_METRICS[(space, op, q)] for q in quantities)


# --------------------------------------------------------------------------- coalescing

@dataclass
class WarpPanel:
    """One kernel's side of the coalescing view: a window of one warp's global accesses."""
    kernel: str
    block: tuple[int, int]               # threads per block of the main launch
    warp: int
    arrays: dict[str, tuple[int, int]]   # the arrays the window touches (rows, cols), in order of first touch
    steps: list[Step]                    # empty when the warp has no active lanes at this size
    total: int                           # the warp's global accesses in all
    file: str                            # the kernel's source


def warp_panel(trace: Trace, inst: np.ndarray, block_x: int, block_y: int, warp: int, start: int,
               limit: int) -> WarpPanel:
    steps, total = warp_steps(trace, inst, block_x, block_y, warp, "global", start, limit)
    arrays = {a: trace.shapes[a] for a in dict.fromkeys(s.array for s in steps)}
    main = trace.launches[-1]
    return WarpPanel(trace.kernel, tuple(main.block), warp, arrays, steps, total, main.file)


def global_accesses(summaries: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each kernel's global access sites as Nsight Compute counts them, with the metric that counts
    their sectors; summaries: kernel name -> analysis.site_summary of its whole trace. A site of another
    launch of the kernel's pipeline (naive_transposed_b's transpose_b) is named with that launch: its
    line is in that launch's source, and Nsight Compute lists each launch on its own."""
    rows = []
    for kernel, summary in summaries.items():
        for r in summary[summary["space"] == "global"].itertuples():
            launch = kernel if r.kernel == kernel else f"{kernel}, launch {r.kernel}"
            rows.append({"kernel": launch, "line": r.line, "access": f"{r.op} {r.array}", "requests": r.requests,
                         "sectors": r.sectors, "sectors per request": round(r.sectors_per_request, 2),
                         "ncu metric": NCU_METRICS[("global", r.op, "sectors")]})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- tile phases

@dataclass
class TileView:
    """One block of a tiled kernel, phase by phase: the tiles it loads and its C tile's partial sums."""
    shapes: dict[str, tuple[int, int]]   # A, B and C (rows, cols)
    phases: list[Phase]
    partials: list[np.ndarray]           # the block's C tile after each phase
    rows: tuple[int, int]                # the block's tile of C (half-open; may pass the edge)
    cols: tuple[int, int]
    load_line: int                       # the source line that stores the tiles into shared memory
    compute_line: int                    # the line that reads them back to multiply
    file: str

    @property
    def zero_filled(self) -> bool:
        """Whether the block's tiles pass the edge of the matrices (the guards fill that with zeros)."""
        return any(p.zero_filled for p in self.phases)


def tile_view(trace: Trace, block_x: int, block_y: int) -> TileView:
    """A tiled kernel's block, phase by phase. A kernel that is not one (no TILE parameter, or no
    tile stored into shared memory and read back: a Playground kernel may be anything) is refused in
    one line; a StopIteration and a KeyError 'TILE' had reached the page."""
    sites = [s.site for s in trace.sites]
    load = next((s.line for s in sites if s.space == "shared" and s.op == "store"), None)
    compute = next((s.line for s in sites if s.space == "shared" and s.op == "load"), None)
    if load is None or compute is None:
        raise EngineError(f"{trace.kernel} does not {'store' if load is None else 'read back'} tiles in shared "
                          "memory: there are no tile phases to draw")
    if "TILE" not in trace.problem.params:
        raise EngineError(f"tile phases are drawn for TILE x TILE tiles, and {trace.kernel} has no TILE parameter")
    rows, cols = block_rows_cols(trace, block_x, block_y)
    return TileView({a: trace.shapes[a] for a in ("A", "B", "C")}, tile_phases(trace, block_x, block_y),
                    partial_sums(trace, block_x, block_y), rows, cols, load, compute, trace.launches[-1].file)


# What a tiled kernel's global reads are compared with: the naive kernel whose lanes walk columns
# (coalesced), at its own default block, so that the difference is tiling's alone.
NAIVE_BASELINE = registry.get("naive_x_cols")


# --------------------------------------------------------------------------- bank conflicts

@dataclass
class BankSteps:
    """A window of one warp's shared-memory instructions, each with its words laid out by bank."""
    steps: list[Step]
    layers: list[dict[str, list]]   # bank_layers of each step
    total: int                      # the warp's instructions of this kind in all
    what: str                       # what a step is, in words: "shared load" or "shared instruction"
    file: str


def bank_steps(trace: Trace, inst: np.ndarray, block_x: int, block_y: int, warp: int, loads_only: bool,
               start: int = 0, limit: int = 160) -> BankSteps:
    """The warp's shared loads (or all its shared instructions), numbered among themselves, so that the
    headline's count and the slider agree: `limit` of them from the 0-based `start`."""
    op = "load" if loads_only else None
    steps, total = warp_steps(trace, inst, block_x, block_y, warp, "shared", start, limit, op=op)
    return BankSteps(steps, [bank_layers(s) for s in steps], total,
                     "shared load" if loads_only else "shared instruction", trace.launches[-1].file)


@dataclass
class SharedKernel:
    """A whole kernel's shared memory, as written (one 32-bit access per source access) and as compiled
    (where nvcc merged loads into LDS.128: what Nsight Compute counts)."""
    table: pd.DataFrame              # per shared site: both views side by side
    as_written: dict[int, int]       # wavefronts per shared load -> how many loads, as written
    as_compiled: dict[int, int] | None   # the same for the hardware's loads; None if nvcc merged none
    notes: list[str]                 # per merged site, what nvcc did
    sass_note: str | None            # why there is no SASS listing to compare with, if there is none


def shared_kernel(trace: Trace, inst: np.ndarray, summary: pd.DataFrame, sass_info: dict) -> SharedKernel:
    """trace, inst: the whole kernel's; summary: analysis.site_summary of them; sass_info: its listing."""
    hw, notes, per_site = analysis.as_compiled(trace, summary, sass_info)
    sass_note = sass_info.get("note") if sass_info.get("available") is False else None
    if not (summary["space"] == "shared").any():   # no shared site, no wavefront column (a KeyError before)
        return SharedKernel(pd.DataFrame(), {}, None, notes, sass_note)
    loads = summary[(summary["space"] == "shared") & (summary["op"] == "load")]["site"].to_numpy()
    written = inst["wavefronts"][np.isin(inst["site"], loads)]
    compiled = None
    if per_site:   # merged sites count their hardware loads; the others are loaded as written
        kept = inst["wavefronts"][np.isin(inst["site"], [s for s in loads if s not in per_site])]
        compiled = _histogram(np.concatenate([*per_site.values(), kept]))
    shared = (summary["space"] == "shared").to_numpy()
    s, h = summary[shared], hw[shared]
    table = pd.DataFrame({"line": s["line"].to_numpy(), "access": (s["op"] + " " + s["array"]).to_numpy(),
                          "requests": s["requests"].to_numpy(),
                          "wavefronts": s["wavefronts"].astype(int).to_numpy(),
                          "bank conflicts": s["bank_conflicts"].astype(int).to_numpy(),
                          "as compiled: instructions": h["requests"].astype(int).to_numpy(),
                          "as compiled: wavefronts": h["wavefronts"].astype(int).to_numpy(),
                          "as compiled: bank conflicts": h["bank_conflicts"].astype(int).to_numpy()})
    return SharedKernel(table, _histogram(written), compiled, notes, sass_note)


def _histogram(values: np.ndarray) -> dict[int, int]:
    """value -> how often it occurs, in increasing value."""
    uniq, counts = np.unique(values, return_counts=True)
    return dict(zip(uniq.tolist(), counts.tolist()))
