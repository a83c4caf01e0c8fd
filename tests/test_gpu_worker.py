"""The GPU worker's own code, without a GPU: its process runs against a stand-in for PyCUDA's driver
module, so its request table, its no-GPU answers and its exit after a fault that poisons a CUDA
context are tested on every machine (the device runs the real thing: tests/test_gpu.py)."""
import sys
import types

import pytest

from engine.devices import workers
from engine.errors import EngineError, WorkerCrashed
from engine.kernels.problem import make_problem
from engine.tracing.plan import make_plan


def _fake_driver(works: bool) -> types.ModuleType:
    cuda = types.ModuleType("pycuda.driver")

    class Error(Exception):
        pass

    class MemoryError_(Error):
        pass

    class Device:
        def __init__(self, index):
            pass

        def name(self):
            return "Stand-in GPU"

        def compute_capability(self):
            return (9, 0)

        def get_attribute(self, attribute):
            return 1000

        def make_context(self):
            return types.SimpleNamespace(pop=lambda: None)

    def init():
        if not works:
            raise RuntimeError("cuInit failed: no CUDA-capable device is detected")

    def to_device(array):
        # What an illegal address earlier in the context looks like to the next call.
        raise Error("cuMemAlloc failed: an illegal memory access was encountered")

    cuda.Error, cuda.MemoryError, cuda.Device, cuda.init, cuda.to_device = Error, MemoryError_, Device, init, to_device
    cuda.device_attribute = types.SimpleNamespace(
        MULTIPROCESSOR_COUNT=0, CLOCK_RATE=0, MEMORY_CLOCK_RATE=0, GLOBAL_MEMORY_BUS_WIDTH=0, L2_CACHE_SIZE=0,
        MAX_SHARED_MEMORY_PER_BLOCK_OPTIN=0)
    cuda.mem_get_info = lambda: (1 << 30, 2 << 30)
    cuda.get_driver_version = lambda: 13000
    cuda.get_version = lambda: (13, 0, 0)
    return cuda


def _serve(conn, works: bool) -> None:
    package = types.ModuleType("pycuda")
    package.driver = _fake_driver(works)
    sys.modules["pycuda"], sys.modules["pycuda.driver"] = package, package.driver
    from engine.devices import gpu_worker
    gpu_worker.serve(conn)


def serve_with_a_gpu(conn) -> None:       # worker targets: module-level, so a spawned process finds them
    _serve(conn, True)


def serve_without_a_gpu(conn) -> None:
    _serve(conn, False)


@pytest.fixture
def worker(request):
    w = workers.Worker(request.param, "GPU worker")
    yield w
    w.stop()


@pytest.mark.parametrize("worker", [serve_with_a_gpu], indirect=True)
def test_the_request_table_answers_info_and_ping_and_names_what_it_lacks(worker):
    info = worker.call("info", None, 60)
    assert info["available"] and info["name"] == "Stand-in GPU" and info["free_bytes"] == 1 << 30
    assert worker.call("ping", None, 10) == "pong"
    with pytest.raises(EngineError, match="the GPU worker has no request 'launch_missiles'"):
        worker.call("launch_missiles", None, 10)
    assert worker.alive()


@pytest.mark.parametrize("worker", [serve_with_a_gpu], indirect=True)
def test_a_fault_that_poisons_the_context_ends_the_worker_with_one_line(worker):
    plan = make_plan("naive_x_cols", make_problem(16, 16, 16))
    with pytest.raises(WorkerCrashed, match="illegal memory access.*the GPU worker was restarted"):
        worker.call("execute", plan, 60, "the GPU request")
    worker.process.join(10)
    assert worker.process.exitcode == 3


@pytest.mark.parametrize("worker", [serve_without_a_gpu], indirect=True)
def test_without_a_gpu_it_says_why_and_keeps_serving(worker):
    info = worker.call("info", None, 60)
    assert not info["available"] and "no CUDA-capable device" in info["reason"]
    for _ in range(2):
        with pytest.raises(EngineError, match="no GPU: RuntimeError: cuInit failed") as caught:
            worker.call("execute", make_plan("naive_x_cols", make_problem(8, 8, 8)), 10)
        assert not isinstance(caught.value, WorkerCrashed)
    assert worker.alive()
