"""The app's side of the GPU worker: starts it (spawned, never forked), sends one request at a
time, and replaces it when it dies, hangs past a timeout, or reports a fault that poisons its context.

Nothing here imports PyCUDA: whether a GPU is there is asked of the worker.
"""
from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass, field

from engine.devices.workers import Worker, timeout_from_env
from engine.errors import EngineError, WorkerCrashed

# A request longer than MATMUL_EXPLORER_GPU_TIMEOUT seconds (read per request) replaces the worker.
DEFAULT_TIMEOUT_S = 120.0
START_TIMEOUT_S = 90.0


@dataclass
class GpuStatus:
    available: bool
    name: str = ""
    reason: str = ""
    free_bytes: int = 0
    info: dict = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return "GPU" if self.available else "CPU"


_lock = threading.RLock()
_worker: Worker | None = None
_status: GpuStatus | None = None
restarts = 0


def _gpu_disabled_reason() -> str | None:
    if os.environ.get("MATMUL_EXPLORER_GPU", "1") == "0":
        return "the GPU is switched off (MATMUL_EXPLORER_GPU=0)"
    if importlib.util.find_spec("pycuda") is None:
        return "PyCUDA is not installed (requirements-gpu.txt)"
    return None


def _drop_worker() -> None:
    global _worker, restarts
    if _worker is not None:
        _worker.stop()
        _worker = None
        restarts += 1


def call(op: str, payload=None, timeout: float | None = None):
    """One request to the worker. Raises EngineError with the worker's one-line message."""
    global _worker
    if timeout is None:
        timeout = timeout_from_env("MATMUL_EXPLORER_GPU_TIMEOUT", DEFAULT_TIMEOUT_S)
    with _lock:
        if _worker is None or not _worker.alive():
            from engine.devices import gpu_worker  # noqa: PLC0415 - the target must be importable in the child
            _worker = Worker(gpu_worker.serve, "GPU worker")
            timeout = max(timeout, START_TIMEOUT_S)
        try:
            return _worker.call(op, payload, timeout, "the GPU request")
        except WorkerCrashed:
            _drop_worker()
            raise


def status(refresh: bool = False) -> GpuStatus:
    """Is there a GPU to trace and time on? Cached after the first answer."""
    global _status
    with _lock:
        if _status is not None and not refresh:
            return _status
        reason = _gpu_disabled_reason()
        if reason:
            _status = GpuStatus(False, reason=reason)
            return _status
        try:
            info = call("info", timeout=START_TIMEOUT_S)
        except EngineError as exc:
            _status = GpuStatus(False, reason=str(exc))
            return _status
        _status = GpuStatus(info["available"], info.get("name", ""), info.get("reason", ""),
                            info.get("free_bytes", 0), info)
        if not _status.available:
            _drop_worker()
        return _status


def shutdown() -> None:
    with _lock:
        _drop_worker()
