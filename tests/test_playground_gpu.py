"""The Playground on a GPU machine (run on the device): a student's kernel timed on the GPU in a
sandbox of its own, as the Benchmarks page times the catalog's; a kernel that faults there costs
its own sandbox only, and the app's GPU worker carries on."""
import pytest

from engine import playground, sandbox
from engine.devices import gpu_client
from engine.errors import EngineError
from engine.kernels.problem import make_problem
from engine.tracing import tracer

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))]


def _saved(text, tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    saved = playground.save(text)
    spec = playground.spec_of(saved)
    return saved, spec, playground.problem_for(spec, 512, 384, 256, {})


def test_a_students_kernel_is_timed_on_the_gpu_in_its_sandbox(tmp_path, monkeypatch):
    saved, spec, problem = _saved(playground.starter_source("tiled_guarded"), tmp_path, monkeypatch)
    out = playground.time_on_gpu(saved, problem)
    assert out["gpu"].startswith("NVIDIA") and out["correct"] and out["rel_error"] < 1e-5, out
    assert len(out["times_ms"]) >= 5 and 0 < min(out["times_ms"]) < 100


def test_a_kernel_that_faults_on_the_gpu_costs_its_own_sandbox_only(tmp_path, monkeypatch):
    text = playground.starter_source(playground.BLANK).replace("STG(C, row * N + col, sum);",
                                                               "STG(C, row * N + col + 100000000, sum);")
    saved, spec, problem = _saved(text, tmp_path, monkeypatch)
    with pytest.raises(EngineError) as exc:
        playground.time_on_gpu(saved, problem)
    assert "\n" not in str(exc.value).strip()
    # the app's own GPU worker never saw it
    assert gpu_client.status().available
    assert tracer.trace("naive_x_cols", make_problem(32, 32, 32), source="gpu").rel_error < 1e-5
