"""Every .cu compiles with nvcc in both builds (CI has nvcc; compile only), and for the host."""
import re
import subprocess
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.kernels import build, registry, sass, sources

ROOT = Path(__file__).resolve().parent.parent
ALL_CU = sorted((ROOT / "cuda").glob("*.cu")) + sorted((ROOT / "tests" / "cuda").glob("*.cu"))


TRACED_CU = [p for p in ALL_CU if sources.load(str(p)).traced]
# The tests' sources the CPU build refuses on purpose (tests/test_cpu_device.py).
REFUSED_ON_CPU = {"big_local_array.cu"}


def _choices(path: Path) -> list[dict[str, int]]:
    """The first and last parameter choices of the catalog entries that launch the source (the tests'
    own sources take TILE and PAD)."""
    combos = [c for spec in registry.CATALOG if spec.compiled for launch in spec.launches
              if launch.file == path.name for c in spec.combinations()] or [{"TILE": 8, "PAD": 0}, {"TILE": 32, "PAD": 1}]
    return [combos[0], combos[-1]]


def _arch(path: Path) -> str | None:
    """The architecture the catalog builds the source for, where it needs one (wgmma: sm_90a)."""
    return next((launch.arch for spec in registry.CATALOG for launch in spec.launches if launch.file == path.name),
                None)


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
@pytest.mark.parametrize("path", ALL_CU, ids=lambda p: p.name)
@pytest.mark.parametrize("traced", [False, True], ids=["plain", "traced"])
def test_nvcc_builds_every_kernel(path, traced):
    for params in _choices(path):
        if traced and path not in TRACED_CU:   # the hardware addresses its loads: nothing to record
            with pytest.raises(EngineError, match="not traced"):
                build.build_cubin(str(path), params, traced, _arch(path))
            continue
        cubin = build.build_cubin(str(path), params, traced, _arch(path))
        assert cubin.stat().st_size > 0


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("path", TRACED_CU, ids=lambda p: p.name)
def test_host_compiler_builds_every_kernel_for_cpu_traces(path):
    if path.name in REFUSED_ON_CPU:   # its locals would overflow an emulated thread's stack: refused, at their line
        with pytest.raises(EngineError, match=r"big_local_array\.cu:\d+:\d+: error: this function's local variables"):
            build.build_cpu_library(str(path), _choices(path)[-1])
        return
    assert build.build_cpu_library(str(path), _choices(path)[-1]).stat().st_size > 0


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
def test_plain_build_has_no_tracing_code():
    cubin = build.build_cubin("naive_x_cols.cu", {}, traced=False)
    traced = build.build_cubin("naive_x_cols.cu", {}, traced=True)
    assert b"trace_records" not in cubin.read_bytes() and b"trace_records" in traced.read_bytes()


def _rebuilds_after_editing(tmp_path, monkeypatch, headers: dict[str, str], includes: str, edited: str) -> bool:
    """Whether a CPU build of a kernel that includes `includes` is a new build after `edited` (one of
    `headers`, written beside it) changes SCALE_BY from 2 to 3."""
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path / "cache"))
    for name, text in headers.items():
        (tmp_path / name).write_text(text)
    kernel = tmp_path / "scaled.cu"
    kernel.write_text(f'#include "trace.cuh"\n#include "{includes}"\n\nextern "C" __global__ void scaled(const float *A, '
                      'float *C, int M, int N, int K) {\n    int i = threadIdx.x;\n    if (i < M) STG(C, i, LDG(A, i) * '
                      'SCALE_BY);\n}\n')
    first = build.build_cpu_library(str(kernel), {})
    (tmp_path / edited).write_text((tmp_path / edited).read_text().replace("2.0f", "3.0f"))
    second = build.build_cpu_library(str(kernel), {})
    return first != second and first.exists() and second.exists()


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_editing_a_header_a_kernel_includes_rebuilds_the_kernel(tmp_path, monkeypatch):
    """wgmma_tma.cu and wgmma_padded.cu share cuda/wgmma.cuh: a build keyed on the kernel's own text
    alone would hand out the build of the header as it was."""
    assert _rebuilds_after_editing(tmp_path, monkeypatch, {"scale.cuh": "#define SCALE_BY 2.0f\n"}, "scale.cuh", "scale.cuh")


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_editing_a_header_a_kernel_reaches_through_another_header_rebuilds_the_kernel(tmp_path, monkeypatch):
    """wgmma_epilogue.cu includes wgmma_persistent.cuh, which includes wgmma.cuh: a key made of the
    headers the kernel names itself handed out the build of wgmma.cuh as it was."""
    headers = {"inner.cuh": "#define SCALE_BY 2.0f\n", "outer.cuh": '#pragma once\n#include "inner.cuh"\n'}
    assert _rebuilds_after_editing(tmp_path, monkeypatch, headers, "outer.cuh", "inner.cuh")


def test_a_header_included_in_a_circle_is_read_once(tmp_path):
    """Two headers that include each other (each behind #pragma once) end the walk, each counted once."""
    (tmp_path / "a.cuh").write_text('#pragma once\n#include "b.cuh"\n')
    (tmp_path / "b.cuh").write_text('#pragma once\n#include "a.cuh"\n')
    kernel = tmp_path / "k.cu"
    kernel.write_text('#include "a.cuh"\n\nextern "C" __global__ void k(const float *A, float *C, int M, int N, int K) {}\n')
    from engine.kernels import sources
    text = build.local_headers(sources.load(str(kernel)))
    assert text.count('#include "b.cuh"') == 1 and text.count('#include "a.cuh"') == 1


@pytest.mark.skipif(build.nvcc() is None or sass.nvdisasm() is None, reason="nvcc or nvdisasm not installed")
def test_mma_pipelineds_copy_loops_are_unrolled_in_the_timed_build():
    """Each pass of copy_tiles' two loops is its own cp.async (LDGSTS) in the SASS: 8 passes of A's
    tile and 8 of B's at the defaults, and copy_tiles is inlined twice (the ring's first tiles, the
    main loop), so 32. With the half-by-half branch in their bodies nvcc had left the loops rolled
    (4 LDGSTS in one version), and mma_pipelined ran 231 TFLOP/s at 4096^3 on an H100 against 302
    unrolled; the choice between the two is now made once per matrix, outside its loop."""
    spec = registry.get("mma_pipelined")
    cubin = build.build_cubin("mma_pipelined.cu", spec.default_params(), traced=False)
    listing = subprocess.run([sass.nvdisasm(), str(cubin)], capture_output=True, text=True, check=True).stdout
    assert len(re.findall(r"\bLDGSTS\b", listing)) == 32


def _longest_load_run(listing: str) -> int:
    """The most 16-byte global loads the SASS issues back to back, with no shared store between them."""
    ops = re.findall(r"\b(LDG\.E\.128|STS\.128)\b", listing)
    longest = run = 0
    for op in ops:
        run = run + 1 if op.startswith("LDG") else 0
        longest = max(longest, run)
    return longest


@pytest.mark.skipif(build.nvcc() is None or sass.nvdisasm() is None, reason="nvcc or nvdisasm not installed")
@pytest.mark.parametrize("kernel", ["wmma_block", "mma_ldmatrix", "mma_swizzled"])
def test_the_tile_copies_issue_their_loads_before_their_stores_where_rows_are_aligned(kernel):
    """At sizes whose rows start on 16 bytes the copy loops are unrolled, every load of a pass in
    flight before the first store waits for its data. With the half-by-half branch in the loop body
    nvcc had left them rolled, one load waited for at a time (SASS: no two LDG.E.128 in a row), and
    at 4096^3 on an H200 the three rungs ran at 67, 61 and 67 TFLOP/s; with the aligned version of
    their own, 167, 96 and 145 (recorded runs of 2026-11-26)."""
    spec = registry.get(kernel)
    cubin = build.build_cubin(f"{kernel}.cu", spec.default_params(), traced=False)
    listing = subprocess.run([sass.nvdisasm(), str(cubin)], capture_output=True, text=True, check=True).stdout
    assert _longest_load_run(listing) >= 4
