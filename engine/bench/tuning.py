"""The autotuning sweep, as recorded: the configurations of each ladder rung worth timing (tests/benchmarks/tune_ladder.py), timed at one size
(4096³, else the largest square size the sweep holds), ranked, and each rung's winner set against
the default the registry gives it (registry.get(rung).default_params()), so that a default that is
not the winner shows.

A sweep is a benchmark export like any other (engine/bench/schema.py), kept in
engine/bench/recorded/tuning/ (benchmark.tuning_runs), apart from the recorded runs; a sweep may span
several files (a second one re-timing some rungs more widely): combine() makes them one. Imports no
Streamlit.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from engine.bench import benchmark
from engine.kernels import registry
from engine.plots import charts

SIZE = 4096
RUNGS = tuple(k.name for k in registry.LADDER)
TENSOR_RUNGS = registry.TENSOR_RUNGS


@dataclass(frozen=True)
class Family:
    """Rungs swept and ranked together, against the cuBLAS that computes what they compute (FP32 rungs
    against cuBLAS FP32, the tensor rungs' FP16 inputs against cuBLAS FP16): their speeds differ tenfold,
    so each family has a figure of its own."""

    name: str
    rungs: tuple[str, ...]
    cublas: str
    cublas_name: str


FAMILIES = (Family("FP32 ladder", RUNGS, "cublas_sgemm", "cuBLAS FP32"),
            Family("tensor rungs", TENSOR_RUNGS, "cublas_gemm_fp16", "cuBLAS FP16"))


def combine(runs: list[tuple[pd.DataFrame, dict]]) -> pd.DataFrame:
    """Several sweep files of one GPU (rows and provenance, as benchmark.load_document gives them) as
    one sweep: a configuration timed in more than one file keeps its latest timing (by the files'
    dates), so each is ranked once; one timed twice in a file (cuBLAS, which the sweeps time per
    family) its fastest, as benchmark.derive takes it."""
    ordered = [_fastest_each(df) for df, prov in sorted(runs, key=lambda run: run[1]["date"])]
    df = pd.concat(ordered, ignore_index=True) if ordered else pd.DataFrame()
    if df.empty:
        return df
    return df[~df.pop(_KEY).duplicated(keep="last")].reset_index(drop=True)


_KEY = "_configuration"   # a column while combining: each row's configuration, worked out once


def _fastest_each(df: pd.DataFrame) -> pd.DataFrame:
    """One file's rows, each configuration once: its fastest timing (untimed rows last), in file order;
    with its configuration in the column _KEY."""
    if df.empty:
        return df
    key = df[["kernel", "m", "n", "k"]].astype(str).agg(" ".join, axis=1) + " " + \
        df["params"].map(lambda p: json.dumps(p, sort_keys=True))
    df = df.assign(**{_KEY: key})
    if "gflops" not in df:   # (a file whose every row failed has no such column)
        return df[~key.duplicated(keep="first")]
    fastest = df.sort_values("gflops", ascending=False, na_position="last", kind="stable",
                             key=lambda g: pd.to_numeric(g, errors="coerce"))   # (untimed: None)
    return fastest[~fastest[_KEY].duplicated(keep="first")].sort_index()


def sweep_size(df: pd.DataFrame, rungs: tuple[str, ...] = RUNGS) -> int | None:
    """The square size the rungs' rows are ranked at."""
    return benchmark.square_size(df[df["kernel"].isin(rungs)], SIZE)


def ranking(df: pd.DataFrame, rungs: tuple[str, ...] = RUNGS) -> pd.DataFrame:
    """Per rung (in the ladder's order), its configurations at the sweep's size, fastest first: rank
    (1 = the winner; rows not timed have none and come last), label, GFLOP/s, % of the winner, % of
    cuBLAS, and whether it is the winner and whether it is the registry's default."""
    n = sweep_size(df, rungs)
    rows = df[df["kernel"].isin(rungs) & (df["m"] == n) & (df["n"] == n) & (df["k"] == n)] if n else df.iloc[:0]
    parts = []
    for rung in rungs:
        part = rows[rows["kernel"] == rung].copy()
        if part.empty:
            continue
        timed = (part["status"] == "ok").to_numpy()
        part["gflops"] = part["gflops"].where(timed) if "gflops" in part else float("nan")
        part = part.sort_values("gflops", ascending=False, na_position="last")
        best = part["gflops"].max()
        part["rank"] = part["gflops"].rank(ascending=False, method="min")
        part["pct_of_winner"] = 100 * part["gflops"] / best
        part["winner"] = part["rank"] == 1
        default = registry.get(rung).default_params()
        part["default"] = [isinstance(p, dict) and p == default for p in part["params"]]
        parts.append(part)
    out = pd.concat(parts, ignore_index=True) if parts else df.iloc[:0].assign(
        rank=[], pct_of_winner=[], winner=[], default=[])
    return out.assign(label=charts.labels(out) if len(out) else [])


@dataclass(frozen=True)
class Verdict:
    """One rung's result: its winner against the registry's default."""

    rung: str
    configurations: int            # rows at the sweep's size
    timed: int                     # of which timed (the rest: errors, wrong results)
    winner: str                    # the winner's label ("" if none was timed)
    winner_gflops: float
    default: str                   # the registry default's label
    default_gflops: float | None   # None: the sweep did not time it
    default_rank: int | None

    @property
    def default_wins(self) -> bool:
        return bool(self.winner) and self.winner == self.default

    def text(self) -> str:
        if not self.winner:
            return f"{self.rung}: none of its {self.configurations} configurations was timed."
        head = f"{self.rung}: the winner of {self.timed} timed configuration{'s' if self.timed > 1 else ''} is " \
               f"{self.winner}, {self.winner_gflops:,.0f} GFLOP/s"
        if self.default_wins:
            return head + ": the registry's default."
        if self.default_gflops is None:
            return head + f"; the registry's default, {self.default}, was not timed in this sweep."
        return head + (f"; the registry's default, {self.default}, is not the winner: it ranks {self.default_rank} "
                       f"at {self.default_gflops:,.0f} GFLOP/s ({100 * self.default_gflops / self.winner_gflops:.0f}% "
                       "of the winner).")


def verdicts(ranked: pd.DataFrame) -> list[Verdict]:
    """Per rung of the ranking (ladder order), its winner against the registry's default."""
    out = []
    for rung, part in ranked.groupby("kernel", sort=False):
        timed = part[part["rank"].notna()]
        winner = timed.iloc[0] if len(timed) else None
        default = part[part["default"] & part["rank"].notna()]
        out.append(Verdict(
            rung, len(part), len(timed), winner["label"] if winner is not None else "",
            float(winner["gflops"]) if winner is not None else float("nan"),
            charts.label({"kernel": rung, "params": registry.get(rung).default_params()}),
            float(default["gflops"].iloc[0]) if len(default) else None,
            int(default["rank"].iloc[0]) if len(default) else None))
    return out


def summary(found: list[Verdict]) -> pd.DataFrame:
    """One row per rung, for a table where a default that is not the winner shows at a glance."""
    return pd.DataFrame([{"rung": v.rung, "default is the winner": "yes" if v.default_wins else "NO",
                          "winner": v.winner or "—", "winner GFLOP/s": v.winner_gflops, "registry default": v.default,
                          "default GFLOP/s": v.default_gflops, "default's rank": v.default_rank,
                          "configurations timed": v.timed} for v in found])


def cublas_gflops(df: pd.DataFrame, family: Family = FAMILIES[0]) -> float | None:
    """The family's cuBLAS at the sweep's size (the fastest row of it, if several), for the figure's line."""
    n = sweep_size(df, family.rungs)
    rows = df[(df["kernel"] == family.cublas) & (df["status"] == "ok") & (df["m"] == n) & (df["n"] == n)
              & (df["k"] == n)] if n else df.iloc[:0]
    return float(rows["gflops"].max()) if len(rows) else None
