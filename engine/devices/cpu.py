"""The CPU trace source: the kernel's own .cu source, compiled for the host with cuda/cpu_shim.h,
runs block by block with one fiber per CUDA thread and records through the same macros as on the GPU.

It runs in CPU trace worker processes (`serve`, started by engine/tracing/tracer.py), never in the app's:
a kernel library that faults, hangs or was damaged on disk takes one worker with it, not the server."""
from __future__ import annotations

import ctypes
import os
import platform
import threading
import time
from pathlib import Path

import numpy as np

from engine import parallel
from engine.devices import host_memory, shm, workers
from engine.devices.shm import SharedArray
from engine.errors import EngineError
from engine.kernels import build, cache, sources
from engine.kernels.registry import Precision
from engine.tracing.execute import execute
from engine.tracing.plan import LaunchPlan, array_dtype, to_storage
from engine.tracing.records import RAW_DTYPE

_LIBS: dict[Path, ctypes.CDLL] = {}
_PARALLEL_SLOTS = 4096          # below this many CUDA threads one host thread is quicker
_LIBS_LOCK = threading.Lock()
_u32p = np.ctypeslib.ndpointer(np.uint32, flags="C")


def _load(path: Path) -> ctypes.CDLL:
    """Loads the bytes the cache's digest vouches for, from a private in-memory copy: what is
    checked is what runs, and a cache file truncated or replaced later cannot pull pages out from
    under this process (a mapped file cut short is a bus error on its next call)."""
    data = cache.checked_bytes(path)
    if not hasattr(os, "memfd_create"):
        return ctypes.CDLL(str(path))
    # The descriptor stays open for the life of the process, like the library: dlopen takes a path
    # it has loaded before for that same library, and a closed descriptor's number (so its
    # /proc/self/fd path) would be handed to the next library.
    fd = os.memfd_create(path.name, os.MFD_CLOEXEC)
    with open(fd, "wb", closefd=False) as f:
        f.write(data)
    return ctypes.CDLL(f"/proc/self/fd/{fd}")


def _library(file: str, params):
    path = build.build_cpu_library(file, params)
    with _LIBS_LOCK:
        if path not in _LIBS:
            lib = _load(path)
            fn = lib.cpu_trace_run
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, _u32p, ctypes.c_uint,
                           _u32p, _u32p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, _u32p]
            _LIBS[path] = lib
        return _LIBS[path].cpu_trace_run


def device_name() -> str:
    compiler = build.host_compiler() or "no C++ compiler"
    return f"CPU ({platform.machine()}, {compiler.rsplit('/', 1)[-1]})"


class CpuDevice:
    """The device interface of engine.tracing.execute, on the host."""

    def __init__(self, shared_records: bool = False):
        self.name = device_name()
        self.seconds = {"kernel": 0.0}
        # In a worker, records are written straight into shared memory that the app maps as is:
        # a trace's records cross the process boundary without a copy on either side.
        self.shared_records = shared_records
        self.handles: dict[int, SharedArray] = {}

    def _records(self, total: int) -> np.ndarray:
        if self.shared_records and shm.fits(total * RAW_DTYPE.itemsize):
            handle = SharedArray((total,), RAW_DTYPE)
            self.handles[id(handle.array)] = handle
            return handle.array
        return np.empty(total, dtype=RAW_DTYPE)   # no room there: they go through the pipe

    def hand_over(self, run) -> None:
        """Swap each record array of an execute() result for its shared-memory handle."""
        for rl in run.launches:
            if rl is not None and id(rl.records) in self.handles:
                rl.records = self.handles.pop(id(rl.records))

    def discard(self) -> None:
        """Frees the blocks not handed over (an error came first)."""
        for handle in self.handles.values():
            handle.discard()
        self.handles.clear()

    def upload(self, inputs, shapes, ints, precision=Precision.FP32):
        self.shapes, self.ints, self.precision = shapes, ints, precision
        self.buffers = {k: to_storage(v, array_dtype(k, precision)) for k, v in inputs.items()}

    def _buffer(self, name: str) -> np.ndarray:
        if name not in self.buffers:
            # Zeros, not NaN: calloc'd pages cost memory only where a kernel writes, so a one-block
            # trace of a big product touches one block's share of C. The check reads back only the
            # elements the trace recorded as stored, and the inputs are never 0, so an output the
            # kernel got wrong still shows.
            self.buffers[name] = np.zeros(self.shapes[name], dtype=array_dtype(name, self.precision))
        return self.buffers[name]

    def run(self, lp: LaunchPlan, offsets, total):
        fn = _library(lp.file, lp.defines)
        ptrs = [self._buffer(n).ctypes.data for t, n in lp.params if "*" in t]
        ints = [self.ints[n] for t, n in lp.params if "*" not in t]
        ptr_arr = (ctypes.c_void_p * 8)(*ptrs)
        int_arr = (ctypes.c_int * 8)(*ints)
        src = sources.load(lp.file)
        names = [a.name for a in src.arrays]
        # Per array of the kernel (its TRACE_ID): element count, for cuda/trace.cuh's
        # TRACE_OUT_OF_BOUNDS, and where a global one's allocation starts (trace_bases).
        bounds = np.zeros(len(names), dtype=np.uint64)
        bases = np.zeros(len(names), dtype=np.uint64)
        for i, a in enumerate(src.arrays):
            rows, cols = self.shapes[a.name] if a.space == "global" else src.shared_shape(a.name, lp.defines)
            bounds[i] = rows * cols
            if a.space == "global":
                bases[i] = self._buffer(a.name).ctypes.data
        slots = len(lp.blocks) * lp.block[0] * lp.block[1]
        counts = np.zeros(slots, dtype=np.uint32)
        epochs = np.zeros(slots, dtype=np.uint32)
        records = self._records(total) if offsets is not None else None
        ordinals = np.zeros(slots * src.counters, dtype=np.uint32) if offsets is not None else None
        blocks = np.ascontiguousarray(lp.blocks, dtype=np.uint32)
        tpb = lp.block[0] * lp.block[1]

        def run_blocks(span: tuple[int, int]) -> tuple[int, np.ndarray]:
            """Blocks lo..hi-1 on this host thread: a block's slots are j * tpb + t (trace.cuh
            trace_slot), so each share gets its own slice of the per-slot arrays and writes its
            records at the offsets the whole launch's scan gave it. Returns its code and where its
            first fault was (line, thread x, y, block x, y)."""
            lo, hi = span
            s0, s1 = lo * tpb, hi * tpb
            at = np.zeros(5, dtype=np.uint32)
            code = fn(lp.block[0], lp.block[1], lp.grid[0], lp.grid[1], blocks[lo:hi].ravel(), hi - lo,
                      counts[s0:s1], epochs[s0:s1],
                      offsets[s0:].ctypes.data if offsets is not None else None,
                      records.ctypes.data if records is not None else None,
                      ordinals[s0 * src.counters:].ctypes.data if ordinals is not None else None,
                      ptr_arr, int_arr, bounds.ctypes.data, bases.ctypes.data, at)
            return code, at

        start = time.perf_counter()
        # Blocks never talk to each other and the tracer's state is per host thread, so big launches
        # run on every core (ctypes lets go of the GIL); the records land where they would anyway.
        shares = parallel.THREADS if slots >= _PARALLEL_SLOTS else 1
        codes = parallel.each(run_blocks, parallel.spans(len(blocks), shares))
        # The first failing share, in block order, is the fault a sequential run stops at.
        rc, at = next(((code, at) for code, at in codes if code), (0, None))
        self.seconds["kernel"] += time.perf_counter() - start
        if rc == -2:   # cuda/cpu_shim.h: no thread could go on, short of a barrier all had reached
            raise EngineError(f"{lp.kernel}: threads of a block waited for each other forever (a warp-collective "
                              "operation such as ldmatrix that not every thread of the warp reached, or reached "
                              "at different places): the GPU would hang or do anything; the kernel is wrong")
        if rc <= -3:   # cuda/cpu_shim.h cpu.barrier_fault: 1 + 2 (line + 16384 line2), 0 for a line not known
            at = (-rc - 3) // 2
            first, second = at % 16384, at // 16384
            said = lambda n: f"line {n}" if n else "a bare __syncthreads()"   # noqa: E731
            raise EngineError(f"{sources.at_line(lp.file, first)}{lp.kernel}: threads of a block met at different SYNC()s ({said(first)} and "
                              f"{said(second)}): CUDA allows __syncthreads() in conditional code only where every "
                              "thread of the block takes the same branch, so what a GPU does here is undefined; the "
                              "kernel is wrong")
        if rc < 0:
            raise EngineError(f"{lp.kernel}: not enough host memory for {lp.block[0] * lp.block[1]} CPU threads")
        if rc > 0:
            line, tx, ty, bx, by = (int(v) for v in at)
            where, who = sources.at_line(lp.file, line), f"thread ({tx}, {ty}) of block ({bx}, {by})"
            if rc > len(names):   # cuda/trace.cuh TRACE_MISALIGNED
                raise EngineError(f"{where}{lp.kernel} made a vector access of {names[rc - 1 - len(names)]} at an "
                                  f"address that is not a multiple of its size ({who}; the GPU faults on it): the "
                                  "kernel is wrong")
            raise EngineError(f"{where}{lp.kernel} accessed {names[rc - 1]} outside its bounds ({who}): the kernel is "
                              "wrong for this size")
        return (records, ordinals) if offsets is not None else counts

    def read(self, name: str, index: np.ndarray) -> np.ndarray:
        return self.buffers[name].ravel()[index]


def serve(conn) -> None:
    """A CPU trace worker's main: runs TracePlans (op "execute") one at a time."""
    host_memory.keep_large_blocks_separate()
    workers.serve(conn, "CPU trace worker", {"execute": _execute})


def _execute(plan, reply):
    device = CpuDevice(shared_records=True)
    try:
        run = execute(plan, device)
        device.hand_over(run)
    finally:
        device.discard()
    handles = [rl.records for rl in run.launches if rl is not None and isinstance(rl.records, SharedArray)]
    try:
        reply(run)
    finally:
        for handle in handles:
            handle.release()
        del run, handles
        host_memory.release_freed_memory()   # a worker lives long: give back what this request used
