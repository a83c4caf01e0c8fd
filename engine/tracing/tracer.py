"""The trace API the pages and the command line use: trace(kernel, problem, blocks, source).

Kernels run in worker processes: the GPU worker (engine/devices/gpu_client.py) or a pool of CPU trace
workers (engine/devices/cpu.py's serve), one per core, so traces for several sessions run side by
side and a kernel that faults or hangs costs its own request only.
"""
from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

from engine.devices import cpu, gpu_client, workers
from engine.devices.shm import SharedArray
from engine.errors import EngineError
from engine.kernels import build, sources
from engine.kernels.problem import Problem
from engine.tracing.plan import DEFAULT_RECORD_CAP, TracePlan, check_fits_gpu, check_fits_host, make_plan
from engine.tracing.records import ArrayTable, LaunchInfo, Trace, TraceSite, assemble_launch, thread_warps


def resolve_source(source: str) -> str:
    """'auto' picks the GPU when the worker has one, else the CPU."""
    if source not in ("auto", "gpu", "cpu"):
        raise EngineError(f"source must be gpu, cpu or auto, not {source!r}")
    if source == "auto":
        return "gpu" if gpu_client.status().available else "cpu"
    return source




# A CPU trace of the largest view the pages offer takes seconds; minutes means a kernel that hangs.
CPU_TIMEOUT_S = 120.0
CPU_WORKERS = workers.Pool(cpu.serve, "CPU trace worker", os.cpu_count() or 2)


def run_plan(plan: TracePlan, source: str):
    """Runs a plan in a worker process ("gpu" or "cpu"): the RawRun, its records taken out of the
    shared memory they came back in. A run over the host memory limit is refused here, before any
    worker allocates anything."""
    check_fits_host(plan)
    if source == "gpu":
        raw = gpu_client.call("execute", plan)
    else:
        raw = CPU_WORKERS.call("execute", plan, workers.timeout_from_env("MATMUL_EXPLORER_CPU_TIMEOUT", CPU_TIMEOUT_S),
                               f"{plan.kernel} on the CPU")
    handed = [rl for rl in raw.launches if rl is not None and isinstance(rl.records, SharedArray)]
    try:
        for rl in handed:
            rl.records = rl.records.take()
    except BaseException:
        for rl in handed:            # the blocks not taken yet are freed, not left behind
            if isinstance(rl.records, SharedArray):
                rl.records.discard()
        raise
    return raw


def compile_for(plan: TracePlan, source: str) -> None:
    """Builds what the plan's launches need here, before a worker asks for them: the worker would
    build them all the same, silently, while this process can say "Compiling ... for the CPU" (the
    pages show it, build.ANNOUNCE) and a build it already has costs a check of the cache."""
    for lp in plan.launches:
        if source == "gpu":
            build.build_cubin(lp.file, lp.defines, traced=True)
        else:
            build.build_cpu_library(lp.file, lp.defines)


def trace(kernel: str, problem: Problem, blocks=None, source: str = "auto",
          cap: int | None = DEFAULT_RECORD_CAP, check: bool = True) -> Trace:
    """check False: the outputs are not checked against float64 (rel_error NaN), for a trace that is
    only counted."""
    start = time.perf_counter()
    plan = dataclasses.replace(make_plan(kernel, problem, blocks, cap), check_outputs=check)
    source = resolve_source(source)
    if source == "gpu":
        st = gpu_client.status()
        if not st.available:
            raise EngineError(f"no GPU trace source: {st.reason}")
        check_fits_gpu(problem, kernel, st)
    compile_for(plan, source)
    raw = run_plan(plan, source)
    ran = time.perf_counter()
    result = assemble(plan, raw, source)
    result.timings = {**raw.seconds, "run": ran - start, "assemble": time.perf_counter() - ran}
    return result


def assemble(plan: TracePlan, raw, source: str) -> Trace:
    # The trace's arrays: every launch's kernel's, by name, in order of first appearance.
    arrays = {}
    for lp in plan.launches:
        for a in sources.load(lp.file).arrays:
            arrays.setdefault(a.name, a)
    names = tuple(arrays)
    table = ArrayTable.of(list(arrays.values()), plan.shapes)
    sites: list[TraceSite] = []
    launches: list[LaunchInfo] = []
    parts, counts, warps, issued = [], [], [], {}
    for i, (lp, rl) in enumerate(zip(plan.launches, raw.launches)):
        info = LaunchInfo(lp.kernel, lp.file, lp.grid, lp.block, lp.traced, lp.blocks)
        launches.append(info)
        if rl is None:
            continue
        src = sources.load(lp.file)
        # The kernel's site numbers (cuda/trace.cuh TRACE_SITE_OF) as the trace's sites and arrays.
        kernel_sites = np.array([(len(sites) + k, names.index(s.array), s.op == "store")
                                 for k, s in enumerate(src.sites)], dtype=np.int64).reshape(-1, 3)
        sites += [TraceSite(i, lp.kernel, s) for s in src.sites]
        if len(sites) > sources.MAX_SITES:   # a record's site is one byte
            raise EngineError(f"{plan.kernel}: its launches have {len(sites)} access sites; a trace holds at most "
                              f"{sources.MAX_SITES}")
        if rl.issued is not None:
            issued.update({len(sites) - len(src.sites) + k: int(n) for k, n in enumerate(rl.issued[:len(src.sites)])})
        parts.append(assemble_launch(i, rl.records, rl.counts, info, kernel_sites, table))
        first_warp = int(warps[-1][-1]) + 1 if warps and len(warps[-1]) else 0
        counts.append(rl.counts)
        warps.append(thread_warps(rl.counts, lp.block, first_warp))
    columns = parts[0] if len(parts) == 1 else {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return Trace(plan.kernel, plan.problem, source, raw.device, columns, sites, names, dict(plan.shapes),
                 launches, raw.rel_error, raw.checked_outputs, np.concatenate(counts), np.concatenate(warps),
                 issued=issued)
