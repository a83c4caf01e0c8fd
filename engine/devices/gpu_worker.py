"""The GPU worker: a separate, spawned process that owns the CUDA context and serves requests
one at a time over a pipe. It is the only place PyCUDA is imported.

Requests are (op, payload); replies are ("ok", value) or ("error", message, fatal). After a fatal
error (a fault that leaves the CUDA context unusable) the worker exits; the client starts a new one.
"""
from __future__ import annotations

from engine.devices import workers


def device_info(cuda, dev) -> dict:
    a = cuda.device_attribute
    free, total = cuda.mem_get_info()
    return {
        "available": True, "name": dev.name(), "reason": "",
        "compute_capability": "%d.%d" % dev.compute_capability(),
        "sm_count": dev.get_attribute(a.MULTIPROCESSOR_COUNT),
        "sm_clock_mhz": dev.get_attribute(a.CLOCK_RATE) // 1000,
        "memory_clock_mhz": dev.get_attribute(a.MEMORY_CLOCK_RATE) // 1000,
        "memory_bus_bits": dev.get_attribute(a.GLOBAL_MEMORY_BUS_WIDTH),
        "l2_bytes": dev.get_attribute(a.L2_CACHE_SIZE),
        "shared_per_block_optin": dev.get_attribute(a.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        "free_bytes": free, "total_bytes": total,
        "driver": cuda.get_driver_version(), "cuda": ".".join(map(str, cuda.get_version())),
        "driver_release": driver_release(),
    }


def driver_release() -> str | None:
    """The installed driver's own version ("580.159"), from NVML; None where there is no NVML (the
    CUDA version the driver supports is in "driver")."""
    try:
        import pynvml  # noqa: PLC0415 - optional, GPU machines only
        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
    except Exception:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


def _fatal(exc: BaseException, cuda) -> bool:
    """CUDA faults (illegal address, launch failure, ...) poison the context: the worker must go."""
    if cuda is None:
        return False
    return isinstance(exc, cuda.Error) and not isinstance(exc, cuda.MemoryError)


def serve(conn) -> None:
    cuda = ctx = None
    try:
        import pycuda.driver as cuda  # noqa: PLC0415 - only ever here, in the worker process
        cuda.init()
        dev = cuda.Device(0)
        # The device's primary context, the one the CUDA runtime uses: cuBLAS and PyTorch (runtime
        # libraries) run in the same context as the events that time them, and PyTorch finds the
        # context it expects (its calls can fail in a context of PyCUDA's own, make_context's).
        ctx = dev.retain_primary_context()
        ctx.push()
        info = device_info(cuda, dev)
    except Exception as exc:  # no driver, no GPU, no PyCUDA: the app runs in CPU mode
        info = {"available": False, "reason": f"{type(exc).__name__}: {exc}".strip()}
    from engine.bench import timing
    from engine.devices import gpu  # noqa: PLC0415 - they import PyCUDA
    from engine.tracing import execute
    modules: dict = {}                  # loaded cubins, kept for the worker's life

    def info_now(payload, reply):
        if info["available"]:
            info["free_bytes"], info["total_bytes"] = cuda.mem_get_info()
        return info

    def trace(plan, reply):
        device = gpu.GpuDevice(info["name"], modules)
        try:
            value = execute.execute(plan, device)
            device.hand_over(value)
            reply(value)
            for rl in value.launches:
                if rl is not None:
                    rl.records.release()
        finally:
            device.free()

    def bench(payload, reply):
        return timing.run_bench(modules, info, **payload)

    def cublas_version(payload, reply):
        """The version of the cuBLAS that "bench" calls (loaded now if no point has called it yet), for
        the provenance of every % of cuBLAS."""
        return timing.cublas().version

    def no_gpu(payload, reply):
        raise RuntimeError(f"no GPU: {info['reason']}")

    # Every request the worker answers, in one table (workers.serve dispatches); without a GPU,
    # every one but info says why.
    requests = {"info": info_now, "ping": lambda payload, reply: "pong", "execute": trace, "bench": bench,
                "cublas_version": cublas_version}
    if not info["available"]:
        requests = {op: info_now if op == "info" else no_gpu for op in requests}

    # A fatal error leaves at once, without clean-up calls into a dead context.
    workers.serve(conn, "GPU worker", requests, lambda exc: _fatal(exc, cuda))
    if ctx is not None:
        try:
            ctx.pop()
        except Exception:
            pass
