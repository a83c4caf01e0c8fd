"""Compares the trace's metrics with Nsight Compute's hardware counters, kernel by kernel.

Run on the GPU machine:  python3 tests/benchmarks/ncu_compare.py [OUT.md]
For each case: a full GPU trace of the instrumented build gives our totals; ncu profiles one launch
of the plain build of the same kernel and size (--clock-control none) and reads the same metrics.
"""
import csv
import glob
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.devices import gpu_client  # noqa: E402
from engine.kernels import registry, sass  # noqa: E402
from engine.kernels.problem import make_problem  # noqa: E402
from engine.metrics import analysis  # noqa: E402
from engine.metrics.analysis import NCU_METRICS  # noqa: E402
from engine.tracing import tracer  # noqa: E402

CASES = [
    ("naive_x_rows", 128, 128, 128, 16, 0, (16, 16)),
    ("naive_x_rows", 128, 128, 128, 16, 0, (32, 8)),
    ("naive_x_cols", 128, 128, 128, 16, 0, (16, 16)),
    ("naive_transposed_b", 128, 128, 128, 16, 0, (32, 32)),
    ("tiled_guarded", 128, 128, 128, 16, 0, (16, 16)),
    ("tiled_guarded", 100, 120, 90, 16, 0, (16, 16)),
    ("tiled_guarded", 128, 128, 128, 32, 0, (16, 16)),
    ("tiled_unguarded", 128, 128, 128, 16, 0, (16, 16)),
    ("shared_bank_conflicts", 128, 128, 128, 16, 0, (16, 16)),
    ("shared_bank_conflicts", 128, 128, 128, 16, 1, (16, 16)),
    ("shared_bank_conflicts", 128, 128, 128, 32, 0, (16, 16)),
    ("shared_bank_conflicts", 128, 128, 128, 32, 1, (16, 16)),
    # The FP32 ladder with its registry defaults (TILE, PAD and block do not apply to it): 128-bit
    # global and shared loads, cp.async, transposed stores.
    *[(rung, 128, 128, 128, 16, 0, (16, 16)) for rung in ("blocktile_1d", "blocktile_2d", "vectorized", "warptile",
                                                          "double_buffered", "prefetched")],
]
METRICS = sorted(set(NCU_METRICS.values()))
SHORT = {m: m.replace("l1tex__", "").replace("_pipe_lsu_mem", "").replace(".sum", "") for m in METRICS}


def ncu_path() -> str:
    found = shutil.which("ncu") or next(iter(sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))), None) \
        or next(iter(sorted(glob.glob("/usr/local/cuda*/bin/ncu"))), None)
    if not found:
        sys.exit("ncu not found")
    return found


def ncu(kernel_name: str, case, source: str | None = None, metrics: list[str] = METRICS) -> dict[str, float]:
    """source: a .cu run in place of the catalog kernel's own, with its launch geometry."""
    kernel, m, n, k, tile, pad, (bx, by) = case
    cmd = [ncu_path(), "--clock-control", "none", "--target-processes", "all", "-k", f"regex:^{kernel_name}$",
           "--launch-count", "1", "--metrics", ",".join(metrics), "--csv",
           sys.executable, str(ROOT / "tests/benchmarks/ncu_target.py"), kernel, *map(str, (m, n, k, tile, pad, bx, by)),
           *([source] if source else [])]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rows = [l for l in done.stdout.splitlines() if l.startswith('"')]
    if not rows:
        print(f"ncu gave no CSV for {kernel_name}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}", file=sys.stderr)
    values = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        value = row["Metric Value"].replace(",", "")
        if value != "n/a":       # a metric this GPU or launch does not report: left out, shown as missing
            values[row["Metric Name"]] = float(value)
    return values


def main(out_path: str | None) -> None:
    lines = ["| kernel | size | TILE/PAD/block | metric | trace (source) | trace (as compiled) | ncu | match |",
             "|---|---|---|---|---:|---:|---:|---|"]
    mismatches, reference = [], {}
    for case in CASES:
        kernel, m, n, k, tile, pad, block = case
        spec = registry.get(kernel)
        p = make_problem(m, n, k, block=block, params=spec.takes({"TILE": tile, "PAD": pad}))
        t = tracer.trace(kernel, p, None, "gpu")
        summary = analysis.summarize(t, sass.memory_instructions(spec.launches[-1].file, t.problem.params))
        key = f"{kernel} {m}x{n}x{k} tile {tile} pad {pad} block {block[0]}x{block[1]}"
        for launch in spec.launches_for(t.problem):   # those this size runs
            hw = ncu(launch.kernel, case)
            reference.setdefault(key, {})[launch.kernel] = {k2: int(v) for k2, v in hw.items() if v}
            for metric in METRICS:
                source = summary["ncu"].get(launch.kernel, {}).get(metric, 0)
                compiled = summary["as_compiled"]["ncu"].get(launch.kernel, {}).get(metric, 0)
                theirs = hw.get(metric)
                if theirs is None or (compiled == 0 and theirs == 0):
                    continue
                ok = "yes" if abs(compiled - theirs) < 0.5 else "no"
                if ok == "no":
                    mismatches.append((launch.kernel, metric, compiled, theirs))
                lines.append(f"| {launch.kernel} | {m}x{n}x{k} | {tile}/{pad}/{block[0]}x{block[1]} | "
                             f"{SHORT[metric]} | {source:,} | {compiled:,} | {theirs:,.0f} | {ok} |")
    text = "\n".join(lines) + f"\n\n{len(mismatches)} mismatching metric rows.\n"
    for kern, metric, ours, theirs in mismatches:
        text += f"- {kern} {SHORT[metric]}: trace {ours:,} vs ncu {theirs:,.0f}\n"
    print(text)
    if out_path:
        Path(out_path).write_text(text)
        Path(out_path).with_suffix(".json").write_text(json.dumps(
            {"device": gpu_client.status().name, "ncu": "--clock-control none",
             "note": "metrics absent for a launch were 0", "cases": reference}, indent=1))
    gpu_client.shutdown()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
