"""The server's side of a sandboxed job (engine/sandbox/job.py runs inside): a trace of a student's
kernel, or its SASS listing, each in a fresh sandbox, answered as plain data that is checked before
the engine uses it (a kernel can write anything to its result pipe; it can only fool itself, never
crash the server).
"""
from __future__ import annotations

import io
import json
import pickle
import sys
import zipfile
from pathlib import Path

import numpy as np

from engine.errors import EngineError
from engine.sandbox import Limits, engine_binds, run_sandboxed
from engine.tracing.execute import RawLaunch, RawRun
from engine.tracing.plan import TracePlan
from engine.tracing.records import RAW_DTYPE

# Inside, the engine builds into the sandbox's own /tmp, never the server's cache.
_ENV = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "MATMUL_EXPLORER_CACHE": "/tmp/cache",
        "MATMUL_EXPLORER_GPU": "0", "MATMUL_EXPLORER_WARMUP": "0", "PYTHONDONTWRITEBYTECODE": "1"}


def _job(request: dict, folder: Path, limits: Limits | None) -> tuple[dict, dict[str, np.ndarray]]:
    done = run_sandboxed([sys.executable, "-m", "engine.sandbox.job"], binds=[*engine_binds(), (folder, folder)],
                         env=_ENV, stdin=pickle.dumps(request), want_result=True, limits=limits)
    if not done.ok:
        last = [line for line in done.output.splitlines() if line.strip()]
        raise EngineError(f"your kernel {done.reason}" + (f" (it printed: {last[-1][:200]})" if last else ""))
    try:
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


def trace(plan: TracePlan, limits: Limits | None = None) -> RawRun:
    """execute(plan) on the CPU, in a sandbox: the RawRun the CPU trace workers give for the
    catalog's kernels, its arrays checked against the plan."""
    folder = Path(plan.launches[-1].file).parent
    meta, arrays = _job({"op": "trace", "plan": plan}, folder, limits)
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
                      {str(k): float(v) for k, v in dict(meta["seconds"]).items()})
    except (KeyError, ValueError, TypeError, IndexError):
        raise EngineError("the sandbox's answer does not fit the trace asked for (did your kernel write to "
                          "its output?)") from None


def listing(file: Path, params: dict[str, int], limits: Limits | None = None) -> dict:
    """sass.memory_instructions of the student's kernel, built and listed in a sandbox."""
    meta, _ = _job({"op": "listing", "file": str(file), "params": dict(params)}, Path(file).parent, limits)
    info = meta.get("listing")
    try:
        by_line = {int(k): {str(op): int(n) for op, n in v.items()} for k, v in info["by_line"].items()}
        return {**info, "available": bool(info["available"]), "note": str(info["note"]), "by_line": by_line,
                "never_per_copy": {str(k): float(v) for k, v in dict(info.get("never_per_copy") or {}).items()}}
    except (KeyError, ValueError, TypeError, AttributeError):
        raise EngineError("the sandbox's SASS listing is not readable") from None
