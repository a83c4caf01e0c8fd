"""What runs inside the sandbox (python -m engine.sandbox.job): the engine's own CPU tracer and SASS
listing, on a student's kernel. The request comes on stdin from the server (a pickle the server
wrote: the only direction pickle travels); the answer goes to $SANDBOX_RESULT_FD as an .npz of plain
arrays and one JSON document (`meta`), which the server reads without pickle (engine/sandbox/runs.py).
A one-line error is an answer too: {"error": "..."}.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import sys

import numpy as np


def _answer(meta: dict, arrays: dict[str, np.ndarray] | None = None) -> None:
    out = io.BytesIO()
    np.savez(out, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **(arrays or {}))
    with os.fdopen(int(os.environ["SANDBOX_RESULT_FD"]), "wb") as f:
        f.write(out.getvalue())


def build(file: str, params: dict, out: str) -> None:
    """The CPU library of the kernel, as the engine builds the catalog's, copied to `out` (the one
    folder this job may write): later traces of the same source load it read-only."""
    import shutil

    from engine.kernels import build as builds
    shutil.copyfile(builds.build_cpu_library(file, params), out)
    _answer({"built": True})


def _use_library(library: str) -> None:
    """Traces load the library built before (its folder bound read-only), not a new build."""
    from pathlib import Path

    from engine.kernels import build as builds
    from engine.kernels import cache
    builds.build_cpu_library = lambda file, params: Path(library)
    cache.checked_bytes = lambda path: Path(path).read_bytes()


def trace(plan, library: str | None = None, whole: bool = False) -> None:
    """The plan's trace; with whole, all of C after every block ran too (execute.whole_result), in the
    same job: a sandbox of its own for it had cost every build a second start."""
    from engine.devices.cpu import CpuDevice
    from engine.errors import EngineError
    from engine.tracing.execute import execute, whole_result
    if library:
        _use_library(library)
    run = execute(plan, CpuDevice())
    arrays, launches = {}, []
    for i, rl in enumerate(run.launches):
        launches.append(rl is not None)
        if rl is not None:
            arrays[f"counts{i}"] = rl.counts
            arrays[f"records{i}"] = rl.records
    meta = {"launches": launches, "rel_error": run.rel_error, "checked_outputs": run.checked_outputs,
            "device": run.device, "seconds": run.seconds}
    if whole:
        try:   # a fault in another block than the traced ones is this check's answer, not the trace's
            r = whole_result(plan, CpuDevice())
            meta["whole"] = {"written": r.written, "total": r.total, "rel_error": r.rel_error}
        except EngineError as exc:
            meta["whole"] = {"error": str(exc)}
    _answer(meta, arrays)


def listing(file: str, params: dict) -> None:
    from engine.kernels import sass
    _answer({"listing": sass.memory_instructions(file, params)})


def time_kernel(file: str, name: str, problem, warmup: int, reps: int) -> None:
    """The kernel timed on the GPU the way the Benchmarks page times the catalog's (engine/bench/timing.py),
    in this sandbox's own CUDA context: a fault or a hang ends this sandbox, nothing else."""
    import pycuda.driver as cuda  # noqa: PLC0415 - GPU machines only, and only in here
    cuda.init()
    dev = cuda.Device(0)
    ctx = dev.retain_primary_context()
    ctx.push()
    try:
        from engine.bench import timing
        from engine.devices.gpu_worker import device_info
        from engine.kernels import declared
        info = device_info(cuda, dev)
        spec = declared.spec_from_source(file, name=name)
        out = timing.run_bench({}, info, spec, problem, warmup, reps)
        _answer({"timing": out, "gpu": info["name"]})
    finally:
        ctx.pop()


def main() -> None:
    request = pickle.load(sys.stdin.buffer)
    from engine.errors import EngineError
    try:
        if request["op"] == "trace":
            trace(request["plan"], request.get("library"), bool(request.get("whole")))
        elif request["op"] == "build":
            build(request["file"], request["params"], request["out"])
        elif request["op"] == "listing":
            listing(request["file"], request["params"])
        elif request["op"] == "time":
            time_kernel(request["file"], request["name"], request["problem"], request["warmup"], request["reps"])
        else:
            raise EngineError(f"unknown sandbox job {request['op']!r}")
    except (EngineError, ValueError) as exc:   # the engine's one-line refusals and the source reader's
        _answer({"error": str(exc)})


if __name__ == "__main__":
    main()
