"""Kernels run in worker processes the app can lose: a crash, a hang or a fault costs one request."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.devices import cpu, workers
from engine.errors import EngineError, WorkerCrashed
from engine.kernels.problem import make_problem
from engine.tracing import tracer
from engine.tracing.plan import make_plan, single_launch_plan

TEST_CUDA = Path(__file__).parent / "cuda"


def _plan(file: str):
    return single_launch_plan(str(TEST_CUDA / file), make_problem(8, 8, 8), (1, 1), (32, 1))


def _still_serves():
    t = tracer.trace("naive_x_cols", make_problem(16, 16, 16), source="cpu")
    assert t.rel_error < 1e-6 and t.checked_outputs == 256


def test_a_kernel_that_segfaults_costs_its_request_and_the_next_one_works():
    before = tracer.CPU_WORKERS.restarts
    with pytest.raises(WorkerCrashed, match=r"CPU trace worker died .*SIGSEGV.*restarted"):
        tracer.run_plan(_plan("crash_wild_pointer.cu"), "cpu")
    assert tracer.CPU_WORKERS.restarts == before + 1
    _still_serves()


def test_a_kernel_that_hangs_is_stopped_at_the_timeout(monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CPU_TIMEOUT", "3")
    with pytest.raises(WorkerCrashed, match="ran past 3 s"):
        tracer.run_plan(_plan("hang_forever.cu"), "cpu")
    monkeypatch.delenv("MATMUL_EXPLORER_CPU_TIMEOUT")
    _still_serves()


def test_a_timeout_that_is_not_a_number_is_a_one_line_error(monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CPU_TIMEOUT", "soon")
    with pytest.raises(EngineError, match="MATMUL_EXPLORER_CPU_TIMEOUT must be a number of seconds"):
        tracer.run_plan(_plan("hang_forever.cu"), "cpu")


@pytest.mark.parametrize("value", ["inf", "1e10", "0", "nan"])
def test_a_timeout_that_is_no_finite_positive_number_of_seconds_is_a_one_line_error(monkeypatch, value):
    """inf and 1e10 had passed and failed in the wait for the worker, an OverflowError on every trace
    (after the plan had been sent to the worker)."""
    monkeypatch.setenv("MATMUL_EXPLORER_CPU_TIMEOUT", value)
    with pytest.raises(EngineError, match="MATMUL_EXPLORER_CPU_TIMEOUT must be a positive number of seconds, at most 86,400"):
        tracer.run_plan(_plan("guard_skips.cu"), "cpu")
    monkeypatch.delenv("MATMUL_EXPLORER_CPU_TIMEOUT")
    _still_serves()


def test_an_engine_error_in_the_worker_keeps_the_worker():
    before = tracer.CPU_WORKERS.restarts
    with pytest.raises(EngineError, match="outside its bounds") as caught:
        tracer.run_plan(_plan("fault_out_of_bounds.cu"), "cpu")
    assert not isinstance(caught.value, WorkerCrashed)
    assert tracer.CPU_WORKERS.restarts == before


def test_the_app_process_never_loads_a_kernel_library():
    # A fresh process, as the app's is (other tests here load libraries on purpose).
    script = (
        "import sys; from pathlib import Path\n"
        "from engine.kernels import cache; from engine.tracing import tracer; from engine.kernels.problem import make_problem\n"
        "t = tracer.trace('tiled_guarded', make_problem(40, 40, 40, params={'TILE': 8}), source='cpu')\n"
        "assert t.rel_error < 1e-6\n"
        "maps = Path('/proc/self/maps').read_text()\n"
        "assert '.so' in maps, 'the check must see libraries (numpy has some)'\n"
        "kernels = [l for l in maps.splitlines() if str(cache.cache_dir()) in l or '-cpu-' in l]\n"
        "assert not kernels, f'a kernel library is loaded in the app process: {kernels[0]}'\n"
        "assert 'pycuda' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parent.parent, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_sessions_trace_side_by_side_and_get_their_own_results():
    from concurrent.futures import ThreadPoolExecutor
    sizes = [(24, 40, 16), (33, 17, 9), (64, 8, 30), (5, 70, 12)]
    with ThreadPoolExecutor(4) as pool:
        traces = list(pool.map(lambda s: tracer.trace("naive_x_cols", make_problem(*s), source="cpu"), sizes))
    for (m, n, _), t in zip(sizes, traces):
        assert t.checked_outputs == m * n and t.rel_error < 1e-6


def test_warming_starts_every_worker_and_they_serve():
    pool = workers.Pool(cpu.serve, "CPU trace worker", 2)
    try:
        pool.warm()
        assert len(pool.pids()) == 2
        plan = make_plan("naive_x_cols", make_problem(16, 16, 8))
        raw = pool.call("execute", plan, 60)
        records = raw.launches[-1].records.take()    # out of shared memory, which it frees
        assert raw.checked_outputs == 256 and len(records) and len(pool.pids()) == 2
        # Its request table, read where every worker's is (workers.serve), names what it lacks.
        with pytest.raises(EngineError, match="the CPU trace worker has no request 'bench'"):
            pool.call("bench", None, 60)
        assert len(pool.pids()) == 2
    finally:
        pool.shutdown()


def _blocks_of(pid: int) -> list:
    return list(Path("/dev/shm").glob(f"mmx{pid}_*"))


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_blocks_a_killed_worker_left_behind_are_freed():
    from engine.devices import shm
    pool = workers.Pool(cpu.serve, "CPU trace worker", 1)
    try:
        pool.warm()
        pid = pool.pids()[0]
        # What a worker killed mid-hand-over leaves: a block under its name that nobody took.
        left = shm.SharedArray((1000,), "u4")
        left.shm.close()
        Path(f"/dev/shm/{left.shm.name}").rename(f"/dev/shm/mmx{pid}_0")
        assert _blocks_of(pid)
        pool._drop(pool._all[0])
        assert not _blocks_of(pid)
    finally:
        pool.shutdown()


def test_records_too_big_for_shared_memory_come_through_the_pipe(monkeypatch):
    from engine.devices import shm
    monkeypatch.setattr(shm, "fits", lambda nbytes: False)   # a container's 64 MB /dev/shm, full
    got = []
    cpu._execute(make_plan("naive_x_cols", make_problem(16, 16, 8)), got.append)
    assert got[0].checked_outputs == 256
    assert all(isinstance(rl.records, np.ndarray) for rl in got[0].launches if rl is not None)


def test_workers_do_not_run_the_parent_main_script_again(tmp_path):
    """Python's spawn runs the parent's main script again in each new process: `streamlit run app.py`
    ran app.py (its imports, 20 'missing ScriptRunContext' warnings) in every worker, and a script
    without an `if __name__ == "__main__"` guard traced again in each worker, which died. A worker's
    target lives in the engine; the parent's main is none of its business."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent.parent)!r})\n"
        "print('main script ran', flush=True)\n"
        "from engine.tracing import tracer\n"
        "from engine.kernels.problem import make_problem\n"
        "t = tracer.trace('naive_x_cols', make_problem(16, 16, 8), source='cpu')\n"
        "print('traced', t.rel_error < 1e-6, flush=True)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["main script ran", "traced True"]
