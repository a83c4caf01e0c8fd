"""Where mma_pipelined's warps wait (run on the device, with ncu). mma_costs.py times the kernel with
one thing left out; this asks Nsight Compute why the warps of the kernel as written do not issue:
its warp-state sampling, as a share of the cycles between two issued instructions
(smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, the WarpStateStats section) and
per SASS instruction (the SourceCounters section's samples), beside the same kernel without the
k-loop's copies (mma_costs.py's "no copies") and mma_tma (the copies by TMA). For each instruction
that waits most on the long scoreboard it also keeps the nearest cp.async (LDGSTS) before it that
reads the register it writes: an instruction may not overwrite a register a copy still has to read.

Every kernel runs at mma_costs.py's tiles (BEST), launched twice (the second is the one read), with
the GPU's own clocks (--clock-control none) as the timings have them. Writes OUT.json (shipped in
engine/bench/recorded/stalls/); the Tensor cores page draws it.

    python3 tests/benchmarks/mma_stalls.py OUT.json [--size 4096]
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# The file's format and the SASS reading are the reader's (engine/metrics/stalls.py), so the two agree.
from engine.metrics.stalls import FORMAT, registers, written  # noqa: E402

# What each launch is, in the order the target launches them (twice each: the second is read).
KERNELS = [("as written", "mma_pipelined as written"), ("no copies", "mma_pipelined without the copies in the k-loop"),
           ("mma_tma", "mma_tma (copies by TMA)")]
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")
METRICS = {"gpu__time_duration.sum": "duration_us", "sm__cycles_elapsed.avg.per_second": "sm_ghz",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "hmma_pct",
           "smsp__inst_executed.sum": "instructions", "launch__registers_per_thread": "registers",
           "smsp__average_warp_latency_per_inst_issued.ratio": "cycles_per_issue"}
TOP = 8   # the instructions kept per kernel, by samples
LOOK_BACK = 512   # how far before an instruction its copy is looked for, in SASS instructions


def number(text: str) -> float:
    return float(text.replace(",", "")) if text not in ("", "n/a") else float("nan")


def raw_rows(text: str) -> list[dict[str, tuple[str, str]]]:
    """ncu --page raw --csv: a header row, a units row, then one row per launch: per metric (value, unit)."""
    rows = list(csv.reader(io.StringIO(text[text.index('"ID"'):])))
    return [{h: (v, u) for h, u, v in zip(rows[0], rows[1], r)} for r in rows[2:]]


# The units ncu may print a metric in, to microseconds and GHz.
SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "hz": 1e-9, "cycle/second": 1e-9, "khz": 1e-6, "mhz": 1e-3, "ghz": 1.0, "cycle/nsecond": 1.0}


def summary(row: dict[str, tuple[str, str]]) -> dict:
    """One launch's figures (duration in µs, SM clock in GHz) and its stall reasons, cycles per issued
    instruction each."""
    out = {}
    for metric, name in METRICS.items():
        value, unit = row[metric]
        out[name] = number(value) * (SCALE[unit.lower()] if name in ("duration_us", "sm_ghz") else 1.0)
    out["stalls"] = {m.group(1): number(v) for k, (v, _) in row.items() if (m := STALL.match(k))}
    return out


def source_rows(text: str) -> list[dict[str, str]]:
    """ncu --page source --csv --print-source sass: a title row, then the header and one row per instruction."""
    rows = list(csv.reader(io.StringIO(text[text.index('"Address"'):])))
    return [dict(zip(rows[0], r)) for r in rows[1:] if len(r) == len(rows[0])]


def hot_instructions(rows: list[dict[str, str]], top: int = TOP) -> list[dict]:
    """The instructions with the most samples, each with its samples by stall reason, and for one that
    waits mostly on the long scoreboard the nearest copy before it that reads a register it writes."""
    total = sum(number(r["Warp Stall Sampling (All Samples)"]) for r in rows) or 1.0
    reasons = [c for c in rows[0] if c.startswith("stall_") and "Not Issued" not in c] if rows else []
    ranked = sorted(range(len(rows)), key=lambda i: -number(rows[i]["Warp Stall Sampling (All Samples)"]))[:top]
    out = []
    for i in ranked:
        r = rows[i]
        by = {c.removeprefix("stall_"): int(number(r[c])) for c in reasons if number(r[c]) > 0}
        item = {"sass": r["Source"].strip(), "samples": int(number(r["Warp Stall Sampling (All Samples)"])),
                "share": number(r["Warp Stall Sampling (All Samples)"]) / total,
                "executed": int(number(r["Instructions Executed"])), "reasons": by}
        mine = written(r["Source"])
        if by.get("long_sb", 0) > item["samples"] / 2 and mine:
            # In address order; a branch may lie between (at 128 x 256 tiles the copies of A and of B are
            # blocks of their own, with the half-by-half copies for rows off 16 bytes between them).
            for back in range(i - 1, max(-1, i - LOOK_BACK), -1):
                if "LDGSTS" in rows[back]["Source"] and registers(rows[back]["Source"]) & mine:
                    item["copy_reading"] = rows[back]["Source"].strip()
                    break
        out.append(item)
    return out


def target(size: int) -> None:
    """The profiled process: each kernel at size³, twice."""
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as cuda

    from engine.devices import gpu
    from engine.kernels import registry
    from engine.kernels.problem import make_inputs, make_problem
    from engine.tracing.plan import global_shapes, size_arguments
    from tests.benchmarks.mma_costs import BEST, variants
    work = Path(tempfile.mkdtemp())
    sources = variants((ROOT / "cuda" / "mma_pipelined.cu").read_text())
    spec, tma = registry.get("mma_pipelined"), registry.get("mma_tma")
    p = registry.bind(spec, make_problem(size, size, size, params=BEST))
    a, b = make_inputs(p)
    for name, _ in KERNELS:
        if name == "mma_tma":
            pt = registry.bind(tma, make_problem(size, size, size))
            launcher = gpu.Launcher({}, global_shapes(pt), size_arguments(pt), tma.inputs)
            launcher.upload({"A": a, "B": b})
            calls = launcher.launches(tma, pt)
        else:
            path = work / f"mma_pipelined_{name.replace(' ', '_')}.cu"
            path.write_text(sources[name][1])
            launcher = gpu.Launcher({}, global_shapes(p), size_arguments(p), spec.inputs)
            launcher.upload({"A": a, "B": b})
            calls = launcher.launches(spec, p, source_override=str(path))
        for _ in range(2):
            for call in calls:
                call()
        cuda.Context.synchronize()
        launcher.free()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--target", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.target:
        target(args.size)
        return 0
    from engine.devices import gpu_client
    from tests.benchmarks.mma_costs import BEST
    from tests.benchmarks.ncu_compare import ncu_path
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    gpu_client.shutdown()   # the profiled process has the GPU to itself
    ncu, report = ncu_path(), Path(tempfile.mkdtemp()) / "stalls"
    subprocess.run([ncu, "--clock-control", "none", "-k", "regex:^mma_(pipelined|tma)$", "--section", "WarpStateStats",
                    "--section", "SourceCounters", "--metrics", ",".join(METRICS), "-o", str(report), "-f",
                    sys.executable, __file__, "x", "--size", str(args.size), "--target"], check=True, cwd=ROOT)
    rep = f"{report}.ncu-rep"
    raw = raw_rows(subprocess.run([ncu, "--import", rep, "--page", "raw", "--csv"], capture_output=True, text=True,
                                  check=True).stdout)
    if len(raw) != 2 * len(KERNELS):
        print(f"expected {2 * len(KERNELS)} launches in the report, found {len(raw)}")
        return 1
    # A counter ncu could not give (n/a) is said now, by name, not when the JSON is written.
    missing = [f"{KERNELS[i // 2][0]}: {name}" for i in range(1, len(raw), 2) for name, v in summary(raw[i]).items()
               if name != "stalls" and v != v]
    if missing:
        print(f"ncu gave no value for {', '.join(missing)} (the report: {rep})")
        return 1
    kernels = []
    for i, (name, label) in enumerate(KERNELS):
        launch = 2 * i + 1   # the second launch of each
        listing = subprocess.run([ncu, "--import", rep, "--page", "source", "--csv", "--print-source", "sass",
                                  "--launch-skip", str(launch), "--launch-count", "1"],
                                 capture_output=True, text=True, check=True).stdout
        rows = source_rows(listing)
        kernels.append({"name": name, "label": label, **summary(raw[launch]), "top": hot_instructions(rows),
                        "samples": int(sum(number(r["Warp Stall Sampling (All Samples)"]) for r in rows))})
        k = kernels[-1]
        worst = sorted(k["stalls"].items(), key=lambda kv: -kv[1])[:4]
        print(f"{label:48} {k['duration_us']:8.1f} us  {k['hmma_pct']:5.1f}% tensor pipe  "
              + "  ".join(f"{r} {v:.2f}" for r, v in worst), flush=True)
    out = {"format": FORMAT, "gpu": status.name, "date": dt.date.today().isoformat(), "size": args.size,
           "params": BEST, "ncu": subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1],
           "kernels": kernels, "source": "tests/benchmarks/mma_stalls.py"}
    Path(args.out).write_text(json.dumps(out, indent=1, allow_nan=False))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
