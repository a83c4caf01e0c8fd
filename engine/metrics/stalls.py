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
import math
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


# What story() and the figure read of each kernel: the file is checked for them when it is loaded.
NEEDED = {"name": str, "label": str, "stalls": dict, "top": list, "cycles_per_issue": (int, float),
          "hmma_pct": (int, float), "instructions": (int, float), "duration_us": (int, float), "registers": (int, float)}
TOP_NEEDED = {"sass": str, "samples": int, "share": (int, float), "reasons": dict}


def _checked(doc) -> list[dict]:
    """The file's kernels, each with what the page reads, as plain numbers: ValueError for what is missing."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"format {doc.get('format') if isinstance(doc, dict) else type(doc).__name__!r}")
    kernels = doc.get("kernels")
    if not isinstance(kernels, list) or not {"as written", "no copies"} <= {k.get("name") for k in kernels if isinstance(k, dict)}:
        raise ValueError('no "as written" and "no copies" kernels')
    for k in kernels:
        for field, kind in NEEDED.items():
            if not isinstance(k.get(field), kind) or isinstance(k.get(field), bool):
                raise ValueError(f"kernel {k.get('name')!r} has no {field}")
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in k["stalls"].values()):
            raise ValueError(f"kernel {k['name']!r} has a stall that is not a number")
        for t in k["top"]:
            if not isinstance(t, dict) or any(not isinstance(t.get(f), kind) for f, kind in TOP_NEEDED.items()):
                raise ValueError(f"kernel {k['name']!r} has an instruction without {', '.join(TOP_NEEDED)}")
    return kernels


def load(path: Path) -> Stalls:
    """A recorded mma_stalls.py run; EngineError (one line) for a file that is not one."""
    try:
        doc = json.loads(path.read_text())
        kernels = _checked(doc)
        rows = [{"kernel": k["name"], "label": k["label"], "reason": reason, "words": REASONS.get(reason, "other"),
                 "cycles": float(v)} for k in kernels for reason, v in k["stalls"].items()]
        version = re.search(r"\d+(\.\d+)+", str(doc.get("ncu", "")))   # "Version 2025.3.1.0 (build ...)": the number
        return Stalls(str(doc["gpu"]), str(doc["date"]), int(doc["size"]),
                      version.group(0) if version else "version not recorded", pd.DataFrame(rows), kernels)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EngineError(f"{path.name} is not a recorded warp-stall run: {exc}") from exc


def by_words(s: Stalls) -> pd.DataFrame:
    """Cycles per issued instruction, per kernel and reason in the chart's words (the small ones as
    "other"), with Nsight Compute's names of the reasons each holds and its share of the kernel's
    cycles, kernels in the file's order."""
    grouped = s.table[s.table["cycles"] > 0].groupby(["kernel", "label", "words"], sort=False).agg(
        cycles=("cycles", "sum"), reasons=("reason", lambda r: ", ".join(r))).reset_index()
    grouped["share"] = grouped["cycles"] / grouped.groupby("kernel")["cycles"].transform("sum")
    order = {k["name"]: i for i, k in enumerate(s.kernels)}
    return grouped.sort_values("kernel", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)


def _kernel(s: Stalls, name: str) -> dict:
    return next(k for k in s.kernels if k["name"] == name)


def _reads(copy: str, register: int) -> str:
    """What a register is to a cp.async (LDGSTS desc[..][R.64], .., [R+offset]): its global address or
    the shared-memory address it writes."""
    glob = re.search(r"\]\[R(\d+)\.64", copy)
    if glob and int(glob.group(1)) in (register, register - 1):
        return "the global address it reads from"
    return "the shared-memory address it writes to"


def registers(sass: str) -> set[int]:
    """The general registers a SASS instruction names (R4.64 names R4 and R5)."""
    found = set()
    for m in re.finditer(r"\bR(\d+)(\.64)?\b", sass):
        found |= {int(m.group(1))} | ({int(m.group(1)) + 1} if m.group(2) else set())
    return found


def written(sass: str) -> set[int]:
    """The registers a SASS instruction writes: its first operand, where that is a register (not for a
    store, a copy to shared memory or a branch, whose first operand is an address or a target)."""
    body = re.sub(r"^@!?U?P\w+\s+", "", sass.strip())
    op, _, rest = body.partition(" ")
    if op.startswith(("ST", "LDGSTS", "BRA", "BAR", "RED", "ATOM")) or not rest:
        return set()
    first = rest.split(",")[0].strip()
    m = re.match(r"R(\d+)$", first)
    if not m:
        return set()
    wide = 2 if (".64" in op or op.startswith(("CS2R", "LDC.64")) or "WIDE" in op) else 4 if op.startswith(("LDSM", "HMMA")) else 1
    return set(range(int(m.group(1)), int(m.group(1)) + wide))


def _shown(sass: str) -> str:
    """An instruction as the story quotes it: a branch's absolute target (an address of this one launch)
    left out, spaces as one."""
    return re.sub(r"\s+", " ", re.sub(r"\s*0x[0-9a-f]{9,}\b", "", sass)).strip()


def story(s: Stalls) -> str:
    """What the sampling says of mma_pipelined as written, from the file's figures: a lead, then one
    point per finding (Markdown)."""
    mine, none = _kernel(s, "as written"), _kernel(s, "no copies")
    tma = next((k for k in s.kernels if k["name"] == "mma_tma"), None)
    st = mine["stalls"]
    lead = (f"**Where its warps wait.** Nsight Compute sampled the warps of mma_pipelined as written at {s.size:,}³ "
            f"on the {s.gpu}: a warp issues an instruction every {mine['cycles_per_issue']:.2f} cycles, one issuing "
            f"and the rest waiting, {st.get('long_scoreboard', 0):.2f} of them on the long scoreboard and "
            f"{st.get('barrier', 0):.2f} at the barrier, against {none['stalls'].get('long_scoreboard', 0):.2f} and "
            f"{none['stalls'].get('barrier', 0):.2f} without the k-loop's copies. A wait is counted on the "
            "instruction that cannot issue yet.")
    points = []
    for t in (t for t in mine["top"] if t.get("copy_reading") and written(t["sass"])):
        reg = min(written(t["sass"]))
        points.append(f"`{_shown(t['sass'])}` ({100 * t['share']:.1f}% of all samples, {t['reasons'].get('long_sb', 0):,} "
                      f"of its {t['samples']:,} on the long scoreboard) would overwrite R{reg}, which holds, for the "
                      f"cp.async `{_shown(t['copy_reading'])}` issued before it, {_reads(t['copy_reading'], reg)}: "
                      "it waits until that copy has read it.")
    if points:
        points.append("A cp.async reads its registers only when the load/store unit takes it, behind the copies and "
                      "ldmatrix ahead of it in the queue; at "
                      f"{mine['registers']:.0f} registers a thread (the most there is) the compiler hands them to the "
                      "next instruction that needs one.")
    barrier = [t for t in mine["top"] if t["reasons"].get("barrier", 0) > t["samples"] / 2]
    if barrier:
        points.append(f"The barrier's waits are counted on the instruction after it, `{_shown(barrier[0]['sass'])}` "
                      f"({100 * barrier[0]['share']:.1f}% of all samples): the warps that reach the barrier first wait "
                      "there for the block's others.")
    points.append(f"The tensor pipe is busy {mine['hmma_pct']:.1f}% of the time, against {none['hmma_pct']:.1f}% without "
                  "the copies" + (f" and {tma['hmma_pct']:.1f}% in mma_tma, whose copies no thread issues" if tma else "")
                  + ".")
    polls = [t for t in (tma or {}).get("top", [])
             if re.search(r"\bBRA\b", t["sass"]) and t["reasons"].get("long_sb", 0) > t["samples"] / 2]
    if tma and polls:
        points.append(f"mma_tma waits on the long scoreboard too ({tma['stalls'].get('long_scoreboard', 0):.2f}), for "
                      f"another thing: {sum(t['reasons']['long_sb'] for t in polls):,} of those samples fall on "
                      f"{COUNT.get(len(polls), len(polls))} branches (`{_shown(polls[0]['sass'])}`) of its waits on an "
                      "mbarrier, which wait for the barrier's test: for a tile to land, or a slot to be free.")
    points.append(f"A longer bar is not a slower kernel: without the copies the warps issue "
                  f"{none['instructions'] / 1e6:,.1f} million instructions in all against {mine['instructions'] / 1e6:,.1f} "
                  f"million, so they wait longer between two ({none['cycles_per_issue']:.2f} cycles)"
                  + (", the largest part of it for the busy tensor pipe," if max(none["stalls"], key=none["stalls"].get)
                     == "math_pipe_throttle" else "")
                  + f" and finish sooner ({none['duration_us']:,.0f} µs against {mine['duration_us']:,.0f}).")
    return lead + "\n\n" + "\n".join(f"- {p}" for p in points)
