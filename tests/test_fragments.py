"""engine/metrics/fragments.py: the PTX ISA's fragment layouts of mma.m16n8k16 (f16) and ldmatrix,
checked against entries read off the ISA's figures and against each other: ldmatrix exists to
deliver exactly the fragments mma takes."""
import numpy as np
import pytest

from engine.metrics.fragments import MMA_16816_SHAPES, ptx_ldmatrix, ptx_mma_m16n8k16


@pytest.mark.parametrize("operand, elements", [("a", 8), ("b", 4), ("c", 4)])
def test_each_element_of_each_operand_is_held_by_exactly_one_lane(operand, elements):
    where = ptx_mma_m16n8k16(operand)
    rows, cols = MMA_16816_SHAPES[operand]
    assert where.shape == (32, elements, 2)
    held = np.zeros((rows, cols), dtype=int)
    np.add.at(held, (where[..., 0], where[..., 1]), 1)
    assert (held == 1).all()


def test_entries_read_off_the_ptx_figures():
    a, b, c = (ptx_mma_m16n8k16(x).tolist() for x in "abc")
    # Figure "MMA .m16n8k16 fragment layout for matrix A with .f16 / .bf16 type": T0 holds a0 .. a7.
    assert a[0] == [[0, 0], [0, 1], [8, 0], [8, 1], [0, 8], [0, 9], [8, 8], [8, 9]]
    assert a[31] == [[7, 6], [7, 7], [15, 6], [15, 7], [7, 14], [7, 15], [15, 14], [15, 15]]
    # Matrix B (16 x 8): T0 holds b0 .. b3 down column 0, T5 down column 1.
    assert b[0] == [[0, 0], [1, 0], [8, 0], [9, 0]]
    assert b[5] == [[2, 1], [3, 1], [10, 1], [11, 1]]
    # Accumulators C/D: T5 holds c0 .. c3.
    assert c[5] == [[1, 2], [1, 3], [9, 2], [9, 3]]


def test_ldmatrix_hands_out_rows_and_with_trans_columns():
    plain, trans = ptx_ldmatrix(4), ptx_ldmatrix(4, trans=True)
    assert plain.shape == trans.shape == (32, 8, 2)
    # Lane 5 gets, of each matrix m, elements 2 and 3 of its row 1 (named by lane 8m + 1) ...
    assert plain[5].tolist() == [[8 * m + 1, e] for m in range(4) for e in (2, 3)]
    # ... and with .trans element 1 of its rows 2 and 3.
    assert trans[5].tolist() == [[8 * m + r, 1] for m in range(4) for r in (2, 3)]
    # x1 and x2 are the first registers of x4.
    assert np.array_equal(ptx_ldmatrix(2, trans=True), trans[:, :4])
    assert np.array_equal(ptx_ldmatrix(1), plain[:, :2])


def test_ldmatrix_delivers_the_fragments_mma_takes():
    # A row-major 16 x 16 A as four 8 x 8 matrices (rows 0-7 and 8-15 of k 0-7, then of k 8-15):
    # plain ldmatrix.x4 hands out a0 .. a7.
    m, row = np.divmod(ptx_ldmatrix(4)[..., 0], 8)
    a = np.stack([row + 8 * (m % 2), ptx_ldmatrix(4)[..., 1] + 8 * (m // 2)], axis=-1)
    assert np.array_equal(a, ptx_mma_m16n8k16("a"))
    # A row-major K x N B, its rows k 0-15 named by lanes 0-15: ldmatrix.x2.trans hands out b0 .. b3.
    assert np.array_equal(ptx_ldmatrix(2, trans=True), ptx_mma_m16n8k16("b"))
    # And D's layout is that of plain rows (rows 0-7, then 8-15): stored back with the same table.
    assert np.array_equal(ptx_ldmatrix(2), ptx_mma_m16n8k16("c"))


@pytest.mark.parametrize("call, says", [(lambda: ptx_mma_m16n8k16("d"), "operands 'a', 'b' and 'c'"),
                                        (lambda: ptx_ldmatrix(3), "1, 2 or 4 matrices")])
def test_other_operands_and_counts_are_refused(call, says):
    with pytest.raises(ValueError, match=says):
        call()
