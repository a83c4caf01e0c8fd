"""The CPU trace source: the kernel's own .cu source, compiled for the host with cuda/cpu_shim.h,
runs block by block with one fiber per CUDA thread and records through the same macros as on the GPU."""
from __future__ import annotations

import ctypes
import platform
import threading
import time

import numpy as np

from . import build, sources
from .errors import EngineError
from .plan import LaunchPlan
from .trace import RAW_DTYPE

_LIBS: dict[str, ctypes.CDLL] = {}
_LIBS_LOCK = threading.Lock()
_u32p = np.ctypeslib.ndpointer(np.uint32, flags="C")


def _library(file: str, tile: int, pad: int):
    path = str(build.build_cpu_library(file, tile, pad))
    with _LIBS_LOCK:
        if path not in _LIBS:
            lib = ctypes.CDLL(path)
            fn = lib.cpu_trace_run
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, _u32p, ctypes.c_uint,
                           _u32p, _u32p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            _LIBS[path] = lib
        return _LIBS[path].cpu_trace_run


def device_name() -> str:
    compiler = build.host_compiler() or "no C++ compiler"
    return f"CPU ({platform.machine()}, {compiler.rsplit('/', 1)[-1]})"


class CpuDevice:
    """The device interface of engine.execute, on the host."""

    def __init__(self):
        self.name = device_name()
        self.seconds = {"kernel": 0.0}

    def upload(self, inputs, shapes, ints):
        self.shapes, self.ints = shapes, ints
        self.buffers = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in inputs.items()}

    def _buffer(self, name: str) -> np.ndarray:
        if name not in self.buffers:  # outputs start as NaN, so an element nothing wrote cannot pass
            self.buffers[name] = np.full(self.shapes[name], np.nan, dtype=np.float32)
        return self.buffers[name]

    def run(self, lp: LaunchPlan, offsets, total):
        fn = _library(lp.file, lp.tile, lp.pad)
        ptrs = [self._buffer(n).ctypes.data for t, n in lp.params if "*" in t]
        ints = [self.ints[n] for t, n in lp.params if "*" not in t]
        ptr_arr = (ctypes.c_void_p * 8)(*ptrs)
        int_arr = (ctypes.c_int * 8)(*ints)
        names = sources.trace_arrays()
        bounds = np.zeros(len(names), dtype=np.uint64)
        for name in ("A", "B", "C", "BT"):
            rows, cols = self.shapes[name]
            bounds[names.index(name)] = rows * cols
        slots = len(lp.blocks) * lp.block[0] * lp.block[1]
        counts = np.zeros(slots, dtype=np.uint32)
        epochs = np.zeros(slots, dtype=np.uint32)
        records = np.empty(total, dtype=RAW_DTYPE) if offsets is not None else None
        ordinals = np.zeros(slots * sources.SITE_SLOTS, dtype=np.uint32) if offsets is not None else None
        blocks = np.ascontiguousarray(lp.blocks, dtype=np.uint32)
        start = time.perf_counter()
        rc = fn(lp.block[0], lp.block[1], lp.grid[0], lp.grid[1], blocks.ravel(), len(blocks), counts, epochs,
                offsets.ctypes.data if offsets is not None else None,
                records.ctypes.data if records is not None else None,
                ordinals.ctypes.data if ordinals is not None else None, ptr_arr, int_arr, bounds.ctypes.data)
        self.seconds["kernel"] += time.perf_counter() - start
        if rc < 0:
            raise EngineError(f"{lp.kernel}: not enough host memory for {lp.block[0] * lp.block[1]} CPU threads")
        if rc > 0:
            raise EngineError(f"{lp.kernel} accessed {names[rc - 1]} outside its bounds: the kernel is wrong "
                              "for this size")
        return records if offsets is not None else counts

    def read(self, name: str, index: np.ndarray) -> np.ndarray:
        return self.buffers[name].ravel()[index]
