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


@pytest.mark.parametrize("kwargs, message", [
    # Each had been a raw ValueError or TypeError from deep inside, or (a seed below 0) a trace
    # worker dead of numpy's refusal, its traceback in the terminal.
    ({"seed": "x"}, "the seed must be a whole number, got 'x'"),
    ({"seed": 1.5}, "the seed must be a whole number, got 1.5"),
    ({"seed": -1}, "the seed must be 0 or more, got -1"),
    ({"block": {"x": 32, "y": 8}}, "block must be a pair (x, y) like (32, 8), got {'x': 32, 'y': 8}"),
    ({"block": "32x8"}, "block must be a pair (x, y) like (32, 8), got '32x8'"),   # had been read as (3, 2)
    ({"block": 5}, "block must be a pair (x, y) like (32, 8), got 5"),
    ({"block": (32, 8.5)}, f"block y must be an integer from 1 to {MAX_DIM:,}, got 8.5"),
])
def test_a_malformed_seed_or_block_is_one_line(kwargs, message):
    with pytest.raises(EngineError) as info:
        make_problem(8, 8, 8, **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize("kwargs, message", [
    ({"m": 0, "n": 8, "k": 8}, "M must be at least 1, got 0"),
    ({"m": 8, "n": 8.5, "k": 8}, f"N must be an integer from 1 to {MAX_DIM:,}, got 8.5"),
    ({"m": 8, "n": 8, "k": 8, "block": (64, 64)}, "a block of 64x64 = 4096 threads is over CUDA's limit of 1024"),
    ({"m": 8, "n": 8, "k": 8, "params": {"TILE": "16"}}, "TILE must be a whole number, got '16'"),
    ({"m": 8, "n": 8, "k": 8, "params": [16]}, "the parameters must be given by name, like {'TILE': 32}, got [16]"),
])
def test_a_problem_built_by_hand_is_checked_as_make_problem_checks(kwargs, message):
    """A Problem made directly (the engine's API, dataclasses.replace) had reached the tracer unchecked:
    M = 0 there was a ZeroDivisionError, parameters as strings a TypeError."""
    from engine.kernels.problem import Problem
    from engine.tracing import tracer
    with pytest.raises(EngineError) as info:
        tracer.trace("tiled_guarded", Problem(**kwargs), source="cpu")
    assert str(info.value) == message


def test_a_block_given_as_a_list_or_a_whole_float_seed_is_taken():
    p = make_problem(8, 8, 8, block=[32, 8], seed=3.0)
    assert p.block == (32, 8) and p.seed == 3 and isinstance(p.seed, int)


@pytest.mark.parametrize("kwargs, message", [
    ({"blocks": [(1,)]}, "a block must be a pair (x, y) like (3, 1), got (1,)"),
    ({"blocks": "0,0"}, "blocks are a list of (x, y) pairs like [(0, 0), (3, 1)], got '0,0'"),
    ({"blocks": [(0.5, 0)]}, "a block's x must be a whole number, got 0.5"),   # had been traced as block 0
    ({"cap": "a"}, "the record cap must be a whole number, got 'a'"),
    ({"cap": 1.5}, "the record cap must be a whole number, got 1.5"),
])
def test_a_malformed_choice_of_blocks_or_cap_is_one_line(kwargs, message):
    from engine.tracing.plan import make_plan
    with pytest.raises(EngineError) as info:
        make_plan("tiled_guarded", make_problem(32, 32, 32), **kwargs)
    assert str(info.value) == message


def test_block_is_refused_for_a_kernel_whose_block_follows_from_its_parameters(capsys, tmp_path):
    """`trace tiled_guarded --block 7x3` traced its 16 x 16 blocks without a word about the 7 x 3."""
    from engine.cli import main
    assert main(["trace", "tiled_guarded", "--m", "32", "--n", "32", "--k", "32", "--source", "cpu",
                 "--block", "7x3"]) == 2
    assert capsys.readouterr().err.strip() == ("error: tiled_guarded's block follows from its parameters; --block "
                                               "sets the launch block of the kernels that take one (the naive kernels)")
    assert main(["bench", "--kernels", "tiled_guarded", "--sizes", "64", "--block", "7x3", "--out", str(tmp_path)]) == 2
    assert "tiled_guarded's block follows from its parameters" in capsys.readouterr().err
