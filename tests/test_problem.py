import re

import numpy as np
import pytest

from engine.errors import EngineError
from engine.kernels.problem import MAX_DIM, make_inputs, make_problem, parse_block

WANTED = f"M must be an integer from 1 to {MAX_DIM:,}, got "


@pytest.mark.parametrize("bad, message", [
    (0, "at least 1"), (-5, "at least 1"), (1.5, WANTED + "1.5"), ("12", WANTED + "'12'"),
    (None, WANTED + "None"), (True, WANTED + "True"), (MAX_DIM + 1, WANTED + f"{MAX_DIM + 1}"),
    (float("nan"), WANTED + "nan"), (1e300, WANTED + "1e+300"),
    (10**400, WANTED + "an integer of about 401 digits"), (-10**400, "at least 1, got a negative integer of about 401 digits"),
])
def test_bad_sizes_get_one_line_messages(bad, message):
    with pytest.raises(EngineError, match=re.escape(message)) as info:
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
