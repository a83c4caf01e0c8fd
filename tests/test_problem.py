import numpy as np
import pytest

from engine.errors import EngineError
from engine.kernels.problem import MAX_DIM, make_inputs, make_problem, parse_block


@pytest.mark.parametrize("bad, message", [
    (0, "at least 1"), (-5, "at least 1"), (1.5, "whole number"), ("12", "whole number"),
    (None, "whole number"), (True, "whole number"), (MAX_DIM + 1, "limit"),
])
def test_bad_sizes_get_one_line_messages(bad, message):
    with pytest.raises(EngineError, match=message) as info:
        make_problem(bad, 8, 8)
    assert "\n" not in str(info.value)


def test_integral_floats_are_accepted():
    assert make_problem(64.0, 32, 16).m == 64


def test_block_over_1024_threads_is_refused():
    with pytest.raises(EngineError, match="1024"):
        make_problem(8, 8, 8, block=(64, 32))


def test_parse_block():
    assert parse_block("32x8") == (32, 8)
    with pytest.raises(EngineError):
        parse_block("32by8")


def test_inputs_are_random_and_never_zero():
    a, b = make_inputs(make_problem(20, 30, 10))
    assert a.shape == (20, 10) and b.shape == (10, 30) and a.dtype == np.float32
    assert (a > 0).mean() > 0.99 and a.std() > 0.2
