"""Every .cu compiles with nvcc in both builds (CI has nvcc; compile only), and for the host."""
from pathlib import Path

import pytest

from engine import build

ROOT = Path(__file__).resolve().parent.parent
ALL_CU = sorted((ROOT / "cuda").glob("*.cu")) + sorted((ROOT / "tests" / "cuda").glob("*.cu"))


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
@pytest.mark.parametrize("path", ALL_CU, ids=lambda p: p.name)
@pytest.mark.parametrize("traced", [False, True], ids=["plain", "traced"])
def test_nvcc_builds_every_kernel(path, traced):
    for tile, pad in ((8, 0), (32, 1)):
        cubin = build.build_cubin(str(path), tile, pad, traced)
        assert cubin.stat().st_size > 0


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("path", ALL_CU, ids=lambda p: p.name)
def test_host_compiler_builds_every_kernel_for_cpu_traces(path):
    assert build.build_cpu_library(str(path), 16, 0).stat().st_size > 0


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
def test_plain_build_has_no_tracing_code():
    cubin = build.build_cubin("naive_x_cols.cu", 16, 0, traced=False)
    traced = build.build_cubin("naive_x_cols.cu", 16, 0, traced=True)
    assert b"trace_records" not in cubin.read_bytes() and b"trace_records" in traced.read_bytes()
