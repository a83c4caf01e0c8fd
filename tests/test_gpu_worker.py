"""The GPU worker's own code, without a GPU: its process runs against a stand-in for PyCUDA's driver
module, so its request table, its no-GPU answers, its exit after a fault that poisons a CUDA
context, and the one launcher that its traces and its timings share are tested on every machine
(the device runs the real thing: tests/test_gpu.py)."""
import functools
import hashlib
import importlib
import itertools
import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from engine.devices import workers
from engine.errors import EngineError, WorkerCrashed
from engine.kernels.problem import make_problem
from engine.tracing.plan import make_plan


def _fake_driver(works: bool, memory_works: bool = False) -> types.ModuleType:
    """PyCUDA's driver module as the worker uses it. memory_works: device memory is host memory and
    a launch of naive_x_cols (either build) or tests/cuda/wrong_result.cu computes what that kernel
    computes (other kernels write nothing), each launch logged to $STAND_IN_GPU_LOG with what its
    arguments held; otherwise the first allocation fails as after an illegal address."""
    cuda = types.ModuleType("pycuda.driver")
    memory: dict[int, np.ndarray] = {}   # address -> the allocation's bytes
    addresses = itertools.count(1 << 20, 1 << 20)

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

        def retain_primary_context(self):
            return types.SimpleNamespace(push=lambda: None, pop=lambda: None)

    def init():
        if not works:
            raise RuntimeError("cuInit failed: no CUDA-capable device is detected")

    class DeviceAllocation:
        def __init__(self, nbytes):
            self.address = next(addresses)
            memory[self.address] = np.zeros(nbytes, dtype=np.uint8)

        def __int__(self):
            return self.address

        def free(self):
            del memory[self.address]   # a second free is a KeyError: the launcher frees once

    def mem_alloc(nbytes):
        if not memory_works:
            # What an illegal address earlier in the context looks like to the next call.
            raise Error("cuMemAlloc failed: an illegal memory access was encountered")
        return DeviceAllocation(nbytes)

    def memcpy_htod(dst, src):
        data = np.ascontiguousarray(src).view(np.uint8).ravel()
        memory[int(dst)][:len(data)] = data

    def memcpy_dtoh(dst, src):
        dst.reshape(-1).view(np.uint8)[:] = memory[int(src)][:dst.nbytes]

    def to_device(array):
        buf = mem_alloc(array.nbytes)
        memcpy_htod(buf, array)
        return buf

    def memset_d32(dst, value, count):
        memory[int(dst)][:4 * count].view(np.uint32)[:] = value

    def memset_d16(dst, value, count):
        memory[int(dst)][:2 * count].view(np.uint16)[:] = value

    def floats(buf, count):
        return memory[int(buf)][:4 * count].view(np.float32)

    def matmul(a, b, c, m, n, k, first=0):
        c[:] = (floats(a, m * k).reshape(m, k)[:, first:] @ floats(b, k * n).reshape(k, n)[first:]).ravel()

    def one_element_off(a, b, c, m, n, k):
        matmul(a, b, c, m, n, k)
        c[m // 2 * n + n // 2] *= 1.001

    computes = {"naive_x_cols": matmul, "wrong_result": lambda *args: matmul(*args, first=1),  # skips k = 0
                "one_element_off": one_element_off}

    def held(arg):
        if isinstance(arg, np.void):   # a tensor map: the stand-in's (_stand_in_tma), or 128 zero bytes
            words = np.frombuffer(arg.tobytes(), dtype=np.int64)
            return {"map": words[:6].tolist()} if words.any() else {"map": None}
        if isinstance(arg, DeviceAllocation):
            data = memory[arg.address]
            return {"bytes": len(data), "sha": hashlib.sha256(data).hexdigest()[:16],
                    "all_nan": bool(np.isnan(data[:len(data) // 4 * 4].view(np.float32)).all())}
        return int(arg)

    class Function:
        def __init__(self, name, traced):
            self.name, self.traced = name, traced

        def set_attribute(self, attribute, value):
            pass

        def __call__(self, *args, block, grid, shared=0):
            with open(os.environ["STAND_IN_GPU_LOG"], "a") as log:
                log.write(json.dumps({"kernel": self.name, "traced": self.traced, "block": block, "grid": grid,
                                      "shared": shared, "args": [held(a) for a in args]}) + "\n")
            if self.name in computes:
                a, b, c, m, n, k = args
                computes[self.name](a, b, floats(c, int(m) * int(n)), int(m), int(n), int(k))

    class Module:
        def __init__(self, traced):
            self.traced, self.globals = traced, {}

        def get_function(self, name):
            return Function(name, self.traced)

        def get_global(self, name):
            # cuda/trace.cuh's globals are pointers and ints, but for trace_bases: a pointer per array.
            size = 8 * 16 if name == "trace_bases" else 8
            if name not in self.globals:
                self.globals[name] = DeviceAllocation(size)
            return self.globals[name], size

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

        def time_till(self, other):
            return 0.5   # milliseconds

    cuda.Error, cuda.MemoryError, cuda.Device, cuda.init = Error, MemoryError_, Device, init
    cuda.mem_alloc, cuda.to_device, cuda.memcpy_htod, cuda.memcpy_dtoh = mem_alloc, to_device, memcpy_htod, memcpy_dtoh
    cuda.memset_d32, cuda.memset_d16, cuda.Event, cuda.DeviceAllocation = memset_d32, memset_d16, Event, DeviceAllocation
    cuda.function_attribute = types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES=0)
    # The instrumented build's cubin holds the trace's globals by name.
    cuda.module_from_buffer = lambda data: Module(traced=b"trace_counts" in data)
    cuda.Context = types.SimpleNamespace(synchronize=lambda: None)
    cuda.device_attribute = types.SimpleNamespace(
        MULTIPROCESSOR_COUNT=0, CLOCK_RATE=0, MEMORY_CLOCK_RATE=0, GLOBAL_MEMORY_BUS_WIDTH=0, L2_CACHE_SIZE=0,
        MAX_SHARED_MEMORY_PER_BLOCK_OPTIN=0)
    cuda.mem_get_info = lambda: (1 << 30, 2 << 30)
    cuda.get_driver_version = lambda: 13000
    cuda.get_version = lambda: (13, 0, 0)
    return cuda


def _log(entry: dict) -> None:
    with open(os.environ["STAND_IN_GPU_LOG"], "a") as log:
        log.write(json.dumps(entry) + "\n")


class _StandInCublas:
    """libcublas as timing.Cublas calls it through ctypes (this machine may have none): version 13.0.1,
    and GEMMs that compute as cuBLAS does, column-major with the leading dimensions given, on the
    stand-in's device memory, in the element types given (cudaDataType: 0 float, 2 half, 14
    bfloat16); each GEMM is logged to $STAND_IN_GPU_LOG with its types and leading dimensions."""

    TYPES = {0: np.float32, 2: np.float16, 14: np.uint16}   # bfloat16: its 16 bits

    def __init__(self, cuda):
        self.cuda, self.math_mode = cuda, None

    def cublasCreate_v2(self, handle):
        return 0

    def cublasGetVersion_v2(self, handle, version):
        version._obj.value = 130001
        return 0

    def cublasSetMathMode(self, handle, mode):
        self.math_mode = mode
        return 0

    def cublasSgemm_v2(self, handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        return self._gemm("cublasSgemm_v2", (ta, tb, m, n, k), (a, 0, lda), (b, 0, ldb), (c, 0, ldc), None, None)

    def cublasGemmEx(self, handle, ta, tb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c, c_type, ldc,
                     compute, algo):
        return self._gemm("cublasGemmEx", (ta, tb, m, n, k), (a, a_type, lda), (b, b_type, ldb), (c, c_type, ldc),
                          compute, algo)

    def _read(self, pointer, cuda_type: int, rows: int, cols: int, ld: int) -> np.ndarray:
        """A column-major rows x cols matrix with leading dimension ld, as float32."""
        host = np.empty(cols * ld, dtype=self.TYPES[cuda_type])
        self.cuda.memcpy_dtoh(host, pointer.value)
        if cuda_type == 14:
            host = (host.astype(np.uint32) << 16).view(np.float32)
        return host.astype(np.float32).reshape(cols, ld)[:, :rows].T

    def _gemm(self, name, dims, a, b, c, compute, algo) -> int:
        ta, tb, m, n, k = dims
        _log({"kernel": name, "dims": [m, n, k], "transposes": [ta, tb], "types": [a[1], b[1], c[1]],
              "leading": [a[2], b[2], c[2]], "compute": compute, "algo": algo, "math_mode": self.math_mode})
        product = self._read(a[0], a[1], m, k, a[2]) @ self._read(b[0], b[1], k, n, b[2])
        self.cuda.memcpy_htod(c[0].value, np.ascontiguousarray(product.T, dtype=self.TYPES[c[1]]))
        return 0


def _stand_in_torch() -> types.ModuleType:
    """PyTorch as timing.TorchMm uses it: a tensor is a numpy array and the device it names; torch.mm
    computes in float32, stores in the output's type and is logged to $STAND_IN_GPU_LOG."""
    torch = types.ModuleType("torch")

    class Tensor:
        def __init__(self, array, device="cpu"):
            self.array, self.device = array, device

        def to(self, device, dtype):
            return Tensor(self.array.astype(dtype), device)

        def float(self):
            return Tensor(self.array.astype(np.float32), self.device)

        def cpu(self):
            return Tensor(self.array)

        def numpy(self):
            assert self.device == "cpu", "PyTorch makes no numpy array of a GPU tensor"
            return self.array

    def mm(a, b, out):
        _log({"kernel": "torch.mm", "types": [str(t.array.dtype) for t in (a, b, out)],
              "devices": [t.device for t in (a, b, out)]})
        out.array[:] = a.array.astype(np.float32) @ b.array.astype(np.float32)

    torch.float16, torch.mm, torch.from_numpy = np.float16, mm, Tensor
    torch.device = lambda kind, index: f"{kind}:{index}"
    torch.full = lambda shape, value, device, dtype: Tensor(np.full(shape, value, dtype=dtype), device)
    torch.cuda = types.SimpleNamespace(is_available=lambda: True, empty_cache=lambda: _log({"kernel": "empty_cache"}))
    return torch


def _stand_in_tma(gpu) -> None:
    """TMA's two calls into the driver, stood in: a tensor map is 128 bytes that begin with the
    buffer's address, its rows and columns, the box's columns and rows and the element size (held()
    reads them back); the parameters lie back to back, as PyCUDA packs them."""
    def encode(buf, rows, cols, box, element_bytes):
        words = np.zeros(16, dtype=np.int64)
        words[:6] = [int(buf), rows, cols, *box, element_bytes]
        return np.frombuffer(words.tobytes(), dtype="V128")[0]
    gpu._encode_tiled = encode
    gpu.param_layout = lambda cubin, name: []
    gpu.placed = lambda args, layout: args


def _serve(conn, works: bool, memory_works: bool = False, torch: bool = False) -> None:
    package = types.ModuleType("pycuda")
    package.driver = _fake_driver(works, memory_works)
    sys.modules["pycuda"], sys.modules["pycuda.driver"] = package, package.driver
    # PyTorch only where a test stands one in: None makes `import torch` fail, as where it is missing.
    sys.modules["torch"] = _stand_in_torch() if torch else None
    from engine.bench import timing
    from engine.devices import gpu, gpu_worker
    timing.cublas = functools.cache(lambda: timing.Cublas(_StandInCublas(package.driver)))
    _stand_in_tma(gpu)
    gpu_worker.serve(conn)


def serve_with_a_gpu(conn) -> None:       # worker targets: module-level, so a spawned process finds them
    _serve(conn, True)


def serve_with_a_working_gpu(conn) -> None:
    _serve(conn, True, memory_works=True)


def serve_with_a_working_gpu_and_pytorch(conn) -> None:
    _serve(conn, True, memory_works=True, torch=True)


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
    assert worker.call("cublas_version", None, 10) == 130001   # for the provenance of every % of cuBLAS
    assert "driver_release" in info   # the driver's own version, where NVML answers
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
    with pytest.raises(EngineError, match="no GPU"):
        worker.call("cublas_version", None, 10)
    assert worker.alive()


def _launches(log: Path) -> list[dict]:
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return [json.loads(line) for line in lines]


@pytest.fixture
def launch_log(tmp_path, monkeypatch):
    log = tmp_path / "launches.jsonl"
    monkeypatch.setenv("STAND_IN_GPU_LOG", str(log))   # before the worker is spawned: it inherits it
    return log


def _trace(worker, plan):
    run = worker.call("execute", plan, 120)
    for rl in run.launches:
        if rl is not None:
            rl.records.take()   # frees the shared-memory block the worker handed over
    return run


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu], indirect=True)
def test_trace_and_timing_launch_the_same_arguments_on_the_same_nan_filled_outputs(launch_log, worker):
    p = make_problem(40, 24, 8)
    run = _trace(worker, make_plan("naive_x_cols", p))
    traced = _launches(launch_log)
    out = worker.call("bench", {"kernel": "naive_x_cols", "problem": p, "warmup": 2, "reps": 3}, 120)
    timed = _launches(launch_log)
    assert run.device == "Stand-in GPU" and len(run.launches) == 1
    assert [t["traced"] for t in traced] == [True, True]        # the count pass and the write pass
    assert {t["traced"] for t in timed} == {False} and len(timed) > 2 + 3
    first_trace, first_timing = traced[0], timed[0]
    # One argument list from the kernel's signature: A and B as uploaded, C all NaN, then M, N, K.
    assert first_trace["args"] == first_timing["args"]
    a, b, c, *ints = first_timing["args"]
    assert ints == [40, 24, 8] and c["all_nan"] and c["bytes"] == 4 * 40 * 24
    assert not a["all_nan"] and a["bytes"] == 4 * 40 * 8 and b["bytes"] == 4 * 8 * 24
    assert first_trace["block"] == first_timing["block"] == [16, 16, 1]
    # The registry's grid for timing; the trace runs the chosen blocks in a row (its block map).
    assert first_timing["grid"] == [2, 3] and first_trace["grid"] == [6, 1]
    assert out["correct"] and out["rel_error"] < 1e-6 and len(out["times_ms"]) == 3


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu], indirect=True)
def test_timing_reports_a_wrong_kernel_as_wrong_and_never_a_time(launch_log, worker):
    p = make_problem(40, 24, 8)
    wrong = str(Path(__file__).parent / "cuda" / "wrong_result.cu")
    out = worker.call("bench", {"kernel": "naive_x_cols", "problem": p, "warmup": 2, "reps": 5,
                                "source_override": wrong}, 120)
    assert not out["correct"] and out["times_ms"] == [] and out["rel_error"] > 1e-2
    assert [t["kernel"] for t in _launches(launch_log)] == ["wrong_result"] * 2   # the warm-up, nothing timed
    # A kernel that writes nothing leaves C as NaN: wrong, never fast.
    out = worker.call("bench", {"kernel": "tiled_guarded", "problem": p, "warmup": 1, "reps": 5}, 120)
    assert not out["correct"] and out["times_ms"] == [] and np.isnan(out["rel_error"])


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu], indirect=True)
def test_timing_reports_one_wrong_element_as_wrong_though_the_whole_is_within_tolerance(launch_log, worker, tmp_path):
    """One element of 960 off by 0.1%: C's relative error (about 4e-5) is under FP32's 1e-4, and the gate
    passed it before it looked element by element; mma_tma's race garbled a few hundred of 16 million
    elements that way (its relative error 1e-4, under FP16's 5e-3)."""
    p = make_problem(40, 24, 8)
    # naive_x_cols with its middle element of C 0.1% off (the stand-in's one_element_off computes the same).
    text = (Path(__file__).parents[1] / "cuda" / "naive_x_cols.cu").read_text()
    store = "        STG(C, row * N + col, sum);"
    off = tmp_path / "one_element_off.cu"
    off.write_text(text.replace("naive_x_cols(", "one_element_off(")
                   .replace(store, "        if (row == M / 2 && col == N / 2) sum *= 1.001f;\n" + store))
    off = str(off)
    out = worker.call("bench", {"kernel": "naive_x_cols", "problem": p, "warmup": 1, "reps": 5,
                                "source_override": off}, 120)
    assert out["rel_error"] < out["tolerance"] < out["worst_error"]
    assert not out["correct"] and out["times_ms"] == []
    good = worker.call("bench", {"kernel": "naive_x_cols", "problem": p, "warmup": 1, "reps": 2}, 120)
    assert good["correct"] and good["worst_error"] < 1e-6


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu], indirect=True)
def test_every_timed_sample_is_queued_behind_a_hold_kernel(launch_log, worker):
    """The GPU spins in `hold` while the host queues a sample's launches, so short launches run back to
    back (a batch of cuBLAS calls measured 95-136 TFLOP/s without it, 141 with)."""
    p = make_problem(40, 24, 8)
    out = worker.call("bench", {"kernel": "naive_x_cols", "problem": p, "warmup": 2, "reps": 3}, 120)
    launches = _launches(launch_log)
    names = [t["kernel"] for t in launches]
    # Warm-up; calibration (1 launch, then 10: the stand-in's events say 0.5 ms); 3 samples of 20,
    # each after its hold (and again, with the hold doubled, if the host was slower than the hold:
    # on a loaded machine the stand-in's host-side launches can be).
    inner = out["launches_per_sample"]
    assert inner == 20 and names[:2] == ["naive_x_cols"] * 2 and names[2] == "hold"
    batches = "|".join(names[3:]).split("|hold|")
    assert [b.count("naive_x_cols") for b in batches] == [1, 10] + [inner] * (3 + out["retaken_samples"])
    holds = [t["args"][0] for t in launches if t["kernel"] == "hold"]
    assert holds[:2] == [2_000_000] * 2                       # calibration: 2 ms, in nanoseconds
    assert holds[2:] == sorted(holds[2:]) and holds[-1] == int(out["hold_ms"] * 1e6) and out["hold_ms"] >= 1.0


# cuBLAS as each entry calls it for row-major C = A B (C^T = B^T A^T column-major, so cuBLAS's m is N
# and B comes first): the function, A's and B's type and C's (cudaDataType), the compute type and the
# math mode. 0 float, 2 half, 14 bfloat16; 68 CUBLAS_COMPUTE_32F; 3 TF32 tensor-op math.
CUBLAS_CALLS = {"cublas_sgemm": ("cublasSgemm_v2", [0, 0, 0], None, 0),
                "cublas_sgemm_tf32": ("cublasSgemm_v2", [0, 0, 0], None, 3),
                "cublas_gemm_fp16": ("cublasGemmEx", [2, 2, 0], 68, 0),
                "cublas_gemm_bf16": ("cublasGemmEx", [14, 14, 0], 68, 0)}


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu], indirect=True)
def test_each_cublas_entry_calls_its_function_with_its_types_on_the_same_row_major_buffers(launch_log, worker):
    p = make_problem(40, 24, 8)   # M, N, K
    for kernel, (function, types_, compute, math_mode) in CUBLAS_CALLS.items():
        out = worker.call("bench", {"kernel": kernel, "problem": p, "warmup": 1, "reps": 2}, 120)
        calls = [t for t in _launches(launch_log) if t["kernel"].startswith("cublas")]
        assert {t["kernel"] for t in calls} == {function}, kernel
        first = calls[0]
        assert first["dims"] == [24, 40, 8] and first["transposes"] == [0, 0]
        assert first["leading"] == [24, 8, 24]   # B (K x N) first, ld N; A (M x K), ld K; C, ld N
        assert first["types"] == types_ and first["compute"] == compute and first["math_mode"] == math_mode
        if function == "cublasGemmEx":
            assert first["algo"] == -1   # CUBLAS_GEMM_DEFAULT
        # The stand-in computes what cuBLAS would from what was uploaded: half inputs read as half
        assert out["correct"] and out["times_ms"], kernel


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu_and_pytorch], indirect=True)
def test_torch_mm_is_timed_on_half_tensors_of_the_same_inputs_and_checked_like_the_rest(launch_log, worker):
    p = make_problem(40, 24, 8)
    out = worker.call("bench", {"kernel": "torch_mm_fp16", "problem": p, "warmup": 2, "reps": 3}, 120)
    logged = _launches(launch_log)
    mms = [t for t in logged if t["kernel"] == "torch.mm"]
    assert mms[0]["types"] == ["float16"] * 3 and mms[0]["devices"] == ["cuda:0"] * 3
    assert out["correct"] and 1e-6 < out["rel_error"] < 5e-3 and len(out["times_ms"]) == 3
    names = [t["kernel"] for t in logged]
    assert names[:2] == ["torch.mm"] * 2 and names[2] == "hold"   # warm-up, then held samples like every row's
    assert names[-1] == "empty_cache"   # PyTorch's cached memory given back after the point


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu], indirect=True)
def test_torch_mm_without_pytorch_is_one_line(worker):
    with pytest.raises(EngineError, match="^PyTorch is not installed on the GPU machine$"):
        worker.call("bench", {"kernel": "torch_mm_fp16", "problem": make_problem(40, 24, 8)}, 120)
    assert worker.alive()


@pytest.mark.parametrize("worker", [serve_with_a_working_gpu], indirect=True)
@pytest.mark.parametrize("kernel", ["wgmma_epilogue", "mma_tma"])
def test_a_tma_rung_pads_a_and_b_first_only_where_tma_cannot_copy_their_rows(launch_log, kernel, worker):
    """TMA copies rows whose byte stride is a multiple of 16. Where K or N is not a multiple of 8 a
    run first launches pad_ab, and the rung's maps of A and B read its padded copies (AP: M x 64, BP:
    K x 64 here, the rows rounded up to 64 halves) with the rung's boxes; elsewhere the rung alone,
    its maps over A and B. wgmma_epilogue's map of C: none where N is not a multiple of 4 (its warps
    store C from the staged pieces there), C itself where it is."""
    def first_run(m, n, k):
        worker.call("bench", {"kernel": kernel, "problem": make_problem(m, n, k), "warmup": 1, "reps": 1}, 300)
        launches = _launches(launch_log)
        kernels = [t["kernel"] for t in launches]
        return launches[:kernels.index(kernel) + 1]   # the warm-up's launches, up to the rung's

    pad, rung = first_run(17, 33, 9)
    assert (pad["kernel"], rung["kernel"]) == ("pad_ab", kernel)
    a, b, ap, bp = pad["args"][:4]
    assert (a["bytes"], b["bytes"], ap["bytes"], bp["bytes"]) == (2 * 17 * 9, 2 * 9 * 33, 2 * 17 * 64, 2 * 9 * 64)
    maps = [arg["map"] for arg in rung["args"] if isinstance(arg, dict) and "map" in arg]
    # (address, rows, columns, box columns, box rows, bytes an element): the padded copies' shapes,
    # whole rows of 64 halves, which only AP and BP have.
    assert maps[0][1:] == [17, 64, 64, 128, 2] and maps[1][1:] == [9, 64, 64, 64, 2]
    if kernel == "wgmma_epilogue":
        assert maps[2] is None   # N = 33: C's rows are not 16-byte multiples, no map
    [alone] = first_run(64, 64, 64)
    assert alone["kernel"] == kernel
    maps = [arg["map"] for arg in alone["args"] if isinstance(arg, dict) and "map" in arg]
    assert maps[0][1:] == [64, 64, 64, 128, 2] and maps[1][1:] == [64, 64, 64, 64, 2]
    if kernel == "wgmma_epilogue":
        assert maps[2][1:] == [64, 64, 32, 64, 4]


def test_a_sample_the_host_queued_slower_than_the_hold_is_taken_again_with_the_hold_doubled(monkeypatch):
    """timing.held_samples (the engine's benchmark and source_ab.py): a starved sample is taken again,
    twice at most, each time behind a hold twice as long; the third try is kept and counted."""
    package = types.ModuleType("pycuda")
    package.driver = _fake_driver(works=False)
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", package.driver)
    # The engine's modules imported over the stand-in driver are put back as they were after the test,
    # in sys.modules and in their packages, so no later test finds them bound to it.
    import engine.bench
    import engine.devices
    places = ((engine.bench, "timing"), (engine.devices, "gpu"))
    before = [(pkg, name, sys.modules.pop(f"{pkg.__name__}.{name}", None), pkg.__dict__.pop(name, None)) for pkg, name in places]
    try:
        timing = importlib.import_module("engine.bench.timing")
        starved = iter([True, False, True, True, True, False])   # sample 0: once; sample 1: three times
        timer = types.SimpleNamespace(hold_ms=2.0, ms=[], starved=False)
        holds = []

        def sample(r):
            holds.append((r, timer.hold_ms))
            timer.starved = next(starved)
            timer.ms.append(float(len(timer.ms)))

        times, retaken, kept = timing.held_samples(timer, sample, 3)
        assert holds == [(0, 2.0), (0, 4.0), (1, 4.0), (1, 8.0), (1, 16.0), (2, 16.0)]
        assert (times, retaken, kept) == ([1.0, 4.0, 5.0], 3, 1)
        assert timing.hold_for(0.1) == timing.CALIBRATION_HOLD_MS / 2 and timing.hold_for(3.0) == 6.0
        assert timing.hold_for(1e6) == timing.MAX_HOLD_MS
    finally:
        for pkg, name, module, attribute in before:
            full = f"{pkg.__name__}.{name}"
            sys.modules.pop(full, None)
            pkg.__dict__.pop(name, None)
            if module is not None:
                sys.modules[full] = module
            if attribute is not None:
                setattr(pkg, name, attribute)
