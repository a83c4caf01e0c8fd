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


def worst_error(result: np.ndarray, expected: np.ndarray) -> float:
    """The largest |result - expected| of any element, over the largest |expected|: what a few wrong
    elements show that the whole's relative error hides. NaN-aware as relative_error; 0 for empty."""
    result = np.asarray(result, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if not np.isfinite(result).all():
        return float("nan")
    if not expected.size:
        return 0.0
    scale = float(np.abs(expected).max())
    return float(np.abs(result - expected).max() / (scale if scale else 1.0))


_OPERAND = 2**22   # float64 elements of one operand of a partial product (32 MiB)


def elements(a: np.ndarray, b: np.ndarray, flat_index: np.ndarray, n: int) -> np.ndarray:
    """Reference values of the C elements at flat_index (row * n + col), without forming all of C,
    nor float64 copies of all of A and B: a one-block check costs that block's rows and columns.

    The elements a trace checks are the tiles its blocks stored, so they fill most of the grid of
    their rows by their columns: that grid is a matrix product of those rows of A and columns of B,
    done by BLAS, a piece at a time. Elements scattered thinly over their rows and columns (a
    diagonal) are each their own dot product instead."""
    rows, cols = np.divmod(np.asarray(flat_index, dtype=np.int64), n)
    row_ids, row_at = _distinct(rows, a.shape[0])
    col_ids, col_at = _distinct(cols, n)
    if len(row_ids) * len(col_ids) > 4 * len(rows):
        return _dot_each(a, b, rows, cols)
    k = max(a.shape[1], 1)
    # Pieces of step_r rows by step_c columns: their A rows, B columns and product each fit _OPERAND.
    step_c = max(1, _OPERAND // k)
    step_r = max(1, min(_OPERAND // k, _OPERAND // min(step_c, len(col_ids))))
    out = np.empty(len(rows), dtype=np.float64)
    if len(row_ids) <= step_r and len(col_ids) <= step_c:
        pieces = [np.arange(len(rows))]   # one piece (a few blocks' tiles)
    else:
        piece = (row_at // step_r) * (-(-len(col_ids) // step_c)) + col_at // step_c
        order = np.argsort(piece, kind="stable")
        pieces = np.split(order, np.flatnonzero(np.diff(piece[order])) + 1)
    for sel in pieces:
        r0 = row_at[sel[0]] // step_r * step_r
        c0 = col_at[sel[0]] // step_c * step_c
        product = (a[row_ids[r0:r0 + step_r]].astype(np.float64)
                   @ b[:, col_ids[c0:c0 + step_c]].astype(np.float64))
        out[sel] = product[row_at[sel] - r0, col_at[sel] - c0]
    return out


def _distinct(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (0 <= value < size) in increasing order, and each value's place among them."""
    present = np.zeros(size, dtype=bool)
    present[values] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]


def _dot_each(a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    out = np.empty(len(rows), dtype=np.float64)
    chunk = max(1, 2**22 // max(a.shape[1], 1))   # each float64 operand at most 32 MiB
    for s in range(0, len(rows), chunk):
        r, c = rows[s:s + chunk], cols[s:s + chunk]
        out[s:s + chunk] = np.einsum("ij,ji->i", a[r].astype(np.float64), b[:, c].astype(np.float64))
    return out
