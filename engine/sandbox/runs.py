"""The server's side of a sandboxed job (engine/sandbox/job.py runs inside): a trace of a student's
kernel, or its SASS listing, each in a fresh sandbox, answered as plain data that is checked before
the engine uses it (a kernel can write anything to its result pipe; it can only fool itself, never
crash the server).
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import pickle
import shutil
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np

from engine.errors import EngineError
from engine.sandbox import Limits, engine_binds, run_sandboxed
from engine.tracing.execute import RawLaunch, RawRun, WholeResult
from engine.tracing.plan import TracePlan
from engine.tracing.records import RAW_DTYPE

# Inside, the engine builds into the sandbox's own /tmp, never the server's cache.
# One BLAS thread: a pool of spinning BLAS threads on a many-core machine spent the job's CPU seconds
# (counted over all its threads) before the kernel ran.
_ENV = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "MATMUL_EXPLORER_CACHE": "/tmp/cache",
        "MATMUL_EXPLORER_GPU": "0", "MATMUL_EXPLORER_WARMUP": "0", "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _job(request: dict, folder: Path, limits: Limits | None, gpu: bool = False,
         writable: Path | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    binds, env = [*engine_binds(), (folder, folder)], dict(_ENV)
    if gpu:   # PyCUDA, where it is installed apart from the Python the server runs (never imported here)
        found = importlib.util.find_spec("pycuda")
        site = Path(found.origin).resolve().parents[1] if found and found.origin else None
        if site is not None and not any(site.is_relative_to(b) for b, _ in binds) and not site.is_relative_to("/usr"):
            binds.append((site, site))
            env["PYTHONPATH"] += f":{site}"
        env["MATMUL_EXPLORER_GPU"] = "1"
        # The driver's libraries (libcuda) are found where the server finds them: its loader path (not
        # a secret); only folders the sandbox sees (/usr, /lib). The toolkit's libraries: beside nvcc.
        paths = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p.startswith(("/usr/", "/lib"))]
        nvcc = shutil.which("nvcc")   # the toolkit's own libraries (libcurand, libcublas), beside its nvcc
        if nvcc:
            toolkit = Path(nvcc).resolve().parents[1]
            paths += [str(d) for d in (toolkit / "lib64", *sorted((toolkit / "targets").glob("*/lib")))
                      if d.is_dir()]
        if paths:
            env["LD_LIBRARY_PATH"] = ":".join(paths)
    done = run_sandboxed([sys.executable, "-m", "engine.sandbox.job"], binds=binds, env=env,
                         stdin=pickle.dumps(request), want_result=True, limits=limits, gpu=gpu, writable=writable)
    if not done.ok:
        last = [line for line in done.output.splitlines() if line.strip()]
        raise EngineError(f"your kernel {done.reason}" + (f" (it printed: {last[-1][:200]})" if last else ""))
    try:
        # np.savez stores its members as they are: a compressed member could inflate past any limit
        # (a zip bomb written to the result pipe), so only stored ones of a bounded size are read.
        with zipfile.ZipFile(io.BytesIO(done.result)) as z:
            if any(i.compress_type != zipfile.ZIP_STORED for i in z.infolist()) or \
                    sum(i.file_size for i in z.infolist()) > len(done.result):
                raise ValueError("not an answer of ours")
        with np.load(io.BytesIO(done.result), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        meta = json.loads(arrays.pop("meta").tobytes())
    except (ValueError, OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError, EOFError):
        raise EngineError("the sandbox gave no readable answer (did your kernel write to its output?)") from None
    if not isinstance(meta, dict):
        raise EngineError("the sandbox gave no readable answer")
    if "error" in meta:
        raise EngineError(str(meta["error"]))
    return meta, arrays


_BUILDING: dict[Path, threading.Lock] = {}
_BUILDING_LOCK = threading.Lock()


def library(file: Path, params: dict[str, int], limits: Limits | None = None) -> Path:
    """The kernel's CPU library, built once per source and parameters in a sandbox that may write only
    its folder (beside the source); a trace then loads it read-only. A size, block or warp change
    traces again without compiling again."""
    key = hashlib.sha256(repr(sorted(params.items())).encode()).hexdigest()[:12]
    out = Path(file).parent / f"build-{key}"
    with _BUILDING_LOCK:
        lock = _BUILDING.setdefault(out, threading.Lock())
    with lock:
        so = out / "kernel.so"
        if not so.exists():
            out.mkdir(exist_ok=True)
            _job({"op": "build", "file": str(file), "params": dict(params), "out": str(so)}, Path(file).parent,
                 limits, writable=out)
            if not so.is_file():
                raise EngineError("the sandbox built no library of your kernel")
        return so


def trace(plan: TracePlan, limits: Limits | None = None, whole: bool = False) -> RawRun:
    """execute(plan) on the CPU, in a sandbox: the RawRun the CPU trace workers give for the
    catalog's kernels, its arrays checked against the plan. Its one launch's library is built first
    (or found built). whole: its .whole is all of C after every block ran (a WholeResult), or why
    that run failed (a str)."""
    folder = Path(plan.launches[-1].file).parent
    so = library(Path(plan.launches[-1].file), plan.launches[-1].defines, limits) if len(plan.launches) == 1 else None
    meta, arrays = _job({"op": "trace", "plan": plan, "library": str(so) if so else None, "whole": whole},
                        folder, limits)
    try:
        launches = []
        for i, lp in enumerate(plan.launches):
            if not meta["launches"][i]:
                launches.append(None)
                continue
            counts, records = arrays[f"counts{i}"], arrays[f"records{i}"]
            slots = len(lp.blocks) * lp.block[0] * lp.block[1]
            if counts.dtype != np.uint32 or counts.shape != (slots,) or records.dtype != RAW_DTYPE \
                    or records.ndim != 1 or int(counts.sum(dtype=np.int64)) != len(records) or len(records) > plan.cap:
                raise ValueError("arrays")
            launches.append(RawLaunch(counts, records))
        return RawRun(launches, float(meta["rel_error"]), int(meta["checked_outputs"]), str(meta["device"])[:100],
                      {str(k): float(v) for k, v in dict(meta["seconds"]).items()},
                      _whole(meta["whole"], plan) if whole else None)
    except (KeyError, ValueError, TypeError, IndexError):
        raise EngineError("the sandbox's answer does not fit the trace asked for (did your kernel write to "
                          "its output?)") from None


def _whole(answer: dict, plan: TracePlan) -> WholeResult | str:
    """The job's check of all of C, checked against the plan's size (ValueError where it does not fit)."""
    if "error" in answer:
        return str(answer["error"])[:1000]
    written, total, err = int(answer["written"]), int(answer["total"]), float(answer["rel_error"])
    if not 0 <= written <= total == plan.problem.m * plan.problem.n:
        raise ValueError("sizes")
    return WholeResult(written, total, err)


def listing(file: Path, params: dict[str, int], limits: Limits | None = None) -> dict:
    """sass.memory_instructions of the student's kernel, built and listed in a sandbox."""
    meta, _ = _job({"op": "listing", "file": str(file), "params": dict(params)}, Path(file).parent, limits)
    info = meta.get("listing")
    try:
        by_line = {int(k): {str(op): int(n) for op, n in v.items()} for k, v in info["by_line"].items()}
        return {**info, "available": bool(info["available"]), "note": str(info["note"]), "by_line": by_line,
                "never_per_copy": {str(k): float(v) for k, v in dict(info.get("never_per_copy") or {}).items()},
                "never_per_copy_line": {int(ln): {str(k): float(v) for k, v in dict(ops).items()}
                                        for ln, ops in dict(info.get("never_per_copy_line") or {}).items()}}
    except (KeyError, ValueError, TypeError, AttributeError):
        raise EngineError("the sandbox's SASS listing is not readable") from None


def time_on_gpu(file: Path, name: str, problem, warmup: int = 2, reps: int = 20, limits: Limits | None = None) -> dict:
    """timing.run_bench of the student's kernel, in a sandbox of its own with the GPU's device files:
    {'timing': run_bench's answer, 'gpu': the GPU's name}."""
    meta, _ = _job({"op": "time", "file": str(file), "name": name, "problem": problem, "warmup": warmup,
                    "reps": reps}, Path(file).parent, limits, gpu=True)
    try:
        out = meta["timing"]
        times = [float(t) for t in out["times_ms"]]
        return {"gpu": str(meta["gpu"])[:100], "times_ms": times, "correct": bool(out["correct"]),
                "rel_error": float(out["rel_error"]), "worst_error": float(out.get("worst_error", 0.0)),
                "tolerance": float(out["tolerance"])}
    except (KeyError, ValueError, TypeError):
        raise EngineError("the sandbox's timing is not readable") from None
