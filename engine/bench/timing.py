"""The benchmark harness, run inside the GPU worker (it receives PyCUDA's driver module).

Timing: CUDA events around each repetition (a batch of back-to-back launches for short kernels),
after warm-up launches; optionally an L2 flush (a memset over twice the L2) before each
repetition, outside the timed region. Correctness gate:
the result is checked against float64 numpy (NaN-aware, outputs poisoned with NaN first) before
any time is reported; a wrong kernel comes back as wrong, never as fast.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import sysconfig

import numpy as np

from engine.devices import gpu
from engine.kernels import build, reference, registry, sources
from engine.kernels.problem import Problem, make_inputs
from engine.tracing.plan import global_shapes

NAN_BITS = 0x7FC00000
CHECK_ROWS = 256   # rows of C checked against float64 when C is large (all of C is checked for NaN)
BATCH_S = 1e-3     # least GPU time per timed sample


class Cublas:
    """cuBLAS through ctypes, in the worker's current context; the handle is made once."""

    DEFAULT_MATH, TF32_TENSOR_OP_MATH = 0, 3

    def __init__(self):
        names = [ctypes.util.find_library("cublas"), *sorted(glob.glob("/usr/local/cuda/lib64/libcublas.so*")),
                 *sorted(glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/*/lib/libcublas.so*"))]
        for name in filter(None, names):
            try:
                self.lib = ctypes.CDLL(name)
                self.path = name
                break
            except OSError:
                continue
        else:
            raise RuntimeError("libcublas was not found")
        self.handle = ctypes.c_void_p()
        self._check(self.lib.cublasCreate_v2(ctypes.byref(self.handle)), "cublasCreate")
        version = ctypes.c_int()
        self.lib.cublasGetVersion_v2(self.handle, ctypes.byref(version))
        self.version = version.value

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status:
            raise RuntimeError(f"{what} returned cuBLAS status {status}")

    def sgemm(self, a, b, c, m: int, n: int, k: int, tf32: bool) -> None:
        """Row-major C = A B, computed as column-major C^T = B^T A^T: no copies, no transposes."""
        self._check(self.lib.cublasSetMathMode(self.handle, self.TF32_TENSOR_OP_MATH if tf32 else self.DEFAULT_MATH),
                    "cublasSetMathMode")
        alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        p = ctypes.c_void_p
        self._check(self.lib.cublasSgemm_v2(self.handle, 0, 0, n, m, k, ctypes.byref(alpha), p(int(b)), n,
                                            p(int(a)), k, ctypes.byref(beta), p(int(c)), n), "cublasSgemm")


def telemetry(state: dict) -> dict:
    """SM clock, power and temperature from NVML (nvidia-ml-py), so throttling shows in the results."""
    if "nvml" not in state:
        try:
            import pynvml  # noqa: PLC0415 - optional, GPU machines only
            pynvml.nvmlInit()
            state["nvml"] = (pynvml, pynvml.nvmlDeviceGetHandleByIndex(0))
        except Exception:
            state["nvml"] = None
    if not state["nvml"]:
        return {}
    nv, h = state["nvml"]
    try:
        return {"sm_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                "power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "temperature_c": nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)}
    except Exception:
        return {}


def run_bench(cuda, state: dict, kernel: str, problem: Problem, warmup: int = 2, reps: int = 20,
              flush_l2: bool = False, source_override: str | None = None, seconds_per_point: float = 0.0) -> dict:
    """source_override replaces the source of the kernel's last launch (tests: a deliberately wrong one)."""
    spec = registry.get(kernel)
    problem = registry.bind(spec, problem)
    a, b = make_inputs(problem)
    shapes = global_shapes(problem)
    bufs = {"A": cuda.to_device(a), "B": cuda.to_device(b)}
    uses_bt = any(n == "BT" for launch in spec.launches for _, n in sources.load(launch.file).params)
    for name in ("C", "BT") if uses_bt else ("C",):
        rows, cols = shapes[name]
        bufs[name] = cuda.mem_alloc(4 * rows * cols)
        cuda.memset_d32(bufs[name], NAN_BITS, rows * cols)
    ints = {"M": problem.m, "N": problem.n, "K": problem.k}
    flush = None
    try:
        if spec.kind is registry.Kind.CUBLAS:
            if "cublas" not in state:
                state["cublas"] = Cublas()
            blas = state["cublas"]

            def launch():
                blas.sgemm(bufs["A"], bufs["B"], bufs["C"], problem.m, problem.n, problem.k,
                           spec.compute is registry.Precision.TF32)
        else:
            calls = []
            for i, launch_spec in enumerate(spec.launches):
                last = i == len(spec.launches) - 1
                src = sources.load(source_override if source_override and last else launch_spec.file)
                module = gpu.load_module(state.setdefault("modules", {}),
                                                build.build_cubin(str(src.path), problem.params, traced=False))
                func = module.get_function(src.name)
                args = [bufs[n] if "*" in t else np.int32(ints[n]) for t, n in src.params]
                gx, gy = launch_spec.grid(problem)
                bx, by = launch_spec.block(problem)
                calls.append((func, args, (bx, by, 1), (gx, gy)))

            def launch():
                for func, args, block, grid in calls:
                    func(*args, block=block, grid=grid)
        if flush_l2:
            flush_words = 2 * state["info"]["l2_bytes"] // 4
            flush = cuda.mem_alloc(4 * flush_words)
        start, end = cuda.Event(), cuda.Event()
        for _ in range(warmup):
            launch()
        cuda.Context.synchronize()
        # Correctness gate on the result of the warm-up (or of a first run).
        if not warmup:
            launch()
            cuda.Context.synchronize()
        c = np.empty(shapes["C"], dtype=np.float32)
        cuda.memcpy_dtoh(c, bufs["C"])
        rows = np.arange(problem.m) if problem.m <= CHECK_ROWS else \
            np.random.default_rng(1).choice(problem.m, CHECK_ROWS, replace=False)
        expected = a[rows].astype(np.float64) @ b.astype(np.float64)
        err = reference.relative_error(c[rows], expected)
        if not np.isfinite(c).all():
            err = float("nan")
        ok = bool(np.isfinite(err) and err <= spec.tolerance)
        times, inner = [], 1
        if ok:
            # Calibrate after warm-up (the first calls may load modules lazily): one launch, and ten
            # more when one is short, so the estimate is not the host's launch latency.
            per_launch = 0.0
            if warmup:
                for count in (1, 10):
                    start.record()
                    for _ in range(count):
                        launch()
                    end.record()
                    end.synchronize()
                    per_launch = start.time_till(end) / 1e3 / count
                    if per_launch > BATCH_S:
                        break
            if per_launch and seconds_per_point:   # slow points: fewer repetitions, never under 5
                reps = max(min(reps, 5), min(reps, int(seconds_per_point / max(per_launch, 1e-9))))
            # Short kernels: time a batch of back-to-back launches per sample (at least BATCH_S of GPU
            # work), so the host's launch latency is not timed while the GPU waits. With an L2 flush,
            # each sample is one launch queued behind its flush, which keeps the GPU busy instead.
            inner = 1 if flush_l2 or not per_launch else max(1, min(1000, int(BATCH_S / per_launch)))
            for r in range(reps):
                if flush is not None:
                    cuda.memset_d32(flush, r, flush_words)
                start.record()
                for _ in range(inner):
                    launch()
                end.record()
                end.synchronize()
                times.append(start.time_till(end) / inner)
        return {"kernel": kernel, "times_ms": times, "launches_per_sample": inner, "rel_error": err, "correct": ok,
                "tolerance": spec.tolerance, "checked_rows": int(len(rows)), "telemetry": telemetry(state)}
    finally:
        for buf in bufs.values():
            buf.free()
        if flush is not None:
            flush.free()
