"""What one block of an FP32 ladder rung (registry.LADDER_RUNGS) does, counted in its trace: the
counts that explain the rung's speed, the warps' barrier intervals (tile loads against the multiply),
and the table across the rungs. Plain data for the Ladder page (pages/ladder.py) and its figures
(engine/plots/ladder_figures.py); nothing here draws, runs a kernel or imports Streamlit. What a rung's
source changed is engine/metrics/rung_diff.py's; the rungs' measured speed, engine/bench/speeds.py's.

Counts are of one block, at the problem's size:
- a load *instruction* is one thread's load: one record of the trace, a float4 (LDG4, LDS4) or a
  cp.async included, each one instruction;
- FMAs are the block's outputs (the C elements it writes) times K: the products its tile needs;
- a *request* is a warp-level instruction, as Nsight Compute counts them (engine/metrics/analysis.py):
  its global sectors, its shared wavefronts and bank conflicts are analysis.py's, so a 128-bit load
  of 32 lanes is 16 sectors (512 bytes) and, conflict-free, 4 wavefronts.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

from engine.metrics import analysis
from engine.metrics.analysis import SECTOR_BYTES
from engine.tracing.records import Trace

# --------------------------------------------------------------------------- what one block's trace counts

@dataclass(frozen=True)
class RungCounts:
    """What one block of a rung does, counted in its trace (the docstring above says how)."""
    name: str
    params: dict[str, int]
    block: tuple[int, int]
    threads: int
    outputs: int              # C elements the block writes
    k: int
    epochs: int               # barrier intervals its threads pass through (the last epoch, plus one)
    global_loads: int         # load instructions of the block's threads (records)
    shared_loads: int
    compiled_shared_loads: int | None   # the same, as nvcc compiled them (scalar loads merged into LDS.128)
    compiled_why: str         # why that is None: no SASS listing, or a merge the model does not cover
    global_bytes: int
    shared_bytes: int
    global_requests: int      # warp-level global loads
    global_sectors: int
    ideal_sectors: int        # what their bytes fill, packed into whole sectors
    shared_requests: int      # warp-level shared loads
    shared_wavefronts: int
    shared_ideal: int         # wavefronts of the same loads without bank conflicts
    intervals: pd.DataFrame   # per warp and barrier interval: see intervals(); the first TIMELINE_INTERVALS
    # per warp, all of them: (intervals that both load a tile and multiply one, intervals that multiply)
    interval_totals: dict[int, tuple[int, int]]
    # Nsight Compute's totals for the block, as compiled (analysis.compiled_totals), per launch kernel.
    compiled_totals: dict = field(default_factory=dict)
    # (instructions, wavefronts, bank conflicts) of the block's shared loads as the hardware executes
    # them (nvcc's merges counted: analysis.as_compiled), None without a SASS listing; and of its
    # shared stores (cp.async's writes apart: Nsight Compute counts those as LDGSTS).
    compiled_loads: tuple | None = None
    stores: tuple = (0, 0, 0)

    @property
    def fmas(self) -> int:
        return self.outputs * self.k

    @property
    def outputs_per_thread(self) -> float:
        return self.outputs / self.threads

    @property
    def global_intensity(self) -> float:
        """FLOP per global byte memory (2 FLOP an FMA)."""
        return 2 * self.fmas / self.global_bytes

    @property
    def shared_intensity(self) -> float:
        return 2 * self.fmas / self.shared_bytes

    @property
    def sectors_per_request(self) -> float:
        return self.global_sectors / self.global_requests

    @property
    def ideal_sectors_per_request(self) -> float:
        return self.ideal_sectors / self.global_requests

    @property
    def wavefronts_per_request(self) -> float:
        return self.shared_wavefronts / self.shared_requests

    @property
    def ideal_wavefronts_per_request(self) -> float:
        return self.shared_ideal / self.shared_requests

    @property
    def conflicts_per_request(self) -> float:
        return (self.shared_wavefronts - self.shared_ideal) / self.shared_requests


def k_step(params: dict[str, int]) -> int:
    """How far along K one tile reaches: BK on the ladder's rungs, TILE on the tiled kernel."""
    return params["BK"] if "BK" in params else params["TILE"]


def rung_counts(trace: Trace, inst: np.ndarray, block: tuple[int, int], sass_info: dict | None = None) -> RungCounts:
    """trace: a trace holding block `block` of a rung; inst: its warp instructions; sass_info: the
    rung's SASS listing (engine/kernels/sass.py), for the loads nvcc merged, or None."""
    bx, by = block
    p = trace.problem
    sites = [ts.site for ts in trace.sites]
    # A record's site says everything counted here (memory space, load or store, array, bytes): the
    # block's records counted once per site, in one pass over them.
    columns = trace.block_columns(bx, by)
    per_site = analysis.counts_of(columns["site"], len(sites))
    site_bytes = np.array([site.bytes for site in sites], dtype=np.int64)
    global_load = np.array([site.space == "global" and site.op == "load" for site in sites], dtype=bool)
    shared_load = np.array([site.space == "shared" and site.op == "load" for site in sites], dtype=bool)
    c_store = np.array([site.op == "store" and site.array == "C" for site in sites], dtype=bool)
    width = np.array([site.width for site in sites], dtype=np.int64)     # elements a record stores
    mine = inst[(inst["launch"] == len(trace.launches) - 1) & (inst["block_x"] == bx) & (inst["block_y"] == by)]
    ig, is_ = mine[global_load[mine["site"]]], mine[shared_load[mine["site"]]]
    ideal_sectors = -(-ig["active"].astype(np.int64) * site_bytes[ig["site"]] // SECTOR_BYTES)
    sites_hw = analysis.site_summary(trace, mine)
    totals = {}
    compiled, why = None, "no SASS"
    if sass_info and sass_info.get("available"):
        hw, notes, merged = analysis.as_compiled(trace, sites_hw, sass_info)
        totals, _ = analysis.hardware_totals(trace, hw, notes, sass_info)   # what Nsight Compute reads
        compiled, why = _compiled_shared_loads(trace, merged, np.where(shared_load, per_site, 0), sass_info)
        if compiled is not None:
            sites_hw = hw
    shared = sites_hw[(sites_hw["space"] == "shared") & ~sites_hw["copy"].astype(bool)]
    loads, stores = shared[shared["op"] == "load"], shared[shared["op"] == "store"]
    three = lambda t: tuple(int(t[c].sum()) for c in ("requests", "wavefronts", "bank_conflicts")) if len(t) else (0, 0, 0)  # noqa: E731
    threads = trace.launches[-1].block[0] * trace.launches[-1].block[1]
    return RungCounts(
        trace.kernel, dict(p.params), (bx, by), threads,
        outputs=int((per_site * width)[c_store].sum()), k=p.k,
        epochs=int(columns["epoch"].max()) + 1 if len(columns["epoch"]) else 0,
        global_loads=int(per_site[global_load].sum()), shared_loads=int(per_site[shared_load].sum()),
        compiled_shared_loads=compiled, compiled_why=why, global_bytes=int((per_site * site_bytes)[global_load].sum()),
        shared_bytes=int((per_site * site_bytes)[shared_load].sum()),
        global_requests=len(ig), global_sectors=int(ig["sectors"].sum()), ideal_sectors=int(ideal_sectors.sum()),
        shared_requests=len(is_), shared_wavefronts=int(is_["wavefronts"].sum()), shared_ideal=int(is_["ideal"].sum()),
        **_timeline_parts(intervals(trace, ig, is_)),
        compiled_loads=three(loads) if compiled is not None else None, stores=three(stores), compiled_totals=totals)


# What one more period of K adds to a block's counts, and what it leaves as it is.
_GROWING = ("epochs", "global_loads", "shared_loads", "compiled_shared_loads", "global_bytes", "shared_bytes", "global_requests",
            "global_sectors", "ideal_sectors", "shared_requests", "shared_wavefronts", "shared_ideal",
            "compiled_loads", "stores", "compiled_totals", "interval_totals")
_FIXED = ("name", "params", "block", "threads", "outputs", "compiled_why")


def extended(short: RungCounts, longer: RungCounts, periods: int, k: int, apart: int = 1) -> RungCounts:
    """The counts of the same block at K = k, where `longer` is `short` with `apart` periods of K more and
    k is `periods` periods more than short's (engine/metrics/long_k.py says why that is exact): every
    count of short plus periods times what one period adds. The timeline's first intervals are longer's
    (the short trace may end inside them)."""
    for name in _FIXED:
        if getattr(short, name) != getattr(longer, name):
            raise ValueError(f"{short.name}: {name} differs between the two short traces")

    def grow(a, b):
        if a is None or b is None:
            if (a is None) != (b is None):
                raise ValueError(f"{short.name}: one short trace has a count the other lacks")
            return None
        if isinstance(a, dict):
            if a.keys() != b.keys():
                raise ValueError(f"{short.name}: the two short traces count different things")
            return {key: grow(a[key], b[key]) for key in a}
        if isinstance(a, tuple):
            return tuple(grow(x, y) for x, y in zip(a, b, strict=True))
        if (b - a) % apart:
            raise ValueError(f"{short.name}: {apart} periods of K did not add the same count each")
        return a + periods * ((b - a) // apart)
    return dataclasses.replace(longer, k=k, **{name: grow(getattr(short, name), getattr(longer, name)) for name in _GROWING})


def _compiled_shared_loads(trace: Trace, merged: dict, loads: np.ndarray, sass_info: dict) -> tuple[int | None, str]:
    """Shared load instructions of the block as nvcc compiled them (where it merged `width` scalar
    loads of an aligned piece into one LDS.64 or LDS.128), or None and why not: a line nvcc compiled
    wider whose loads the model does not group (nvcc reordered the loop in a way it does not follow).
    merged: the sites analysis.as_compiled merged; loads: the block's shared loads per site."""
    wide = analysis.merged_sites(trace, sass_info)
    if set(wide) - set(merged):
        return None, "not modelled"
    # A thread's `width` merged loads are one instruction.
    merged_loads = int(loads[list(merged)].sum())
    instructions = sum(int(loads[s]) // analysis.VECTOR_WIDTH[wide[s]] for s in merged)
    return int(loads.sum()) - merged_loads + instructions, ""


COPY, MULTIPLY = "tile loads (global)", "multiply (shared loads)"
TIMELINE_INTERVALS = 8   # barrier intervals kept per warp for the timeline: the pattern repeats after the first few


def _timeline_parts(rows: pd.DataFrame) -> dict:
    """RungCounts' intervals (the first TIMELINE_INTERVALS of each warp) and interval_totals (of all)."""
    kinds = rows.groupby(["warp", "epoch"])["what"].nunique()
    both = (kinds == 2).groupby(level="warp").sum()
    multiplies = rows[rows["what"] == MULTIPLY].groupby("warp")["epoch"].nunique()
    totals = {int(w): (int(both.get(w, 0)), int(multiplies.get(w, 0))) for w in kinds.index.unique(level="warp")}
    return {"intervals": rows[rows["epoch"] < TIMELINE_INTERVALS].reset_index(drop=True), "interval_totals": totals}


def intervals(trace: Trace, global_loads: np.ndarray, shared_loads: np.ndarray) -> pd.DataFrame:
    """Per warp and barrier interval (epoch: the barriers its threads had passed), the warp's global
    loads of the K tiles (COPY: tile, from the element's k; cp.async groups, of the copies) and its
    shared loads (MULTIPLY: the tile they multiply, the newest tile the block had loaded before the
    barrier that opened the interval). One row per (warp, epoch, what) that has any."""
    r = trace.columns
    step = k_step(trace.problem.params)
    a = trace.arrays.index("A")
    first = global_loads["first"]
    k_of = np.where(r["array"][first] == a, r["col"][first], r["row"][first]).astype(np.int64)
    tile = k_of // step
    is_copy = np.array([ts.site.copy for ts in trace.sites], dtype=bool)[global_loads["site"]]
    group = r["group"][first].astype(np.int64)
    warp, epoch, at, count = _by_warp_and_epoch(global_loads)
    copies = pd.DataFrame({"warp": warp, "epoch": epoch, "what": COPY, "instructions": count,
                           "tile": _max_per(tile, at, len(count)),
                           "tiles": _distinct_per(at, tile, len(count)),
                           "groups": _distinct_per(at[is_copy], group[is_copy], len(count))})
    # The newest tile loaded before each interval, by any warp of the block: per epoch with loads,
    # the newest tile loaded up to it.
    load_epochs = np.unique(global_loads["epoch"])
    newest = np.maximum.accumulate(_max_per(tile, np.searchsorted(load_epochs, global_loads["epoch"]), len(load_epochs)))
    newest = np.r_[-1, newest]        # -1: no tile loaded yet
    warp, epoch, _, count = _by_warp_and_epoch(shared_loads)
    before = np.searchsorted(load_epochs, epoch)   # epochs with loads before this one: the newest is newest[before]
    multiplies = pd.DataFrame({"warp": warp, "epoch": epoch, "what": MULTIPLY, "instructions": count,
                               "tile": newest[before],
                               "tiles": [[] for _ in count], "groups": [[] for _ in count]})
    columns = ["warp", "epoch", "what", "instructions", "tile", "tiles", "groups"]
    rows = [part for part in (copies, multiplies) if len(part)]
    if not rows:
        return pd.DataFrame([], columns=columns)
    return pd.concat(rows, ignore_index=True)[columns].sort_values(["warp", "epoch", "what"], ignore_index=True)


def _by_warp_and_epoch(inst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (warp, epoch) of warp instructions, in order: their warps, epochs, which one each
    instruction is (an index into them) and how many instructions each has."""
    key = inst["warp"].astype(np.int64) << 32 | inst["epoch"]
    keys, at, count = np.unique(key, return_inverse=True, return_counts=True)
    return keys >> 32, keys & 0xFFFFFFFF, at.ravel(), count


def _max_per(values: np.ndarray, at: np.ndarray, n: int) -> np.ndarray:
    """The largest of the values of each of n groups (at: each value's group; every group has one)."""
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(out, at, values)
    return out


def _distinct_per(at: np.ndarray, values: np.ndarray, n: int) -> list[list[int]]:
    """The distinct values (non-negative, below 2**32), ascending, of each of n groups (at: each
    value's group)."""
    pairs = np.unique(at.astype(np.int64) << 32 | values)
    cuts = np.searchsorted(pairs >> 32, np.arange(n + 1))
    found = (pairs & 0xFFFFFFFF).tolist()
    return [found[lo:hi] for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist())]


@dataclass(frozen=True)
class Timeline:
    """One warp's barrier intervals on one rung: when it loads tiles and when it multiplies them."""
    name: str
    warp: int
    intervals: pd.DataFrame   # the warp's rows of RungCounts.intervals (its first TIMELINE_INTERVALS)
    overlap: int              # intervals in which it both loads a tile from global memory and multiplies one
    multiplies: int           # intervals in which it multiplies


def timeline(counts: RungCounts, warp: int) -> Timeline:
    """The warp's timeline (the block's last warp where the rung has fewer warps than asked for)."""
    warp = min(warp, -(-counts.threads // 32) - 1)
    mine = counts.intervals[counts.intervals["warp"] == warp].reset_index(drop=True)
    return Timeline(counts.name, warp, mine, *counts.interval_totals.get(warp, (0, 0)))


# --------------------------------------------------------------------------- the table across the rungs

def _ratio(count: int | None, fmas: int, why: str = "—") -> str:
    """A count per FMA (or per thread) as the fraction it is where that reads well (1/32: a load per 32
    FMAs; 9/8), else as _num writes it."""
    if count is None:
        return why
    exact = Fraction(count, fmas)
    return f"{exact.numerator:,}/{exact.denominator:,}" if 1 < exact.denominator <= 4096 else _num(count / fmas)


def _num(v: float) -> str:
    """A count or ratio in one style, never in powers of ten (a 1^3 block had read 1.393e+05 and 3.59e-06
    beside 1/32): whole from 100 up, 3 significant digits below, and under 0.01 as 1/N, "≈" where N is
    rounded (81/278,528 is not 1/3,439)."""
    v = float(v)
    if math.isnan(v):
        return "—"
    if v.is_integer() or abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 0.01:
        return f"{v:.3g}"
    if abs(v) < 1e-12:   # past any count a block makes: not a 13-digit fraction
        return "0"
    about = "" if abs(1 / v - round(1 / v)) <= 1e-9 * abs(1 / v) else "≈"
    return f"{about}1/{1 / v:,.0f}" if v > 0 else f"-{about}1/{-1 / v:,.0f}"


METRICS = {   # row of the table -> its value for one rung, as shown
    "block traced": lambda c: f"({c.block[0]}, {c.block[1]})",
    "threads per block": lambda c: f"{c.threads:,}",
    # as the fraction it is, as loads per FMA are: at 1^3 TILE 8 (64 threads) read 0.0156 beside 1/256
    "outputs per thread": lambda c: _ratio(c.outputs, c.threads),
    "FMAs per block": lambda c: f"{c.fmas:,}",
    "global loads per FMA": lambda c: _ratio(c.global_loads, c.fmas),
    "shared loads per FMA": lambda c: _ratio(c.shared_loads, c.fmas),
    "… as compiled (nvcc's LDS.64, LDS.128)": lambda c: _ratio(c.compiled_shared_loads, c.fmas, c.compiled_why),
    "FLOP per global byte": lambda c: _num(c.global_intensity),
    "FLOP per shared byte": lambda c: _num(c.shared_intensity),
    "sectors per global request (ideal)": lambda c: f"{_num(c.sectors_per_request)} "
                                                         f"({_num(c.ideal_sectors_per_request)})",
    "wavefronts per shared load, as written (ideal)": lambda c: f"{_num(c.wavefronts_per_request)} "
                                                                 f"({_num(c.ideal_wavefronts_per_request)})",
    "bank conflicts per shared load, as written": lambda c: _num(c.conflicts_per_request),
    "wavefronts per shared load, as compiled": lambda c: _per(c.compiled_loads, 1, c.compiled_why),
    "bank conflicts per shared load, as compiled": lambda c: _per(c.compiled_loads, 2, c.compiled_why),
    "bank conflicts per shared store": lambda c: _per(c.stores, 2),
}


def _per(three: tuple | None, which: int, why: str = "—") -> str:
    """wavefronts (which=1) or bank conflicts (2) per instruction of (instructions, wavefronts, conflicts)."""
    if three is None:
        return why or "—"
    return _num(three[which] / three[0]) if three[0] else "—"


def metrics_table(rungs: dict[str, RungCounts | str]) -> pd.DataFrame:
    """One row per metric, one column per rung (in the order given); a rung that could not be traced
    (its value: the engine's one-line reason) is a column of dashes."""
    return pd.DataFrame({name: [fn(c) if isinstance(c, RungCounts) else "—" for fn in METRICS.values()]
                         for name, c in rungs.items()}, index=pd.Index(list(METRICS), name="one block"))


# --------------------------------------------------------------------------- a step between two rungs

# What the hardware does per FMA, as compiled: the costs a step between rungs trades. name -> value.
STEP_COSTS = {
    "global load instructions per FMA": lambda c: c.global_loads / c.fmas,
    "shared load instructions per FMA (as compiled)": lambda c: (c.compiled_shared_loads if c.compiled_shared_loads
                                                                 is not None else c.shared_loads) / c.fmas,
    "shared load wavefronts per FMA (as compiled)": lambda c: (c.compiled_loads[1] if c.compiled_loads
                                                               else c.shared_wavefronts) * 32 / c.fmas,
    "shared store wavefronts per FMA": lambda c: c.stores[1] * 32 / c.fmas,
    "shared store bank conflicts per FMA": lambda c: c.stores[2] * 32 / c.fmas,
}


def step(previous: RungCounts, current: RungCounts, speed_before: float | None = None,
         speed_after: float | None = None) -> tuple[pd.DataFrame, str]:
    """What changed from one rung to the next, per FMA (wavefronts are a warp's, so per 32 FMAs of
    its lanes: times 32), and a sentence that says which costs moved with the speed. Every number
    is counted in the two blocks' traces; the speeds are a recorded or live run's."""
    rows = []
    for name, fn in STEP_COSTS.items():
        a, b = fn(previous), fn(current)
        change = "same" if abs(b - a) <= 1e-9 * max(a, b, 1e-12) else f"{(b - a) / a:+.0%}" if a else "new"
        rows.append({"per FMA": name, previous.name: _num(a), current.name: _num(b), "change": change,
                     "_up": b > a * (1 + 1e-9), "_down": b < a * (1 - 1e-9)})
    table = pd.DataFrame(rows)
    worse = [r["per FMA"] for r in rows if r["_up"]]
    better = [r["per FMA"] for r in rows if r["_down"]]
    if speed_before and speed_after:
        ratio = speed_after / speed_before
        said = (f"{current.name} runs at {speed_after:,.1f} TFLOP/s against {previous.name}'s {speed_before:,.1f} "
                f"({ratio - 1:+.0%}). ")
        if ratio < 1:
            said += ("It pays more per FMA in: " + "; ".join(worse) + "." if worse else
                     "None of the counted costs per FMA went up: the step down is not explained by these counts "
                     "(latency and occupancy, not counted here, remain).")
        else:
            said += ("It pays less per FMA in: " + "; ".join(better) + "." if better else
                     "None of the counted costs per FMA went down: the gain comes from what is not counted here "
                     "(latency hidden, occupancy).")
            if worse:
                said += " It pays more in: " + "; ".join(worse) + "."
    else:
        said = ("Costs per FMA that went down: " + ("; ".join(better) or "none") + ". Went up: " + ("; ".join(worse) or "none") + ".")
    return table.drop(columns=["_up", "_down"]), said
