"""split_k and split_k_padded on the CPU device: slices past K (empty) and slices ending inside a BK
tile stay inside every array and give the product (the GPU tests check the same on a GPU)."""
import pytest

from engine.kernels.problem import make_problem
from engine.tracing import tracer


@pytest.mark.parametrize("kernel", ["split_k", "split_k_padded"])
@pytest.mark.parametrize("size, splits", [((17, 33, 9), 8), ((33, 70, 301), 6), ((1, 1, 1), 3)],
                         ids=["slices-past-k", "slice-ends-inside-a-tile", "1x1x1"])
def test_every_slice_stays_in_bounds_and_the_sum_is_the_product(kernel, size, splits):
    """split_k_padded's empty slices once loaded AP past its padded rows (the CPU device refused it)."""
    t = tracer.trace(kernel, make_problem(*size, params={"SPLITK": splits}), None, "cpu")
    assert t.rel_error < 1e-6
