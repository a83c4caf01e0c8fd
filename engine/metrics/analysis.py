"""Nsight Compute's quantities, computed from a trace.

A warp-level instruction (ncu: one "request" into L1TEX for global memory, one executed shared
instruction) is one execution of one access site by the active lanes of one warp: the records that
share launch, block, warp, site and the thread's ordinal of that site (its executions before, the
ones its guard skipped included: SKIP_LDG and SKIP_STG in cuda/trace.cuh).

Global memory (per request): sectors = distinct 32-byte sectors the active lanes touch (a cp.async's
per group of 8 lanes); lines = distinct 128-byte lines. Totals match l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum and
l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum.
Shared memory (per instruction): 32 banks of 4-byte words; lanes reading the same word share it
(broadcast); wavefronts = the most distinct words any one bank must serve; bank conflicts =
wavefronts beyond the ideal 1 of a 4-byte access. Totals match
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum and
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum, and the instruction count
smsp__inst_executed_op_shared_{ld,st}.sum, for the source-level accesses (see engine/kernels/sass.py for
where nvcc merges them into wider instructions; as_compiled() then gives the hardware counts).
ldmatrix (LDSM) is a shared load whose 8x8 matrices are served one by one: see _matrix_wavefronts
and NCU_LDSM_METRICS.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from engine import parallel
from engine.tracing.records import Trace

SECTOR_BYTES = 32
WORD_BYTES = 4      # a shared-memory bank serves one 4-byte word per wavefront
LINE_BYTES = 128
BANKS = 32
WARP = 32
HALF_WARP = 16
MATRIX_ROWS = 8         # ldmatrix: an 8x8 matrix of 16-bit elements, one 16-byte row (4 words) per
MATRIX_ROW_WORDS = 4    # lane that names it

INSTANCE_DTYPE = np.dtype([
    ("site", "u1"), ("launch", "u1"), ("block_x", "<u2"), ("block_y", "<u2"), ("warp", "u1"),
    ("ordinal", "<u4"), ("epoch", "<u2"), ("active", "u1"), ("sectors", "u1"), ("lines", "u1"),
    ("wavefronts", "u1"), ("ideal", "u1"), ("first", "<i8"), ("seq", "<i8"),
])


_PIECE = 1 << 16


def counts_of(values: np.ndarray, n: int) -> np.ndarray:
    """How many of `values` (a column of small codes: sites, warps, ...) are 0, 1, ... n-1. In
    pieces: np.bincount widens what it counts to 64 bits, which for a column of millions of
    one-byte records is a copy eight times its size."""
    out = np.zeros(n, dtype=np.int64)
    for i in range(0, len(values), _PIECE):
        out += np.bincount(values[i:i + _PIECE], minlength=n)
    return out


COPY_GROUP_LANES = 8   # lanes of a cp.async whose global reads are served together: 128 bytes


def _distinct_per_row(table: np.ndarray) -> np.ndarray:
    """table: (rows, 32) of non-negative ids, -1 for inactive lanes; distinct ids per row."""
    s = np.sort(table, axis=1)
    valid = s >= 0
    return valid[:, 0].astype(np.int64) + ((s[:, 1:] != s[:, :-1]) & valid[:, 1:]).sum(axis=1)


def _wavefronts(words: np.ndarray, banks: int = BANKS) -> np.ndarray:
    """words: (rows, lanes) 4-byte word addresses, -1 inactive. Most distinct words in one bank
    (of `banks`, a power of two: word w is in bank w % banks)."""
    lo, hi = words.min(axis=1), words.max(axis=1)
    # Words fewer than `banks` apart sit in distinct banks: one wavefront (none without an active
    # lane). Most rows are so (a broadcast, consecutive words); only the others are counted.
    out = (hi >= 0).astype(np.int64)
    spread = np.flatnonzero(hi - lo >= banks)
    if len(spread):
        out[spread] = _bank_counts(words[spread], banks)
    return out


def _bank_counts(words: np.ndarray, banks: int) -> np.ndarray:
    s = np.sort(words, axis=1)
    repeated = s < 0
    repeated[:, 1:] |= s[:, 1:] == s[:, :-1]
    # Each distinct word counts in its row's bank; repeated words and inactive lanes in a bin of their own.
    bins = np.arange(len(s))[:, None] * banks + (s & (banks - 1))
    bins[repeated] = len(s) * banks
    per_bank = np.bincount(bins.ravel(), minlength=len(s) * banks + 1)[:-1]
    return per_bank.reshape(len(s), banks).max(axis=1)


def _vector_wavefronts(words: np.ndarray, width: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """For each group of `lanes` lanes (words: (rows, 32), each lane's first word, -1 inactive) when
    every lane reads `width` consecutive words: the most distinct words in one bank, and the
    distinct words."""
    groups = words.reshape(-1, lanes)
    if ((groups < 0) | (groups % width == 0)).all():
        # Aligned to their size, as the GPU (and the CPU tracer) insist: a lane's words fill
        # `width` neighbouring banks, one word each, and two lanes' words meet in a bank exactly
        # when their width-word pieces do among BANKS / width banks of pieces. Count the pieces.
        pieces = groups // width
        return _wavefronts(pieces, BANKS // width), width * _distinct_per_row(pieces)
    each = np.where(groups[:, :, None] >= 0, groups[:, :, None] + np.arange(width, dtype=groups.dtype), -1)
    each = each.reshape(len(groups), lanes * width)
    return _wavefronts(each), _distinct_per_row(each)


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


def _paired(words: np.ndarray) -> np.ndarray:
    """Rows in which every lane n reads what lane n ^ 1 reads, or every lane what lane n ^ 2 reads
    (a lane that takes no part pairs with any)."""
    lanes = np.arange(WARP)
    out = np.zeros(len(words), dtype=bool)
    for x in (1, 2):
        partner = words[:, lanes ^ x]
        out |= ((words < 0) | (partner < 0) | (words == partner)).all(axis=1)
    return out


def served_lanes(words: np.ndarray, width: int, load: bool) -> np.ndarray:
    """Lanes served together, per row of words (each lane's first word, -1 inactive): 128 bytes'
    worth (32 lanes of 32 bits, 16 of 64, 8 of 128), twice as many for a load whose lanes pair up."""
    lanes = np.full(len(words), WARP // width, dtype=np.int64)
    if load and width > 1:
        lanes[_paired(words)] *= 2
    return lanes


def _wide_wavefronts(words: np.ndarray, width: int, load: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts of shared accesses `width` words wide per lane (words: each lane's first word, -1
    inactive), and the conflict-free count, as Nsight Compute counts them on sm_90.

    The warp is served in groups of lanes that move 128 bytes at most (16 lanes of 64 bits, 8 of
    128), each group the most distinct words any one bank serves; the conflict-free count is one
    wavefront per group with a lane in it. A load whose lanes read in pairs (lane n what lane n ^ 1
    or n ^ 2 reads) is served in groups twice as large. Measured pattern by pattern on an H100
    (tests/benchmarks/shared_patterns.py: 1,384 patterns, loads and stores 32, 64 and 128 bits
    wide, every one as this rule counts it)."""
    served = served_lanes(words, width, load)
    wavefronts = np.zeros(len(words), dtype=np.int64)
    ideal = np.zeros(len(words), dtype=np.int64)
    for lanes in np.unique(served).tolist():
        rows = served == lanes
        per_group, _ = _vector_wavefronts(words[rows], width, lanes)
        active = (words[rows].reshape(-1, lanes) >= 0).any(axis=1)
        wavefronts[rows] = per_group.reshape(-1, WARP // lanes).sum(axis=1)
        ideal[rows] = active.reshape(-1, WARP // lanes).sum(axis=1)
    return wavefronts, ideal


def _matrix_wavefronts(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts of ldmatrix instructions (words: each lane's first word of the 16-byte row it
    names, -1 for a lane that names none), and the conflict-free count.

    The model (the likeliest for sm_90: README, Metrics; tests/benchmarks/ncu_vector.py measures
    it): each 8x8 matrix, the 8 rows lanes 8m .. 8m + 7 name, is served on its own, as the most
    distinct words any one bank must serve for those 128 bytes; the instruction's wavefronts are its
    matrices' sum, the ideal one per matrix. Served by half-warps, as LDS.128 is, two matrices whose
    rows each fill half the banks twice would share 2 wavefronts; here they need 4."""
    per_matrix, _ = _vector_wavefronts(words, MATRIX_ROW_WORDS, MATRIX_ROWS)
    per_matrix = per_matrix.reshape(len(words), WARP // MATRIX_ROWS)
    return per_matrix.sum(axis=1), (per_matrix > 0).sum(axis=1)


def _fill_metrics(inst: np.ndarray, addr: np.ndarray, is_global: np.ndarray, width: np.ndarray,
                  matrix: np.ndarray, is_load: np.ndarray | None = None, copy: np.ndarray | None = None) -> None:
    """addr: (rows, 32) byte offsets of each row's lanes (their first byte), -1 for an inactive lane;
    width: 4-byte words per lane of each row's access (1 for 4 bytes or less, 2 for 64-bit, 4 for
    128-bit); matrix: the rows that are ldmatrix instructions; copy: the rows that are cp.async. A
    lane's aligned access of up to 16 bytes lies in one 32-byte sector and one 128-byte line, so a
    global access's sectors and lines are those of its first bytes whatever its width."""
    inst["active"] = (addr >= 0).sum(axis=1)
    inst["sectors"] = inst["lines"] = inst["wavefronts"] = inst["ideal"] = 0
    copy = np.zeros(len(inst), dtype=bool) if copy is None else copy
    g = addr[is_global]
    if len(g):
        sectors = np.where(g >= 0, g // SECTOR_BYTES, -1)
        inst["sectors"][is_global] = _distinct_per_row(sectors)
        inst["lines"][is_global] = _distinct_per_row(np.where(g >= 0, g // LINE_BYTES, -1))
        # cp.async (LDGSTS, 16 bytes a lane) reads global memory 8 lanes (128 bytes) at a time, and
        # each group's sectors are counted on their own: a sector two groups touch counts twice.
        # Measured on an H100 and an H200 (tests/test_ncu_reference.py): 256-byte rows starting 16
        # bytes into a sector, 9 sectors a row by distinct count, are 10 in l1tex__t_sectors for
        # LDGSTS and 9 for LDG.128 of the same rows.
        grouped = np.flatnonzero(is_global)[copy[is_global]]
        if len(grouped):
            per_group = _distinct_per_row(sectors[copy[is_global]].reshape(-1, COPY_GROUP_LANES))
            inst["sectors"][grouped] = per_group.reshape(len(grouped), -1).sum(axis=1)
    if matrix.any():
        inst["wavefronts"][matrix], inst["ideal"][matrix] = _matrix_wavefronts(
            np.where(addr[matrix] >= 0, addr[matrix] // WORD_BYTES, -1))
    is_load = np.ones(len(inst), dtype=bool) if is_load is None else is_load
    for w in np.unique(width[~is_global & ~matrix]).tolist():
        for load in (True, False):
            rows = ~is_global & ~matrix & (width == w) & (is_load == load)
            if not rows.any():
                continue
            words = np.where(addr[rows] >= 0, addr[rows] // WORD_BYTES, -1)
            # Conflict-free: 1 wavefront for 4 bytes a lane.
            inst["wavefronts"][rows], inst["ideal"][rows] = (_wavefronts(words), 1) if w == 1 else \
                _wide_wavefronts(words, w, load)


def _uniform_rows(trace: Trace, first_thread: int, warps: int, c: int, j0: int, j1: int, addr_dtype) -> tuple:
    """Instructions j0..j1-1 of `warps` consecutive warps, from thread first_thread on, whose 32
    threads each made c records. Returns the rows, and per warp whether its lanes made the same
    (site, ordinal) sequence there (the rows of a warp that did not are not its instructions).

    In such a warp instruction j is record j of every lane: its lanes' records sit c apart, and
    the warps' records are one run of the trace, so the rows are a reshape of it, with no grouping
    by key (almost every warp of these kernels)."""
    r = trace.columns
    start = int(trace.thread_starts()[first_thread])
    span = slice(start, start + warps * WARP * c)
    site, ordinal, offset = (r[f][span].reshape(warps, WARP, c)[:, :, j0:j1] for f in ("site", "ordinal", "offset"))
    same = (site == site[:, :1]).all(axis=(1, 2)) & (ordinal == ordinal[:, :1]).all(axis=(1, 2))
    addr = np.empty((warps, j1 - j0, WARP), dtype=addr_dtype)
    addr[...] = offset.transpose(0, 2, 1)        # lanes side by side: one row per instruction
    first = (start + np.arange(warps) * (WARP * c))[:, None] + np.arange(j0, j1)   # lane 0's records
    seq = np.broadcast_to(np.arange(j0, j1, dtype=np.int64), first.shape)
    return first.ravel(), seq.ravel(), addr.reshape(-1, WARP), same


def _grouped_rows(trace: Trace, threads: np.ndarray, addr_dtype) -> list[tuple]:
    """Rows of any warps (the given threads), grouped by (site, warp, ordinal): per site, in the
    order of warp, then ordinal."""
    r = trace.columns
    counts = trace.thread_counts[threads].astype(np.int64)
    total = int(counts.sum())
    if not total:
        return []
    tstart = trace.thread_starts()[threads]
    before = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=before[1:])
    pos = np.arange(total, dtype=np.int64)
    seq_all = pos - np.repeat(before, counts)
    rec = np.repeat(tstart, counts) + seq_all
    warp_all = np.repeat(trace.thread_warp[threads].astype(np.int64), counts)
    site_all = r["site"][rec]
    parts = []
    for s in range(len(trace.sites)):
        sel = np.flatnonzero(site_all == s)
        if not len(sel):
            continue
        idx, w = rec[sel], warp_all[sel]
        o = r["ordinal"][idx].astype(np.int64)
        n_rows, inverse = _compact(w * (int(o.max()) + 1) + o)
        addr = np.full((n_rows, WARP), -1, dtype=addr_dtype)
        addr[inverse, r["lane"][idx]] = r["offset"][idx]
        first = np.empty(n_rows, dtype=np.int64)
        first[inverse[::-1]] = sel[::-1]     # the last write wins: each row's first record
        parts.append((rec[first], seq_all[first], addr, warp_all[first]))
    return parts


def _rows(trace: Trace, first: np.ndarray, seq: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """INSTANCE_DTYPE rows of a batch of instructions: each row's first record, and its metrics."""
    r = trace.columns
    inst = np.empty(len(first), dtype=INSTANCE_DTYPE)
    for f in ("site", "launch", "block_x", "block_y", "warp", "ordinal", "epoch"):
        inst[f] = r[f][first]
    inst["first"] = first
    inst["seq"] = seq
    space = np.array([ts.site.space == "global" for ts in trace.sites], dtype=bool)
    width = np.array([max(1, ts.site.bytes // WORD_BYTES) for ts in trace.sites], dtype=np.int64)
    matrix = np.array([ts.site.matrices > 0 for ts in trace.sites], dtype=bool)
    load = np.array([ts.site.op == "load" for ts in trace.sites], dtype=bool)
    copy = np.array([ts.site.copy for ts in trace.sites], dtype=bool)
    site = inst["site"]
    _fill_metrics(inst, addr, space[site], width[site], matrix[site], load[site], copy[site])
    return inst


# Records per batch of uniform warps: the batches share out over the cores, and their temporaries
# stay in a core's cache (and under the size the app hands back to the system at once, memo.py).
_UNIFORM_CHUNK = 1 << 16


def _uniform_batches(which: np.ndarray, c: int) -> list[tuple[int, int, int, int]]:
    """(first warp, warps, j0, j1) pieces of about _UNIFORM_CHUNK records that cover instructions
    0..c-1 of the warps `which` (ascending), each piece of consecutive warps."""
    pieces = []
    per_warp = WARP * c
    for run in np.split(which, np.flatnonzero(np.diff(which) != 1) + 1):
        if per_warp >= _UNIFORM_CHUNK:     # long warps: a piece is part of one warp's instructions
            step = max(1, _UNIFORM_CHUNK // WARP)
            pieces += [(int(w), 1, j, min(j + step, c)) for w in run for j in range(0, c, step)]
        else:
            step = _UNIFORM_CHUNK // per_warp
            pieces += [(int(run[lo]), len(run[lo:lo + step]), 0, c) for lo in range(0, len(run), step)]
    return pieces


def warp_instructions(trace: Trace) -> np.ndarray:
    """One INSTANCE_DTYPE row per warp-level instruction, in each warp's program order.

    A row is one execution of one site by a warp: the records of (launch, block, warp, site,
    ordinal). Warps whose lanes all ran the same sequence of sites are cut into rows directly;
    the others (divergent edge warps, partial warps) are grouped by key. Batches of warps are
    measured on every core (engine/parallel.py)."""
    if not len(trace):
        return np.empty(0, dtype=INSTANCE_DTYPE)
    r = trace.columns
    counts, tw = trace.thread_counts, trace.thread_warp
    # 32-bit addresses halve the memory traffic of the per-row sorts; -1 marks an inactive lane.
    addr_dtype = np.int32 if int(r["offset"].max()) < 2**31 else np.int64
    warp_first = np.flatnonzero(np.r_[True, tw[1:] != tw[:-1]])     # each warp's first thread
    size = np.diff(np.r_[warp_first, len(tw)])
    cmin = np.minimum.reduceat(counts, warp_first)
    cmax = np.maximum.reduceat(counts, warp_first)
    candidates = (size == WARP) & (cmin == cmax) & (cmin > 0)
    batches = [(piece, c) for c in np.unique(cmin[candidates]).tolist()
               for piece in _uniform_batches(np.flatnonzero(candidates & (cmin == c)), c)]

    def uniform(batch):
        (w, warps, j0, j1), c = batch
        first, seq, addr, same = _uniform_rows(trace, int(warp_first[w]), warps, c, j0, j1, addr_dtype)
        return _rows(trace, first, seq, addr), np.repeat(np.arange(w, w + warps), j1 - j0), w + np.flatnonzero(~same)

    done = parallel.each(uniform, batches)
    uniform_warps = candidates.copy()
    for _, _, mixed in done:
        uniform_warps[mixed] = False
    # (rows, warp of each row: its number in the trace) of every batch; a warp any of whose
    # instructions was mixed is grouped by key instead, all of its rows.
    parts = [(inst[keep], tw[warp_first[ws[keep]]].astype(np.int64))
             for inst, ws, _ in done for keep in [uniform_warps[ws]]]
    if not uniform_warps.all():
        rest = np.flatnonzero(~uniform_warps)
        threads = np.concatenate([np.arange(warp_first[w], warp_first[w] + size[w]) for w in rest])
        parts += [(_rows(trace, first, seq, addr), warps)
                  for first, seq, addr, warps in _grouped_rows(trace, threads, addr_dtype)]
    inst = np.concatenate([p[0] for p in parts])
    warps = np.concatenate([p[1] for p in parts])
    # Program order per warp: by the warp's first record, then its position in its thread's stream.
    # Only rows of one divergent warp can tie; they keep the grouped order (site, then ordinal).
    # Uniform warps come out of their batches in that order already: then there is nothing to sort.
    step_warp, step_seq = np.diff(warps), np.diff(inst["seq"])
    if ((step_warp > 0) | ((step_warp == 0) & (step_seq >= 0))).all():
        return inst
    return inst[np.lexsort((inst["seq"], warps))]


def site_summary(trace: Trace, inst: np.ndarray | None = None) -> pd.DataFrame:
    """Per access site: requests, sectors (global) or wavefronts and conflicts (shared)."""
    inst = warp_instructions(trace) if inst is None else inst
    rows = []
    for s, ts in enumerate(trace.sites):
        mine = inst[inst["site"] == s]
        n = len(mine)
        row = {"site": s, "kernel": ts.kernel, "line": ts.site.line, "array": ts.site.array,
               "space": ts.site.space, "op": ts.site.op, "copy": ts.site.copy, "zfill": ts.site.zfill,
               "matrices": ts.site.matrices,
               "source": ts.site.text,
               # off: issues with every lane predicated off (SKIPs), which no record shows
               "requests": n, "off": max(0, trace.issued.get(s, n) - n), "accesses": int(mine["active"].sum())}
        if ts.site.space == "global":
            sectors = int(mine["sectors"].sum())
            row.update(sectors=sectors, sectors_per_request=sectors / n if n else 0.0,
                       lines_per_request=float(mine["lines"].mean()) if n else 0.0)
        else:
            wf = int(mine["wavefronts"].sum())
            ideal = int(mine["ideal"].sum())
            row.update(wavefronts=wf, bank_conflicts=wf - ideal, wavefronts_per_request=wf / n if n else 0.0,
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


# Asynchronous copies (cp.async, LDGSTS): on sm_90 Nsight Compute counts a copy's global read with
# the global loads (its requests and sectors are in the op_ld totals, measured on an H100), and the
# copy itself as an LDGSTS instruction, with the bank conflicts of its shared write apart.
NCU_COPY_METRICS = {
    ("global", "load", "requests"): "sm__sass_inst_executed_op_ldgsts.sum",
    ("shared", "store", "bank_conflicts"): "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
}


# ldmatrix (LDSM): Nsight Compute's own rule for shared-memory bank conflicts (its
# sections/SharedMemoryConflicts.py) takes, on sm_75 and later, the shared loads' requests as
# smsp__sass_inst_executed_op_shared_ld + smsp__inst_executed_op_ldsm and their wavefronts and bank
# conflicts from l1tex__..._mem_shared_op_ld: an LDSM's wavefronts and conflicts are in the op_ld
# totals, its instructions are counted apart. These count LDSM alone.
NCU_LDSM_METRICS = {
    ("shared", "load", "requests"): "smsp__inst_executed_op_ldsm.sum",
    ("shared", "load", "wavefronts"): "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    ("shared", "load", "bank_conflicts"): "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
}


def ncu_totals(summary: pd.DataFrame, launch_kernel: str | None = None) -> dict[str, int]:
    """Whole-trace totals under Nsight Compute's metric names (optionally for one kernel of a pipeline)."""
    # A summary is a row per access site: plain Python over its rows is a hundred times faster than
    # the same selections in pandas, which the Ladder pays for every rung it counts.
    columns = set(summary.columns)
    rows = [r for r in summary.to_dict("records") if launch_kernel is None or r["kernel"] == launch_kernel]
    copy = [bool(r.get("copy", 0)) for r in rows]
    ldsm = [r.get("matrices", 0) > 0 for r in rows]
    out = {}
    # A copy's shared write is no STS; its global read is a load as ncu counts them. An ldmatrix is
    # a shared load to the l1tex counters, but no shared-load instruction.
    for metrics, chosen in ((NCU_METRICS, [not (c and r["space"] == "shared") for r, c in zip(rows, copy)]),
                            (NCU_COPY_METRICS, copy), (NCU_LDSM_METRICS, ldsm)):
        for (space, op, col), metric in metrics.items():
            # smsp__inst_executed counts what the warps issued, an instruction whose lanes were all
            # predicated off too; the l1tex and sass_inst counters count only what some lane did.
            # (An LDSM too: mma_pipelined's reads of a next tile that its last tile does not have.)
            issued = (metrics is NCU_LDSM_METRICS or metrics is NCU_METRICS and space == "shared") and col == "requests" \
                and "off" in columns
            # A zero-filling cp.async has no lane off: where every lane zero-fills, no record shows it,
            # yet sm__sass_inst_executed_op_ldgsts counts it (measured on an H100: 8 of 8 such copies).
            zfilled = metrics is NCU_COPY_METRICS and col == "requests" and "off" in columns
            part = [r for r, take, m in zip(rows, chosen, ldsm) if take and r["space"] == space and r["op"] == op
                    and not (m and metric == NCU_METRICS["shared", "load", "requests"])]
            if metrics is not NCU_METRICS and not part:
                continue   # no copies (ldmatrix): nothing to say (and nothing ncu_compare.py asks for)
            out[metric] = int(sum(v + (r["off"] if issued or (zfilled and r.get("zfill")) else 0) for r in part
                                  if (v := r[col]) is not None and v == v)) if col in columns else 0
    return out


VECTOR_WIDTH = {"LDS.64": 2, "LDS.128": 4}   # words per lane of the wide shared loads this model covers


def merged_rows(trace: Trace, s: int, width: int) -> np.ndarray | None:
    """The hardware instructions of a shared-load site that nvcc compiled into `width`-word vector
    loads: (rows, 32) of each lane's first word, -1 for a lane that takes no part.

    nvcc merges a thread's reads of `width` consecutive, aligned words into one instruction when
    the unrolled code reads all of them, in whatever order (blocktile_1d reads As[row + m][k] with
    m fastest: the reads of k and k + 1 are TM reads apart, and still one LDS.64). So a thread's
    records of the site are grouped by barrier epoch and aligned piece of `width` words; each piece
    must be read whole, once. A thread's pieces, in the order of their first read, are its
    instructions; the i-th of every lane of a warp is the warp's i-th instruction. Returns None when
    the records do not have that shape (the model then does not apply)."""
    key = ("merged_rows", s, width)
    if key not in trace.derived:      # asked for by the Ladder's counts and by the totals alike
        trace.derived[key] = _merged_rows(trace, s, width)
    return trace.derived[key]


def _merged_rows(trace: Trace, s: int, width: int) -> np.ndarray | None:
    r = trace.columns
    mask = r["site"] == s
    idx = np.flatnonzero(mask)
    if not len(idx):
        return None
    # Records per thread at the site (the records are in thread order; a thread with none adds 0).
    counts = trace.thread_counts.astype(np.int64)
    per_thread = np.zeros(len(counts), dtype=np.int64)
    some = counts > 0
    per_thread[some] = np.add.reduceat(mask, trace.thread_starts()[:-1][some], dtype=np.int64)
    words = (r["offset"][idx] // WORD_BYTES).astype(np.int32)
    epoch = r["epoch"][idx]
    fast = _merged_rows_alike(trace, np.flatnonzero(per_thread), per_thread[per_thread > 0], words, epoch, width)
    if fast is not None:
        return fast
    thread = np.repeat(np.arange(len(per_thread)), per_thread)
    words, epoch = words.astype(np.int64), epoch.astype(np.int64)
    ordinal = r["ordinal"][idx].astype(np.int64)
    # One integer key per record, (thread, epoch) above the word (shared memory has under 2^17 words):
    # a stable sort by it keeps each word's reads in program order, which is all the grouping needs.
    word_bits = 17
    if words.max() >= 1 << word_bits:
        return None
    outer = thread * (int(epoch.max()) + 1) + epoch
    key = outer << word_bits | words
    order = np.argsort(key, kind="stable")
    k = key[order]
    repeated = np.r_[False, k[1:] == k[:-1]]
    if repeated.any():
        # A word read again in the same epoch is the next instruction's: its occurrence tells them apart.
        run_start = np.flatnonzero(~repeated)
        occurrence = np.arange(len(k)) - np.repeat(run_start, np.diff(np.r_[run_start, len(k)]))
        occ = np.empty(len(k), dtype=np.int64)
        occ[order] = occurrence
        key = (outer * (int(occurrence.max()) + 1) + occ) << word_bits | words
        order = np.argsort(key, kind="stable")
        k = key[order]
    shift = int(width).bit_length() - 1          # width is 2 or 4: the piece is the word >> shift
    new = np.r_[True, (k[1:] >> shift) != (k[:-1] >> shift)]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, len(k)])
    within = np.arange(len(k)) - np.repeat(starts, sizes)
    w = k & ((1 << word_bits) - 1)
    if (sizes != width).any() or (w != ((w >> shift) << shift) + within).any():
        return None
    first_ordinal = np.minimum.reduceat(ordinal[order], starts)
    g_thread = thread[order][starts]
    rank_order = np.argsort(g_thread << 32 | first_ordinal, kind="stable")
    g_thread, g_word = g_thread[rank_order], w[starts][rank_order]
    t_first = np.flatnonzero(np.r_[True, g_thread[1:] != g_thread[:-1]])
    rank = np.arange(len(g_thread)) - np.repeat(t_first, np.diff(np.r_[t_first, len(g_thread)]))
    warp_id = trace.thread_warp[g_thread].astype(np.int64)
    n_rows, inverse = _compact(warp_id * (int(rank.max()) + 1) + rank)
    lane = r["lane"][trace.thread_starts()[g_thread]]
    rows = np.full((n_rows, WARP), -1, dtype=np.int32)
    rows[inverse, lane] = g_word
    return rows


def _merged_rows_alike(trace: Trace, threads: np.ndarray, per: np.ndarray, words: np.ndarray,
                       epoch: np.ndarray, width: int) -> np.ndarray | None:
    """merged_rows when every thread read the site alike (the common case, and the whole of a large
    block): the same number of times, in the same epochs, and its reads grouping into aligned runs
    the way the first thread's do. Then the first thread's grouping is every thread's, checked with
    a few passes over the records instead of sorting them. None when they do not read alike.
    threads: the threads that read the site, in order; per: how many times each did."""
    n = int(per[0])
    if (per != n).any() or n % width:
        return None
    w = words.reshape(len(threads), n)
    e = epoch.reshape(len(threads), n)
    if (e != e[:1]).any():
        return None
    # The first thread's grouping: by epoch, then how often it had read the word, then the word.
    w0, e0 = w[0].astype(np.int64), e[0].astype(np.int64)
    by_word = np.lexsort((np.arange(n), w0, e0))          # each (epoch, word)'s reads in program order
    again = np.r_[False, (w0[by_word][1:] == w0[by_word][:-1]) & (e0[by_word][1:] == e0[by_word][:-1])]
    run_start = np.flatnonzero(~again)
    occurrence = np.empty(n, dtype=np.int64)
    occurrence[by_word] = np.arange(n) - np.repeat(run_start, np.diff(np.r_[run_start, n]))
    perm = np.lexsort((w0, w0 // width, occurrence, e0))
    groups = w[:, perm].reshape(len(threads), n // width, width)
    first = groups[:, :, 0]
    if (first % width).any() or (groups != first[:, :, None] + np.arange(width, dtype=w.dtype)).any():
        return None
    order = np.argsort(perm.reshape(-1, width).min(axis=1), kind="stable")   # by each group's first read
    first = first[:, order]
    starts = trace.thread_starts()[threads]
    lane = trace.columns["lane"][starts].astype(np.int64)
    warp_id = trace.thread_warp[threads].astype(np.int64)
    n_warps, warp_row = _compact(warp_id)
    rows = np.full((n_warps * first.shape[1], WARP), -1, dtype=np.int32)
    rows[(warp_row[:, None] * first.shape[1] + np.arange(first.shape[1])).ravel(), np.repeat(lane, first.shape[1])] = first.ravel()
    return rows


def _merged_site_totals(trace: Trace, s: int, width: int) -> dict | None:
    """Hardware totals of a shared-load site that nvcc compiled into `width`-word vector loads."""
    rows = merged_rows(trace, s, width)
    if rows is None:
        return None
    wavefronts, ideal = _wide_wavefronts(rows, width)
    return {"requests": len(rows), "wavefronts": int(wavefronts.sum()),
            "bank_conflicts": int(np.maximum(wavefronts - ideal, 0).sum()), "per_instruction": wavefronts}


def merged_sites(trace: Trace, sass_info: dict) -> dict[int, str]:
    """The scalar shared-load sites of the main launch whose source line the SASS shows as a wider
    load (nvcc merged them), with that opcode: site -> 'LDS.64' or 'LDS.128'."""
    by_line = sass_info.get("by_line", {}) if sass_info.get("available") else {}
    return {i: op for i, ts in enumerate(trace.sites)
            if ts.site.space == "shared" and ts.site.op == "load" and ts.site.width == 1
            and ts.kernel == trace.launches[-1].kernel
            for op in by_line.get(ts.site.line, {}) if op in VECTOR_WIDTH}


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
        if trace.sites[int(row["site"])].site.width > 1:
            continue   # written as a 128-bit load (LDS4): the trace already counts it as one
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


def compiled_totals(trace: Trace, sites: pd.DataFrame, sass_info: dict,
                    earlier: Mapping[str, dict] | None = None) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per launch kernel, the totals Nsight Compute reads, as the hardware executes the kernel:
    as_compiled's sites, and the instructions ptxas emitted that never execute but that the warp
    issues all the same (`@!PT LDS` beside each LDGSTS: counted among the executed shared loads).
    sass_info: the last launch's listing; earlier: the listings of the launches before it, by kernel
    name (sass.earlier_listings), where those copy with cp.async too (split_k's product, then its sum)."""
    hw, notes, _ = as_compiled(trace, sites, sass_info)
    return hardware_totals(trace, hw, notes, sass_info, earlier)


def hardware_totals(trace: Trace, hw: pd.DataFrame, notes: list[str], sass_info: dict,
                    earlier: Mapping[str, dict] | None = None) -> tuple[dict[str, dict[str, int]], list[str]]:
    """compiled_totals from a site table already read as compiled (as_compiled's hw and notes)."""
    notes = list(notes)
    totals = {k: ncu_totals(hw, k) for k in dict.fromkeys(hw["kernel"])}
    listings = {**(earlier or {}), trace.launches[-1].kernel: sass_info}
    for kernel, info in listings.items():
        never = info.get("never_per_copy", {}) if info.get("available") else {}
        by_line = info.get("never_per_copy_line", {}) if info.get("available") else {}
        # Before every run of LDGSTS a warp issues, its lanes all predicated off or not: per copy of
        # the run's source line where the listing places them so, else per copy of the kernel.
        copying = hw[(hw["kernel"] == kernel) & hw["copy"].astype(bool) & (hw["space"] == "global")]
        issued = copying["requests"] + (copying["off"] if "off" in hw.columns else 0)
        copies = int(issued.sum())
        if by_line and set(copying["line"]) <= set(by_line):
            extra = round(sum(n * by_line[ln].get("LDS", 0) for ln, n in zip(copying["line"], issued)))
        else:
            extra = round(never.get("LDS", 0) * copies)
        if copies and extra:
            totals[kernel][NCU_METRICS["shared", "load", "requests"]] += extra
            notes.append(f"{kernel}: ptxas put never-executing loads (@!PT LDS) before its runs of LDGSTS, "
                         f"{extra / copies:.3g} per copy here: the warps issue them, so Nsight Compute counts "
                         f"{extra:,} more shared-load instructions")
    return totals, notes


def summarize(trace: Trace, sass_info: dict | None = None, earlier: Mapping[str, dict] | None = None) -> dict:
    """The JSON-ready summary `python -m engine trace` prints."""
    inst = warp_instructions(trace)
    sites = site_summary(trace, inst)
    p = trace.problem
    hardware = {}
    if sass_info is not None:
        totals, notes = compiled_totals(trace, sites, sass_info, earlier)
        hardware = {"ncu": totals, "notes": notes, "sass_note": sass_info.get("note", "")}
    return {
        "kernel": trace.kernel, "size": {"M": p.m, "N": p.n, "K": p.k}, "params": dict(p.params),
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
    block = trace.block_columns(block_x, block_y, launch)
    mine = {k: v[(block["space"] == 0) & (block["op"] == 0)] for k, v in block.items()}
    df = pd.DataFrame({"epoch": mine["epoch"], "phase": mine["epoch"] // 2,
                       "array": [trace.arrays[a] for a in mine["array"]],
                       "row": mine["row"], "col": mine["col"],
                       "thread_x": mine["thread_x"], "thread_y": mine["thread_y"]})
    return df


def global_reads(trace: Trace) -> int:
    """Element reads from global memory (every lane's load counts)."""
    return int(((trace.spaces() == 0) & (trace.columns["op"] == 0)).sum())
