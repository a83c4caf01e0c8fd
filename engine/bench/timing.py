"""The benchmark harness, run inside the GPU worker (it imports PyCUDA).

Launches go through the launcher tracing uses (engine/devices/gpu.py: the same buffers, NaN-filled
outputs, arguments and geometry), of the plain build. Timing: a HeldEventTimer observes each
repetition (a batch of back-to-back launches for short kernels, queued while the GPU spins in a
hold kernel, so the host's submission time is never timed), after warm-up launches; optionally
an L2 flush (a memset over twice the L2) before each repetition, outside the timed region.
Correctness gate: the result is checked against float64 numpy (NaN-aware: outputs start as NaN)
before any time is reported, the relative error of the checked rows and each of their elements
within the kernel's tolerance; a wrong kernel comes back as wrong, never as fast.

Library entries: cuBLAS through ctypes on the launcher's buffers; torch.mm (Kind.TORCH) on PyTorch's
own tensors made from the same host inputs, where the GPU machine has PyTorch (imported here only,
when such a row is timed). Both run in the worker's context, the device's primary one, on its
default stream, so the same events time them.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import sysconfig

import numpy as np
import pycuda.driver as cuda

from engine.devices import gpu
from engine.errors import EngineError
from engine.kernels import reference, registry
from engine.kernels.problem import Problem, make_inputs
from engine.tracing.plan import global_shapes, size_arguments

CHECK_ROWS = 256   # rows of C checked against float64 when C is large (all of C is checked for NaN)
BATCH_S = 1e-3     # least GPU time per timed sample
CALIBRATION_HOLD_MS = 2.0   # the GPU's hold before calibration runs (gpu.HeldEventTimer)
MAX_HOLD_MS = 200.0


class Cublas:
    """cuBLAS through ctypes, in the worker's current context (one per worker: cublas())."""

    DEFAULT_MATH, TF32_TENSOR_OP_MATH = 0, 3
    # cudaDataType (library_types.h) of A and B by the entry's input precision; C is CUDA_R_32F.
    DATA_TYPE = {registry.Precision.FP16: 2, registry.Precision.BF16: 14}   # CUDA_R_16F, CUDA_R_16BF
    R_32F, COMPUTE_32F, GEMM_DEFAULT = 0, 68, -1   # CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT

    def __init__(self, lib=None):
        """lib: libcublas loaded already (tests: a stand-in); by default the first one found."""
        self.lib, self.path = (lib, "given") if lib is not None else self._load()
        self.handle = ctypes.c_void_p()
        self._check(self.lib.cublasCreate_v2(ctypes.byref(self.handle)), "cublasCreate")
        version = ctypes.c_int()
        self.lib.cublasGetVersion_v2(self.handle, ctypes.byref(version))
        self.version = version.value

    @staticmethod
    def _load() -> tuple[ctypes.CDLL, str]:
        names = [ctypes.util.find_library("cublas"), *sorted(glob.glob("/usr/local/cuda/lib64/libcublas.so*")),
                 *sorted(glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/*/lib/libcublas.so*"))]
        for name in filter(None, names):
            try:
                return ctypes.CDLL(name), name
            except OSError:
                continue
        raise RuntimeError("libcublas was not found")

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

    def gemm_ex(self, a, b, c, m: int, n: int, k: int, inputs: registry.Precision) -> None:
        """Row-major C (float32) = A B with A and B in `inputs` (FP16 or BF16), summed in FP32 on tensor
        cores: cublasGemmEx, with the same swap as sgemm (column-major C^T = B^T A^T)."""
        # The handle's math mode outlives a call: a TF32 sgemm before must not change this one.
        self._check(self.lib.cublasSetMathMode(self.handle, self.DEFAULT_MATH), "cublasSetMathMode")
        alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)   # float scalars: CUBLAS_COMPUTE_32F's
        p, t = ctypes.c_void_p, self.DATA_TYPE[inputs]
        self._check(self.lib.cublasGemmEx(self.handle, 0, 0, n, m, k, ctypes.byref(alpha), p(int(b)), t, n,
                                          p(int(a)), t, k, ctypes.byref(beta), p(int(c)), self.R_32F, n,
                                          self.COMPUTE_32F, self.GEMM_DEFAULT), "cublasGemmEx")


@functools.cache
def cublas() -> Cublas:
    return Cublas()


@functools.cache
def _nvml():
    """pynvml (nvidia-ml-py) and the device's handle, or None where there is no NVML."""
    try:
        import pynvml  # noqa: PLC0415 - optional, GPU machines only
        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:
        return None


def telemetry() -> dict:
    """SM clock, power and temperature from NVML, so throttling shows in the results."""
    if not _nvml():
        return {}
    nv, h = _nvml()
    try:
        return {"sm_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                "power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "temperature_c": nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)}
    except Exception:
        return {}


# PyTorch's element type of A and B by the entry's input precision.
TORCH_TYPES = {registry.Precision.FP16: "float16", registry.Precision.BF16: "bfloat16"}
TORCH_DEVICE = 0   # the worker's device (gpu_worker: cuda.Device(0))


def _torch():
    """PyTorch, imported only here, in the GPU worker, when a torch row is timed; one line where it is
    missing (it is never a requirement)."""
    try:
        import torch  # noqa: PLC0415 - optional, GPU machines only
    except ImportError:
        raise EngineError("PyTorch is not installed on the GPU machine") from None
    if not torch.cuda.is_available():
        raise EngineError("PyTorch on the GPU machine was built without CUDA")
    return torch


class TorchMm:
    """torch.mm on PyTorch's own tensors, made from the same host inputs as every other row's (A and B
    rounded to the entry's input type), on the worker's device; C starts as NaN like the launcher's
    outputs. Calling it runs one torch.mm into C."""

    def __init__(self, spec: registry.KernelSpec, problem: Problem, a: np.ndarray, b: np.ndarray):
        self.torch = torch = _torch()
        dtype, device = getattr(torch, TORCH_TYPES[spec.inputs]), torch.device("cuda", TORCH_DEVICE)
        self.a, self.b = (torch.from_numpy(x).to(device=device, dtype=dtype) for x in (a, b))
        self.c = torch.full((problem.m, problem.n), float("nan"), device=device, dtype=dtype)

    def __call__(self) -> None:
        self.torch.mm(self.a, self.b, out=self.c)

    def result(self) -> np.ndarray:
        """C on the host as float32 (torch.mm on half tensors returns half), for the same check."""
        return self.c.float().cpu().numpy()

    def free(self) -> None:
        """Gives PyTorch's cached memory back, so the free memory the next point is checked against is true."""
        del self.a, self.b, self.c
        self.torch.cuda.empty_cache()


def hold_for(host_ms: float) -> float:
    """The hold (ms) before a sample the host takes host_ms to queue: twice that, so the GPU never waits
    for the host between the launches it times, within CALIBRATION_HOLD_MS / 2 .. MAX_HOLD_MS."""
    return min(MAX_HOLD_MS, max(CALIBRATION_HOLD_MS / 2, 2 * host_ms))


def held_samples(timer: "gpu.HeldEventTimer", run_sample, reps: int) -> tuple[list[float], int, int]:
    """reps samples, run_sample(r) each, behind timer's hold: a sample the host was slower to queue
    than the hold is taken again, twice at most, the hold doubled each time (the third try is kept, and
    counted). Each sample's ms, how many were retaken, how many kept short of their hold."""
    times, retaken, starved_kept = [], 0, 0
    for r in range(reps):
        for attempt in range(3):
            run_sample(r)
            if not timer.starved:
                break
            if attempt < 2:
                retaken += 1
                timer.hold_ms = min(MAX_HOLD_MS, 2 * timer.hold_ms)
        else:
            starved_kept += 1
        times.append(timer.ms[-1])
    return times, retaken, starved_kept


def _calls(launcher: gpu.Launcher, spec: registry.KernelSpec, problem: Problem, source_override: str | None) -> list:
    """What one run of the kernel launches: its launches in order (plain build, registry geometry), or
    the cuBLAS call on the same buffers (SGEMM for FP32 inputs, GemmEx for half-precision ones)."""
    if spec.kind is registry.Kind.CUBLAS:
        a, b, c = (launcher.buffer(name) for name in ("A", "B", "C"))
        m, n, k = problem.m, problem.n, problem.k
        if spec.inputs in Cublas.DATA_TYPE:
            return [lambda: cublas().gemm_ex(a, b, c, m, n, k, spec.inputs)]
        tf32 = spec.compute is registry.Precision.TF32
        return [lambda: cublas().sgemm(a, b, c, m, n, k, tf32)]
    return launcher.launches(spec, problem, source_override)


def run_bench(modules: dict, info: dict, kernel: str | registry.KernelSpec, problem: Problem, warmup: int = 2,
              reps: int = 20, flush_l2: bool = False, source_override: str | None = None,
              seconds_per_point: float = 0.0) -> dict:
    """modules: the worker's loaded cubins; info: its device's (the L2 size). kernel: a catalog name, or
    an entry outside it (a Playground kernel, timed in its sandbox). source_override replaces the
    source of the kernel's last launch (tests: a deliberately wrong one)."""
    spec = kernel if isinstance(kernel, registry.KernelSpec) else registry.get(kernel)
    kernel = spec.name
    problem = registry.bind(spec, problem)
    a, b = make_inputs(problem)
    launcher = gpu.Launcher(modules, global_shapes(problem), size_arguments(problem), spec.inputs)
    flush = mm = None
    try:
        if spec.kind is registry.Kind.TORCH:
            mm = TorchMm(spec, problem, a, b)
            calls, result = [mm], mm.result
        else:
            launcher.upload({"A": a, "B": b})
            calls, result = _calls(launcher, spec, problem, source_override), lambda: launcher.download("C")
        if flush_l2:
            flush_words = 2 * info["l2_bytes"] // 4
            flush = cuda.mem_alloc(4 * flush_words)
        # Correctness gate on the result of the warm-up (or of a first run).
        launcher.run(calls, max(warmup, 1))
        cuda.Context.synchronize()
        c = result()
        rows = np.arange(problem.m) if problem.m <= CHECK_ROWS else \
            np.random.default_rng(1).choice(problem.m, CHECK_ROWS, replace=False)
        expected = a[rows].astype(np.float64) @ b.astype(np.float64)
        err = reference.relative_error(c[rows], expected)
        if not np.isfinite(c).all():
            err = float("nan")
        # And each element of the checked rows: a few hundred wrong elements of 16 million hardly move
        # the whole's relative error (mma_tma's race on its ring, before it was mended, at 4096 x 4096
        # x 512: 1e-4 against rounding's 2e-5, both under FP16's 5e-3), but each is off by 1% or more
        # of C's largest.
        worst = reference.worst_error(c[rows], expected)
        ok = bool(np.isfinite(err) and err <= spec.tolerance and worst <= spec.tolerance)
        times, inner, hold_ms, retaken, starved_kept = [], 1, CALIBRATION_HOLD_MS, 0, 0
        if ok:
            timer = gpu.HeldEventTimer(modules, hold_ms)
            # Calibrate after warm-up (the first calls may load modules lazily): one launch, and ten
            # more when one is short, so the estimate is not the host's launch latency.
            per_launch = host_per_launch = 0.0
            if warmup:
                for count in (1, 10):
                    launcher.run(calls, count, [timer])
                    per_launch = timer.ms[-1] / 1e3 / count
                    host_per_launch = timer.host_ms[-1] / count
                    if per_launch > BATCH_S:
                        break
            if per_launch and seconds_per_point:   # slow points: fewer repetitions, never under 5
                reps = max(min(reps, 5), min(reps, int(seconds_per_point / max(per_launch, 1e-9))))
            # Short kernels: time a batch of back-to-back launches per sample (at least BATCH_S of GPU
            # work). The GPU holds (HeldEventTimer) for twice as long as the host took to queue that
            # many calls, so it never waits for the host between them. With an L2 flush, each
            # sample is one launch queued behind its flush.
            inner = 1 if flush_l2 or not per_launch else max(1, min(1000, int(BATCH_S / per_launch)))
            timer.hold_ms = hold_for(inner * host_per_launch)

            def sample(r: int) -> None:
                if flush is not None:
                    cuda.memset_d32(flush, r, flush_words)
                launcher.run(calls, inner, [timer])

            samples, retaken, starved_kept = held_samples(timer, sample, reps)
            times, hold_ms = [t / inner for t in samples], timer.hold_ms
        return {"kernel": kernel, "times_ms": times, "launches_per_sample": inner, "hold_ms": hold_ms,
                "retaken_samples": retaken, "starved_samples": starved_kept, "rel_error": err, "worst_error": worst, "correct": ok,
                "tolerance": spec.tolerance, "checked_rows": int(len(rows)), "telemetry": telemetry()}
    finally:
        launcher.free()
        if mm is not None:
            mm.free()
        if flush is not None:
            flush.free()
