"""The GPU side of engine.tracing.execute: PyCUDA launches of the instrumented cubins.

Imported only inside the GPU worker process (engine/devices/gpu_worker.py), never by the app.
"""
from __future__ import annotations

import numpy as np
import pycuda.driver as cuda

from engine.devices.shm import SharedArray
from engine.kernels import build, sources
from engine.tracing.plan import LaunchPlan
from engine.tracing.records import RAW_DTYPE

NAN_BITS = 0x7FC00000  # outputs start as NaN, so an element nothing wrote cannot pass the check


def load_module(modules: dict, path) -> "cuda.Module":
    """The cubin at path, loaded once per worker from the bytes its digest vouches for (what is
    checked is what runs: the file is not read a second time)."""
    key = str(path)
    if key not in modules:
        modules[key] = cuda.module_from_buffer(build.checked_bytes(path))
    return modules[key]


class GpuDevice:
    def __init__(self, name: str, modules: dict):
        self.name = name
        self.modules = modules      # shared cache of loaded cubins, owned by the worker
        self.seconds = {"kernel": 0.0, "copy": 0.0}
        self.buffers: dict[str, cuda.DeviceAllocation] = {}
        self.shared: dict[int, SharedArray] = {}   # record arrays handed to the app in shared memory

    def module(self, file: str, params, traced: bool):
        return load_module(self.modules, build.build_cubin(file, params, traced))

    def upload(self, inputs, shapes, ints):
        self.shapes, self.ints = shapes, ints
        for name, host in inputs.items():
            self.buffers[name] = cuda.to_device(np.ascontiguousarray(host, dtype=np.float32))

    def buffer(self, name: str):
        if name not in self.buffers:
            rows, cols = self.shapes[name]
            self.buffers[name] = cuda.mem_alloc(max(4 * rows * cols, 4))
            cuda.memset_d32(self.buffers[name], NAN_BITS, rows * cols)
        return self.buffers[name]

    def args(self, lp: LaunchPlan) -> list:
        return [self.buffer(n) if "*" in t else np.int32(self.ints[n]) for t, n in lp.params]

    @staticmethod
    def _set(mod, name: str, value, dtype=np.uint64):
        ptr, _ = mod.get_global(name)
        cuda.memcpy_htod(ptr, np.array([value], dtype=dtype))

    def run(self, lp: LaunchPlan, offsets, total):
        mod = self.module(lp.file, lp.defines, traced=True)
        func = mod.get_function(lp.kernel)
        slots = len(lp.blocks) * lp.block[0] * lp.block[1]
        counts = cuda.mem_alloc(4 * slots)
        epochs = cuda.mem_alloc(4 * slots)
        cuda.memset_d32(counts, 0, slots)
        cuda.memset_d32(epochs, 0, slots)
        block_map = cuda.to_device(np.ascontiguousarray(lp.blocks, dtype=np.uint32))
        offs = cuda.to_device(offsets) if offsets is not None else None
        records = cuda.mem_alloc(max(total, 1) * RAW_DTYPE.itemsize) if offsets is not None else None
        ordinals = None
        if offsets is not None:
            sites = sources.load(lp.file).counters
            ordinals = cuda.mem_alloc(4 * slots * sites)
            cuda.memset_d32(ordinals, 0, slots * sites)
        self._set(mod, "trace_counts", int(counts))
        self._set(mod, "trace_epochs", int(epochs))
        self._set(mod, "trace_offsets", int(offs) if offs is not None else 0)
        self._set(mod, "trace_records", int(records) if records is not None else 0)
        self._set(mod, "trace_ordinals", int(ordinals) if ordinals is not None else 0)
        self._set(mod, "trace_block_map", int(block_map))
        self._set(mod, "trace_grid_x", lp.grid[0], np.uint32)
        self._set(mod, "trace_grid_y", lp.grid[1], np.uint32)
        # Where each global array's allocation starts (cuda/trace.cuh trace_bases): records count
        # from there, however the kernel moves its pointers.
        bases = np.array([int(self.buffer(a.name)) if a.space == "global" else 0
                          for a in sources.load(lp.file).arrays], dtype=np.uint64)
        cuda.memcpy_htod(mod.get_global("trace_bases")[0], bases)
        start, end = cuda.Event(), cuda.Event()
        start.record()
        func(*self.args(lp), block=(lp.block[0], lp.block[1], 1), grid=(len(lp.blocks), 1))
        end.record()
        end.synchronize()
        self.seconds["kernel"] += start.time_till(end) / 1e3
        if offsets is None:
            out = np.empty(slots, dtype=np.uint32)
            cuda.memcpy_dtoh(out, counts)
        else:
            handle = SharedArray((total,), RAW_DTYPE)
            out = handle.array
            self.shared[id(out)] = handle
            if total:
                cuda.memcpy_dtoh(out, records)
            records.free()
            offs.free()
            ordinals.free()
        counts.free()
        epochs.free()
        block_map.free()
        return out

    def read(self, name: str, index: np.ndarray) -> np.ndarray:
        rows, cols = self.shapes[name]
        host = np.empty(rows * cols, dtype=np.float32)
        cuda.memcpy_dtoh(host, self.buffers[name])
        return host[index]

    def hand_over(self, run) -> None:
        """Swap each record array of an execute() result for its shared-memory handle."""
        for rl in run.launches:
            if rl is not None:
                rl.records = self.shared.pop(id(rl.records))

    def free(self):
        for buf in self.buffers.values():
            buf.free()
        self.buffers.clear()
        for handle in self.shared.values():   # not handed over (an error came first)
            handle.release()
            handle.shm.unlink()
        self.shared.clear()
