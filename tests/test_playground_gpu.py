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


def test_the_pages_gpu_button_times_the_kernel_against_cublas_and_its_starter(tmp_path, monkeypatch):
    """The page's own path (pages/playground.py, AppTest on the GPU machine): the button under
    "On this <GPU>" times the student's kernel in its sandbox and the kernel it started from and
    cuBLAS in the app's worker, and the table shows the three, each correct."""
    from tests.test_pages import open_page
    monkeypatch.setenv(sandbox.SWITCH_ENV, "1")
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    at = open_page("pages/playground.py", {"start": "tiled_guarded"})
    assert any(str(h.value).startswith("On this NVIDIA") for h in at.subheader), [h.value for h in at.subheader]
    button = next(b for b in at.button if b.label.startswith("Time it at"))
    assert "tiled_guarded" in button.label and "cublas_sgemm" in button.label
    at = button.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[-1].value
    assert len(table) == 3 and table["correct"].all(), table
    assert (table["GFLOP/s"] > 0).all(), table
