"""The speeds a page draws from one benchmark run: each of a set of kernels at one square size (its
fastest timed row), beside the baseline it is read against. One implementation for the Ladder page
(the FP32 rungs against cuBLAS SGEMM) and the Tensor cores page (the tensor rungs against cuBLAS
FP16, with cuBLAS's other products beside them). Rows as benchmark.load_document (or derive) gives
them; plain data, drawn by engine/plots/ladder_figures.py and tensor_figures.py; no Streamlit here.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.bench import benchmark, schema
from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem


def square_sizes(df: pd.DataFrame, kernels: Sequence[str]) -> list[int]:
    """The N of the N x N x N sizes at which any of the kernels has a row, ascending."""
    mine = df[df["kernel"].isin(list(kernels)) & (df["m"] == df["n"]) & (df["n"] == df["k"])]
    return sorted(int(n) for n in set(mine["n"]))


@dataclass(frozen=True)
class Fastest:
    """Of a set of kernels at one size: the fastest ok row of each that has one, and why the others have none."""
    rows: pd.DataFrame          # indexed by kernel, in the order the kernels were asked for
    missing: list[str]          # kernels with no row at this size
    failed: dict[str, str]      # kernel -> why none of its rows is a time (wrong result, refused size, ...)


def fastest(df: pd.DataFrame, size: int, kernels: Sequence[str]) -> Fastest:
    at = df[(df["m"] == size) & (df["n"] == size) & (df["k"] == size) & df["kernel"].isin(list(kernels))]
    ok = at[at["status"] == "ok"]
    best = ok.loc[ok.groupby("kernel")["gflops"].idxmax()].set_index("kernel")
    present = set(at["kernel"])
    failed = {k: _why(at[at["kernel"] == k].iloc[0]) for k in kernels if k in present and k not in best.index}
    return Fastest(best.loc[[k for k in kernels if k in best.index]], [k for k in kernels if k not in present], failed)


def _why(row: pd.Series) -> str:
    return str(row["error"]) if isinstance(row.get("error"), str) else str(row["status"])


def params_text(params, between: str = "=", sep: str = " ") -> str:
    """A row's compile-time parameters as text ('BM=64 BN=64'); '' where it has none."""
    return sep.join(f"{k}{between}{v}" for k, v in params.items()) if isinstance(params, dict) else ""


def run_label(prov: dict, live: bool) -> str:
    """What the speeds are: 'recorded NVIDIA H200 run of 2026-11-21', or measured live now."""
    gpu, date = prov.get("gpu") or "unknown GPU", str(prov.get("date", ""))[:10]
    return f"live on this {gpu}, {date}" if live else f"recorded {gpu} run of {date}"


# --------------------------------------------------------------------------- the FP32 ladder

@dataclass(frozen=True)
class LadderSpeeds:
    """The rungs' rows of a benchmark run at one size: the fastest ok row of each rung."""
    size: int
    rows: pd.DataFrame          # rung, gflops, pct_cublas, params (text), in ladder order
    cublas: float | None        # cuBLAS SGEMM's GFLOP/s at that size
    missing: list[str]          # rungs with no row at this size
    failed: dict[str, str]      # rung -> why its rows were not timed (wrong result, error)


def ladder_speeds(df: pd.DataFrame, size: int) -> LadderSpeeds:
    rungs = fastest(df, size, registry.LADDER_RUNGS)
    cublas = fastest(df, size, ["cublas_sgemm"]).rows
    pct = rungs.rows["pct_cublas"] if "pct_cublas" in rungs.rows else pd.Series(np.nan, index=rungs.rows.index)
    rows = pd.DataFrame({"rung": list(rungs.rows.index), "gflops": rungs.rows["gflops"].astype(float).tolist(),
                         "pct_cublas": [float(p) if pd.notna(p) else None for p in pct],
                         "params": [params_text(p) for p in rungs.rows["params"]]},
                        columns=["rung", "gflops", "pct_cublas", "params"])
    return LadderSpeeds(size, rows, float(cublas["gflops"].iloc[0]) if len(cublas) else None, rungs.missing,
                        rungs.failed)


# --------------------------------------------------------------------------- the tensor rungs

# What the rungs are measured against, in this order after them: the same product on cuBLAS's tensor
# cores (FP16 and BF16 in, FP32 sums), PyTorch's call of it, and FP32 cuBLAS with and without TF32.
BASELINES = ("cublas_gemm_fp16", "cublas_gemm_bf16", "torch_mm_fp16", "cublas_sgemm_tf32", "cublas_sgemm")
REFERENCE = "cublas_gemm_fp16"   # the product the rungs compute: the % column reads against it


@dataclass(frozen=True)
class TensorSpeeds:
    """Each tensor rung's and baseline's TFLOP/s at one square size of one run."""
    bars: pd.DataFrame      # kernel, title, tflops, pct (of cuBLAS FP16; NaN if it was not timed), params
    label: str              # what the numbers are: "recorded NVIDIA H200 run of ..." or "live on ..."
    size: int
    missing: list[str]      # tensor rungs the run has no row for at this size
    failed: dict[str, str]  # kernel -> why its row is not a time (wrong result, refused size, ...)


def tensor_speeds(df: pd.DataFrame, size: int, label: str) -> TensorSpeeds:
    found = fastest(df, size, registry.TENSOR_RUNGS + BASELINES)
    best = found.rows
    tflops = best["gflops"] / 1000
    ref = tflops.get(REFERENCE, np.nan)
    bars = pd.DataFrame({"kernel": list(best.index), "title": best["title"].tolist(), "tflops": tflops.tolist(),
                         "pct": (100 * tflops / ref).tolist(),
                         "params": [params_text(p, " ", ", ") for p in best["params"]]})
    return TensorSpeeds(bars, label, size, [r for r in found.missing if r in registry.TENSOR_RUNGS], found.failed)


def padded_at(shown: TensorSpeeds, n: int) -> list[str]:
    """The rungs timed in `shown` whose run at n³ begins with a padding launch (pad_ab.cu): wgmma_padded
    at every size, the other TMA rungs where n is not a multiple of 8."""
    p = make_problem(n, n, n)
    return [k for k in shown.bars["kernel"] if k in registry.TENSOR_RUNGS
            and "pad_ab" in (launch.kernel for launch in registry.get(k).launches_for(p))]


# --------------------------------------------------------------------------- sizes that are not multiples of 8

# The kernels of the cliff: cuBLAS FP16, then the rungs it is set beside (wgmma_tma pads A and B first
# where K or N is not a multiple of 8, and refused those sizes in runs recorded before it did;
# wgmma_padded pads at every size; mma_pipelined copies such rows half by half).
CLIFF = (REFERENCE, "wgmma_tma", "wgmma_padded", "mma_pipelined")


def cliff(df: pd.DataFrame) -> pd.DataFrame:
    """Per square size of a run (ascending): whether it is a multiple of 8, each CLIFF kernel's
    TFLOP/s (NaN where it has no timed row: refused, or not run), the fastest tensor rung and its
    speed over cuBLAS FP16's."""
    rows = []
    for n in square_sizes(df, CLIFF):
        found = fastest(df, n, registry.TENSOR_RUNGS + (REFERENCE,)).rows["gflops"] / 1000
        rungs = found.drop(REFERENCE, errors="ignore")
        best = rungs.idxmax() if len(rungs) else None
        ref = found.get(REFERENCE, np.nan)
        rows.append({"N": n, "multiple of 8": n % 8 == 0, **{k: found.get(k, np.nan) for k in CLIFF},
                     "best rung": best, "best": rungs.max() if best else np.nan,
                     "best / cuBLAS": rungs.max() / ref if best else np.nan})
    return pd.DataFrame(rows, columns=["N", "multiple of 8", *CLIFF, "best rung", "best", "best / cuBLAS"])


def _span(values, fmt: str = "{:,.0f}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if f"{lo:.1f}" == f"{hi:.1f}" else f"{fmt.format(lo)}–{fmt.format(hi)}"


def _sizes_text(ns) -> str:
    return ", ".join(f"{int(n):,}³" for n in ns)


def cliff_story(table: pd.DataFrame) -> str:
    """What a cliff table (cliff()) says, in numbers from its rows: cuBLAS FP16 at the sizes that are
    and are not multiples of 8, wgmma_padded against it at the latter, wgmma_tma there where it has
    times (it pads only there), the fastest rung at each of them, what padding costs where none is
    needed, and what mma_pipelined's half-by-half copies cost. Markdown."""
    t = table.set_index("N")
    odd, even = t[~t["multiple of 8"]], t[t["multiple of 8"]]
    ref, pad, tma, mma = (t[k].astype(float) for k in (REFERENCE, "wgmma_padded", "wgmma_tma", "mma_pipelined"))
    if not len(odd) or odd[REFERENCE].isna().all():
        return "This run has no cuBLAS FP16 time at a size that is not a multiple of 8."
    out = [f"**cuBLAS FP16** ran {_span(even[REFERENCE].dropna())} TFLOP/s at the multiples of 8 "
           f"({_sizes_text(even.index)}) and **{_span(odd[REFERENCE].dropna())}** at the other sizes "
           f"({_sizes_text(odd.index)})"]
    if 4096 in t.index and 4095 in t.index:
        out[-1] += f": {ref[4096] / ref[4095]:.1f}× slower at 4,095³ than at 4,096³, for one row, column and k less."
    else:
        out[-1] += "."
    ratios = (pad / ref)[odd.index].dropna()
    if len(ratios):
        out.append(f"**wgmma_padded**, which first copies A and B into rows padded to 128 bytes, ran "
                   f"{_span(pad[odd.index].dropna())} TFLOP/s there: **{_span(ratios, '{:.1f}')}× cuBLAS FP16**.")
    if odd["wgmma_tma"].notna().all():
        out.append(f"wgmma_tma, which pads only at such sizes, ran {_span(tma[odd.index])} TFLOP/s there.")
    best = odd.dropna(subset=["best / cuBLAS"])
    if len(best):
        names = ", ".join(dict.fromkeys(best["best rung"]))
        out.append(f"The fastest rung at each of them ({names}) ran **{_span(best['best / cuBLAS'], '{:.1f}')}× "
                   f"cuBLAS FP16**.")
    if 4096 in t.index and pd.notna(tma.get(4096)) and pd.notna(pad.get(4096)):
        out.append(f"Where no padding is needed it costs: at 4,096³ wgmma_padded ran {pad[4096]:,.0f} against "
                   f"wgmma_tma's {tma[4096]:,.0f} ({100 * (1 - pad[4096] / tma[4096]):.0f}% less: the copy is one "
                   f"more pass over A and B), and cuBLAS FP16 {ref[4096]:,.0f}.")
    if 4096 in t.index and 4095 in t.index and pd.notna(mma.get(4095)) and pd.notna(mma.get(4096)):
        out.append(f"Predicated copies instead of padding: mma_pipelined, whose copies go half by half where rows "
                   f"are not 16-byte aligned (no cp.async there), ran {mma[4095]:,.0f} TFLOP/s at 4,095³ against "
                   f"{mma[4096]:,.0f} at 4,096³.")
    return " ".join(out)


# NVIDIA's A100 architecture whitepaper: 256 dense FP16 FMA per clock per tensor core, 4 tensor cores per
# SM, so 1,024 per SM (x 2 FLOP x 108 SMs x 1,410 MHz = 312 TFLOP/s, the datasheet's dense FP16 peak).
A100_FMA_PER_TENSOR_CORE = 256
A100_TENSOR_CORES_PER_SM = 4
A100_FMA_PER_SM = A100_FMA_PER_TENSOR_CORE * A100_TENSOR_CORES_PER_SM


@dataclass(frozen=True)
class PerCycle:
    """What one SM did per clock cycle in cuBLAS FP16's row of a run, beside the A100's figure."""
    tflops: float           # cuBLAS FP16's TFLOP/s at the size shown
    sm_count: int
    clock_mhz: float        # the run's max_sm_clock_mhz: the most the SMs can run at
    flop: float             # FLOP per cycle per SM
    fma: float              # FMA (2 FLOP each) per cycle per SM
    vs_a100: float          # fma / A100_FMA_PER_SM


def per_sm_cycle(shown: TensorSpeeds, prov: dict) -> PerCycle | None:
    """cuBLAS FP16's speed in shown as work per SM per clock cycle: TFLOP/s * 1e12 / (sm_count *
    max_sm_clock_mhz * 1e6), from the run's provenance. At the maximum clock, so the SMs did at least
    this much per cycle they actually ran. None when cuBLAS FP16 has no timed row at that size or the
    provenance lacks the SM count or clock."""
    row = shown.bars[shown.bars["kernel"] == REFERENCE]
    sms, mhz = prov.get("sm_count"), prov.get("max_sm_clock_mhz")
    if row.empty or not sms or not mhz:
        return None
    tflops = float(row["tflops"].iloc[0])
    flop = tflops * 1e12 / (sms * mhz * 1e6)
    return PerCycle(tflops, int(sms), float(mhz), flop, flop / 2, flop / 2 / A100_FMA_PER_SM)


# --------------------------------------------------------------------------- the tensor rungs at one tile

# The rungs whose order the Tensor cores page explains: wmma_block's defaults are a sweep's winner,
# mma_ldmatrix's and mma_swizzled's chosen by hand (not swept), so their bars compare different tiles.
SAME_TILE_RUNGS = ("wmma_block", "mma_ldmatrix", "mma_swizzled")


@dataclass(frozen=True)
class SameTiles:
    """Each of SAME_TILE_RUNGS timed at one tile shape (mma_ldmatrix's defaults) at one size: the
    fastest ok row of the run shown, or else of the newest recorded sweep that timed it there."""
    params: dict[str, int]
    size: int
    tflops: dict[str, float]    # only the rungs some file timed at those tiles
    source: dict[str, str]      # rung -> the file (or "the run shown") the figure comes from


def _at_tiles(df: pd.DataFrame, kernel: str, params: dict, size: int) -> float | None:
    at = df[(df["kernel"] == kernel) & (df["m"] == size) & (df["n"] == size) & (df["k"] == size) & (df["status"] == "ok")]
    hits = [g for g, p in zip(at["gflops"], at["params"])
            if isinstance(p, dict) and all(p.get(k) == v for k, v in params.items())]
    return max(hits) / 1000 if hits else None


@functools.cache   # the shipped sweeps do not change while the server runs: read once, not per rerun
def _sweeps() -> tuple[tuple[str, pd.DataFrame], ...]:
    """The recorded autotuning sweeps that timed one of SAME_TILE_RUNGS, oldest first, each named by its file."""
    out = []
    for path in benchmark.tuning_runs(holding=SAME_TILE_RUNGS):
        try:
            out.append((f"the autotuning sweep tuning/{path.name}", benchmark.load_document(schema.read_bounded(path))[0]))
        except (OSError, EngineError):   # a value schema.read refuses: that sweep is not one to quote
            continue
    return tuple(out)


def same_tiles(df: pd.DataFrame, size: int, shown: str = "the run shown") -> SameTiles:
    """SAME_TILE_RUNGS at mma_ldmatrix's default tiles and size³, from df (the run a page shows, named
    `shown`) or else from the newest recorded sweep of the same GPU that timed it there."""
    params = dict(registry.get("mma_ldmatrix").defaults)
    gpu = set(df["gpu"]) if "gpu" in df else set()
    sources = [(shown, df)] + [(name, rows) for name, rows in reversed(_sweeps()) if set(rows["gpu"]) & gpu]
    tflops, source = {}, {}
    for kernel in SAME_TILE_RUNGS:
        for name, rows in sources:
            found = _at_tiles(rows, kernel, params, size)
            if found is not None:
                tflops[kernel], source[kernel] = found, name
                break
    return SameTiles(params, size, tflops, source)


# --------------------------------------------------------------------------- where mma_pipelined's time goes

# tests/benchmarks/mma_costs.py's variants, in the order the chart draws them: mma_pipelined as written,
# then with each of the three things mma_tma does another way taken out of its source, then all three,
# then mma_tma itself.
COSTS_FORMAT = "cuda-matmul-explorer mma costs 1"
COST_VARIANTS = ("as written", "no barrier", "no stores", "no copies", "none of the three", "mma_tma")


@dataclass(frozen=True)
class Costs:
    """A run of tests/benchmarks/mma_costs.py as a table: per size and variant (COST_VARIANTS order) its
    label, TFLOP/s, share of cuBLAS FP16 at that size (pct, the faster of cuBLAS's times before and
    after) and its speed over mma_pipelined as written, less one (gain)."""
    table: pd.DataFrame
    gpu: str
    params: dict


def costs_from_file(path) -> Costs:
    """mma_costs of a recorded run's file; EngineError (one line) where it is not such a run or is damaged."""
    try:
        run = json.loads(schema.read_bounded(Path(path)))
        if run.get("format") != COSTS_FORMAT:
            raise ValueError(f"not a run of tests/benchmarks/mma_costs.py (format {run.get('format')!r})")
        costs = mma_costs(run)
        had = set(zip(costs.table["size"], costs.table["variant"]))
        missing = {(n, v) for n in set(costs.table["size"]) for v in COST_VARIANTS} - had
        if missing:
            raise ValueError(f"no row for {', '.join(f'{v} at {n}' for n, v in sorted(missing))}")
        if not (costs.table["tflops"] > 0).all() or not (costs.table["cublas"] > 0).all():
            raise ValueError("a speed that is not a positive number")
        return costs
    except KeyError as exc:
        raise EngineError(f"{Path(path).name} could not be read: it has no {exc}") from None
    except (OSError, ValueError, TypeError, AttributeError, ZeroDivisionError) as exc:
        raise EngineError(f"{Path(path).name} could not be read: {exc}") from None
    except schema.Unreadable as exc:   # no regular file, or too big
        raise EngineError(f"{Path(path).name} could not be read: {exc.reason}") from None


def mma_costs(run: dict) -> Costs:
    rows = []
    for r in run["rows"]:
        ref = max(run["cublas_fp16_tflops"][str(r["size"])].values())
        rows.append({"size": r["size"], "variant": r["variant"], "label": r["label"], "tflops": r["tflops"],
                     "pct": 100 * r["tflops"] / ref, "cublas": ref})
    t = pd.DataFrame(rows)
    if t.duplicated(["size", "variant"]).any():
        raise ValueError("two rows for one variant at one size")
    if unknown := set(t["variant"]) - set(COST_VARIANTS):
        raise ValueError(f"a variant it does not know ({', '.join(sorted(map(str, unknown)))})")
    t["order"] = t["variant"].map(COST_VARIANTS.index)
    t = t.sort_values(["size", "order"]).drop(columns="order").reset_index(drop=True)
    written = t[t["variant"] == "as written"].set_index("size")["tflops"]
    t["gain"] = t["tflops"] / t["size"].map(written) - 1
    return Costs(t, run["provenance"].get("gpu") or "GPU", dict(run.get("params", {})))


def costs_story(c: Costs, size: int) -> str:
    """What a Costs table says at one size, in its own numbers. Markdown."""
    t = c.table[c.table["size"] == size].set_index("variant")

    def gain(v: str) -> str:
        return f"{100 * t.loc[v, 'gain']:+.0f}%"

    tiles = f"{c.params.get('BM')} × {c.params.get('BN')} tiles, a ring of {c.params.get('STAGES')}" if c.params else "its tiles"
    return (f"**Where mma_pipelined's time goes.** mma_tma, the next rung, does three things another way: its "
            f"copies are the copy engine's (TMA), not every thread's between its multiplies; no barrier stops the "
            f"whole block at every k-tile (each warp waits on its own slot's mbarrier); and its blocks stay on the "
            f"SMs, so each block's stores of C overlap the next tile's copies instead of ending the block. "
            f"Here each is taken out of mma_pipelined's own source and the kernel timed without it "
            f"({tiles}; the results may then be wrong: only the times count). At {size:,}³ on the {c.gpu}: "
            f"as written **{t.loc['as written', 'tflops']:,.0f} TFLOP/s** ({t.loc['as written', 'pct']:.0f}% "
            f"of cuBLAS FP16); without the barrier in its k-loop {gain('no barrier')}, without its stores of C "
            f"{gain('no stores')}, without the copies in its k-loop **{gain('no copies')}**; without all three "
            f"{t.loc['none of the three', 'tflops']:,.0f} ({t.loc['none of the three', 'pct']:.0f}%), which is what "
            f"ldmatrix and mma.sync at these warp tiles do alone. mma_tma ran "
            f"{t.loc['mma_tma', 'tflops']:,.0f} ({t.loc['mma_tma', 'pct']:.0f}%).")
