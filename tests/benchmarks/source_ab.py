"""An A/B of versions of the kernel sources (run on the device): the same catalog kernels built from
cuda/ as it is ("work") and from other copies of it (--base, e.g. `git archive HEAD~1 cuda | tar -x -C
/tmp/base`, so --base /tmp/base/cuda), checked against float64 at sizes with partial tiles (the whole
of C and each element, as the engine's benchmark checks), then timed beside cuBLAS FP16 in rounds.
Each round times every (kernel, version) and cuBLAS in turn, starting one place further along each
round, each from the same rest (--rest seconds idle) and then as the engine's benchmark times: a hold
kernel before each sample, twice as long as the host takes to queue it (a sample the host queued
slower is taken again with a longer hold), samples of about 1 ms. The GPU's clock then starts each
one from the same state. Timed back to back with no rest, an H200 ran everything ~15% slower and 10%
apart from round to round, as its clock fell under the load; timed from rest, the rounds of one
configuration agree within ~0.2%. Prints each one's median round, its range and % of cuBLAS's median,
and for each version after a kernel's first the median over rounds of its time against the first's
in the same round (paired: what drifts between rounds drops out).

What is versioned is the kernel's own source (its last launch's, e.g. split_k_sum.cu for split_k)
and the headers it reaches; the launch itself (grid, shared memory, tensor-map boxes, earlier launches
such as pad_ab.cu) is read from cuda/ as it is, so versions must agree on their LAUNCH_ lines.

    python3 tests/benchmarks/source_ab.py --base DIR [--base DIR2 ...] [--kernels wgmma_epilogue,wgmma_stream_k]
                                          [--sizes 4096,4096x4096x1024,8192] [--rounds 11] [--rest 0.3]
                                          [--no-check]

A kernel configured per size (wgmma_stream_k) runs the recorded sweeps' choice for its size.
"""
from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.kernels import sources  # noqa: E402

CHECK_SIZES = ((1, 1, 1), (17, 33, 9), (4095, 4097, 511), (300, 2056, 72), (1000, 1000, 8192), (4096, 4096, 64))
SAMPLE_S = 1e-3   # the GPU time a timed sample holds, about, as in the engine's benchmark


def versions(bases: list[Path]) -> dict[str, Path]:
    """The versions by name: one --base is "base", several are named by their folders (their parent's
    name where the folder is called cuda); cuda/ as it is, "work", last."""
    if len(bases) == 1:
        named = {"base": bases[0]}
    else:
        named = {(b.parent.name if b.name == "cuda" else b.name): b for b in bases}
        if len(named) < len(bases) or "work" in named:
            raise SystemExit("--base folders need names of their own (not 'work')")
    return {**named, "work": sources.CUDA_DIR}


def lay_out(named: dict[str, Path], kernels: dict[str, str], into: Path) -> dict[tuple[str, str], Path]:
    """Each version's copy of cuda/'s headers and sources, in a folder of its own (a source's quoted
    includes are found beside it first): {(kernel, version): its source}, for kernels {name: the file
    its last launch builds}. A file a version's folder lacks is taken from cuda/ as it is; one only a
    version has (a header it adds) is copied too."""
    files = {}
    for version, root in named.items():
        folder = into / version
        folder.mkdir(parents=True)
        for here in (sources.CUDA_DIR, root):   # the version's own files last: they win
            for path in sorted(here.iterdir()):
                if path.suffix in (".cuh", ".h", ".cu") and path.is_file():
                    shutil.copy(path, folder / path.name)
        for kernel, file in kernels.items():
            files[(kernel, version)] = folder / file
    return files


def sizes(text: str) -> list[tuple[int, int, int]]:
    """'4096,4096x4096x1024' as [(4096, 4096, 4096), (4096, 4096, 1024)]."""
    out = []
    for part in filter(None, text.split(",")):
        dims = [int(x) for x in part.split("x")]
        out.append(tuple(dims * 3) if len(dims) == 1 else tuple(dims))
    return out


def rotated(keys: list, r: int) -> list:
    """Round r's order: the keys starting r places along, so no one always runs first or last."""
    return keys[r % len(keys):] + keys[:r % len(keys)]


def summary(flops: float, seconds: dict, reference) -> list[str]:
    """A line per key: its median round in TFLOP/s, % of the reference key's median, the range; for a
    (kernel, version) after that kernel's first, the median over rounds of the first's time over its own
    in the same round (paired)."""
    ref = flops / statistics.median(seconds[reference]) / 1e12
    lines, first = [], {}
    for key, ts in seconds.items():
        tf = [flops / t / 1e12 for t in ts]
        med = statistics.median(tf)
        line = f"  {' '.join(filter(None, key)):28} {med:7.1f} TF {100 * med / ref:7.2f}%   range {min(tf):.1f}-{max(tf):.1f}"
        if key != reference and key[0] in first:
            paired = statistics.median(a / b for a, b in zip(seconds[first[key[0]]], ts))
            line += f"   paired against {first[key[0]][1]}: {100 * (paired - 1):+.2f}%"
        first.setdefault(key[0], key)
        lines.append(line)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, action="append", type=Path,
                    help="a folder holding another version of cuda/'s files (again for more versions)")
    ap.add_argument("--kernels", default="wgmma_epilogue,wgmma_stream_k")
    ap.add_argument("--sizes", default="4096,4096x4096x1024,8192")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--rest", type=float, default=0.3, help="seconds idle before each timing")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()

    import numpy as np
    import pycuda.autoinit  # noqa: F401 - the context the launches below run in
    import pycuda.driver as cuda

    from engine.bench import selection, timing
    from engine.devices import gpu, gpu_client
    from engine.kernels import reference, registry
    from engine.kernels.problem import make_inputs, make_problem
    from engine.tracing.plan import global_shapes, size_arguments

    here = gpu_client.status()
    print(here.name, flush=True)

    def bound(kernel, m, n, k):
        spec = registry.get(kernel)
        params = selection.chosen(kernel, m, n, k, gpu=here.name, sm_count=here.info.get("sm_count")) or {}
        return spec, registry.bind(spec, make_problem(m, n, k, params=params))

    kernels = args.kernels.split(",")
    named = versions(args.base)
    last = {k: registry.get(k).launches_for(bound(k, 64, 64, 64)[1])[-1].file for k in kernels}
    files = lay_out(named, last, Path(tempfile.mkdtemp()))

    bad = 0
    for m, n, k in [] if args.no_check else CHECK_SIZES:
        for kernel in kernels:
            spec, p = bound(kernel, m, n, k)
            a, b = make_inputs(p)
            # FP16 kernels against the product of their rounded inputs (tighter than the engine's
            # gate, which compares with float32's); any other precision as the engine does.
            rounded = np.float16 if spec.inputs is registry.Precision.FP16 else np.float32
            expected = a.astype(rounded).astype(np.float64) @ b.astype(rounded).astype(np.float64)
            launcher = gpu.Launcher({}, global_shapes(p), size_arguments(p), spec.inputs)
            launcher.upload({"A": a, "B": b})
            for version in named:
                gpu.fill_nan(launcher.buffer("C"), np.dtype(np.float32), m * n)
                for call in launcher.launches(spec, p, source_override=str(files[(kernel, version)])):
                    call()
                cuda.Context.synchronize()
                c = launcher.download("C")
                err, worst = reference.relative_error(c, expected), reference.worst_error(c, expected)
                # The whole and each element, as the engine's benchmark checks: a few wrong tiles hardly
                # move the whole's error.
                ok = bool(np.isfinite(c).all() and err <= spec.tolerance and worst <= spec.tolerance)
                bad += not ok
                print(f"check {kernel} {version} {m}x{n}x{k}: rel error {err:.2e}, worst element {worst:.2e} "
                      f"{'ok' if ok else 'WRONG'}", flush=True)
            launcher.free()
    if bad:
        print(f"{bad} checks wrong: not timed")
        return 1

    modules: dict = {}
    for m, n, k in sizes(args.sizes):
        calls, launchers = {}, []
        a = b = None
        for kernel in kernels:
            spec, p = bound(kernel, m, n, k)
            if a is None:
                a, b = make_inputs(p)
            launcher = gpu.Launcher({}, global_shapes(p), size_arguments(p), spec.inputs)
            launchers.append(launcher)
            launcher.upload({"A": a, "B": b})
            for version in named:
                calls[(kernel, version)] = launcher.launches(spec, p, source_override=str(files[(kernel, version)]))
        calls[("cublas_gemm_fp16", "")] = [functools.partial(timing.cublas().gemm_ex, launchers[0].buffer("A"),
                                                             launchers[0].buffer("B"), launchers[0].buffer("C"),
                                                             m, n, k, registry.Precision.FP16)]
        per_launch = 2.0 * m * n * k / 800e12   # about; only sets how many launches a sample holds
        inner = max(1, min(1000, round(SAMPLE_S / per_launch)))
        seconds = {key: [] for key in calls}
        starved = 0
        for r in range(args.rounds):
            for key in rotated(list(calls), r):
                time.sleep(args.rest)
                timer = gpu.HeldEventTimer(modules, timing.CALIBRATION_HOLD_MS)
                gpu.Launcher.run(calls[key], inner, [timer])   # warm-up, and how long the host takes to queue a sample
                timer.hold_ms = timing.hold_for(timer.host_ms[-1])   # then held as the engine's benchmark holds
                run = functools.partial(gpu.Launcher.run, calls[key], inner, [timer])
                samples, _, kept = timing.held_samples(timer, lambda _r, run=run: run(), 10)
                starved += kept
                seconds[key].append(statistics.median(samples) / 1e3 / inner)
        print(f"{m}x{n}x{k}: medians of {args.rounds} rounds, {inner} launches a sample"
              + (f" ({starved} samples the host queued slower than the hold)" if starved else ""), flush=True)
        print("\n".join(summary(2.0 * m * n * k, seconds, ("cublas_gemm_fp16", ""))), flush=True)
        for launcher in launchers:
            launcher.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
