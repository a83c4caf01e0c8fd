"""The app side of the GPU worker, without a GPU."""
import sys

import pytest

from engine.devices import gpu_client
from engine.errors import EngineError
from engine.kernels.problem import make_problem
from engine.tracing import tracer


def test_app_process_never_imports_pycuda():
    gpu_client.status()
    tracer.trace("naive_x_cols", make_problem(8, 8, 8), source="cpu")
    assert "pycuda" not in sys.modules and "pycuda.driver" not in sys.modules


def test_buffers_that_do_not_fit_the_gpu_are_refused(monkeypatch):
    fake = gpu_client.GpuStatus(True, "NVIDIA Test GPU", free_bytes=64 << 20)
    monkeypatch.setattr(gpu_client, "status", lambda refresh=False: fake)
    with pytest.raises(EngineError, match=r"needs 96 MiB of GPU memory .* 64 MiB is free on the NVIDIA Test GPU"):
        tracer.trace("naive_x_cols", make_problem(4096, 4096, 1024), [(0, 0)], source="gpu")


def test_gpu_source_without_a_gpu_says_why(monkeypatch):
    monkeypatch.setattr(gpu_client, "status", lambda refresh=False: gpu_client.GpuStatus(False, reason="no driver"))
    with pytest.raises(EngineError, match="no GPU trace source: no driver"):
        tracer.trace("naive_x_cols", make_problem(8, 8, 8), source="gpu")
    assert tracer.resolve_source("auto") == "cpu"
