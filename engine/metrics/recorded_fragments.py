"""Which lane held which element of a tensor-core fragment, as the GPU recorded it
(cuda/fragment_probe.cu's output, from an H200, in engine/bench/recorded/fragments/h200.json), and
whether that is the layout the PTX ISA documents (engine/metrics/fragments.py). Plain data for the
Tensor cores page's fragment map (engine/plots/tensor_figures.py); no Streamlit here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.metrics import fragments

RECORDED = Path(__file__).resolve().parents[2] / "engine" / "bench" / "recorded" / "fragments" / "h200.json"


@dataclass(frozen=True)
class Operand:
    key: str
    label: str
    shape: tuple[int, int]      # rows x cols of the tile drawn
    documented: bool            # the PTX ISA documents the layout


OPERANDS = {
    "mma_a": Operand("mma_a", "mma.sync A (16 × 16, via ldmatrix.x4)", (16, 16), True),
    "mma_b": Operand("mma_b", "mma.sync B (16 × 8, via ldmatrix.x2.trans)", (16, 8), True),
    "mma_c": Operand("mma_c", "mma.sync C/D accumulator (16 × 8)", (16, 8), True),
    "wmma_a": Operand("wmma_a", "WMMA matrix_a (16 × 16, row_major)", (16, 16), False),
    "wmma_b": Operand("wmma_b", "WMMA matrix_b (16 × 16, row_major)", (16, 16), False),
    "wmma_c": Operand("wmma_c", "WMMA accumulator (16 × 16)", (16, 16), False),
}


def recorded_map(operand: str) -> np.ndarray:
    """(32 lanes, elements, 2) -> (row, col) each lane held, as the GPU recorded it."""
    d = json.loads(RECORDED.read_text())
    if operand == "mma_a":
        idx = np.array(d["mma_a"])
        return np.stack([idx // 16, idx % 16], -1)
    if operand == "mma_b":
        idx = np.array(d["mma_b"])
        return np.stack([idx // 8, idx % 8], -1)
    if operand == "mma_c":
        idx = np.array(d["mma_c_code"])
        return np.stack([idx // 16, idx % 16], -1)
    if operand in ("wmma_a", "wmma_b"):
        idx = np.array(d["wmma_a" if operand == "wmma_a" else "wmma_b_row"])
        return np.stack([idx // 16, idx % 16], -1)
    stored = np.array(d["wmma_c_stored"])     # [row][col] = lane * 8 + e
    out = np.zeros((32, 8, 2), int)
    for r in range(16):
        for c in range(16):
            lane, e = divmod(int(stored[r, c]), 8)
            out[lane, e] = (r, c)
    return out


def matches_ptx(operand: str) -> bool | None:
    """Whether the recorded map is the PTX ISA's (engine/metrics/fragments.py), element for element; None
    where none is documented."""
    if not OPERANDS[operand].documented:
        return None
    return bool(np.array_equal(recorded_map(operand), fragments.ptx_mma_m16n8k16(operand[-1])))


def owners(operand: str) -> np.ndarray:
    """(rows, cols) -> the lanes holding that element, as text ("0" or "0,4" where lanes share it)."""
    rows, cols = OPERANDS[operand].shape
    held = [[[] for _ in range(cols)] for _ in range(rows)]
    for lane, elems in enumerate(recorded_map(operand)):
        for r, c in elems:
            if lane not in held[r][c]:
                held[r][c].append(lane)
    return np.array([[",".join(map(str, h)) for h in row] for row in held], dtype=object)
