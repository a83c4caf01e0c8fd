"""Nsight Compute's measurements of the traced kernels, shipped for the configurations the pages offer,
and the trace's counts (read as compiled) set beside them, metric by metric, with the reason for any
difference.

tests/benchmarks/ncu_reference.py measures them on a GPU machine (one ncu session per group of
kernels, several launches of each case) and writes one file per GPU, kept in engine/metrics/ncu/. A
case is a kernel at one size with every compile-time parameter bound and its block shape.

A counter is compared in one of four ways:
- equal: every launch measured the trace's number;
- varies: the launches measured different numbers (the shared-memory counters of a busy SM count
  wavefronts that other traffic in the same data banks adds, and that depends on timing): the range
  is shown, and the trace's number, the accesses' own wavefronts, must lie at or below it;
- explained: a difference whose cause is known and named (EXPLAINED below), both numbers shown;
- unexplained: anything else. The pages show it as such; the tests fail on it.
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from engine.kernels import registry, sass
from engine.metrics.analysis import NCU_COPY_METRICS, NCU_LDSM_METRICS, NCU_METRICS

FOLDER = Path(__file__).parent / "ncu"
MAX_BYTES = 8_000_000        # a reference file larger than this is not ours: not read

# What the trace computes (the three tables of analysis), and the SASS-level counts beside them that
# say what ptxas emitted: instructions executed per kind, whatever their predicate.
METRICS = sorted({*NCU_METRICS.values(), *NCU_COPY_METRICS.values(), *NCU_LDSM_METRICS.values(),
                  "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum",
                  "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum",
                  "smsp__sass_inst_executed_op_ldsm.sum", "smsp__inst_executed_op_ldgsts.sum",
                  "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
                  "smsp__inst_executed.sum", "launch__grid_size", "launch__block_size", "gpu__time_duration.sum"})

# The metrics the trace computes, in the order a table shows them, with a short name.
COMPARED = {
    NCU_METRICS["global", "load", "requests"]: "global load requests",
    NCU_METRICS["global", "load", "sectors"]: "global load sectors",
    NCU_METRICS["global", "store", "requests"]: "global store requests",
    NCU_METRICS["global", "store", "sectors"]: "global store sectors",
    NCU_METRICS["shared", "load", "requests"]: "shared load instructions",
    NCU_METRICS["shared", "load", "wavefronts"]: "shared load wavefronts",
    NCU_METRICS["shared", "load", "bank_conflicts"]: "shared load bank conflicts",
    NCU_METRICS["shared", "store", "requests"]: "shared store instructions",
    NCU_METRICS["shared", "store", "wavefronts"]: "shared store wavefronts",
    NCU_METRICS["shared", "store", "bank_conflicts"]: "shared store bank conflicts",
    NCU_COPY_METRICS["global", "load", "requests"]: "cp.async (LDGSTS) instructions",
    NCU_COPY_METRICS["shared", "store", "bank_conflicts"]: "cp.async bank conflicts",
    NCU_LDSM_METRICS["shared", "load", "requests"]: "ldmatrix instructions",
    NCU_LDSM_METRICS["shared", "load", "wavefronts"]: "ldmatrix wavefronts",
    NCU_LDSM_METRICS["shared", "load", "bank_conflicts"]: "ldmatrix bank conflicts",
}
_SECTORS = (NCU_METRICS["global", "load", "sectors"], NCU_METRICS["global", "store", "sectors"])
_FALLBACKS = ("blocktile_1d", "blocktile_2d", "vectorized", "warptile", "double_buffered", "prefetched")
_HALF_FALLBACKS = ("mma_ldmatrix", "mma_swizzled", "mma_pipelined")

# Differences whose cause is known: (kernels, metrics, whether it applies to a size, the reason).
# None is left: the last one (mma_pipelined's cp.async, which ptxas branched around on one pass of
# eight where it ran out of predicate registers) went when the copies became zero-filling cp.async,
# which need no predicate at all. A new entry names a difference measured and understood, never one
# merely seen.
EXPLAINED: list = []


def case_key(kernel: str, size: tuple[int, int, int], params: Mapping[str, int], block: tuple[int, int]) -> str:
    """'blocktile_2d 200x136x100 BK=32 BM=64 BN=64 TM=8 TN=4 block 16x16': every parameter bound."""
    m, n, k = size
    bound = " ".join(f"{name}={value}" for name, value in sorted(params.items()))
    return f"{kernel} {m}x{n}x{k}{' ' + bound if bound else ''} block {block[0]}x{block[1]}"


@lru_cache(maxsize=1)
def references() -> dict[str, dict]:
    """GPU name -> its measurements ({case key: {launch kernel: {metric: [value per launch]}}}), from
    every file in FOLDER that reads as one (a damaged file is left out, never half-read)."""
    out = {}
    for path in sorted(FOLDER.glob("*.json")):
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            data = json.loads(path.read_text())
            if isinstance(data, dict) and isinstance(data.get("device"), str) and isinstance(data.get("cases"), dict):
                out[data["device"]] = data
        except (OSError, ValueError, RecursionError):
            continue
    return out


def measured(key: str) -> dict[str, dict[str, dict[str, list]]]:
    """GPU name -> {launch kernel: {metric: values}} for a case, on every GPU that measured it."""
    return {gpu: data["cases"][key] for gpu, data in references().items() if key in data["cases"]}


def measured_build(key: str) -> dict[str, dict[str, str]]:
    """GPU name -> {launch kernel: fingerprint of the SASS it measured (sass.fingerprint)} for a case,
    on every GPU whose reference kept it."""
    out = {}
    for gpu, data in references().items():
        builds = data.get("builds")
        if isinstance(builds, dict) and isinstance(builds.get(key), dict):
            out[gpu] = {launch: fp for launch, fp in builds[key].items() if isinstance(fp, str)}
    return out


def current_build(kernel: str, params: Mapping[str, int]) -> dict[str, str]:
    """{launch kernel: fingerprint} of this machine's plain build of the kernel, for the launches whose
    SASS could be listed (none without nvcc and nvdisasm: nothing is compared then)."""
    out = {}
    for launch in registry.get(kernel).launches:
        info = sass.memory_instructions(launch.file, params)
        if info.get("available") and isinstance(info.get("fingerprint"), str):
            out[launch.kernel] = info["fingerprint"]
    return out


def short_gpu(gpu: str) -> str:
    """nvidia-smi's name as a page says it: "NVIDIA H100 80GB HBM3" -> "H100"."""
    return gpu.replace("NVIDIA ", "").split(" ")[0]


def measured_keys(kernel: str) -> list[str]:
    return sorted({key for data in references().values() for key in data["cases"] if key.split(" ", 1)[0] == kernel})


@dataclass(frozen=True)
class Row:
    launch: str
    metric: str
    name: str
    trace: int
    gpu: str
    values: tuple        # every launch's value, in order
    verdict: str         # "equal", "varies", "explained", "unexplained", "other build"
    reason: str

    @property
    def shown(self) -> str:
        lo, hi = min(self.values), max(self.values)
        return f"{lo:,.0f}" if lo == hi else f"{lo:,.0f} to {hi:,.0f} ({len(self.values)} launches)"


VARIES = ("The launches measured different numbers: on a busy SM this counter also counts wavefronts that "
          "other traffic in the same data banks adds (L1 fills, cp.async writes), which depends on timing. "
          "The trace counts the accesses' own, at or below every launch.")


# Above the trace by this share at most, the same in every launch: wavefronts other traffic added.
CONTENTION_SHARE = 0.01
CONTENTION = ("Every launch measured a little more than the trace (under 1%), the same each time. "
              "No instruction carries the difference: counted per instruction (ncu --section SourceCounters), the "
              "kernel's LDSM wavefronts add up to the trace's exactly (mma_ldmatrix at 128³ on an H200: 6,144 "
              "shared-load wavefronts over its instructions, 6,160 in the kernel-wide l1tex counter), and the "
              "per-instruction counters (sm__sass_..._op_ldsm) equal the trace. It is the compiled schedule's, not "
              "the addresses': the same ldmatrix addresses and barriers without the multiplies measure no extra "
              "wavefront, nor does mma_ldmatrix at any other tile or warp-tile choice (H100, 256³ and 256²x512), "
              "and at 1024³ and 4096³ the launches differ by a few. The clock's speed does not move it (the schedule "
              "counts cycles, whatever their length): under ncu's locked base clock (--clock-control base) 128³ and "
              "256³ measure what they measure with free clocks (H200). "
              "The kernel-wide counter also counts wavefronts that other traffic in the same data banks adds, "
              "which depends on timing.")


# The extra wavefronts CONTENTION explains are, by Nsight Compute's definition, bank conflicts too (a
# conflict is a wavefront beyond a request's first), so where the trace has no such conflict the
# conflict counter shows them again: the same excess, launch by launch, as its wavefront counter.
MIRRORED = ("The extra wavefronts of the line above (under 1% of them), each counted again here: Nsight Compute "
            "counts every wavefront beyond a request's first as a bank conflict, and in every launch this counter "
            "exceeds the trace by exactly as much as the wavefront counter does. " + CONTENTION)
_WAVEFRONTS_OF = {NCU_METRICS["shared", op, "bank_conflicts"]: NCU_METRICS["shared", op, "wavefronts"]
                  for op in ("load", "store")}


def _mirrors_contention(metric: str, values: tuple, trace: int, metrics: Mapping, ours: Mapping, times: int) -> bool:
    """Whether a bank-conflict counter's excess over the trace is its wavefront counter's, launch by
    launch, and that excess is CONTENTION's (under CONTENTION_SHARE of the wavefronts)."""
    wavefronts = _WAVEFRONTS_OF.get(metric)
    waves = tuple(metrics.get(wavefronts, ())) if wavefronts else ()
    if len(waves) != len(values):
        return False
    wave_trace = int(ours.get(wavefronts, 0)) * times
    return all(w - wave_trace == v - trace > 0 and w - wave_trace <= CONTENTION_SHARE * w for w, v in zip(waves, values))


OTHER_BUILD = ("Nsight Compute measured another build of this kernel: the SASS it ran is not the SASS this "
               "machine compiles from the source (an edited kernel, or another nvcc), so its counters say "
               "nothing about this build, equal or not. The command below measures this one.")


def compare(kernel: str, size: tuple[int, int, int], totals: Mapping[str, Mapping[str, int]],
            key: str, scale: int | Mapping[str, int] = 1, build: Mapping[str, str] | None = None) -> list[Row]:
    """The trace's totals (per launch kernel, as analysis.compiled_totals gives them) beside each GPU's
    measurements of the case `key`. scale: how many times the traced blocks go into the launch (1: the
    whole launch; a page that traced one block of a grid of identical blocks multiplies by the grid),
    or that per launch kernel, where a traced block's launch ran only some blocks of an earlier one
    (split_k: the slices one block of the sum reads). build: this machine's fingerprints per launch
    (current_build); a launch whose reference kept the fingerprint of other SASS is "other build"."""
    rows = []
    m, n, k = size
    builds = measured_build(key) if build else {}
    for gpu, launches in measured(key).items():
        for launch, metrics in launches.items():
            if not isinstance(scale, int) and launch not in scale:
                continue      # not traced (an earlier launch's blocks that a one-block trace ran untraced)
            ours = totals.get(launch, {})
            theirs = builds.get(gpu, {}).get(launch)
            stale = theirs is not None and launch in build and theirs != build[launch]
            for metric, name in COMPARED.items():
                values = tuple(metrics.get(metric, [0]))
                if metric not in ours and not any(values):
                    continue
                times = scale if isinstance(scale, int) else scale[launch]
                trace = int(ours.get(metric, 0)) * times
                lo, hi = min(values), max(values)
                if stale:
                    verdict, reason = "other build", OTHER_BUILD
                elif lo == hi == trace:
                    verdict, reason = "equal", ""
                elif lo != hi and trace <= lo and metric in _VARYING:
                    verdict, reason = "varies", VARIES
                elif trace < lo and metric in _VARYING and lo - trace <= CONTENTION_SHARE * lo:
                    verdict, reason = "explained", CONTENTION
                elif _mirrors_contention(metric, values, trace, metrics, ours, times):
                    verdict, reason = "explained", MIRRORED
                else:
                    verdict, reason = "unexplained", "not explained yet: the model and the hardware disagree"
                    for kernels, which, applies, why in EXPLAINED:
                        if kernel in kernels and metric in which and applies(m, n, k):
                            verdict, reason = "explained", why
                            break
                rows.append(Row(launch, metric, name, trace, gpu, values, verdict, reason))
    return rows


_VARYING = {NCU_METRICS["shared", "load", "wavefronts"], NCU_METRICS["shared", "load", "bank_conflicts"],
            NCU_METRICS["shared", "store", "wavefronts"], NCU_METRICS["shared", "store", "bank_conflicts"],
            NCU_COPY_METRICS["shared", "store", "bank_conflicts"]}


def ncu_command(kernel: str, size: tuple[int, int, int], params: Mapping[str, int], block: tuple[int, int],
                launches: list[str]) -> str:
    """The command that measures the case again on a GPU machine with Nsight Compute: the engine's
    benchmark runs the kernel's timing build once (no warm-up, no repetitions) and ncu reads the
    counters of that launch."""
    m, n, k = size
    shape = ["--block", f"{block[0]}x{block[1]}"] if registry.get(kernel).block_shapes else []
    args = ["python3", "-m", "engine", "bench", "--kernels", kernel, "--sizes", f"{m}x{n}x{k}", *shape,
            *[a for name, v in sorted(params.items()) for a in ("--param", f"{name}={v}")],
            "--warmup", "0", "--reps", "1", "--formats", "json", "--out", "/tmp"]
    names = "|".join(launches)
    return (f"ncu --clock-control none -k 'regex:^({names})$' --launch-count {len(launches)} "
            f"--metrics {','.join(COMPARED)} " + " ".join(shlex.quote(a) for a in args))


@dataclass(frozen=True)
class SideBySide:
    """What a page shows beside its counts: the table (None when no GPU measured this configuration),
    the command that measures it, and the configurations of the kernel that were measured."""
    table: pd.DataFrame | None
    command: str
    note: str
    measured_elsewhere: list[str]


def side_by_side(kernel: str, size: tuple[int, int, int], params: Mapping[str, int], block: tuple[int, int],
                 totals: Mapping[str, Mapping[str, int]], scale: int = 1, scope: str = "the whole launch") -> SideBySide:
    """The trace's counts of a configuration beside Nsight Compute's, one row per counter and GPU.
    params: every compile-time parameter, bound (registry.bind)."""
    key = case_key(kernel, size, params, block)
    launches = [launch.kernel for launch in registry.get(kernel).launches]
    command = ncu_command(kernel, size, params, block, launches)
    rows = compare(kernel, size, totals, key, scale, current_build(kernel, params))
    if not rows:
        others = [k for k in measured_keys(kernel) if k != key]
        return SideBySide(None, command, f"Nsight Compute has not measured {key} (the shipped reference has "
                          f"{len(others)} other configurations of {kernel}); the command below measures it.", others)
    table = pd.DataFrame({
        "counter": [r.name for r in rows],
        "kernel": [r.launch for r in rows],
        "trace, as compiled": [f"{r.trace:,}" for r in rows],
        "Nsight Compute": [r.shown for r in rows],
        "GPU": [short_gpu(r.gpu) for r in rows],
        "agree": [{"equal": "equal", "varies": "range", "explained": "differs: explained",
                   "unexplained": "differs: NOT EXPLAINED", "other build": "another build measured"}[r.verdict]
                  for r in rows],
        "why": [r.reason for r in rows],
        "metric": [r.metric for r in rows],
    })
    if len({r.launch for r in rows}) == 1:
        table = table.drop(columns=["kernel"])
    # Each counter stands once per GPU that measured it: said as counters and GPUs, not as rows, and
    # only the outcomes that occur ("0 unexplained" read as a list of worries on a projector).
    counters = len({(r.launch, r.metric) for r in rows})
    gpus = list(dict.fromkeys(r.gpu for r in rows))
    counts = {v: sum(r.verdict == v for r in rows) for v in ("equal", "varies", "explained", "unexplained", "other build")}
    said = {"equal": f"of {len(rows)} equal", "varies": "within the range the launches measured",
            "explained": "different for a reason named", "unexplained": "different and NOT explained",
            "other build": f"not compared: Nsight Compute measured another build of {kernel} than this machine compiles"}
    whose = " and the ".join(f"{short_gpu(g)}'s" for g in gpus)
    note = (f"{scope.capitalize()}: {counters} counters, each beside the {whose} measurement"
            f"{'s (one row per GPU)' if len(gpus) > 1 else ''}: "
            + ", ".join(f"{n} {said[v]}" for v, n in counts.items() if n) + ".")
    unchecked = [short_gpu(g) for g in gpus if g not in measured_build(key)]
    if unchecked:
        note += (f" The {' and the '.join(unchecked)}'s measurement keeps no fingerprint of the build it ran, "
                 "so it is not checked to be this build's.")
    return SideBySide(table, command, note, [])
