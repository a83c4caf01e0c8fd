"""Nsight Compute's quantities, computed from a trace.

A warp-level instruction (ncu: one "request" into L1TEX for global memory, one executed shared
instruction) is one execution of one access site by the active lanes of one warp: the records that
share launch, block, warp, site and the thread's ordinal of that site.

Global memory (per request): sectors = distinct 32-byte sectors the active lanes touch; lines =
distinct 128-byte lines. Totals match l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum and
l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum.
Shared memory (per instruction): 32 banks of 4-byte words; lanes reading the same word share it
(broadcast); wavefronts = the most distinct words any one bank must serve; bank conflicts =
wavefronts beyond the ideal 1 of a 4-byte access. Totals match
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum and
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum, and the instruction count
smsp__inst_executed_op_shared_{ld,st}.sum, for the source-level accesses (see engine/sass.py for
where nvcc merges them into wider instructions; as_compiled() then gives the hardware counts).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from .trace import ELEMENT_BYTES, Trace

SECTOR_BYTES = 32
LINE_BYTES = 128
BANKS = 32
WARP = 32

INSTANCE_DTYPE = np.dtype([
    ("site", "u1"), ("launch", "u1"), ("block_x", "<u2"), ("block_y", "<u2"), ("warp", "u1"),
    ("ordinal", "<u4"), ("epoch", "<u2"), ("active", "u1"), ("sectors", "u1"), ("lines", "u1"),
    ("wavefronts", "u1"), ("first", "<i8"), ("seq", "<i8"),
])


def _distinct_per_row(table: np.ndarray) -> np.ndarray:
    """table: (rows, 32) of non-negative ids, -1 for inactive lanes; distinct ids per row."""
    s = np.sort(table, axis=1)
    valid = s >= 0
    return valid[:, 0].astype(np.int64) + ((s[:, 1:] != s[:, :-1]) & valid[:, 1:]).sum(axis=1)


def _wavefronts(words: np.ndarray) -> np.ndarray:
    """words: (rows, 32) 4-byte word addresses, -1 inactive. Most distinct words in one bank."""
    s = np.sort(words, axis=1)
    unique = s >= 0
    unique[:, 1:] &= s[:, 1:] != s[:, :-1]
    rows = np.broadcast_to(np.arange(len(s))[:, None], s.shape)
    per_bank = np.bincount((rows[unique] * BANKS + s[unique] % BANKS), minlength=len(s) * BANKS)
    return per_bank.reshape(len(s), BANKS).max(axis=1)


def _compact(keys: np.ndarray) -> tuple[int, np.ndarray]:
    """Dense ids 0..n-1 for the distinct keys (non-negative), in key order: (n, id per key)."""
    lo = keys.min()
    span = int(keys.max() - lo) + 1
    if span > 4 * len(keys) + 1024:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return len(uniq), inverse
    present = np.zeros(span, dtype=bool)
    present[keys - lo] = True
    ids = np.cumsum(present) - 1
    return int(present.sum()), ids[keys - lo]


def _site_instances(trace: Trace, s: int, warp_id: np.ndarray, seq: np.ndarray) -> np.ndarray | None:
    r = trace.columns
    idx = np.flatnonzero(r["site"] == s)
    if not len(idx):
        return None
    o = r["ordinal"][idx].astype(np.int64)
    w = warp_id[idx]
    n_rows, inverse = _compact(w * (int(o.max()) + 1) + o)
    offsets = r["offset"][idx]
    # 32-bit addresses halve the memory traffic of the per-row sorts; -1 marks an inactive lane.
    addr = np.full((n_rows, WARP), -1, dtype=np.int32 if offsets.max() < 2**31 else np.int64)
    addr[inverse, r["lane"][idx]] = offsets
    first = np.empty(n_rows, dtype=np.int64)
    first[inverse[::-1]] = idx[::-1]     # the last write wins: each row's first record
    inst = np.empty(n_rows, dtype=INSTANCE_DTYPE)
    for f in ("launch", "block_x", "block_y", "warp", "ordinal", "epoch"):
        inst[f] = r[f][first]
    inst["site"] = s
    inst["active"] = (addr >= 0).sum(axis=1)
    inst["first"] = first
    inst["seq"] = seq[first]
    if trace.sites[s].site.space == "global":
        inst["sectors"] = _distinct_per_row(np.where(addr >= 0, addr // SECTOR_BYTES, -1))
        inst["lines"] = _distinct_per_row(np.where(addr >= 0, addr // LINE_BYTES, -1))
        inst["wavefronts"] = 0
    else:
        inst["sectors"] = inst["lines"] = 0
        inst["wavefronts"] = _wavefronts(np.where(addr >= 0, addr // ELEMENT_BYTES, -1))
    return inst


def warp_instructions(trace: Trace) -> np.ndarray:
    """One INSTANCE_DTYPE row per warp-level instruction, in each warp's program order."""
    if not len(trace):
        return np.empty(0, dtype=INSTANCE_DTYPE)
    counts = trace.thread_counts
    warp_id = np.repeat(trace.thread_warp.astype(np.int64), counts)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    seq = np.arange(len(trace), dtype=np.int64) - np.repeat(starts, counts)
    # Sites are independent and numpy releases the GIL: one thread per site on big traces.
    work = lambda s: _site_instances(trace, s, warp_id, seq)  # noqa: E731
    if len(trace) > 200_000:
        with ThreadPoolExecutor(min(len(trace.sites), os.cpu_count() or 1)) as pool:
            parts = list(pool.map(work, range(len(trace.sites))))
    else:
        parts = [work(s) for s in range(len(trace.sites))]
    inst = np.concatenate([p for p in parts if p is not None])
    # Program order per warp: by the warp's first record, then its position in its thread's stream.
    order = np.lexsort((inst["seq"], warp_id[inst["first"]]))
    return inst[order]


def site_summary(trace: Trace, inst: np.ndarray | None = None) -> pd.DataFrame:
    """Per access site: requests, sectors (global) or wavefronts and conflicts (shared)."""
    inst = warp_instructions(trace) if inst is None else inst
    rows = []
    for s, ts in enumerate(trace.sites):
        mine = inst[inst["site"] == s]
        n = len(mine)
        row = {"site": s, "kernel": ts.kernel, "line": ts.site.line, "array": ts.site.array,
               "space": ts.site.space, "op": ts.site.op, "source": ts.site.text,
               "requests": n, "accesses": int(mine["active"].sum())}
        if ts.site.space == "global":
            sectors = int(mine["sectors"].sum())
            row.update(sectors=sectors, sectors_per_request=sectors / n if n else 0.0,
                       lines_per_request=float(mine["lines"].mean()) if n else 0.0)
        else:
            wf = int(mine["wavefronts"].sum())
            row.update(wavefronts=wf, bank_conflicts=wf - n, wavefronts_per_request=wf / n if n else 0.0,
                       conflict_ways_max=int(mine["wavefronts"].max()) if n else 0)
        rows.append(row)
    return pd.DataFrame(rows)


NCU_METRICS = {
    ("global", "load", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ("global", "load", "sectors"): "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    ("global", "store", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    ("global", "store", "sectors"): "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    ("shared", "load", "requests"): "smsp__inst_executed_op_shared_ld.sum",
    ("shared", "load", "wavefronts"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    ("shared", "load", "bank_conflicts"): "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    ("shared", "store", "requests"): "smsp__inst_executed_op_shared_st.sum",
    ("shared", "store", "wavefronts"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    ("shared", "store", "bank_conflicts"): "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
}


def ncu_totals(summary: pd.DataFrame, launch_kernel: str | None = None) -> dict[str, int]:
    """Whole-trace totals under Nsight Compute's metric names (optionally for one kernel of a pipeline)."""
    if launch_kernel is not None:
        summary = summary[summary["kernel"] == launch_kernel]
    out = {}
    for (space, op, col), metric in NCU_METRICS.items():
        part = summary[(summary["space"] == space) & (summary["op"] == op)]
        out[metric] = int(part[col].sum()) if col in part and len(part) else 0
    return out


VECTOR_WIDTH = {"LDS.128": 4}   # words per lane of the wide shared loads this model covers
HALF_WARP = 16


def _merged_site_totals(trace: Trace, s: int, width: int) -> dict | None:
    """Hardware totals of a shared-load site that nvcc compiled into `width`-word vector loads.

    `width` consecutive executions of the site by a thread (ordinals width*g .. width*g+width-1)
    are one vector instruction reading `width` consecutive, aligned words. As Nsight Compute counts
    them on sm_90: each half-warp is served separately, wavefronts = most distinct words in one
    bank, and the ideal is 4 wavefronts per 128-bit instruction (512 bytes at 128 per wavefront).
    Returns None when the records do not have that shape (the model then does not apply).
    """
    r = trace.columns
    idx = np.flatnonzero(r["site"] == s)
    if not len(idx):
        return None
    o = r["ordinal"][idx].astype(np.int64)
    words = (r["offset"][idx] // ELEMENT_BYTES).astype(np.int64)
    warp_id = np.repeat(trace.thread_warp.astype(np.int64), trace.thread_counts)[idx]
    group, part = np.divmod(o, width)
    n_rows, inverse = _compact(warp_id * (int(group.max()) + 1) + group)
    table = np.full((n_rows, WARP, width), -1, dtype=np.int64)
    table[inverse, r["lane"][idx], part] = words
    lanes = table.reshape(n_rows * WARP, width)
    active = lanes[:, 0] >= 0
    aligned = (lanes[active, 0] % width == 0) & (lanes[active] == lanes[active, :1] + np.arange(width)).all(axis=1)
    if not aligned.all():
        return None
    half = HALF_WARP * width
    flat = table.reshape(n_rows, WARP * width)
    wavefronts = _wavefronts(flat[:, :half]) + _wavefronts(flat[:, half:])
    ideal = 4
    return {"requests": n_rows, "wavefronts": int(wavefronts.sum()),
            "bank_conflicts": int(np.maximum(wavefronts - ideal, 0).sum()), "per_instruction": wavefronts}


def as_compiled(trace: Trace, sites: pd.DataFrame, sass_info: dict) -> tuple[pd.DataFrame, list[str], dict]:
    """The site table as the hardware executes it: shared-load sites that the SASS shows as
    vector loads get their hardware instruction, wavefront and conflict counts (what ncu reads).
    Also returns, per merged site, the wavefronts of each hardware instruction."""
    hw = sites.copy()
    notes, per_site = [], {}
    by_line = sass_info.get("by_line", {}) if sass_info.get("available") else {}
    for i, row in hw.iterrows():
        if row["space"] != "shared" or row["op"] != "load" or row["kernel"] != trace.launches[-1].kernel:
            continue
        ops = by_line.get(row["line"], {})
        wide = [op for op in ops if op in VECTOR_WIDTH]
        if not wide:
            continue
        if set(ops) != {wide[0]}:
            notes.append(f"line {row['line']}: mixed {', '.join(ops)}; hardware counts not modelled")
            continue
        totals = _merged_site_totals(trace, int(row["site"]), VECTOR_WIDTH[wide[0]])
        if totals is None:
            notes.append(f"line {row['line']}: {wide[0]} but the accesses are not consecutive words; not modelled")
            continue
        hw.loc[i, ["requests", "wavefronts", "bank_conflicts"]] = [totals[k] for k in ("requests", "wavefronts", "bank_conflicts")]
        hw.loc[i, "wavefronts_per_request"] = totals["wavefronts"] / max(totals["requests"], 1)
        per_site[int(row["site"])] = totals["per_instruction"]
        notes.append(f"line {row['line']} ({row['array']}): nvcc merged every {VECTOR_WIDTH[wide[0]]} reads into one "
                     f"{wide[0]}: {row['requests']:,} warp-level reads in the source are {totals['requests']:,} hardware instructions "
                     f"with {totals['wavefronts']:,} wavefronts")
    return hw, notes, per_site


def summarize(trace: Trace, sass_info: dict | None = None) -> dict:
    """The JSON-ready summary `python -m engine trace` prints."""
    inst = warp_instructions(trace)
    sites = site_summary(trace, inst)
    p = trace.problem
    hardware = {}
    if sass_info is not None:
        hw, notes, _ = as_compiled(trace, sites, sass_info)
        hardware = {"ncu": {k: ncu_totals(hw, k) for k in dict.fromkeys(hw["kernel"])}, "notes": notes,
                    "sass_note": sass_info.get("note", "")}
    return {
        "kernel": trace.kernel, "size": {"M": p.m, "N": p.n, "K": p.k}, "tile": p.tile, "pad": p.pad,
        "block": list(trace.launches[-1].block), "source": trace.source, "device": trace.device,
        "records": len(trace), "traced_blocks": int(len(trace.launches[-1].blocks)),
        "grid": list(trace.launches[-1].grid),
        "relative_error": trace.rel_error, "checked_outputs": trace.checked_outputs,
        "sites": sites.drop(columns=["source"]).to_dict(orient="records"),
        "ncu": {k: ncu_totals(sites, k) for k in dict.fromkeys(sites["kernel"])},
        "as_compiled": hardware,
        "seconds": {k: round(v, 4) for k, v in trace.timings.items()},
    }


def block_phases(trace: Trace, block_x: int, block_y: int, launch: int | None = None) -> pd.DataFrame:
    """What one block loads from global memory into shared memory, per barrier epoch.

    Tiled kernels alternate a load epoch 2p and a compute epoch 2p + 1: phase p = epoch // 2.
    Each row is one global load that feeds a shared store, with the element it read.
    """
    r = trace.columns
    launch = len(trace.launches) - 1 if launch is None else launch
    mine = trace.select((r["launch"] == launch) & (r["block_x"] == block_x) & (r["block_y"] == block_y)
                        & (r["space"] == 0) & (r["op"] == 0))
    df = pd.DataFrame({"epoch": mine["epoch"], "phase": mine["epoch"] // 2,
                       "array": [trace.arrays[a] for a in mine["array"]],
                       "row": mine["row"], "col": mine["col"],
                       "thread_x": mine["thread_x"], "thread_y": mine["thread_y"]})
    return df


def global_reads(trace: Trace) -> int:
    """Element reads from global memory (every lane's load counts)."""
    r = trace.columns
    return int(((r["space"] == 0) & (r["op"] == 0)).sum())
