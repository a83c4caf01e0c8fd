"""The speed figures two source documents print, checked, and set beside the same kernels in a run
recorded here.

"Matrix Multiplication in CUDA" prints rough A100 throughputs, each with a % of peak, and says that
tensor cores want dimensions divisible by 8 (ideal: 16); "CUDA Kernel for Non-Square Matrix
Multiplication" a V100 headline for n = 4096, k = 128. Their figures are typed in below as the
documents print them, with the datasheet peaks of those GPUs (the tensor-core ones are
engine/bench/benchmark.py's DATASHEET_TFLOPS, as this GPU's are). Everything said about
them (their arithmetic, the peak a % implies) is computed from those, and every figure of this GPU
from the rows of the run shown: nothing measured is typed in. Where the run lacks a row, `missing`
says which. Last, the speeds that the claims of the Coalescing, Tile phases and Bank conflicts pages
quote (Quoted), from the recorded run the Benchmarks page shows without a GPU. Imports no Streamlit;
the claims' own words are pages/lib/claim_texts.py's.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from engine.bench import benchmark, schema, speeds
from engine.errors import EngineError
from engine.kernels import registry
from engine.plots import charts

# NVIDIA's A100 datasheet, dense (TF32 and FP16 on tensor cores), in TFLOP/s by the multiply's precision.
A100_PEAK_TFLOPS = {"fp32": 19.5, **{p: benchmark.DATASHEET_TFLOPS["A100"][p] for p in ("tf32", "fp16")}}
V100_FP32_PEAK_TFLOPS = 15.7   # the V100 SXM2's datasheet (the PCIe card's: 14)
SQUARE = 4096                  # the size the documents' figures are compared at (else the largest square run)
# Columns of the tables that the words below also read.
PCT_HERE, FP32_PCT_HERE = "% of this GPU's peak", "% of this GPU's FP32 peak"
PEAK_HERE = "this GPU's peak at its precision"


@dataclass(frozen=True)
class Printed:
    """One row of a document's table as printed, and the kernel of the catalog that does the same."""

    name: str
    tflops: float
    pct_of_peak: float
    precision: str
    kernel: str                                          # the catalog's kernel that does the same
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
    Printed("cuBLAS FP16", 300, 95, "fp16", "cublas_gemm_fp16", why="cublasGemmEx, FP16 inputs, FP32 accumulate"),
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


def _gpu(ok: pd.DataFrame) -> str | None:
    """The GPU the timed rows are from (_timed keeps the first one's)."""
    return ok["gpu"].iloc[0] if "gpu" in ok and len(ok) else None


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


def this_gpu_peaks(peaks: dict, gpu: str | None) -> dict[str, float | None]:
    """This GPU's peaks in GFLOP/s by precision: FP32 from its attributes, the tensor-core ones from
    NVIDIA's datasheet (as the run recorded them, or by the GPU's name for a run recorded before it
    recorded them); None where the datasheet table lacks the GPU."""
    return {"fp32": peaks["fp32_gflops"],
            **{p: peaks.get(f"{p}_gflops_datasheet") or benchmark.datasheet_gflops(gpu, p) for p in ("tf32", "fp16")}}


def cuda_table(df: pd.DataFrame, peaks: dict) -> Measured:
    """The A100 table beside the same kernels at 4096³ (or the largest square size recorded) on this GPU."""
    ok = _timed(df)
    n = benchmark.square_size(ok, SQUARE)
    here = ok[(ok["m"] == n) & (ok["n"] == n) & (ok["k"] == n)] if n else ok.iloc[:0]
    gpu = _gpu(ok)
    mine = this_gpu_peaks(peaks, gpu)
    rows, missing = [], []
    for p in CUDA_TABLE:
        row = _pick(here[here["kernel"] == p.kernel], p.config)
        if row is None:
            missing.append(f"{p.name}: {p.kernel} is not in this run" + (f" at {_shape_text((n, n, n))}" if n else ""))
        elif p.config and not _matches(row, p.config):
            missing.append(f"{p.name}: the document's own configuration is not in this run; {row['label']} is shown")
        gflops = row["gflops"] if row is not None else math.nan
        peak = mine[p.precision]
        # what is printed, the same kernel here, then the printed % checked
        rows.append({"as printed": p.name, "A100 TFLOP/s": p.tflops, "% of peak": p.pct_of_peak,
                     "kernel here": row["label"] if row is not None else "—", "TFLOP/s here": gflops / 1e3,
                     PCT_HERE: 100 * gflops / peak if peak else math.nan,
                     PEAK_HERE: peak / 1e3 if peak else math.nan,
                     "peak that % implies": p.implied_peak, "A100 peak at its precision": A100_PEAK_TFLOPS[p.precision],
                     "% of that peak": p.own_peak_pct})
    return Measured(pd.DataFrame(rows), gpu, (n, n, n) if n else None, missing)


def cuda_table_kernels() -> str:
    """Which kernel of the catalog stands for each printed row, and why."""
    return "; ".join(f"{p.name}: {_config_label({'kernel': p.kernel, **p.config})} ({p.why})" for p in CUDA_TABLE) + "."


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
                        + _of_peak(r[PCT_HERE], "this GPU's", CUDA_TABLE[i].precision) for i, r in t.iterrows())
    return f"{_where(m, escape)} at {_shape_text(m.shape)}: {figures or 'none of these kernels was timed'}."


def _where(m: Measured, escape=str) -> str:
    return f"On the {escape(m.gpu)}" if m.gpu else "Here"


def _of_peak(pct: float, whose: str, precision: str) -> str:
    """'80.9% of <whose> TF32 peak', or that the datasheet table has no such peak for this GPU."""
    return f"{pct:.1f}% of {whose} {precision.upper()} peak" if pd.notna(pct) else _no_peak(precision)


def _no_peak(precision: str) -> str:
    return f"no {precision.upper()} peak known for this GPU (not in the datasheet table)"


TENSOR_ROWS = ("cuBLAS TF32", "cuBLAS FP16")   # the table's tensor-core rows, TF32 first


def tensor_cores_here(m: Measured, escape=str) -> str:
    """The tensor-core rows each against the peak of its own precision, on the A100 (as printed) and on
    this GPU (its TFLOP/s are cuda_table_here's), and FP16 over TF32 beside the ratio of the two peaks."""
    tf32, fp16 = (next(p for p in CUDA_TABLE if p.name == name) for name in TENSOR_ROWS)
    a100 = (f"On the A100, {tf32.name} (about {tf32.tflops:g} TFLOP/s) is {tf32.own_peak_pct:.0f}% of its TF32 peak "
            f"({A100_PEAK_TFLOPS['tf32']:g}) and {fp16.name} (about {fp16.tflops:g}) {fp16.own_peak_pct:.0f}% of its "
            f"FP16 peak ({A100_PEAK_TFLOPS['fp16']:g}): FP16 {fp16.tflops / tf32.tflops:.1f}× TF32, the peaks "
            f"{A100_PEAK_TFLOPS['fp16'] / A100_PEAK_TFLOPS['tf32']:.1f}× apart.")
    t = m.table.set_index("as printed")
    rows = [(p, t.loc[p.name]) for p in (tf32, fp16) if m.shape and pd.notna(t.loc[p.name, "TFLOP/s here"])]
    if not rows:
        return a100
    peaks = ", ".join(f"{p.precision.upper()} {r[PEAK_HERE]:,.1f}" for p, r in rows if pd.notna(r[PEAK_HERE]))
    text = f"{_where(m, escape)} at {_shape_text(m.shape)}" + (f", against its datasheet peaks ({peaks} TFLOP/s)"
                                                               if peaks else "") + ": " + "; ".join(
        f"{p.name} {r[PCT_HERE]:.1f}%" if pd.notna(r[PCT_HERE]) else f"{p.name}: {_no_peak(p.precision)}"
        for p, r in rows)
    if len(rows) == 2:
        (_, a), (_, b) = rows
        text += f"; FP16 {b['TFLOP/s here'] / a['TFLOP/s here']:.2f}× TF32" + (
            f", the peaks {b[PEAK_HERE] / a[PEAK_HERE]:.1f}× apart" if pd.notna(a[PEAK_HERE]) and pd.notna(b[PEAK_HERE])
            else "")
    return f"{a100} {text}."


# Its "PyTorch Connection": torch.mm and the like "eventually call cuBLAS GEMM", and tensor cores are
# used with "dimensions divisible by 8 (ideal: 16)" and FP16 or BF16. Measured with cuBLAS FP16 (and
# torch.mm FP16 where the run has it) at n³ for sizes around 4096 that are, and are not, multiples of 8.
DIVISIBLE_SIZES = (4088, 4092, 4095, 4096, 4097, 4100, 4104, 4112)
DIVISIBLE_KERNEL, TORCH_KERNEL = "cublas_gemm_fp16", "torch_mm_fp16"
# The columns of its table that the words below read.
SPEED, OF_4096 = f"{DIVISIBLE_KERNEL} TFLOP/s", "% of 4096³"
TORCH_SPEED, TORCH_SHARE = f"{TORCH_KERNEL} TFLOP/s", "torch.mm: % of cuBLAS FP16"
# Speeds closer than this are called the same: a point's own spread is under 1% in the recorded runs,
# but a tensor-core load can move the clock by a few %.
SAME_WITHIN = 0.05


def divides_by(n: int) -> str:
    """The largest of 16, 8, 4 and 2 that divides n ('÷16' sizes are multiples of 8 too), or 'odd'."""
    return next((f"÷{d}" for d in (16, 8, 4, 2) if n % d == 0), "odd")


def divisible(df: pd.DataFrame) -> Measured:
    """cuBLAS FP16 at each size of DIVISIBLE_SIZES cubed: what the size divides by, TFLOP/s, and against
    4096³; torch.mm FP16 beside it, where timed, as TFLOP/s and % of cuBLAS FP16 at that size."""
    ok = _timed(df)
    square = ok[(ok["m"] == ok["n"]) & (ok["n"] == ok["k"]) & ok["m"].isin(DIVISIBLE_SIZES)]

    def tflops(kernel: str) -> pd.Series:
        return square[square["kernel"] == kernel].drop_duplicates("m").set_index("m")["gflops"] / 1e3

    table = pd.DataFrame({"N": DIVISIBLE_SIZES, "divisible by": [divides_by(n) for n in DIVISIBLE_SIZES]})
    cublas, torch = tflops(DIVISIBLE_KERNEL), tflops(TORCH_KERNEL)
    table[SPEED] = table["N"].map(cublas)
    table[OF_4096] = 100 * table[SPEED] / cublas.get(4096, math.nan)
    if len(torch):
        table[TORCH_SPEED] = table["N"].map(torch)
        table[TORCH_SHARE] = 100 * table[TORCH_SPEED] / table[SPEED]
    have = table[SPEED].notna()
    lacking = ", ".join(f"{n}³" for n in table.loc[~have, "N"])
    gpu = _gpu(ok)
    if not have.any():   # nothing to show but the one line
        return Measured(table.iloc[:0], gpu, None, [f"This run has no {DIVISIBLE_KERNEL} row at the sizes around "
                                                    f"4096 ({lacking}): the claim is not measured here"])
    return Measured(table, gpu, None, [f"Sizes around 4096 this run lacks for {DIVISIBLE_KERNEL}: {lacking}"] if lacking else [])


def _group(t: pd.DataFrame, pick: pd.Series, column: str) -> tuple[list[int], float]:
    """The sizes of t that `pick` selects and the median of their `column`."""
    return list(t.loc[pick, "N"]), float(t.loc[pick, column].median())


def _compared(ratio: float) -> str:
    return "as fast" if abs(ratio - 1) <= SAME_WITHIN else f"{ratio:.0%} as fast" if ratio < 1 else f"{ratio:.2f}× as fast"


def divisible_here(m: Measured, escape=str) -> str:
    """What the run says of the claim, computed from its rows: the sizes not divisible by 8 against
    those that are, and multiples of 16 against multiples of 8 only (medians of each group)."""
    t = m.table[m.table[SPEED].notna()]
    of8, of16 = t["N"] % 8 == 0, t["N"] % 16 == 0
    by8, not8, by16, only8 = (_group(t, pick, SPEED) for pick in (of8, ~of8, of16, of8 & ~of16))
    if not by8[0] or not not8[0]:
        return "This run cannot say: it needs cuBLAS FP16 at sizes both divisible and not divisible by 8."
    ratio = not8[1] / by8[1]
    slowest = t.loc[t[SPEED].idxmin()]
    if abs(ratio - 1) <= SAME_WITHIN:
        verdict = f"Divisible by 8 made no difference beyond {SAME_WITHIN:.0%} here"
    elif ratio < 1:
        verdict = "Divisible by 8 matters here, as the document says"
    else:
        verdict = "The reverse of the claim here: the sizes not divisible by 8 ran faster"
    text = (f"{_where(m, escape)}, {DIVISIBLE_KERNEL}: sizes not divisible by 8 ({_sizes(not8[0])}) ran a median "
            f"{not8[1]:,.1f} TFLOP/s against {by8[1]:,.1f} for multiples of 8 ({_sizes(by8[0])}), {_compared(ratio)}; "
            f"the slowest, {int(slowest['N'])}³ ({slowest['divisible by']}), {slowest[SPEED]:,.1f}. {verdict}.")
    if by16[0] and only8[0]:
        gain = by16[1] / only8[1]
        text += (f" Multiples of 16 ({_sizes(by16[0])}) against multiples of 8 only ({_sizes(only8[0])}): "
                 f"{by16[1]:,.1f} against {only8[1]:,.1f} TFLOP/s, " + (
                     f"the same within {SAME_WITHIN:.0%}: 16 is no better than 8 here." if abs(gain - 1) <= SAME_WITHIN else
                     f"{gain - 1:+.0%}: 16 is {'better' if gain > 1 else 'worse'} than 8 here."))
    if TORCH_SHARE in t and t[TORCH_SHARE].notna().any():
        text += (f" torch.mm (FP16) at the same sizes ran {_span(list(t[TORCH_SHARE].dropna()))}% of cuBLAS FP16's "
                 "speed (the document: it calls cuBLAS GEMM).")
    return text


def _sizes(ns: list[int]) -> str:
    return ", ".join(map(str, ns))


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
    gpu = _gpu(ok)
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
    where = _where(m, escape)
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



# --------------------------------------------------------------------------- the speeds the trace pages' claims quote

QUOTED_N = 1024   # the size the claims of the Coalescing, Tile phases and Bank conflicts pages quote
# The configurations they quote, by name: each the row of a run with that kernel, block shape or parameters.
QUOTED = {
    "rows": {"kernel": "naive_x_rows", "block": "16x16"},
    "cols": {"kernel": "naive_x_cols", "block": "16x16"},
    "transposed": {"kernel": "naive_transposed_b", "block": "32x32"},
    "tiled": {"kernel": "tiled_guarded", "TILE": 16},
    "cublas": {"kernel": "cublas_sgemm"},
    **{f"{'padded' if pad else 'conflicts'}{tile}": {"kernel": "shared_bank_conflicts", "TILE": tile, "PAD": pad}
       for tile in (16, 32) for pad in (0, 1)},
}


@dataclass(frozen=True)
class Quoted:
    """The GFLOP/s of QUOTED's configurations at QUOTED_N³ in one run, for the claims to quote: each
    figure computed from the run's row, never typed in."""

    run: str                      # which run: "recorded NVIDIA H200 run of 2026-11-22"
    n: int
    gflops: dict[str, float]      # by QUOTED's name; only the configurations the run has

    def has(self, *names: str) -> bool:
        return all(name in self.gflops for name in names)

    def speed(self, name: str) -> str:
        return f"{self.gflops[name]:,.0f}"

    def ratio(self, a: str, b: str) -> str:
        """How many times b's speed a's is: '5.4x'."""
        return f"{self.gflops[a] / self.gflops[b]:.1f}x"

    @staticmethod
    def label(name: str) -> str:
        """A configuration as the charts and the Benchmarks page's headline label its row: 'naive_x_cols 16x16'."""
        return _config_label(QUOTED[name])

    def missing(self, *names: str) -> str:
        """The sentence to say instead where the run lacks some of the configurations."""
        lacking = ", ".join(self.label(name) for name in names if name not in self.gflops)
        return f"The {self.run} has no row for {lacking} at N={self.n:,} to measure it with."


def quoted(df: pd.DataFrame, run: str, n: int = QUOTED_N) -> Quoted:
    """The fastest timed row of each of QUOTED's configurations at n³ (on the run's first GPU)."""
    ok = _timed(df)
    here = ok[(ok["m"] == n) & (ok["n"] == n) & (ok["k"] == n)].to_dict("records")
    found = {name: max((r["gflops"] for r in here if _matches(r, config)), default=None)
             for name, config in QUOTED.items()}
    return Quoted(run, n, {name: float(g) for name, g in found.items() if g is not None})


@functools.cache   # the shipped runs do not change while the server runs: read once, not on every rerun
def _recorded_quoted(path: Path | None) -> Quoted:
    if path is None:
        return Quoted("explorer's copy (no recorded run)", QUOTED_N, {})
    try:
        df, prov = benchmark.load_document(schema.read_bounded(path))
    except (OSError, EngineError):   # gone or refused since it was listed: as if none were shipped
        return Quoted("explorer's copy (no recorded run)", QUOTED_N, {})
    return quoted(df, speeds.run_label(prov, live=False))


@functools.cache   # the shipped runs do not change while the server runs: read once, not on every rerun
def _recorded_run(path: Path) -> pd.DataFrame:
    return benchmark.load_document(schema.read_bounded(path))[0]


def run_of_record(kernel: str, gpus: set, n: int) -> tuple[str, pd.DataFrame] | None:
    """The recorded run every page quotes for `kernel` at n³ on one of `gpus`: the newest shipped run
    that timed it there (the run the page that draws the kernel opens on), as (file name, its timed
    rows of the kernel at n³); None where no shipped run did. Runs are recorded per topic, and two of
    them may time the same kernel (cuBLAS TF32 in the FP32 run and the tensor run): one measurement,
    one number, so the pages quote the one run."""
    for path in reversed(benchmark.recorded_runs(holding=[kernel])):
        try:
            run = _recorded_run(path)
        except EngineError:   # a value schema.read refuses, in a file of the right shape: not a run to quote
            continue
        rows = run[(run["kernel"] == kernel) & (run["m"] == n) & (run["n"] == n) & (run["k"] == n)
                   & (run["status"] == "ok") & run["gpu"].isin(gpus)]
        if len(rows):
            return path.name, rows
    return None


def recorded_quoted() -> Quoted:
    """The figures from the run the Benchmarks page opens on without a GPU (benchmark.OPENING_RUN, or the
    first recorded run of the naive kernels where it is not shipped): the page's headline quotes that
    run, so the Coalescing page quotes it too, not a newer run of the same kernels beside it."""
    runs = benchmark.recorded_runs(holding=[QUOTED["cols"]["kernel"]])
    opening = benchmark.opening_runs(runs)
    return _recorded_quoted(opening[0] if opening else None)
