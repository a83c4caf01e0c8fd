"""The CPU reference: C = A . B in float64 numpy, and the relative error of a GPU or CPU result."""
from __future__ import annotations

import numpy as np


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) @ b.astype(np.float64)


def relative_error(result: np.ndarray, expected: np.ndarray) -> float:
    """||result - expected|| / ||expected|| (Frobenius), NaN-aware: any NaN gives NaN, never a pass."""
    result = np.asarray(result, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if not np.isfinite(result).all():
        return float("nan")
    denom = np.linalg.norm(expected)
    return float(np.linalg.norm(result - expected) / (denom if denom else 1.0))


def elements(a: np.ndarray, b: np.ndarray, flat_index: np.ndarray, n: int) -> np.ndarray:
    """Reference values of the C elements at flat_index (row * n + col), without forming all of C,
    nor float64 copies of all of A and B: a one-block check costs that block's rows and columns."""
    rows, cols = np.divmod(np.asarray(flat_index, dtype=np.int64), n)
    out = np.empty(len(rows), dtype=np.float64)
    chunk = max(1, 2**22 // max(a.shape[1], 1))   # each float64 operand at most 32 MiB
    for s in range(0, len(rows), chunk):
        r, c = rows[s:s + chunk], cols[s:s + chunk]
        out[s:s + chunk] = np.einsum("ij,ji->i", a[r].astype(np.float64), b[:, c].astype(np.float64))
    return out
