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


@pytest.mark.parametrize("value", ["soon", "inf", "1e10", "-1"])
def test_a_gpu_timeout_that_is_no_number_of_seconds_is_a_one_line_error_per_request(monkeypatch, value):
    """MATMUL_EXPLORER_GPU_TIMEOUT was read with a bare float() when the engine was imported: "soon"
    took the whole app down at import, inf failed in the wait for the worker. It is read per request,
    a one-line error there, before any worker starts."""
    import subprocess
    from pathlib import Path
    env = {**__import__("os").environ, "MATMUL_EXPLORER_GPU_TIMEOUT": value}
    done = subprocess.run([sys.executable, "-c", "import engine.devices.gpu_client"], env=env, capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0 and not done.stderr, done.stderr
    monkeypatch.setenv("MATMUL_EXPLORER_GPU_TIMEOUT", value)
    with pytest.raises(EngineError, match="MATMUL_EXPLORER_GPU_TIMEOUT must be a "):
        gpu_client.call("status")
