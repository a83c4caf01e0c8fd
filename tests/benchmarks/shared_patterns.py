"""How many wavefronts does one shared-memory instruction take? Measured pattern by pattern.

The trace's bank model (engine/metrics/analysis.py) is held to Nsight Compute here, one warp and one
instruction per launch (tests/benchmarks/shared_patterns.cu): every lane -> word pattern that the
traced kernels execute at the pages' settings (their 32-bit accesses, and the 64- and 128-bit ones,
written so or merged by nvcc), and structured and random ones (broadcast groups, strides, partial
warps), each loaded and stored 32, 64 and 128 bits wide.

    python3 tests/benchmarks/shared_patterns.py make PATTERNS.bin        (any machine: traces on the CPU)
    python3 tests/benchmarks/shared_patterns.py measure PATTERNS.bin OUT.json   (GPU machine with ncu)
"""
from __future__ import annotations

import csv
import io
import json
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WORDS = 8192   # shared_patterns.cu's array
METRICS = ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
           "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"]


def normalized(words: np.ndarray, width: int) -> tuple | None:
    """The pattern moved down by a multiple of 32 words (banks unchanged), if it fits the array."""
    active = words[words >= 0]
    if not len(active):
        return None
    base = int(active.min()) // 32 * 32
    out = np.where(words >= 0, words - base, -1)
    if out.max() + width > WORDS:
        return None
    return tuple(int(v) for v in out)


def kernel_patterns() -> set[tuple]:
    from engine.kernels import registry, sass
    from engine.kernels.problem import make_problem
    from engine.metrics import analysis
    from engine.tracing import tracer
    found = set()
    configs = []
    for spec in registry.traceable():
        for params in (spec.combinations() if "TILE" in spec.params else [{}]):
            for size in ((64, 64, 64), (131, 67, 77)):
                configs.append((spec.name, size, params))
    for kernel, size, params in configs:
        spec = registry.get(kernel)
        try:
            t = tracer.trace(kernel, make_problem(*size, block=spec.default_block, params=params), source="cpu")
        except Exception as exc:   # a size the kernel refuses
            print(f"skip {kernel} {size}: {exc}", file=sys.stderr)
            continue
        info = sass.memory_instructions(spec.launches[-1].file, t.problem.params)
        r = t.columns
        warp = t.thread_warp[np.searchsorted(t.thread_starts(), np.arange(len(t)), side="right") - 1].astype(np.int64)
        for s, ts in enumerate(t.sites):
            if ts.site.space != "shared" or ts.site.matrices or ts.site.copy:
                continue
            kind = 0 if ts.site.op == "load" else 1
            width = max(1, ts.site.bytes // 4)
            ops = info.get("by_line", {}).get(ts.site.line, {})
            merged = [analysis.VECTOR_WIDTH[op] for op in ops if op in analysis.VECTOR_WIDTH]
            rows = None
            if kind == 0 and width == 1 and merged and ts.kernel == t.launches[-1].kernel:
                rows, width = analysis.merged_rows(t, s, merged[0]), merged[0]
            if rows is None:
                width = max(1, ts.site.bytes // 4)
                sel = np.flatnonzero(r["site"] == s)
                key = warp[sel] * (int(r["ordinal"][sel].max()) + 1) + r["ordinal"][sel]
                uniq, inv = np.unique(key, return_inverse=True)
                rows = np.full((len(uniq), 32), -1, dtype=np.int64)
                rows[inv, r["lane"][sel]] = r["offset"][sel] // 4
            for row in np.unique(rows, axis=0):
                p = normalized(row, width)
                if p is not None:
                    found.add((kind, width, p))
        print(f"{kernel} {size} {params}: {len(found)} patterns so far", file=sys.stderr)
    return found


def synthetic(rng: np.random.Generator) -> set[tuple]:
    out = set()
    lanes = np.arange(32)
    for kind in (0, 1):
        for width in (1, 2, 4):
            for group in (1, 2, 4, 8, 16, 32):            # lanes sharing one address
                for stride in (1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33):   # between groups, in pieces
                    for interleaved in (False, True):     # groups of neighbours, or lane % groups
                        g = lanes % (32 // group) if interleaved else lanes // group
                        out.add((kind, width, normalized(g * stride * width, width)))
            for pair in (1, 2, 4, 8, 16):                 # lane n and n ^ pair read the same piece
                for stride in (1, 2, 3, 4, 8, 32):
                    out.add((kind, width, normalized((lanes & ~pair) * stride * width, width)))
            for _ in range(40):                            # random pieces, some lanes off
                words = rng.integers(0, 256, 32) * width
                words[rng.random(32) < rng.choice([0.0, 0.3])] = -1
                p = normalized(words, width)
                if p is not None:
                    out.add((kind, width, p))
            for _ in range(20):                            # few distinct pieces, shuffled over the lanes
                words = rng.choice(rng.integers(0, 64, rng.integers(2, 9)), 32) * width
                out.add((kind, width, normalized(words, width)))
    return {p for p in out if p[2] is not None}


def make(path: str) -> None:
    patterns = sorted(kernel_patterns() | synthetic(np.random.default_rng(7)))
    with open(path, "wb") as f:
        f.write(struct.pack("<i", len(patterns)))
        for kind, width, words in patterns:
            f.write(struct.pack("<34i", kind, width, *words))
    print(f"{len(patterns)} patterns -> {path}")


def measure(path: str, out_path: str) -> None:
    from tests.benchmarks.ncu_compare import ncu_path
    raw = Path(path).read_bytes()
    count = struct.unpack_from("<i", raw)[0]
    patterns = [struct.unpack_from("<34i", raw, 4 + 136 * i) for i in range(count)]
    exe = Path(tempfile.mkdtemp()) / "shared_patterns"
    subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-o", str(exe), str(Path(__file__).with_suffix(".cu"))], check=True)
    done = subprocess.run([ncu_path(), "--clock-control", "none", "-k", "regex:shared_(load|store)", "--metrics",
                           ",".join(METRICS), "--csv", str(exe), path], capture_output=True, text=True, timeout=1500)
    rows = [line for line in done.stdout.splitlines() if line.startswith('"')]
    by_id: dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        value = row["Metric Value"].replace(",", "")
        by_id.setdefault(int(row["ID"]), {})[row["Metric Name"]] = float(value) if value not in ("n/a", "") else None
    results = []
    for (kind, width, *words), i in zip(patterns, sorted(by_id)):
        m = by_id[i]
        op = "ld" if kind == 0 else "st"
        results.append({"kind": "load" if kind == 0 else "store", "width": width, "words": words,
                        "instructions": m.get(f"smsp__inst_executed_op_shared_{op}.sum"),
                        "wavefronts": m.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"),
                        "bank_conflicts": m.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")})
    print(f"{len(results)} of {count} patterns measured")
    if len(results) != count:
        print(done.stdout[-2000:], done.stderr[-2000:])
    Path(out_path).write_text(json.dumps({"patterns": results}))


if __name__ == "__main__":
    make(sys.argv[2]) if sys.argv[1] == "make" else measure(sys.argv[2], sys.argv[3])
