"""Where mma_pipelined's warps wait: Nsight Compute's warp-state sampling, recorded on a GPU by
tests/benchmarks/mma_stalls.py (engine/bench/recorded/stalls/). Per kernel (mma_pipelined as written,
without its k-loop's copies, mma_tma) the cycles between two instructions a warp issues, split by
the reason it was not issuing (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio:
they add up to smsp__average_warp_latency_per_inst_issued.ratio), and the instructions with the most
samples. Plain data and words; the Tensor cores page draws it (engine/plots/tensor_figures.py).

Imports no Streamlit.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from engine.errors import EngineError

FORMAT = "cuda-matmul-explorer mma stalls 1"
# Nsight Compute's reasons, in the words the chart uses (its own names in the hover): those a chart
# of these kernels shows apart; the rest go together as "other".
REASONS = {"selected": "issuing", "wait": "fixed-latency wait", "math_pipe_throttle": "tensor pipe busy",
           "long_scoreboard": "long scoreboard", "barrier": "barrier", "short_scoreboard": "short scoreboard",
           "not_selected": "another warp issued", "dispatch_stall": "dispatch", "mio_throttle": "MIO queue full"}
COUNT = {1: "one", 2: "two", 3: "three", 4: "four"}


@dataclass(frozen=True)
class Stalls:
    gpu: str
    date: str
    size: int
    ncu: str              # Nsight Compute's version
    table: pd.DataFrame   # kernel, label, reason, words, cycles (per issued instruction)
    kernels: list[dict]   # the file's own, with the top instructions


def load(path: Path) -> Stalls:
    """A recorded mma_stalls.py run; EngineError (one line) for a file that is not one."""
    try:
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}")
        rows = [{"kernel": k["name"], "label": k["label"], "reason": reason,
                 "words": REASONS.get(reason, "other"), "cycles": float(v)}
                for k in doc["kernels"] for reason, v in k["stalls"].items()]
        version = re.search(r"\d+(\.\d+)+", doc.get("ncu", ""))   # "Version 2025.3.1.0 (build ...)": the number
        return Stalls(doc["gpu"], doc["date"], int(doc["size"]), version.group(0) if version else "version not recorded",
                      pd.DataFrame(rows), doc["kernels"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EngineError(f"{path.name} is not a recorded warp-stall run: {exc}") from exc


def by_words(s: Stalls) -> pd.DataFrame:
    """Cycles per issued instruction, per kernel and reason in the chart's words (the small ones as
    "other"), kernels in the file's order."""
    grouped = s.table.groupby(["kernel", "label", "words"], sort=False, as_index=False)["cycles"].sum()
    order = {k["name"]: i for i, k in enumerate(s.kernels)}
    return grouped.sort_values("kernel", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)


def _kernel(s: Stalls, name: str) -> dict:
    return next(k for k in s.kernels if k["name"] == name)


def _reads(copy: str, register: int) -> str:
    """What a register is to a cp.async (LDGSTS desc[..][R.64], .., [R+offset]): its global address or
    the shared-memory address it writes."""
    glob = re.search(r"\]\[R(\d+)\.64", copy)
    if glob and int(glob.group(1)) in (register, register - 1):
        return "the global address that copy reads"
    return "the shared-memory address that copy writes"


def story(s: Stalls) -> str:
    """What the sampling says of mma_pipelined as written, from the file's figures."""
    mine, none = _kernel(s, "as written"), _kernel(s, "no copies")
    tma = next((k for k in s.kernels if k["name"] == "mma_tma"), None)
    st = mine["stalls"]
    waits = [t for t in mine["top"] if t.get("copy_reading")]
    said = (f"**Where its warps wait.** Nsight Compute sampled the warps of mma_pipelined as written at {s.size:,}³ "
            f"on the {s.gpu}: a warp waits {mine['cycles_per_issue']:.2f} cycles between two instructions it issues, "
            f"{st.get('long_scoreboard', 0):.2f} of them on the long scoreboard and {st.get('barrier', 0):.2f} at the "
            f"barrier, against {none['stalls'].get('long_scoreboard', 0):.2f} and {none['stalls'].get('barrier', 0):.2f} "
            "without the k-loop's copies.")
    if waits:
        parts = []
        for t in waits:
            reg = int(re.search(r"\bR(\d+)\b", t["sass"]).group(1))   # the first operand: what it writes
            parts.append(f"`{t['sass']}` ({100 * t['share']:.1f}% of all samples, {t['reasons'].get('long_sb', 0):,} of "
                         f"its {t['samples']:,} on the long scoreboard) writes R{reg}, which `{t['copy_reading']}` "
                         f"before it still has to read: {_reads(t['copy_reading'], reg)}")
        said += (f" Among the instructions with the most samples, {COUNT.get(len(parts), len(parts))} wait mostly on the long scoreboard: "
                 + "; ".join(parts) + ". A cp.async reads its registers only when the load/store unit takes it, "
                 "behind the copies and ldmatrix ahead of it in the queue, and until then no instruction may "
                 f"overwrite them; at {mine['registers']:.0f} registers a thread (the most there is) the compiler "
                 "gives them to the next instruction that needs one.")
    barrier = [t for t in mine["top"] if t["reasons"].get("barrier", 0) > t["samples"] / 2]
    if barrier:
        said += (f" The barrier's waits fall on `{barrier[0]['sass']}` ({100 * barrier[0]['share']:.1f}% of all "
                 "samples): the warps that reach the barrier first wait there for the block's others.")
    said += (f" The tensor pipe is busy {mine['hmma_pct']:.1f}% of the time, against {none['hmma_pct']:.1f}% without "
             "the copies" + (f" and {tma['hmma_pct']:.1f}% in mma_tma, whose copies no thread issues" if tma else "") + ".")
    said += (f" A longer bar is not a slower kernel: without the copies the warps issue {none['instructions'] / 1e6:,.1f} "
             f"million instructions in all against {mine['instructions'] / 1e6:,.1f} million, so they wait longer "
             f"between two ({none['cycles_per_issue']:.2f} cycles)"
             + (", the largest part of it for the busy tensor pipe," if max(none["stalls"], key=none["stalls"].get)
                == "math_pipe_throttle" else "")
             + f" and finish sooner ({none['duration_us']:,.0f} µs against {mine['duration_us']:,.0f}).")
    return said
