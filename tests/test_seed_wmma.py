"""The document's WMMA kernel worked out on the CPU from its source (engine/metrics/tensor_evidence.py):
which tile each warp of its launch computes, what its fragments hold, and its error against A·B on the
recorded inputs (where it must give the GPU's recorded figures) and on zero-mean ones."""
import json

import numpy as np
import pytest

from engine.kernels import reference
from engine.kernels.problem import make_inputs
from engine.metrics import tensor_evidence as te


def block_transposed(b: np.ndarray) -> np.ndarray:
    """B with each 16 x 16 block transposed in place (written here independently of the engine)."""
    k, n = b.shape
    out = np.empty_like(b)
    for i in range(0, k, 16):
        for j in range(0, n, 16):
            out[i:i + 16, j:j + 16] = b[i:i + 16, j:j + 16].T
    return out


def test_every_tile_is_computed_by_32_warps_the_4_of_a_block_on_one_tile():
    p = te._seed_problem(256)
    tiles = te.seed_warp_tiles(p)
    assert len(tiles) == 8192   # the recorded warps_launched at 256
    first = tiles[tiles[:, 0] == 0]
    assert len(first) == 4 and (first[:, 1:] == first[0, 1:]).all()
    result = te.seed_compute(*make_inputs(p), p)
    assert (result.warps_per_tile == 32).all() and not np.isnan(result.c).any()


@pytest.mark.parametrize("n", [256, 1024])
def test_on_the_recorded_inputs_the_cpu_gives_the_gpus_recorded_error(n):
    recorded = json.loads(te.SEED.read_text())["sizes"][str(n)]
    p = te._seed_problem(n)
    a, b = make_inputs(p)
    c = te.seed_compute(a, b, p).c
    a16, b16 = (x.astype(np.float16).astype(np.float64) for x in (a, b))
    assert reference.relative_error(c, a16 @ b16) == pytest.approx(recorded["error_vs_ab"], rel=1e-4)
    # What it computes is A·B', B's 16 x 16 blocks transposed, to FP32 rounding.
    assert reference.relative_error(c, a16 @ block_transposed(b16)) < 1e-5


def test_the_layouts_come_from_the_source_a_row_major_b_would_give_a_b(monkeypatch):
    assert te.fragment_layouts() == {"a": "row_major", "b": "col_major"}
    p = te._seed_problem(256)
    a, b = te.zero_mean_inputs(p)
    a16, b16 = (x.astype(np.float16).astype(np.float64) for x in (a, b))
    assert reference.relative_error(te.seed_compute(a, b, p).c, a16 @ b16) > 1.3
    monkeypatch.setattr(te, "fragment_layouts", lambda: {"a": "row_major", "b": "row_major"})
    assert reference.relative_error(te.seed_compute(a, b, p).c, a16 @ b16) < 1e-6


def test_on_zero_mean_inputs_the_error_is_what_a_block_transpose_predicts():
    """About sqrt(2 - 2 * 16/256): A·B' shares only the blocks' diagonal terms with A·B."""
    errors = te.seed_errors()
    assert list(errors["M = N = K"]) == [256, 1024, 2048]
    assert errors["computed"].isna().tolist() == errors["zero-mean"].isna().tolist() == [False, False, True]
    recorded = json.loads(te.SEED.read_text())["sizes"]
    for _, row in errors.dropna().iterrows():
        assert row["computed"] == pytest.approx(recorded[str(int(row["M = N = K"]))]["error_vs_ab"], rel=1e-4)
        assert row["zero-mean"] == pytest.approx(te.diagonal_error(), abs=0.02)
    assert te.diagonal_error() == pytest.approx(1.3693, abs=1e-4)
    assert errors["computed"].max() < 0.06 < 1.3 < errors["zero-mean"].min()   # the same kernel, other inputs


def test_the_two_faulty_lines_are_found_in_the_source_and_named():
    lines = (te.sources.CUDA_DIR / te.SEED_FILE).read_text().splitlines()
    layout, warp = te.seed_faults()   # in the order of the source
    assert lines[warp.line - 1].strip() == warp.text and "warpM" in warp.text and "/ 32" in warp.text
    assert lines[layout.line - 1].strip() == layout.text and "matrix_b" in layout.text and "col_major" in layout.text
    assert (warp.name, layout.name) == ("the warp index", "B's fragment layout") and layout.line < warp.line
