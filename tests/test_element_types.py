"""Traced arrays of other element types: records count elements of the array's own type, byte
offsets and bank words follow its size, and the CPU computes with it as the GPU does."""
import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine.kernels import build, sources
from engine.kernels.problem import make_problem
from engine.metrics import analysis
from engine.tracing import tracer
from engine.tracing.plan import single_launch_plan

HALF = str(Path(__file__).parent / "cuda" / "half_rows.cu")


def half_trace(m, n, k, source="cpu"):
    p = make_problem(m, n, k)
    plan = single_launch_plan(HALF, p, (-(-n // 32), m), (32, 1))
    raw = tracer.run_plan(plan, source)
    return tracer.assemble(plan, raw, source), raw, p


def test_the_shared_array_is_two_bytes_an_element():
    src = sources.load(HALF)
    assert src.array("As").element == "__half" and src.array("As").element_bytes == 2
    assert {(s.array, s.op): s.bytes for s in src.sites} == {("A", "load"): 4, ("As", "store"): 2,
                                                            ("As", "load"): 2, ("B", "load"): 4, ("C", "store"): 4}


def test_offsets_count_two_bytes_an_element_and_stores_fill_half_the_words():
    t, raw, p = half_trace(3, 64, 40)
    r = t.records
    shared = r[r["array"] == t.arrays.index("As")]
    assert np.array_equal(shared["offset"], shared["col"].astype(np.uint32) * 2)
    s = analysis.site_summary(t).set_index(["array", "op"])
    # A full warp storing 32 consecutive halves: 64 bytes, 16 words, one wavefront, no conflicts.
    assert s.loc[("As", "store"), "wavefronts_per_request"] == 1 and s.loc[("As", "store"), "bank_conflicts"] == 0


def test_the_product_is_that_of_half_rounded_a():
    t, raw, p = half_trace(3, 64, 40)
    assert raw.checked_outputs == 3 * 64
    # Against float64 of the unrounded inputs the error is half's rounding of A: well above
    # float32's, well below what a wrong element would give.
    assert 1e-5 < raw.rel_error < 2e-3


def _conversions(tmp_path):
    """cpu_shim.h's conversions, compiled on their own: float -> half/bfloat16 -> float."""
    code = tmp_path / "convert.cpp"
    code.write_text(f'#include "{sources.CUDA_DIR / "cpu_shim.h"}"\n'
                    'extern "C" void to_half(const float *x, float *y, int n) '
                    "{ for (int i = 0; i < n; ++i) y[i] = __half2float(__float2half(x[i])); }\n"
                    'extern "C" void to_bf16(const float *x, float *y, int n) '
                    "{ for (int i = 0; i < n; ++i) y[i] = __bfloat162float(__float2bfloat16(x[i])); }\n")
    lib = tmp_path / "convert.so"
    subprocess.run([build.host_compiler(), "-O2", "-shared", "-fPIC", "-o", str(lib), str(code)], check=True)
    return ctypes.CDLL(str(lib))


def _edge_values() -> np.ndarray:
    rng = np.random.default_rng(0)
    half = np.arange(0, 0x7C00, 7, dtype=np.uint16).view(np.float16).astype(np.float32)
    ties = (half[:-1] + (half[1:] - half[:-1]) / 2).astype(np.float32)    # halfway: nearest even
    return np.concatenate([half, -half, ties, rng.normal(0, 100, 5000).astype(np.float32),
                           np.float32([65504, 65519, 65520, 1e6, 6e-8, 3e-8, 2.9e-8, 1e-9, np.inf, -np.inf])])


def _run(fn, x):
    y = np.empty_like(x)
    fn(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), len(x))
    return y


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_the_cpu_rounds_to_half_and_bfloat16_as_the_gpu_does(tmp_path):
    lib = _conversions(tmp_path)
    x = _edge_values()
    # numpy's float16 is IEEE binary16 with round-to-nearest-even, as __float2half (past 65504: inf).
    with np.errstate(over="ignore"):
        assert np.array_equal(_run(lib.to_half, x), x.astype(np.float16).astype(np.float32))
    # bfloat16: float32's top 16 bits, rounded to nearest even.
    bits = x.view(np.uint32).astype(np.uint64)
    want = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    assert np.array_equal(_run(lib.to_bf16, x), want)
    nan = np.float32([np.nan])
    assert np.isnan(_run(lib.to_half, nan)).all() and np.isnan(_run(lib.to_bf16, nan)).all()
