"""Worker requests beyond tracing. Runs inside the GPU worker process."""
from __future__ import annotations

from . import gpu_bench

_state: dict = {}


def handle(op: str, payload, cuda, info: dict, modules: dict):
    _state["info"] = info
    _state["modules"] = modules
    if op == "ping":
        return "pong"
    if op == "bench":
        return gpu_bench.run_bench(cuda, _state, **payload)
    raise ValueError(f"the GPU worker has no request {op!r}")
