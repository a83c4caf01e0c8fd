"""Runs a TracePlan on a device (GPU through PyCUDA, or the CPU tracer): the two-pass record scheme.

Per traced launch: a count pass (each thread counts its records), an exclusive scan of the counts
into offsets, a check against the record cap, then a write pass that stores each thread's records
at its offset in program order. Both devices run exactly this code, so they fill the same layout.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.errors import EngineError
from engine.kernels import reference, sources
from engine.kernels.problem import make_inputs
from engine.tracing.plan import LaunchPlan, TracePlan, all_blocks, check_fits_host, global_shapes, size_arguments


@dataclass
class RawLaunch:
    counts: np.ndarray     # uint32 per traced thread (slot)
    records: np.ndarray    # RAW_DTYPE
    # Per site of the kernel: the warp-level instructions its warps issued there, counting those
    # whose lanes all had it off (the SKIPs; issued_per_site). None: not known (counted from records).
    issued: np.ndarray | None = None


WARP = 32


def issued_per_site(ordinals: np.ndarray, threads_per_block: int, counters: int) -> np.ndarray:
    """Per site, the sum over warps of the most times any lane of the warp got there (its ordinal
    counter at the end: records and skips). A warp issues an access once for every time its lanes
    get there together, whether or not any lane has it on; a skip keeps a lane's count in step
    with its neighbours', so the warp's issues are its busiest lane's count."""
    per_thread = ordinals.reshape(-1, threads_per_block, counters)
    warps = -(-threads_per_block // WARP)
    if warps * WARP != threads_per_block:    # a last, partial warp: its missing lanes got nowhere
        pad = np.zeros((len(per_thread), warps * WARP - threads_per_block, counters), dtype=ordinals.dtype)
        per_thread = np.concatenate([per_thread, pad], axis=1)
    per_warp = per_thread.reshape(len(per_thread), warps, WARP, counters).max(axis=2)
    return per_warp.sum(axis=(0, 1), dtype=np.uint64)


@dataclass
class RawRun:
    launches: list[RawLaunch | None]
    rel_error: float
    checked_outputs: int
    device: str
    seconds: dict[str, float]
    # All of C after every block ran (whole_result), where it was asked for (the Playground's sandbox
    # job): a WholeResult, or why that run failed.
    whole: WholeResult | str | None = None


def _stored_elements(file: str, records: np.ndarray, name: str) -> np.ndarray:
    """Element indices of array `name` the records say were stored: a vector store (STG4) is one
    record for several consecutive elements, all of which are checked."""
    stores = [(k, s.width) for k, s in enumerate(sources.load(file).sites) if s.array == name and s.op == "store"]
    parts = []
    for width in sorted({w for _, w in stores}):
        first = records["index"][np.isin(records["site"], [k for k, w in stores if w == width])].astype(np.int64)
        parts.append(first if width == 1 else (first[:, None] + np.arange(width)).ravel())
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _check_bound(lp: LaunchPlan, counts: np.ndarray) -> None:
    """Refuses a launch one of whose threads counted more records than its TRACE_RECORDS declares: the
    host memory a trace may take is judged by that bound before anything runs (plan.check_fits_host),
    so a kernel that declared 1 a thread and made 15 M records had grown the server by 360 MB."""
    if lp.records_bound is None or not len(counts) or int(counts.max()) <= lp.records_bound:
        return
    slot, tpb = int(counts.argmax()), lp.block[0] * lp.block[1]
    (bx, by), t = lp.blocks[slot // tpb], slot % tpb
    src = sources.load(lp.file)
    line = next((i for i, code in enumerate(sources.code_lines(src.text), 1) if "TRACE_RECORDS" in code), 0)
    raise EngineError(f"{sources.at_line(src.path, line)}thread ({t % lp.block[0]}, {t // lp.block[0]}) of block ({bx}, {by}) made "
                      f"{int(counts[slot]):,} trace records, more than {lp.kernel}'s TRACE_RECORDS allows a thread "
                      f"({lp.records_bound:,} here)")


def execute(plan: TracePlan, device) -> RawRun:
    """device: upload(buffers), run(launch_plan, offsets, total) -> the count pass's counts, or the
    write pass's (records, ordinals: uint32 per slot and site counter), read(name, idx)."""
    check_fits_host(plan)
    a, b = make_inputs(plan.problem)
    shapes = global_shapes(plan.problem)
    device.upload({"A": a, "B": b}, shapes, size_arguments(plan.problem), plan.inputs)
    raws: list[RawLaunch | None] = []
    for lp in plan.launches:
        counts = device.run(lp, None, 0)
        if not lp.traced:
            raws.append(None)
            continue
        _check_bound(lp, counts)
        total = int(counts.sum(dtype=np.int64))
        if total > plan.cap:
            raise EngineError(f"this trace holds {total:,} records, over the cap of {plan.cap:,}: "
                              "trace fewer blocks or a smaller size")
        offsets = np.zeros(len(counts), dtype=np.uint64)
        np.cumsum(counts[:-1], out=offsets[1:])
        records, ordinals = device.run(lp, offsets, total)
        counters = sources.load(lp.file).counters
        raws.append(RawLaunch(counts, records, issued_per_site(ordinals, lp.block[0] * lp.block[1], counters)))
    # Check every output element the traced blocks stored against float64 numpy.
    last = raws[-1]
    stored = _stored_elements(plan.launches[-1].file, last.records, "C") if plan.check_outputs else np.zeros(0, np.int64)
    if len(stored):
        got = device.read("C", stored)
        err = reference.relative_error(got, reference.elements(a, b, stored, plan.problem.n))
    else:
        err = float("nan")
    return RawRun(raws, err, int(len(stored)), device.name, dict(device.seconds))


# What C starts as in whole_result: a NaN whose payload no arithmetic makes (a NaN a kernel computes is
# the default one, 0x7fc00000 or 0xffc00000, or carries an input NaN's payload, and the inputs have
# none), so an element still holding it was written by no block, and one a kernel wrote NaN to is
# told apart from it (it had been counted as unwritten).
UNWRITTEN = 0x7FC0DEAD


@dataclass
class WholeResult:
    """All of C after every block of the grid ran (whole_result)."""
    written: int       # elements of C some block wrote (C starts as NaN)
    total: int         # M x N
    rel_error: float   # of the written elements against float64 numpy (NaN: none written)


def whole_result(plan: TracePlan, device) -> WholeResult:
    """Runs every block of every launch of the plan for its result only (the count pass: nothing is
    recorded) on a C that starts as NaN (UNWRITTEN), and checks all of C against float64. A trace checks
    only the outputs its blocks stored, so a kernel that wrote 1 of its block's 256 outputs had passed
    as right: here an element no block writes keeps UNWRITTEN and is counted. (NaN, not zeros: a GPU's
    new memory holds whatever was there, so a kernel must write every element of C.)"""
    a, b = make_inputs(plan.problem)
    shapes = global_shapes(plan.problem)
    c = np.full(shapes["C"], UNWRITTEN, dtype=np.uint32).view(np.float32)
    device.upload({"A": a, "B": b, "C": c}, shapes, size_arguments(plan.problem), plan.inputs)
    for lp in plan.launches:
        counts = device.run(replace(lp, blocks=all_blocks(lp.grid), traced=False), None, 0)
        _check_bound(replace(lp, blocks=all_blocks(lp.grid)), counts)
    p = plan.problem
    got = np.ascontiguousarray(device.read("C", np.arange(p.m * p.n)), dtype=np.float32)
    idx = np.flatnonzero(got.view(np.uint32) != UNWRITTEN)
    err = (reference.relative_error(got[idx].astype(np.float64), reference.elements(a, b, idx, p.n)) if len(idx)
           else float("nan"))
    return WholeResult(int(len(idx)), p.m * p.n, err)
