"""The size-aware choice, as cuBLAS's heuristics make it: which kernel and configuration was fastest
at each size of the recorded size sweeps (engine/bench/recorded/selection/, written on a GPU by
tests/benchmarks/size_sweep.py), per family (FP32 against cuBLAS SGEMM, the tensor rungs against
cuBLAS FP16), with the reason in words; and split_k's and wgmma_stream_k's configuration for any
size: the winner at the nearest size swept, since one block tile and one split cannot serve both
1024³ (32 tiles of 128 x 256 for 132 SMs: split K four ways, or for the tensor cores tiles of
128 x 128) and 8192³ (2,048 tiles: barely split).

The FP32 runs recorded with these choices (every rung, split_k and split_k_padded at their chosen
configurations, and cuBLAS, at the issue's sizes) are kept beside the sweeps in recorded/every_size/:
a folder of their own, so the run the Benchmarks page opens on, and every figure the pages quote,
stay those of the run they were checked against.

Imports no Streamlit.
"""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pandas as pd

from engine.bench import benchmark, schema, tuning
from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem

SELECTION = benchmark.RECORDED / "selection"
# The kernels whose configuration the sweeps choose per size, when a caller pins none of its parameters.
CHOSEN_PER_SIZE = ("split_k", "split_k_padded", "wgmma_stream_k")
FP32_KERNELS = tuple(k.name for k in registry.FP32_RUNGS)
# Per family: its kernels, and the cuBLAS entry its table measures them against.
FAMILIES = {"fp32": (FP32_KERNELS, "cublas_sgemm"), "tensor": (registry.TENSOR_RUNGS, "cublas_gemm_fp16")}


def sweeps(folder: Path | None = None) -> list[Path]:
    return sorted((folder or SELECTION).glob("*.json"))


def _read(path: Path):
    """One sweep, or EngineError naming its file (the pages say it in one line)."""
    try:
        return benchmark.load_document(schema.read_bounded(path))
    except (EngineError, OSError) as exc:
        raise EngineError(f"The size sweep {path.name} cannot be read: {str(exc).splitlines()[0]}") from exc


@functools.lru_cache(maxsize=8)
def _load(paths: tuple[Path, ...]) -> pd.DataFrame:
    runs = [_read(p) for p in paths]
    gpus = {prov["gpu"]: prov.get("sm_count") for _, prov in runs}
    # Each GPU's sweeps combined on their own: a configuration is timed once per GPU.
    parts = [tuning.combine([(df, prov) for df, prov in runs if prov["gpu"] == gpu]) for gpu in gpus]
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return df.assign(sm_count=df["gpu"].map(gpus)) if len(df) else df


def load(folder: Path | None = None) -> pd.DataFrame:
    """Every size sweep's rows, one GPU's latest timing of each configuration (tuning.combine)."""
    return _load(tuple(sweeps(folder)))


def _distance(a: tuple[int, int, int], b: tuple[int, int, int], multiple: int = 4) -> float:
    """How far apart two sizes are for choosing a configuration: the ratios of M, N and K (a tile
    count and a K length scale with them), and whether the wide paths hold at both (N and K multiples
    of 4 for FP32's float4 loads, of 8 for the rows TMA copies)."""
    ratio = sum(abs(math.log(x / y)) for x, y in zip(a, b))
    whole = [s[1] % multiple == 0 and s[2] % multiple == 0 for s in (a, b)]
    return ratio + (0.5 if whole[0] != whole[1] else 0.0)


def chosen(kernel: str, m: int, n: int, k: int, df: pd.DataFrame | None = None,
           gpu: str | None = None, sm_count: int | None = None) -> dict[str, int]:
    """The configuration the sweeps choose for kernel at m x n x k (its fastest at the nearest size
    swept, on gpu where that GPU was swept); {} for a kernel chosen by its defaults, for a size no
    kernel takes (its run says why), or where the sweeps cannot be read (the pages say so). sm_count:
    the SMs of the GPU it will run on; a configuration that launches more blocks than that (SMS) is
    not chosen there, since wgmma_stream_k needs all its blocks resident at once."""
    if kernel not in CHOSEN_PER_SIZE or min(m, n, k) < 1:
        return {}
    try:
        df = load() if df is None else df
    except EngineError:
        return {}
    if df.empty:
        return {}
    rows = df[(df["kernel"] == kernel) & (df["status"] == "ok")]
    if sm_count:
        rows = rows[[dict(p).get("SMS", 0) <= sm_count for p in rows["params"]]]
    if gpu is not None and (rows["gpu"] == gpu).any():
        rows = rows[rows["gpu"] == gpu]
    if rows.empty:
        return {}
    multiple = 8 if kernel in registry.TENSOR_RUNGS else 4
    sizes = {(int(r.m), int(r.n), int(r.k)) for r in rows.itertuples()}
    near = min(sorted(sizes), key=lambda s: _distance(s, (m, n, k), multiple))
    at = rows[(rows["m"] == near[0]) & (rows["n"] == near[1]) & (rows["k"] == near[2])]
    return dict(at.loc[at["gflops"].idxmax(), "params"])


def blocks(kernel: str, params: dict, m: int, n: int, k: int) -> int:
    """The blocks the kernel's last launch starts at m x n x k with params: its source's LAUNCH_GRID,
    read through the registry (wgmma_stream_k: whole clusters, at most SPLITS per cluster's tiles and
    at most SMS, so 64 tiles at SPLITS 1 are 64 blocks whatever SMS says)."""
    spec = registry.get(kernel)
    p = registry.bind(spec, make_problem(m, n, k, params=params))
    x, y = spec.launches_for(p)[-1].grid(p)
    return x * y


def why(kernel: str, params: dict, m: int, n: int, k: int) -> str:
    """In words, short enough for a table's column at 1280 px (ui.fitting_table): the blocks the tiles
    and slices make (against the GPU's SMs, which the page says; wgmma_stream_k's "pairs": clusters of 2,
    "split ≤4": the tiles of a partial last wave shared out by k among up to 4), and the rows where N or
    K is not a multiple of 4 (FP32's float4 loads) or of 8 ("padded": A and B first copied into rows TMA
    can read)."""
    bm, bn = params.get("BM"), params.get("BN")
    said = []
    if bm and bn:
        tiles = -(-m // bm) * -(-n // bn)
        if kernel == "wgmma_stream_k":   # its header: whole waves go whole, a partial last one is split by k
            cluster, splits = params.get("CLUSTER", 1), params.get("SPLITS", 1)
            said.append(f"{tiles:,} tiles {bm}x{bn}, {blocks(kernel, params, m, n, k)} blocks" + (", pairs" if cluster == 2 else "")
                        + (f", split ≤{splits}" if splits > 1 else ""))
        elif kernel in registry.TENSOR_RUNGS:   # a tile per block or per persistent block's turn
            said.append(f"{tiles:,} tiles {bm}x{bn}, K not split")
        else:
            splits = params.get("SPLITK", 1)
            said.append(f"{tiles:,} tiles x{splits} = {tiles * splits:,} blocks" if splits > 1 else f"{tiles:,} tiles, K not split")
    if kernel in registry.TENSOR_RUNGS:
        if (n % 8 or k % 8) and kernel in registry.TMA_RUNGS:   # rows TMA cannot copy (16-byte strides)
            said.append("padded")
    elif n % 4 or k % 4:   # rows of A or B off 16-byte boundaries
        said.append("rows padded" if kernel == "split_k_padded" else "float4 loads fall back")
    return "; ".join(said) or kernel


# What each family's table is, in the words under it (after "at each size the fastest of ").
CHOICE_WORDS = {
    "fp32": "the ladder's top rungs and of split_k's block tiles times SPLITK, against cuBLAS SGEMM. Where C's tiles "
            "are fewer than the SMs, splitting K fills them; where N or K is not a multiple of 4, split_k_padded's "
            "padded rows keep the float4 loads. A run that names no split_k parameters takes the choice of the "
            "nearest size swept.",
    "tensor": "the top tensor rungs at their defaults and of wgmma_stream_k's block tiles (128 x 128 or 128 x 256), "
              "splits, clusters and blocks, against cuBLAS FP16 in the same sweep. Where C's tiles of 128 x 256 are "
              "fewer than the SMs (1024³: 32), tiles of 128 x 128 make twice as many. Pairs: clusters of two blocks "
              "sharing B's tiles; split ≤ S: the tiles of a partial last wave shared out by k among up to S clusters; "
              "padded: A and B first copied into rows TMA can read (N or K not a multiple of 8). There cuBLAS FP16 "
              "itself falls off a cliff (the Tensor cores page, section 6): hence shares of several hundred percent. "
              "A run of wgmma_stream_k that names none of those parameters takes the choice of the nearest size swept."}


def gpus(df: pd.DataFrame | None = None) -> list[str]:
    """The GPUs swept, in the order of their files."""
    df = load() if df is None else df
    return list(dict.fromkeys(df["gpu"])) if len(df) else []


def table(df: pd.DataFrame | None = None, gpu: str | None = None, family: str = "fp32") -> pd.DataFrame:
    """Per size swept (on gpu, else every GPU's): the family's fastest kernel (fp32: against cuBLAS
    SGEMM; tensor: against cuBLAS FP16), its % of cuBLAS, why that configuration (the choice a
    size-aware library would make there), the configuration itself, the speeds and the GPU with its SMs."""
    df = load() if df is None else df
    kernels, reference = FAMILIES[family]
    out = []
    if df.empty:
        return pd.DataFrame()
    ok = df[(df["status"] == "ok") & ((df["gpu"] == gpu) if gpu else True)]
    for (swept, m, n, k), here in ok.groupby(["gpu", "m", "n", "k"], sort=False):
        cublas = here.loc[here["kernel"] == reference, "gflops"].max()
        ours = here[here["kernel"].isin(kernels)]
        if ours.empty or pd.isna(cublas):
            continue
        best = ours.loc[ours["gflops"].idxmax()]
        params = dict(best["params"])
        out.append({"size": f"{m}x{n}x{k}", "kernel": best["kernel"], "% of cuBLAS": 100 * best["gflops"] / cublas,
                    "why": why(best["kernel"], params, int(m), int(n), int(k)),
                    "parameters": json.dumps(params, separators=(",", "=")).strip("{}").replace('"', ""),
                    "TFLOP/s": best["gflops"] / 1e3, "cuBLAS TFLOP/s": cublas / 1e3,
                    "GPU": swept, "SMs": here["sm_count"].iloc[0]})
    return pd.DataFrame(out)
