"""Nsight Compute's counters for every traced kernel over a grid of sizes and the pages' parameter
choices, several launches each: the reference the trace (read as compiled) is held to.

Run on the GPU machine:  python3 tests/benchmarks/ncu_reference.py OUT.json [GROUP ...] [--kernels K,...] [--onto FILE]
Each case keeps the fingerprint of the SASS measured (engine.kernels.sass.fingerprint), so a test can
tell a reference of this build from one of an earlier build; --builds-only --onto FILE only adds
those fingerprints to a reference measured from this same source tree before they were kept.
--onto keeps every other kernel's cases of an earlier reference of the same GPU
(engine/metrics/ncu/h100.json): a change to some kernels measures theirs again, and drops those of
their earlier cases that no group generates any more. --kernels measures only those kernels' cases of the
groups (a change to one rung: `ladder ladder_params --kernels prefetched`).
Groups: naive, tiled, ladder, ladder_params, split, tensor (all by default). Each group is one ncu session over one target
process (this file with --target) that launches every case of the group REPEATS times, so a counter
that varies from launch to launch (shared stores beside cp.async in flight) shows as several values.
The result is what engine/metrics/ncu_reference.py reads: per case, per launch, per metric, the
value of each launch in order.
"""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.errors import EngineError  # noqa: E402
from engine.kernels import registry  # noqa: E402
from engine.kernels.problem import make_problem  # noqa: E402
from engine.metrics import ncu_reference  # noqa: E402

# Full tiles, partial tiles in M, N and K, and odd sizes (every float4 and cp.async to its scalar
# fallback); the naive and tiled kernels at the sizes their pages offer (up to 128).
SMALL = [(128, 128, 128), (100, 120, 90), (37, 53, 29), (64, 64, 64)]
# The pages' own defaults (Coalescing 32 x 32 x 16, Tile phases 40³) and the Bank conflicts page's
# sizes (multiples of its TILE, or of 32 for the ladder's rungs).
DEFAULTS = [(32, 32, 16), (40, 40, 40), (32, 32, 32), (96, 96, 96)]
LADDER_SQUARES = [(s, s, s) for s in (128, 256, 512, 1024, 2048, 4096)]
LADDER_ODD = [(200, 136, 100), (131, 67, 77), (257, 255, 129)]
TENSOR = [(128, 128, 128), (256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096), (208, 144, 96), (144, 80, 48),
          (131, 67, 77), (200, 136, 100)]
# The rungs' parameter choices, one at a time away from the default (the Ladder page and the
# settings of every page offer them), at full tiles, partial tiles and an odd size.
PARAM_SIZES = [(256, 256, 256), (131, 67, 77)]
TENSOR_PARAM_SIZES = [(256, 256, 256), (208, 144, 96), (131, 67, 77)]
REPEATS = 3


def one_at_a_time(spec: registry.KernelSpec) -> list[dict]:
    """The kernel's accepted parameter choices that differ from its default in exactly one parameter."""
    default = spec.defaults
    return [dict(c) for c in spec.combinations() if sum(dict(c)[k] != v for k, v in default.items()) == 1]


def cases(group: str, only: set[str] | None = None) -> list[tuple[str, tuple[int, int, int], dict, tuple[int, int]]]:
    """The group's cases, of the kernels in only (None: those --kernels named; empty: every kernel)."""
    if only is None:   # the --kernels filter reaches the profiled process (--target) through the environment
        only = set(filter(None, os.environ.get("NCU_REFERENCE_KERNELS", "").split(",")))
    out = []
    if group == "naive":
        for kernel in ("naive_x_rows", "naive_x_cols", "naive_transposed_b"):
            for block in registry.NAIVE_BLOCKS:
                out += [(kernel, size, {}, block) for size in SMALL[:3] + DEFAULTS[:1]]
    elif group == "tiled":
        for kernel in ("tiled_guarded", "tiled_unguarded", "shared_bank_conflicts"):
            spec = registry.get(kernel)
            for params in spec.combinations():
                out += [(kernel, size, dict(params), spec.default_block) for size in SMALL + DEFAULTS[1:]]
    elif group == "ladder":
        for kernel in registry.LADDER_RUNGS:
            spec = registry.get(kernel)
            if spec.kind is not registry.Kind.CUDA or kernel in registry.TENSOR_RUNGS:
                continue
            sizes = LADDER_SQUARES + LADDER_ODD + ([(64, 64, 64), *DEFAULTS[2:]] if "bank_conflicts" in spec.shows else [])
            out += [(kernel, size, {}, spec.default_block) for size in sizes]
    elif group == "ladder_params":   # the Ladder page's parameter choices, one at a time, per FP32 rung
        for kernel in registry.LADDER_RUNGS:
            spec = registry.get(kernel)
            if spec.kind is registry.Kind.CUDA and kernel not in registry.TENSOR_RUNGS:
                out += [(kernel, size, params, spec.default_block) for params in one_at_a_time(spec)
                        for size in PARAM_SIZES]
    elif group == "split":   # past the ladder: split_k and its padded form, every launch
        for kernel in ("split_k", "split_k_padded"):
            out += [(kernel, size, {}, registry.get(kernel).default_block) for size in LADDER_SQUARES[:3] + LADDER_ODD]
    elif group == "tensor":
        for kernel in registry.TENSOR_RUNGS:
            spec = registry.get(kernel)
            if spec.kind is registry.Kind.CUDA:
                out += [(kernel, size, {}, spec.default_block) for size in TENSOR]
                out += [(kernel, size, params, spec.default_block) for params in one_at_a_time(spec)
                        for size in TENSOR_PARAM_SIZES]
    kept = []
    for kernel, size, params, block in out:   # what a kernel cannot take (its rules) is not asked for
        if only and kernel not in only:
            continue
        try:
            registry.bind(registry.get(kernel), make_problem(*size, block=block, params=params))
        except EngineError:
            continue
        kept.append((kernel, size, params, block))
    return kept


def target(group: str) -> None:
    """The process ncu profiles: every case of the group, REPEATS launches each, in order."""
    from engine.devices import gpu_client
    for kernel, size, params, block in cases(group):
        p = make_problem(*size, block=block, params=params)
        for _ in range(REPEATS):
            out = gpu_client.call("bench", {"kernel": kernel, "problem": p, "warmup": 0, "reps": 0})
            if not out["correct"]:
                print(f"WRONG {kernel} {size}: rel_error {out['rel_error']}", flush=True)
    gpu_client.shutdown()


def prebuild(group: str) -> None:
    """Compiles every plain build first, in parallel, so the profiled process only launches."""
    from engine.kernels import build
    jobs = set()
    for kernel, size, params, block in cases(group):
        spec = registry.get(kernel)
        bound = registry.bind(spec, make_problem(*size, block=block, params=params))
        for launch in spec.launches_for(bound):   # those this size runs (a padding pass only where needed)
            jobs.add((launch.file, tuple(sorted(bound.params.items()))))
    with ThreadPoolExecutor(12) as pool:
        list(pool.map(lambda j: build.build_cubin(j[0], dict(j[1]), traced=False), jobs))


def builds(group: str) -> dict[str, dict[str, str]]:
    """Per case, per launch kernel, the fingerprint of the SASS ncu measured (sass.fingerprint of the
    plain build prebuild made): the reference says which build it describes."""
    from engine.kernels import sass
    out = {}
    for kernel, size, params, block in cases(group):
        spec = registry.get(kernel)
        bound = registry.bind(spec, make_problem(*size, block=block, params=params))
        key = ncu_reference.case_key(kernel, size, bound.params, block)
        listed = {launch.kernel: sass.memory_instructions(launch.file, bound.params) for launch in spec.launches_for(bound)}
        missing = [name for name, info in listed.items() if not info.get("available")]
        if missing:
            sys.exit(f"{key}: no SASS listing of {', '.join(missing)} ({listed[missing[0]]['note']}): nvdisasm is needed")
        out[key] = {name: info["fingerprint"] for name, info in listed.items()}
    return out


def available(metrics: list[str], ncu: str) -> list[str]:
    listed = subprocess.run([ncu, "--query-metrics", "--chip", "gh100"], capture_output=True, text=True).stdout
    names = {line.split()[0] for line in listed.splitlines() if line.strip() and "__" in line.split()[0]}
    keep = [m for m in metrics if m.rsplit(".", 1)[0] in names]
    if len(keep) < len(metrics):
        print("not on this GPU:", sorted(set(metrics) - set(keep)), flush=True)
    return keep or metrics


def profile(group: str, ncu: str, metrics: list[str]) -> dict:
    expected = []
    for kernel, size, params, block in cases(group):
        spec = registry.get(kernel)
        bound = registry.bind(spec, make_problem(*size, block=block, params=params))
        for r in range(REPEATS):   # the launches this size runs, as prebuild builds and the target launches
            expected += [(kernel, size, params, block, r, launch.kernel) for launch in spec.launches_for(bound)]
    names = sorted({e[-1] for e in expected})
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "-k", f"regex:^({'|'.join(names)})$",
           "--metrics", ",".join(metrics), "--csv", sys.executable, str(Path(__file__).resolve()), "--target", group]
    t0 = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    rows = [line for line in done.stdout.splitlines() if line.startswith('"')]
    by_id: dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        entry = by_id.setdefault(int(row["ID"]), {"name": row["Kernel Name"], "values": {}})
        value = row["Metric Value"].replace(",", "")
        if value not in ("n/a", ""):
            entry["values"][row["Metric Name"]] = float(value)
    launches = [by_id[i] for i in sorted(by_id)]
    print(f"{group}: {len(launches)} launches profiled of {len(expected)} expected in {time.time() - t0:.0f} s",
          flush=True)
    if len(launches) != len(expected):
        print(done.stdout[-3000:], done.stderr[-3000:], flush=True)
    out: dict = {}
    for (kernel, size, params, block, _, name), got in zip(expected, launches):
        if got["name"] != name:
            print(f"out of step: expected {name}, ncu profiled {got['name']}", flush=True)
            break
        key = ncu_reference.case_key(kernel, size, registry.bind(
            registry.get(kernel), make_problem(*size, block=block, params=params)).params, block)
        per_launch = out.setdefault(key, {}).setdefault(name, {})
        for metric, value in got["values"].items():
            per_launch.setdefault(metric, []).append(int(value) if float(value).is_integer() else value)
    return out


GROUPS = ("naive", "tiled", "ladder", "ladder_params", "split", "tensor")


def case_keys(group: str, only: set[str]) -> set[str]:
    """The keys of the group's cases (every parameter bound), for the kernels named in only."""
    return {ncu_reference.case_key(kernel, size, registry.bind(
                registry.get(kernel), make_problem(*size, block=block, params=params)).params, block)
            for kernel, size, params, block in cases(group, only)}


def kept_from(earlier: dict, measured_again: set[str]) -> dict:
    """An earlier reference's cases that a run measuring some kernels again keeps: every other
    kernel's, and those of the kernels measured again that some group still generates. A case no
    group generates any more (its kernel's default moved, and the one-at-a-time choices around it
    with it) would stay behind, measured once and never again."""
    current = set().union(*(case_keys(group, measured_again) for group in GROUPS)) if measured_again else set()
    return {key: case for key, case in earlier.items()
            if key.split(" ", 1)[0] not in measured_again or key in current}


def fingerprint_only(out_path: str, groups: list[str], onto: str) -> None:
    """--builds-only: the fingerprints of this machine's builds of the cases in onto, measured by this
    source tree, written into a copy of it, nothing profiled (a reference measured before it kept them)."""
    result = json.loads(Path(onto).read_text())
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()[0]
    if result["device"] != gpu:
        sys.exit(f"{onto} was measured on {result['device']}, not this {gpu}")
    from engine.kernels import build
    result["nvcc"] = build.nvcc_release()
    result.setdefault("builds", {})
    for group in groups:
        prebuild(group)
        result["builds"].update({key: fp for key, fp in builds(group).items() if key in result["cases"]})
    Path(out_path).write_text(json.dumps(result, indent=0, sort_keys=True))
    print(f"fingerprints of {len(result['builds'])} of {len(result['cases'])} cases", flush=True)


def main(out_path: str, groups: list[str], onto: str | None = None) -> None:
    from tests.benchmarks.ncu_compare import ncu_path
    ncu = ncu_path()
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()[0]
    metrics = available(ncu_reference.METRICS, ncu)
    from engine.kernels import build
    result = {"device": gpu, "ncu": version, "nvcc": build.nvcc_release(), "options": "--clock-control none",
              "repeats": REPEATS, "cases": {}, "builds": {}}
    if onto:
        earlier = json.loads(Path(onto).read_text())
        if earlier["device"] != gpu:
            sys.exit(f"{onto} was measured on {earlier['device']}, not this {gpu}")
        result["cases"] = kept_from(earlier["cases"], {case[0] for group in groups for case in cases(group)})
        result["builds"] = {key: fp for key, fp in earlier.get("builds", {}).items() if key in result["cases"]}
    for group in groups:
        t0 = time.time()
        prebuild(group)
        print(f"{group}: built in {time.time() - t0:.0f} s", flush=True)
        measured = profile(group, ncu, metrics)
        result["cases"].update(measured)
        result["builds"].update({key: fp for key, fp in builds(group).items() if key in measured})
        Path(out_path).write_text(json.dumps(result, indent=0, sort_keys=True))   # kept as it grows


if __name__ == "__main__":
    if sys.argv[1] == "--target":
        target(sys.argv[2])
    else:
        args = sys.argv[2:]
        onto = args[args.index("--onto") + 1] if "--onto" in args else None
        kernels = args[args.index("--kernels") + 1] if "--kernels" in args else None
        if kernels:
            unknown = [k for k in kernels.split(",") if k not in {spec.name for spec in registry.CATALOG}]
            if unknown:
                sys.exit(f"--kernels: no kernel named {', '.join(unknown)}")
            os.environ["NCU_REFERENCE_KERNELS"] = kernels
        groups = [g for g in args if g not in ("--onto", onto, "--kernels", kernels, "--builds-only")]
        if "--builds-only" in args:
            fingerprint_only(sys.argv[1], groups or list(GROUPS), onto)
        else:
            main(sys.argv[1], groups or list(GROUPS), onto)
