"""The speed figures two source documents print, checked, and set beside the same kernels in a run
recorded here.

"Matrix Multiplication in CUDA" prints rough A100 throughputs, each with a % of peak; "CUDA Kernel for
Non-Square Matrix Multiplication" a V100 headline for n = 4096, k = 128. Their figures are typed in
below as the documents print them, with the datasheet peaks of those GPUs. Everything said about
them (their arithmetic, the peak a % implies) is computed from those, and every figure of this GPU
from the rows of the run shown: nothing measured is typed in. Where the run lacks a row, `missing`
says which. Imports no Streamlit; the claims' own words are pages/lib/claims.py's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from engine.bench import benchmark
from engine.kernels import registry
from engine.plots import charts

# NVIDIA's A100 datasheet, dense (TF32 and FP16 on tensor cores), in TFLOP/s by the multiply's precision.
A100_PEAK_TFLOPS = {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0}
V100_FP32_PEAK_TFLOPS = 15.7   # the V100 SXM2's datasheet (the PCIe card's: 14)
SQUARE = 4096                  # the size the documents' figures are compared at (else the largest square run)
# Columns of the tables that the words below also read.
PCT_HERE, FP32_PCT_HERE = "% of this GPU's peak", "% of this GPU's FP32 peak"


@dataclass(frozen=True)
class Printed:
    """One row of a document's table as printed, and the kernel of the catalog that does the same."""

    name: str
    tflops: float
    pct_of_peak: float
    precision: str
    kernel: str | None                                   # None: the catalog has none yet
    config: dict = field(default_factory=dict)           # the document's own: {"block": "16x16"}, {"TILE": 16}
    why: str = ""                                        # why that kernel and configuration

    @property
    def implied_peak(self) -> float:
        """The peak (TFLOP/s) that its TFLOP/s is its % of."""
        return self.tflops * 100 / self.pct_of_peak

    @property
    def own_peak_pct(self) -> float:
        """Its TFLOP/s as a % of the A100's peak at its own precision."""
        return 100 * self.tflops / A100_PEAK_TFLOPS[self.precision]


CUDA_DOC = "002"
# Its "Performance Comparison (Rough)". Its naive kernel puts threadIdx.x on columns with 16x16 blocks
# (naive_x_cols); its tiled one has boundary guards and TILE_SIZE 16 (tiled_guarded).
CUDA_TABLE = (
    Printed("Naive CUDA", 0.5, 0.3, "fp32", "naive_x_cols", {"block": "16x16"},
            "its naive kernel puts threadIdx.x on columns, in 16x16 blocks"),
    Printed("Tiled", 5, 3, "fp32", "tiled_guarded", {"TILE": 16}, "its tiled kernel has boundary guards, TILE_SIZE 16"),
    Printed("cuBLAS FP32", 19, 12, "fp32", "cublas_sgemm", why="cublasSgemm, default math"),
    Printed("cuBLAS TF32", 150, 50, "tf32", "cublas_sgemm_tf32", why="the same call with TF32 tensor-op math"),
    Printed("cuBLAS FP16", 300, 95, "fp16", None),
)


@dataclass(frozen=True)
class Headline:
    """A single result as printed: C (n x n) = A (n x k) B (k x n) in `seconds`, at `gflops`."""

    gpu: str
    n: int
    k: int
    seconds: float
    gflops: float

    @property
    def flops(self) -> int:
        return 2 * self.n * self.n * self.k

    @property
    def gflops_from_time(self) -> float:
        return self.flops / self.seconds / 1e9

    @property
    def seconds_from_gflops(self) -> float:
        return self.flops / (self.gflops * 1e9)


NON_SQUARE_DOC = "001"
NON_SQUARE = Headline("V100", 4096, 128, 0.00138, 3029.39)
TIMES_PRINTED = f"× the {NON_SQUARE.gpu} figure"   # a column: GFLOP/s here over the printed GFLOP/s
# Its kernels, as the catalog has them: B transposed, and its shared-memory kernel without and with
# padding (it names no TILE, so both).
NON_SQUARE_KERNELS = ("naive_transposed_b", "shared_bank_conflicts")
NON_SQUARE_CONFIGS = ({"kernel": "naive_transposed_b"},
                      *({"kernel": "shared_bank_conflicts", "TILE": t, "PAD": p} for t in (16, 32) for p in (0, 1)))
LADDER_NAMES = tuple(k.name for k in registry.LADDER)


@dataclass
class Measured:
    """A document's figures beside this GPU's: the table to show, the GPU and size they are from,
    and what the run lacks (one line each)."""

    table: pd.DataFrame
    gpu: str | None
    shape: tuple[int, int, int] | None
    missing: list[str]


def _timed(df: pd.DataFrame) -> pd.DataFrame:
    """The timed rows of the first GPU (as the headline takes them), each with its label."""
    ok = df[df["status"] == "ok"] if "status" in df and "gflops" in df else df.iloc[:0]
    if "gpu" in ok and ok["gpu"].notna().any():
        ok = ok[ok["gpu"] == ok["gpu"].dropna().iloc[0]]
    return ok.assign(label=charts.labels(ok) if len(ok) else [])


def _matches(row, config: dict) -> bool:
    params = row.get("params") if isinstance(row.get("params"), dict) else {}
    return all(row.get(key) == value if key in ("kernel", "block") else params.get(key) == value
               for key, value in config.items())


def _pick(rows: pd.DataFrame, config: dict):
    """The row of the document's own configuration if the run has it, else the fastest; None if none."""
    if rows.empty:
        return None
    own = rows[[_matches(r, config) for r in rows.to_dict("records")]]
    return (own if len(own) else rows).sort_values("gflops", ascending=False).iloc[0]


def _shape_text(shape: tuple[int, int, int]) -> str:
    m, n, k = shape
    return f"{m}³" if m == n == k else f"{m}×{n}×{k}"


def this_gpu_peaks(peaks: dict) -> dict[str, float | None]:
    """This GPU's peaks in GFLOP/s by precision: FP32 from its attributes, TF32 from NVIDIA's datasheet."""
    return {"fp32": peaks["fp32_gflops"], "tf32": peaks.get("tf32_gflops_datasheet"), "fp16": None}


def cuda_table(df: pd.DataFrame, peaks: dict) -> Measured:
    """The A100 table beside the same kernels at 4096³ (or the largest square size recorded) on this GPU."""
    ok = _timed(df)
    n = benchmark.square_size(ok, SQUARE)
    here = ok[(ok["m"] == n) & (ok["n"] == n) & (ok["k"] == n)] if n else ok.iloc[:0]
    mine = this_gpu_peaks(peaks)
    rows, missing = [], []
    for p in CUDA_TABLE:
        row = _pick(here[here["kernel"] == p.kernel], p.config) if p.kernel else None
        if p.kernel is None:
            missing.append(f"{p.name}: the catalog has no {p.precision.upper()} kernel yet, so it is not measured here")
        elif row is None:
            missing.append(f"{p.name}: {p.kernel} is not in this run" + (f" at {_shape_text((n, n, n))}" if n else ""))
        elif p.config and not _matches(row, p.config):
            missing.append(f"{p.name}: the document's own configuration is not in this run; {row['label']} is shown")
        gflops = row["gflops"] if row is not None else math.nan
        peak = mine[p.precision]
        # what is printed, the same kernel here, then the printed % checked
        rows.append({"as printed": p.name, "A100 TFLOP/s": p.tflops, "% of peak": p.pct_of_peak,
                     "kernel here": row["label"] if row is not None else "—", "TFLOP/s here": gflops / 1e3,
                     PCT_HERE: 100 * gflops / peak if peak else math.nan,
                     "peak that % implies": p.implied_peak, "A100 peak at its precision": A100_PEAK_TFLOPS[p.precision],
                     "% of that peak": p.own_peak_pct})
    gpu = ok["gpu"].iloc[0] if "gpu" in ok and len(ok) else None
    return Measured(pd.DataFrame(rows), gpu, (n, n, n) if n else None, missing)


def cuda_table_kernels() -> str:
    """Which kernel of the catalog stands for each printed row, and why."""
    return "; ".join(f"{p.name}: {_config_label({'kernel': p.kernel, **p.config})} ({p.why})"
                     for p in CUDA_TABLE if p.kernel) + "."


def _nearest_peak(tflops: float) -> str:
    """The A100 precision whose peak is nearest (by ratio) to tflops."""
    return min(A100_PEAK_TFLOPS, key=lambda prec: abs(math.log(tflops / A100_PEAK_TFLOPS[prec])))


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def cuda_table_check() -> str:
    """What the printed % column is a % of, and what each row is against its own precision's peak."""
    groups: dict[str, list[Printed]] = {}
    for p in CUDA_TABLE:
        groups.setdefault(_nearest_peak(p.implied_peak), []).append(p)
    against = "; ".join(
        f"{_names([p.name for p in ps])} {'are' if len(ps) > 1 else 'is'} {_names([f'{p.pct_of_peak:g}%' for p in ps])} "
        f"of {_span([p.implied_peak for p in ps])} TFLOP/s, near the A100's {prec.upper()} peak "
        f"({A100_PEAK_TFLOPS[prec]:g})" for prec, ps in groups.items())
    peaks = ", ".join(f"{prec.upper()} {v:g}" for prec, v in A100_PEAK_TFLOPS.items())
    own = "; ".join(f"{p.name} {p.own_peak_pct:.2g}%" + (f", not {p.pct_of_peak:g}%" if _nearest_peak(p.implied_peak)
                                                         != p.precision else ", as printed") for p in CUDA_TABLE)
    return (f"The % column is not against one peak: {against}. Against the peak of each row's own precision "
            f"(A100 datasheet, dense: {peaks} TFLOP/s): {own}.")


def _span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,.0f}" if round(lo) == round(hi) else f"{lo:,.0f}–{hi:,.0f}"


def cuda_table_here(m: Measured, escape=str) -> str:
    """This GPU's figures in words (the table has them all): each kernel's % of this GPU's peak."""
    if m.shape is None:
        return "This run has no square size to compare at."
    t = m.table[m.table["TFLOP/s here"].notna()]
    figures = "; ".join(f"{r['as printed']} ({r['kernel here']}) {r['TFLOP/s here']:,.1f} TFLOP/s, "
                        f"{r[PCT_HERE]:.1f}% of this GPU's {CUDA_TABLE[i].precision.upper()} peak" for i, r in t.iterrows())
    where = f"On the {escape(m.gpu)}" if m.gpu else "Here"
    return f"{where} at {_shape_text(m.shape)}: {figures or 'none of these kernels was timed'}."


def non_square_check() -> str:
    """The headline's arithmetic: its time and its rate, each from the other."""
    h = NON_SQUARE
    return (f"2 · {h.n:,} · {h.n:,} · {h.k} = {h.flops:,} floating-point operations; in {h.seconds:g} s that is "
            f"{h.gflops_from_time:,.0f} GFLOP/s, not {h.gflops:,.2f}, and {h.gflops:,.2f} GFLOP/s would take "
            f"{h.seconds_from_gflops * 1e3:.3f} ms: the two printed figures disagree by "
            f"{100 * abs(h.gflops_from_time / h.gflops - 1):.1f}%. Either is about "
            f"{100 * h.gflops / (V100_FP32_PEAK_TFLOPS * 1e3):.0f}% of a V100 SXM2's FP32 peak "
            f"({V100_FP32_PEAK_TFLOPS:g} TFLOP/s).")


def non_square(df: pd.DataFrame, peaks: dict) -> Measured:
    """The document's kernels, the ladder's best and cuBLAS at exactly its shape (M = N = n, K = k)."""
    h = NON_SQUARE
    ok = _timed(df)
    shape = (h.n, h.n, h.k)
    here = ok[(ok["m"] == h.n) & (ok["n"] == h.n) & (ok["k"] == h.k)].sort_values("gflops", ascending=False)
    own = here[here["kernel"].isin(NON_SQUARE_KERNELS)]
    ladder = here[here["kernel"].isin(LADDER_NAMES)].head(1)
    cublas = here[here["kernel"] == "cublas_sgemm"].head(1)
    shown = pd.concat([own.assign(role="the document's kernel"), ladder.assign(role="the ladder's best"),
                       cublas.assign(role="cuBLAS")])
    missing = [_config_label(c) for c in NON_SQUARE_CONFIGS if not any(_matches(r, c) for r in own.to_dict("records"))]
    missing += (["any rung of the ladder"] if ladder.empty else []) + (["cublas_sgemm"] if cublas.empty else [])
    table = pd.DataFrame({
        "kernel": shown["label"], "role": shown["role"], "GFLOP/s": shown["gflops"], "median (ms)": shown["median_ms"],
        TIMES_PRINTED: shown["gflops"] / h.gflops,
        FP32_PCT_HERE: 100 * shown["gflops"] / peaks["fp32_gflops"],
        "% of cuBLAS": shown["pct_cublas"] if "pct_cublas" in shown else math.nan}).reset_index(drop=True)
    gpu = ok["gpu"].iloc[0] if "gpu" in ok and len(ok) else None
    lines = [f"Not in this run at {_shape_text(shape)}: {', '.join(missing)}"] if missing else []
    return Measured(table, gpu, shape, lines)


def _config_label(config: dict) -> str:
    """A configuration as the charts label its rows: {"kernel": "shared_bank_conflicts", "TILE": 16, "PAD": 1}
    -> 'shared_bank_conflicts T16 pad1'."""
    params = {k: v for k, v in config.items() if k not in ("kernel", "block")}
    return charts.label({"kernel": config["kernel"], "block": config.get("block"), "params": params})


def non_square_here(m: Measured, escape=str) -> str:
    """The best of the document's kernels here, the ladder's best and cuBLAS, in words."""
    h, t = NON_SQUARE, m.table
    where = f"On the {escape(m.gpu)}" if m.gpu else "Here"
    parts = []
    for role, name in (("the document's kernel", "its fastest kernel"), ("the ladder's best", "the ladder's best"),
                       ("cuBLAS", "cuBLAS")):
        rows = t[t["role"] == role]
        if len(rows):
            r = rows.iloc[0]
            parts.append(f"{name}, {r['kernel']}, runs {r['GFLOP/s']:,.0f} GFLOP/s ({r[TIMES_PRINTED]:.1f}× the {h.gpu} "
                         f"figure; {r[FP32_PCT_HERE]:.0f}% of this GPU's FP32 peak)")
    return (f"{where} at {_shape_text(m.shape)}: " + "; ".join(parts) + "." if parts else
            f"This run has no row at {_shape_text(m.shape)}.")

