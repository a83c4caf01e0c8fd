"""Benchmark sweeps: timing on the GPU worker (engine/bench/timing.py), figures derived here.

Every row carries what an expert asks first: median and spread of many timed repetitions after
warm-up, whether L2 was flushed, the correctness check that came before any timing, and the
clocks, power and temperature the GPU reported right after the point.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import numbers
import os
import platform
import statistics
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from engine.bench import schema
from engine.devices import gpu_client
from engine.errors import EngineError
from engine.kernels import build, registry
from engine.kernels.problem import check_size, make_problem
from engine.plots import charts
from engine.tracing.plan import array_bytes, check_fits_gpu, global_shapes

FP32_LANES_PER_SM = {"7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128, "9.0": 128, "10.0": 128,
                     "12.0": 128}
# Dense tensor-core peaks in TFLOP/s from NVIDIA's datasheets, by the precision of the multiply (not
# derivable from device attributes), for the GPUs whose names contain the key: the H100 and H200 SXM
# (half their "with sparsity" figures), the A100.
DATASHEET_TFLOPS = {"H100": {"tf32": 494.7, "fp16": 989.4, "bf16": 989.4},
                    "H200": {"tf32": 494.7, "fp16": 989.4, "bf16": 989.4},
                    "A100": {"tf32": 156.0, "fp16": 312.0, "bf16": 312.0}}
# The recorded runs shown without a GPU: the shipped ones, or a folder of one's own (its autotuning
# sweeps in its tuning/); a folder of their own, so recorded_runs() does not list the sweeps.
RECORDED = Path(os.environ.get("MATMUL_EXPLORER_RECORDED") or Path(__file__).parent / "recorded")
TUNING = RECORDED / "tuning"
# A run of the tensor rungs and cuBLAS FP16 at sizes around 4096 and 8192 that are and are not
# multiples of 8 (the Tensor cores page's cliff); a folder of its own, so the Benchmarks page's list
# of full runs (recorded_runs) stays as it was.
ANY_SIZE = RECORDED / "any_size"
# What mma_pipelined's barrier, copies and stores of C cost it, each taken out of its source and the
# kernel timed without it (tests/benchmarks/mma_costs.py): the Tensor cores page, section 5.
COSTS = RECORDED / "costs"
# Where mma_pipelined's warps wait, by Nsight Compute's warp-state sampling (tests/benchmarks/mma_stalls.py):
# the Tensor cores page, section 5, beside the costs.
STALLS = RECORDED / "stalls"


@dataclass
class Settings:
    warmup: int = 2
    reps: int = 20
    flush_l2: bool = False
    seconds_per_point: float = 4.0   # fewer repetitions (never under 5) for very slow points

    def __post_init__(self):
        # --reps 0 timed nothing and the median of no times failed as a traceback
        if isinstance(self.reps, bool) or not isinstance(self.reps, numbers.Integral) or self.reps < 1:
            raise EngineError(f"repetitions must be a whole number of at least 1, got {self.reps!r}")
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, numbers.Integral) or self.warmup < 0:
            raise EngineError(f"warm-up launches must be a whole number of at least 0, got {self.warmup!r}")
        if not 0 < self.seconds_per_point < float("inf"):
            raise EngineError(f"seconds per point must be a positive number, got {self.seconds_per_point!r}")


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    """'1024,2048,1000x2000x512' -> [(1024,1024,1024), (2048,...), (1000,2000,512)]."""
    out = []
    for item in text.replace(" ", "").split(","):
        if not item:
            continue
        parts = item.lower().split("x")
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise EngineError(f"sizes are N or MxNxK, like 1024 or 1000x2000x512; got {item!r}") from None
        if len(nums) == 1:
            nums *= 3
        if len(nums) != 3:
            raise EngineError(f"a size is N or MxNxK, got {item!r}")
        out.append(tuple(check_size(name, v) for name, v in zip("MNK", nums)))   # 0 refused here, not per point
    if not out:
        raise EngineError("no sizes given")
    return out


def device_peaks(info: dict) -> dict:
    """FP32 peak from the device's attributes; memory bandwidth from its clock and bus width."""
    lanes = FP32_LANES_PER_SM.get(info.get("compute_capability", ""), 128)
    fp32 = info["sm_count"] * lanes * 2 * info["sm_clock_mhz"] * 1e6 / 1e9
    bandwidth = info["memory_clock_mhz"] * 1e6 * 2 * info["memory_bus_bits"] / 8 / 1e9
    return {"fp32_gflops": fp32, "bandwidth_gbs": bandwidth,
            **{f"{p}_gflops_datasheet": datasheet_gflops(info.get("name"), p) for p in schema.TENSOR_PRECISIONS}}


def datasheet_gflops(gpu: str | None, precision: str) -> float | None:
    """A GPU's dense tensor-core peak at a precision (tf32, fp16, bf16), in GFLOP/s, from its name;
    None for a GPU the datasheet table does not have."""
    peaks = next((v for key, v in DATASHEET_TFLOPS.items() if key in (gpu or "")), {})
    return peaks[precision] * 1e3 if precision in peaks else None


def provenance(info: dict, settings: Settings) -> dict:
    """Where and how a run was measured. With every % of cuBLAS go the versions it depends on: the
    toolkit that built the kernels (nvcc's version line), the driver and the cuBLAS the GPU worker
    calls (asked here, so no caller can leave it out); the SM clock of each point is in its row."""
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, timeout=5).stdout.strip()
    except OSError:
        commit = ""
    return {"gpu": info.get("name"), "compute_capability": info.get("compute_capability"),
            "sm_count": info.get("sm_count"), "max_sm_clock_mhz": info.get("sm_clock_mhz"),
            "driver_cuda_version": info.get("driver"), "driver": info.get("driver_release"), "cuda": info.get("cuda"),
            "toolkit": toolkit(), "cublas_version": cublas_version(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
            "settings": asdict(settings), "peaks": device_peaks(info), "engine_commit": commit}


def toolkit() -> str | None:
    """The line of `nvcc --version` that names the toolkit ("Cuda compilation tools, release 13.0,
    V13.0.88"): nvcc builds the kernels that are timed. None where there is no nvcc."""
    compiler = build.nvcc()
    try:
        text = build.compiler_version(compiler) if compiler else ""
    except EngineError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if "release" in line), lines[-1] if lines else None)


def cublas_version() -> int | None:
    """The version of the cuBLAS the GPU worker times (cublasGetVersion: 13.0.1 is 130001); None where
    it has none (no GPU, no libcublas)."""
    try:
        return gpu_client.call("cublas_version")
    except EngineError:
        return None


def _spread(times: list[float]) -> float:
    """Interquartile range over the median: robust run-to-run spread of the repetitions."""
    if len(times) < 4:
        return 0.0
    q = statistics.quantiles(times, n=4)
    return (q[2] - q[0]) / statistics.median(times)


def measure(kernel: str, m: int, n: int, k: int, settings: Settings, params: Mapping[str, int] | None = None,
            block: tuple[int, int] | None = None) -> dict:
    """One timed point as a result row (errors become rows too: a sweep never stops on one), with every
    compile-time parameter of the kernel by name. params: settings for many kernels, of which this one
    takes those it declares (the rest of its parameters: its defaults; for a kernel configured per size,
    where none is given, the recorded size sweeps' choice for this size: selection.chosen)."""
    from engine.bench import selection  # here, not above: selection reads its sweeps through this module
    spec = registry.get(kernel)
    block = block or spec.default_block
    here = gpu_client.status()
    taken = spec.takes(params or {}) or selection.chosen(kernel, m, n, k, gpu=here.name, sm_count=here.info.get("sm_count"))
    row = {"kernel": kernel, "title": spec.title, "precision": str(spec.precision), "m": m, "n": n, "k": k,
           "params": {**spec.default_params(), **taken},
           "block": "x".join(map(str, block)) if spec.block_shapes else None}
    try:
        p = registry.bind(spec, make_problem(m, n, k, block=block, params=taken))
        check_fits_gpu(p, kernel, gpu_client.status())
        out = gpu_client.call("bench", {"kernel": kernel, "problem": p, "warmup": settings.warmup,
                                        "reps": settings.reps, "flush_l2": settings.flush_l2,
                                        "seconds_per_point": settings.seconds_per_point})
    except EngineError as exc:
        return {**row, "status": "error", "error": str(exc)}
    times = out["times_ms"]
    row.update({"status": "ok" if out["correct"] else "wrong result", "rel_error": out["rel_error"],
                "reps": len(times), "launches_per_sample": out.get("launches_per_sample", 1),
                "hold_ms": out.get("hold_ms"), "retaken_samples": out.get("retaken_samples", 0),
                "starved_samples": out.get("starved_samples", 0),
                "flush_l2": settings.flush_l2, **out.get("telemetry", {})})
    if not out["correct"]:
        worst = out.get("worst_error", 0.0)
        row["error"] = (f"relative error {out['rel_error']:.2e} over the tolerance {out['tolerance']:.0e}: not timed"
                        if not out["rel_error"] <= out["tolerance"] else
                        f"an element off by {worst:.2e} × max |C|, over the tolerance {out['tolerance']:.0e} "
                        f"(relative error {out['rel_error']:.2e}): not timed")
        return row
    median = statistics.median(times)
    flops = 2.0 * m * n * k
    shapes = global_shapes(p)
    min_bytes = float(sum(array_bytes(name, shapes[name], spec.inputs) for name in ("A", "B", "C")))
    row.update({"median_ms": median, "min_ms": min(times), "max_ms": max(times), "spread": _spread(times),
                "gflops": flops / median / 1e6, "bandwidth_gbs": min_bytes / median / 1e6,
                "intensity": flops / min_bytes})
    return row


def check_params(kernels: list[str], params: Mapping[str, int]) -> None:
    """Settings for a sweep of several kernels, refused with one line where none of them could take
    one: a parameter that no kernel of the sweep declares, or a value that none of those allows (each
    kernel takes only what it declares, so either would change nothing, silently)."""
    specs = [registry.get(k) for k in kernels]
    for name, value in params.items():
        takers = [s for s in specs if name in s.params]
        if not takers:
            declared = sorted({n for s in specs for n in s.params})
            raise EngineError(f"no kernel of this sweep has a parameter {name} (they take "
                              f"{', '.join(declared) or 'no compile-time parameters'})")
        if not any(value in s.params[name] for s in takers):
            allowed = sorted({v for s in takers for v in s.params[name]})
            raise EngineError(f"{', '.join(s.name for s in takers)} take{'s' if len(takers) == 1 else ''} {name} "
                              f"{', '.join(map(str, allowed))}, not {value}")


def sweep(kernels: list[str], sizes: list[tuple[int, int, int]], settings: Settings,
          params: Mapping[str, int] | None = None, blocks: dict[str, tuple[int, int]] | None = None) -> Iterator[dict]:
    """Rows as they are measured: every kernel at the first size, then the next size. params: the
    compile-time parameters asked for, each applied to the kernels that take it."""
    for m, n, k in sizes:
        for kernel in kernels:
            yield measure(kernel, m, n, k, settings, params, (blocks or {}).get(kernel))


# % of cuBLAS is against cuBLAS at the row's own precision: one cuBLAS entry for each (a torch.mm row
# is measured against it, never the other way round).
_CUBLAS = [k for k in registry.CATALOG if k.kind is registry.Kind.CUBLAS]
CUBLAS_AT = {str(k.precision): k.name for k in _CUBLAS}
if len(CUBLAS_AT) != len(_CUBLAS):
    raise ValueError("two cuBLAS entries of the registry share a precision: % of cuBLAS would be against either")


def unique_name(name: str, taken: set[str]) -> str:
    """name, or where it is taken name #2, #3, ...: a run's name tells it from the others shown (derive
    measures each run against its own cuBLAS by it), and two uploads of results.json are two runs."""
    return next(n for i in range(1, len(taken) + 2) if (n := name if i == 1 else f"{name} #{i}") not in taken)


def derive(df: pd.DataFrame, peaks: dict) -> pd.DataFrame:
    """% of the FP32 peak, and % of cuBLAS at the same precision and size (when cuBLAS was measured).
    Linear in the rows (two merges): a search of the whole frame per row took 23.5 s for 20,000 rows."""
    df = df.copy()
    if "gflops" not in df:
        return df
    # Untimed rows have None: where no row was timed (every kernel failed) the column held only None,
    # and the arithmetic below raised TypeError.
    df["gflops"] = df["gflops"].astype(float)
    df["pct_fp32_peak"] = 100 * df["gflops"] / peaks["fp32_gflops"]
    if "gpu" not in df:
        df["gpu"] = None
    base = np.full(len(df), np.nan)
    # Runs shown together (a "run" column: the page names each) are each against their own cuBLAS: two
    # runs of one GPU had both been divided by the first run's.
    for rows in ([np.arange(len(df))] if "run" not in df else
                 [np.flatnonzero(df["run"].to_numpy() == r) for r in dict.fromkeys(df["run"])]):
        base[rows] = _cublas_gflops(df.iloc[rows])
    df["pct_cublas"] = 100 * df["gflops"].to_numpy() / base
    return df


def _cublas_gflops(df: pd.DataFrame) -> np.ndarray:
    """Per row, the GFLOP/s of the fastest cuBLAS row at its precision and size, on its GPU or on an
    unnamed one (which stands for any GPU; of the two, the one that comes first); NaN where there is
    none. A row without a GPU name compares with unnamed ones only. The fastest, as everywhere a run
    timed cuBLAS twice at a size (the sweeps do): this page had taken the first, the size table the
    last and the Ladder the fastest, up to 1.5% apart."""
    at = np.arange(len(df))
    size = ["m", "n", "k"]
    keys = pd.DataFrame({"ref": df["precision"].map(CUBLAS_AT).to_numpy(), **{c: df[c].to_numpy() for c in size},
                         "gpu": df["gpu"].to_numpy()})
    cublas = pd.DataFrame({"ref": df["kernel"].to_numpy(), **{c: df[c].to_numpy() for c in size},
                           "gpu": df["gpu"].to_numpy(), "base": df["gflops"].to_numpy(), "at": at})
    cublas = cublas[cublas["ref"].isin(list(CUBLAS_AT.values()))].sort_values("base", ascending=False, kind="stable")
    named = cublas[cublas["gpu"].notna()].drop_duplicates(["ref", *size, "gpu"])
    unnamed = cublas[cublas["gpu"].isna()].drop_duplicates(["ref", *size]).drop(columns="gpu")
    same = keys.merge(named, on=["ref", *size, "gpu"], how="left")   # a left merge keeps the rows' order
    any_gpu = keys.merge(unnamed, on=["ref", *size], how="left")
    first = same["at"].isna() | (any_gpu["at"] < same["at"])
    return np.where(first, any_gpu["base"], same["base"]).astype(float)


# The results table's columns, in order, with readable names; the kernel column is the charts' label
# (kernel, block shape, compile-time parameters). Beside % of cuBLAS: the SM clock, the cuBLAS and the
# toolkit it depends on.
TABLE_COLUMNS = {"gpu": "GPU", "run": "run", "label": "kernel", "precision": "precision", "m": "M", "n": "N", "k": "K",
                 "status": "status", "gflops": "GFLOP/s",
                 "pct_cublas": "% of cuBLAS", "sm_clock_mhz": "SM clock (MHz)", "cublas": "cuBLAS",
                 "toolkit": "toolkit", "pct_fp32_peak": "% of FP32 peak", "median_ms": "median (ms)",
                 "spread": "spread (IQR/median)", "reps": "repetitions", "bandwidth_gbs": "bandwidth (GB/s)",
                 "intensity": "FLOP per byte", "rel_error": "relative error", "power_w": "power (W)",
                 "temperature_c": "temperature (°C)", "error": "error"}
TEXT_COLUMNS = ("gpu", "run", "label", "precision", "status", "cublas", "toolkit", "error")


def table(df: pd.DataFrame) -> pd.DataFrame:
    """The results as shown: readable column names; a missing number stays empty (NaN, drawn blank)
    and missing text is a dash, never 'None'."""
    df = df.assign(label=charts.labels(df))
    if "run" in df and not charts.runs_apart(df):   # a run per GPU at most: the GPU column says which
        df = df.drop(columns="run")
    out = pd.DataFrame({name: df[col] for col, name in TABLE_COLUMNS.items() if col in df})
    for col, name in TABLE_COLUMNS.items():
        if name not in out:
            continue
        if col in TEXT_COLUMNS:
            out[name] = out[name].map(lambda v: "—" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v))
        else:
            out[name] = pd.to_numeric(out[name], errors="coerce")
    return out


HEADLINE_KERNELS = ("naive_x_rows", "naive_x_cols", "naive_transposed_b", "tiled_guarded", "cublas_sgemm")


def headline(df: pd.DataFrame, n: int = 1024, escape=str) -> str:
    """The figures a reader compares first, computed from the rows shown (never typed in): GFLOP/s at
    N = n on the first GPU, each named with its block shape and parameters, and the coalescing ratio. The GPU's
    name may come from an uploaded file: `escape` makes it plain text for the renderer (the page's
    Markdown); kernel labels are the catalog's own."""
    ok = df[(df["status"] == "ok") & (df["m"] == n) & (df["n"] == n) & (df["k"] == n)]
    if "gpu" in ok and ok["gpu"].notna().any():
        ok = ok[ok["gpu"] == ok["gpu"].dropna().iloc[0]]
    if "run" in ok and len(ok):   # of that GPU's runs, the first: each kernel once
        ok = ok[ok["run"] == ok["run"].iloc[0]]
    ok = ok.assign(label=charts.labels(ok)) if len(ok) else ok.assign(label=[])
    picked = [(r["label"], r["gflops"]) for kernel in HEADLINE_KERNELS for _, r in ok[ok["kernel"] == kernel].iterrows()]
    if not picked:
        return ""
    text = f"At N={n:,}" + (f" on the {escape(ok['gpu'].iloc[0])}" if "gpu" in ok and pd.notna(ok["gpu"].iloc[0]) else "") + \
        ": " + "; ".join(f"{name} {gflops:,.0f} GFLOP/s" for name, gflops in picked) + "."
    rows, cols = (ok[ok["kernel"] == k] for k in ("naive_x_rows", "naive_x_cols"))
    if len(rows) and len(cols):
        a, b = rows.iloc[0], cols.iloc[0]
        text += (f" Lanes on columns ({b['label']}) run {b['gflops'] / a['gflops']:.1f}x faster than lanes on rows "
                 f"({a['label']}).")
    return text


def load_document(data: bytes | str) -> tuple[pd.DataFrame, dict]:
    """A JSON export (ours, possibly from another machine) -> rows with the GPU's name and derived
    figures, and the provenance; a BadDocument (an EngineError, one line) if it is not one. Rows this
    explorer does not know are left out (load_upload says which)."""
    return _run(schema.read(data))


def load_upload(name: str, data: bytes) -> tuple[tuple[pd.DataFrame, dict] | None, list[str]]:
    """An uploaded file, from anyone: (rows, provenance) and what was left out of it, or None and why
    it was, one line per problem (capped). Never raises for what the file holds."""
    try:
        doc = schema.read(data)
    except schema.BadDocument as exc:
        return None, [f"{name} is not shown: it is not a benchmark export this explorer can read."] + exc.lines
    left_out = [f"{name}: {doc.left_out:,} of {len(doc.raw):,} rows left out (values this explorer "
                "does not know):"] + doc.skipped if doc.left_out else []
    return _run(doc), left_out


def _run(doc: schema.Document) -> tuple[pd.DataFrame, dict]:
    return derive(of_run(doc.frame, doc.prov), doc.prov["peaks"]), doc.prov


def of_run(frame: pd.DataFrame, prov: dict) -> pd.DataFrame:
    """A run's rows, each with what the charts and the table say of its run: the GPU, when it was
    recorded, and the cuBLAS and toolkit that its % of cuBLAS depends on ('not recorded' in a file
    older than those fields)."""
    return frame.assign(gpu=prov.get("gpu") or "unknown GPU", recorded=prov.get("date"),
                        cublas=charts.cublas_text(prov), toolkit=charts.toolkit_text(prov))


def _newest(folder: Path) -> Path | None:
    """The newest run in folder (by the date in its name, gpu-YYYY-MM-DD.json, then by GPU), or None:
    a newer build's run before an older one's of another GPU."""
    runs = sorted(folder.glob("*.json"), key=lambda p: (p.stem[-10:], p.stem))
    return runs[-1] if runs else None


def any_size_run() -> Path | None:
    """The newest shipped run of ANY_SIZE, or None."""
    return _newest(ANY_SIZE)


def costs_run() -> Path | None:
    """The newest shipped run of tests/benchmarks/mma_costs.py (COSTS), or None."""
    return _newest(COSTS)


def stalls_run() -> Path | None:
    """The newest shipped run of tests/benchmarks/mma_stalls.py (STALLS), or None."""
    return _newest(STALLS)


# The run the Benchmarks page opens on: the FP32 kernels and cuBLAS on the H200, the run the
# documents' speed claims are checked against. The others (the same kernels on an H100, the tensor
# rungs, sizes divisible by 8) are one click away, to overlay.
OPENING_RUN = "h200-2026-11-22.json"


def opening_runs(runs: list[Path]) -> list[Path]:
    """Of the recorded runs, the ones the page shows before anything is chosen."""
    return [p for p in runs if p.name == OPENING_RUN] or runs[:1]


def recorded_runs(holding: Iterable[str] | None = None) -> list[Path]:
    """The recorded runs of kernels against sizes (not the autotuning sweeps: tuning_runs); with
    holding, only the runs that have a row of one of those kernels. Runs are recorded per topic (the
    FP32 kernels, the tensor rungs, odd sizes), so a page that draws one topic offers only its runs:
    the newest file is not necessarily one it can draw."""
    return _holding(sorted(RECORDED.glob("*.json")), holding)


def tuning_runs(holding: Iterable[str] | None = None) -> list[Path]:
    """Recorded autotuning sweeps: many configurations of each ladder rung at one size (engine/bench/tuning.py);
    with holding, only the sweeps that timed one of those kernels."""
    return _holding(sorted(TUNING.glob("*.json")), holding)


def damaged_runs() -> list[str]:
    """The shipped run files (recorded runs and sweeps) that recorded_runs and tuning_runs leave out,
    one line each saying why: a file cut short or overwritten is named on the page, never read."""
    out = []
    for folder, runs in (("", RECORDED.glob("*.json")), ("tuning/", TUNING.glob("*.json"))):
        for path in sorted(runs):
            read = _kernels(path, *_version(path))
            if isinstance(read, str):
                out.append(f"{folder}{path.name} is left out: {read}")
    return out


def _holding(runs: list[Path], kernels: Iterable[str] | None) -> list[Path]:
    read = [(p, _kernels(p, *_version(p))) for p in runs]
    wanted = None if kernels is None else set(kernels)
    return [p for p, held in read if isinstance(held, frozenset) and (wanted is None or wanted & held)]


def _version(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except OSError:
        return 0, -1   # gone or unreadable since it was listed: _kernels says so
    return stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=256)
def _kernels(path: Path, mtime_ns: int, size: int) -> frozenset | str:
    """The kernels a run file has rows of, or why it cannot be a run (one line), read once per version
    of the file (its time and size): every view of the Benchmarks page asks of every recorded run, and
    reading them all again was a fifth of the page's time. The shape every reader of a run relies on
    is checked here (schema.read checks each value, at a tenth of a second a file: too slow for a
    listing), so a file cut short, emptied or overwritten is left out of every list, not met later by
    a page that reads it."""
    try:
        doc = json.loads(schema.read_bounded(path))
    except schema.Unreadable as exc:   # no regular file (a FIFO had held every page that lists runs), or too big
        return exc.reason
    except (ValueError, RecursionError) as exc:
        return f"it is not a JSON file this explorer can read ({type(exc).__name__})"
    if not isinstance(doc, dict) or doc.get("format") not in schema.FORMATS:
        return "it is not a benchmark export of this explorer (no format line it knows)"
    rows = doc.get("results")
    if not isinstance(doc.get("provenance"), dict) or not isinstance(rows, list) or not rows or \
            not all(isinstance(r, dict) and isinstance(r.get("kernel"), str) for r in rows):
        return "its provenance or its rows are missing or not what an export holds"
    return frozenset(r["kernel"] for r in rows)


def square_size(df: pd.DataFrame, n: int) -> int | None:
    """n if the rows hold n³, else the largest square size they hold; None if they hold none."""
    square = df[(df["m"] == df["n"]) & (df["n"] == df["k"])]["m"]
    if (square == n).any():
        return n
    return int(square.max()) if len(square) else None
