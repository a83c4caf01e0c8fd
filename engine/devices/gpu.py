"""PyCUDA launches of the kernels' cubins: the one launcher that tracing and timing share.

Imported only inside the GPU worker process (engine/devices/gpu_worker.py), never by the app.

A Launcher holds one problem's arrays on the GPU: the inputs uploaded, each output allocated when a
launch first names it and filled with NaN (an element nothing wrote cannot pass a check). It builds
each launch from the kernel's own parameter list (its source's signature) with the registry's
geometry, and runs launches under observers. Tracing (GpuDevice, below) sets the trace's globals on
the instrumented build's module before each launch; timing (engine/bench/timing.py) runs the plain
build under an EventTimer, an observer that records CUDA events around what it launches.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass

import numpy as np
import pycuda.driver as cuda

from engine.devices.shm import SharedArray
from engine.errors import EngineError
from engine.kernels import build, cache, sources
from engine.kernels.registry import Precision
from engine.tracing.plan import NAN_BITS, LaunchPlan, array_dtype, to_storage
from engine.tracing.records import RAW_DTYPE


def load_module(modules: dict, path) -> "cuda.Module":
    """The cubin at path, loaded once per worker from the bytes its digest vouches for (what is
    checked is what runs: the file is not read a second time)."""
    key = str(path)
    if key not in modules:
        modules[key] = cuda.module_from_buffer(cache.checked_bytes(path))
    return modules[key]


def fill_nan(buf, dtype: np.dtype, count: int) -> None:
    """Fills count elements of dtype with NaN (float32: 0x7FC00000)."""
    memset = getattr(cuda, f"memset_d{8 * dtype.itemsize}")   # memset_d32 for float32
    memset(buf, NAN_BITS[dtype], count)


@dataclass
class Kernel:
    """One launch, ready: a compiled function, its arguments and its geometry."""

    module: "cuda.Module"
    function: "cuda.Function"
    args: list
    grid: tuple[int, int]
    block: tuple[int, int]
    shared: int = 0    # dynamic shared memory, bytes

    def __call__(self) -> None:
        if self.shared:
            self.function(*self.args, block=(*self.block, 1), grid=self.grid, shared=self.shared)
        else:
            self.function(*self.args, block=(*self.block, 1), grid=self.grid)


class EventTimer:
    """An observer of launches (as Kernel Tuner's benchmark observers are): a CUDA event before and
    one after, so what it measures is the GPU's time from the first launch to the end of the last,
    not the host's. `ms`: one time per observed run, in milliseconds."""

    def __init__(self):
        self.start, self.end = cuda.Event(), cuda.Event()
        self.ms: list[float] = []

    def before(self) -> None:
        self.start.record()

    def after(self) -> None:
        self.end.record()
        self.end.synchronize()
        self.ms.append(self.start.time_till(self.end))


# A one-thread kernel that spins until `ns` nanoseconds of the GPU's global timer have passed. In
# PTX, so the driver compiles it (no nvcc at run time, any GPU from sm_70 on).
_HOLD_PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry hold(.param .u64 ns)
{
    .reg .u64 %rd<5>;
    .reg .pred %p;
    ld.param.u64 %rd1, [ns];
    mov.u64 %rd2, %globaltimer;
SPIN:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p, %rd4, %rd1;
    @%p bra SPIN;
    ret;
}
"""


class HeldEventTimer(EventTimer):
    """An EventTimer whose start waits behind a hold kernel of `hold_ms`: the host queues the start
    event and every timed launch while the GPU is still spinning, so a batch of short launches runs
    back to back and the events time the GPU alone. Without it, a batch of ~15 us cuBLAS calls, each
    costing the host about as much to submit, leaves the GPU idle between them: cuBLAS TF32 at
    1024^3 measured 95-136 TFLOP/s batched, against 141 one call at a time. `host_ms`: how long the
    host took to queue each run; a run the host queued for longer than the hold lasted may hold
    gaps, and `starved` says so."""

    def __init__(self, modules: dict, hold_ms: float):
        super().__init__()
        if "hold" not in modules:
            modules["hold"] = cuda.module_from_buffer(_HOLD_PTX)
        self.hold = modules["hold"].get_function("hold")
        self.hold_ms = hold_ms
        self.host_ms: list[float] = []

    def before(self) -> None:
        self.hold(np.uint64(self.hold_ms * 1e6), block=(1, 1, 1), grid=(1, 1))
        super().before()
        self._queued_from = time.perf_counter()

    def after(self) -> None:
        self.host_ms.append(1e3 * (time.perf_counter() - self._queued_from))
        super().after()

    @property
    def starved(self) -> bool:
        return bool(self.host_ms) and self.host_ms[-1] > self.hold_ms


class Launcher:
    """One problem's arrays on the GPU, and launches of kernels on them.

    modules: the worker's cache of loaded cubins; shapes: (rows, cols) of each array by name; ints:
    the values of the kernels' int parameters (M, N, K) by name."""

    def __init__(self, modules: dict, shapes: dict[str, tuple[int, int]], ints: dict[str, int],
                 inputs: Precision = Precision.FP32):
        self.modules, self.shapes, self.ints, self.inputs = modules, shapes, ints, inputs
        self.buffers: dict[str, cuda.DeviceAllocation] = {}

    def upload(self, inputs: dict[str, np.ndarray]) -> None:
        for name, host in inputs.items():
            self.buffers[name] = cuda.to_device(to_storage(host, array_dtype(name, self.inputs)))

    def buffer(self, name: str) -> "cuda.DeviceAllocation":
        """An array's buffer; one not uploaded (an output) is made when first asked for, all NaN."""
        if name not in self.buffers:
            rows, cols = self.shapes[name]
            dtype = array_dtype(name, self.inputs)
            self.buffers[name] = cuda.mem_alloc(max(rows * cols, 1) * dtype.itemsize)
            fill_nan(self.buffers[name], dtype, rows * cols)
        return self.buffers[name]

    def args(self, params: tuple[tuple[str, str], ...], boxes: dict[str, tuple[int, int]] | None = None,
             maps_read: dict[str, str] | None = None) -> list:
        """A kernel's arguments, from its signature's (C type, name) list: each pointer is that array's
        buffer, each int that size, each `CUtensorMap X_map` array X's tensor map (boxes: X's box;
        maps_read: the array it reads instead, {"A": "AP"}, a padded copy a launch before made)."""
        def arg(ctype: str, name: str):
            if "*" in ctype:
                return self.buffer(name)
            if "CUtensorMap" in ctype:
                named = name.removesuffix("_map")
                array = (maps_read or {}).get(named, named)
                rows, cols = self.shapes[array]
                return tensor_map(self.buffer(array), rows, cols, (boxes or {})[named],
                                  array_dtype(array, self.inputs).itemsize)
            return np.int32(self.ints[name])
        return [arg(ctype, name) for ctype, name in params]

    def launches(self, spec, problem, source_override: str | None = None) -> list[Kernel]:
        """The plain launches one run of a catalog entry makes for a bound problem, in order: those the
        problem needs (spec.launches_for), each with its registry geometry, shared memory, tensor maps
        and the arrays they read. source_override replaces the last one's source (tests)."""
        launches = spec.launches_for(problem)
        return [self.kernel(source_override if source_override and launch is launches[-1] else launch.file,
                            problem.params, launch.grid(problem), launch.block(problem), traced=False,
                            shared=launch.shared_bytes(problem), arch=launch.arch, boxes=launch.tensor_maps(problem),
                            maps_read=launch.maps_read(problem))
                for launch in launches]

    def kernel(self, file: str, defines, grid: tuple[int, int], block: tuple[int, int], traced: bool,
               shared: int = 0, arch: str | None = None, boxes: dict[str, tuple[int, int]] | None = None,
               maps_read: dict[str, str] | None = None) -> Kernel:
        """The launch of a cuda/ source (or a path): its plain build, or the instrumented one (traced);
        shared: its dynamic shared memory; arch: where it needs more than the default; boxes: its
        tensor maps' boxes (registry Launch.tensor_maps); maps_read: the arrays they read instead."""
        src = sources.load(file)
        shared = shared or src.dynamic_shared_bytes(defines)   # a traced source's views say it themselves
        cubin = build.build_cubin(file, defines, traced, arch)
        module = load_module(self.modules, cubin)
        function = module.get_function(src.name)
        if shared > 48 * 1024:   # over the default a kernel must ask for it
            function.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        args = self.args(src.params, boxes, maps_read)
        if any("CUtensorMap" in ctype for ctype, _ in src.params):
            args = placed(args, param_layout(cache.checked_bytes(cubin), src.name))
        return Kernel(module, function, args, grid, block, shared)

    @staticmethod
    def run(calls, repeat: int = 1, observers=()) -> None:
        """The calls (Kernels, or a library call on the same buffers) in order, `repeat` times over,
        between the observers' before() and after()."""
        for observer in observers:
            observer.before()
        for _ in range(repeat):
            for call in calls:
                call()
        for observer in reversed(observers):
            observer.after()

    def download(self, name: str) -> np.ndarray:
        host = np.empty(self.shapes[name], dtype=array_dtype(name, self.inputs))
        cuda.memcpy_dtoh(host, self.buffers[name])
        return host

    def free(self) -> None:
        for buf in self.buffers.values():
            buf.free()
        self.buffers.clear()


# cuTensorMapEncodeTiled's enums (cuda.h): CUtensorMapDataType by element size (2 bytes: FLOAT16;
# bf16 has the same bits to move, and TMA only moves them), CU_TENSOR_MAP_SWIZZLE_128B,
# CU_TENSOR_MAP_L2_PROMOTION_L2_128B.
_TMA_TYPES = {2: 6, 4: 7}
_TMA_SWIZZLE_128B, _TMA_L2_128B = 3, 2


def tensor_map(buf, rows: int, cols: int, box: tuple[int, int], element_bytes: int) -> np.void:
    """The 128-byte TMA descriptor of a row-major rows x cols array at buf, copied box (columns,
    rows) at a time into 128-byte-swizzled shared memory; outside the array TMA reads zeros. Made by
    the driver (cuTensorMapEncodeTiled), passed to the kernel by value (a __grid_constant__
    parameter: np.void is how PyCUDA passes bytes by value). An empty box (a kernel's contract says
    so where it does not use the map: wgmma_epilogue's C where N is not a multiple of 4) gives 128
    zero bytes, which the driver is not asked to encode."""
    if 0 in box:
        return np.zeros(1, dtype="V128")[0]
    return _encode_tiled(buf, rows, cols, box, element_bytes)


def _encode_tiled(buf, rows: int, cols: int, box: tuple[int, int], element_bytes: int) -> np.void:
    """tensor_map's call into the driver (the stand-in GPU of tests/test_gpu_worker.py replaces it)."""
    lib = ctypes.CDLL("libcuda.so.1")
    raw = np.zeros(128 + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64   # the driver wants the map 64-byte aligned
    out = raw[start:start + 128]
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    status = lib.cuTensorMapEncodeTiled(
        ctypes.c_void_p(out.ctypes.data), _TMA_TYPES[element_bytes], u32(2), ctypes.c_void_p(int(buf)),
        (u64 * 2)(cols, rows), (u64 * 1)(cols * element_bytes), (u32 * 2)(*box), (u32 * 2)(1, 1),
        0, _TMA_SWIZZLE_128B, _TMA_L2_128B, 0)
    if status:
        raise EngineError(f"cuTensorMapEncodeTiled refused a {rows} x {cols} array with box {box} (CUresult {status})")
    return np.frombuffer(out.tobytes(), dtype="V128")[0]


def param_layout(cubin: bytes, name: str) -> list[tuple[int, int]]:
    """(offset, size) of each parameter of kernel `name` as the compiler laid them out, from the
    driver (cuFuncGetParamInfo), in the current context. PyCUDA packs arguments back to back; a
    CUtensorMap parameter is 64-byte aligned in the parameter space, and nvcc may place the first
    one past offset 0 (it did: at 112 on sm_90), so its arguments must be placed where it reads them."""
    lib = ctypes.CDLL("libcuda.so.1")
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    image = ctypes.create_string_buffer(cubin, len(cubin))
    if lib.cuModuleLoadData(ctypes.byref(module), image):
        raise EngineError(f"the driver could not load {name}'s cubin to read its parameter layout")
    try:
        if lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode()):
            raise EngineError(f"{name} is not in its cubin")
        out, offset, size = [], ctypes.c_size_t(), ctypes.c_size_t()
        while not lib.cuFuncGetParamInfo(function, ctypes.c_size_t(len(out)), ctypes.byref(offset), ctypes.byref(size)):
            out.append((offset.value, size.value))
        return out
    finally:
        lib.cuModuleUnload(module)


def placed(args: list, layout: list[tuple[int, int]]) -> list:
    """The arguments with zero bytes (np.void) before each one that the layout places past the end
    of the one before."""
    out, end = [], 0
    for arg, (offset, size) in zip(args, layout, strict=True):
        if offset > end:
            out.append(np.zeros(1, dtype=f"V{offset - end}")[0])
        out.append(arg)
        end = offset + size
    return out


def _pointer(buf) -> np.uint64:
    return np.uint64(int(buf) if buf is not None else 0)


class GpuDevice:
    """The device interface of engine.tracing.execute, on the GPU: a Launcher's arrays and launches
    of the instrumented build, with the trace's globals set on each launch."""

    def __init__(self, name: str, modules: dict):
        self.name = name
        self.modules = modules      # shared cache of loaded cubins, owned by the worker
        self.seconds = {"kernel": 0.0, "copy": 0.0}
        self.launcher: Launcher | None = None
        self.timer = EventTimer()
        self.shared: dict[int, SharedArray] = {}   # record arrays handed to the app in shared memory

    def upload(self, inputs, shapes, ints, precision=Precision.FP32):
        self.launcher = Launcher(self.modules, shapes, ints, precision)
        self.launcher.upload(inputs)

    def run(self, lp: LaunchPlan, offsets, total):
        """The count pass (offsets None: each traced thread's record count) or the write pass (the
        records, at the offsets the counts gave). The grid launched is the chosen blocks in a row;
        trace_block_map says which block of the kernel's grid each one is."""
        kernel = self.launcher.kernel(lp.file, lp.defines, (len(lp.blocks), 1), lp.block, traced=True)
        slots, writing = lp.threads, offsets is not None
        counts, epochs = cuda.mem_alloc(4 * slots), cuda.mem_alloc(4 * slots)
        block_map = cuda.to_device(np.ascontiguousarray(lp.blocks, dtype=np.uint32))
        cuda.memset_d32(counts, 0, slots)
        cuda.memset_d32(epochs, 0, slots)
        offs = records = ordinals = None
        if writing:
            offs = cuda.to_device(offsets)
            records = cuda.mem_alloc(max(total, 1) * RAW_DTYPE.itemsize)
            counters = sources.load(lp.file).counters
            ordinals = cuda.mem_alloc(4 * slots * counters)
            cuda.memset_d32(ordinals, 0, slots * counters)
        # The trace's device globals (cuda/trace.cuh), every one of them set here, before the launch.
        self._set_globals(kernel.module, {
            "trace_counts": _pointer(counts), "trace_epochs": _pointer(epochs), "trace_offsets": _pointer(offs),
            "trace_records": _pointer(records), "trace_ordinals": _pointer(ordinals),
            "trace_block_map": _pointer(block_map),
            "trace_grid_x": np.uint32(lp.grid[0]), "trace_grid_y": np.uint32(lp.grid[1]),
            # Where each global array's allocation starts: records count from there, however the
            # kernel moves its pointers.
            "trace_bases": np.array([int(self.launcher.buffer(a.name)) if a.space == "global" else 0
                                     for a in sources.load(lp.file).arrays], dtype=np.uint64),
        })
        self.launcher.run([kernel], observers=[self.timer])
        self.seconds["kernel"] += self.timer.ms[-1] / 1e3
        if writing:
            handle = SharedArray((total,), RAW_DTYPE)
            self.shared[id(handle.array)] = handle
            out = handle.array
            if total:
                cuda.memcpy_dtoh(out, records)
            # Each slot's count of every site, skips included: the warps' issues (execute.issued_per_site).
            counts_of_sites = np.empty(slots * counters, dtype=np.uint32)
            cuda.memcpy_dtoh(counts_of_sites, ordinals)
            out = (out, counts_of_sites)
        else:
            out = np.empty(slots, dtype=np.uint32)
            cuda.memcpy_dtoh(out, counts)
        # Freed only after a clean run: after a fault the context is dead and the worker exits.
        for buf in (counts, epochs, block_map, offs, records, ordinals):
            if buf is not None:
                buf.free()
        return out

    @staticmethod
    def _set_globals(module, values: dict) -> None:
        """Each value (a numpy scalar or array, of the global's type) into the module's global of that name."""
        for name, value in values.items():
            ptr, _ = module.get_global(name)
            cuda.memcpy_htod(ptr, np.array([value]))

    def read(self, name: str, index: np.ndarray) -> np.ndarray:
        return self.launcher.download(name).ravel()[index]

    def hand_over(self, run) -> None:
        """Swap each record array of an execute() result for its shared-memory handle."""
        for rl in run.launches:
            if rl is not None:
                rl.records = self.shared.pop(id(rl.records))

    def free(self):
        if self.launcher is not None:
            self.launcher.free()
        for handle in self.shared.values():   # not handed over (an error came first)
            handle.release()
            handle.shm.unlink()
        self.shared.clear()
