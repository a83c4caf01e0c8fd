"""The CPU trace source runs the kernels' own sources: results must be right, faults reported."""
import re

import numpy as np
import pytest

from engine.devices.cpu import CpuDevice
from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.tracing import tracer
from engine.tracing.execute import execute
from engine.tracing.plan import single_launch_plan


def _problem(spec, m, n, k):
    # The largest value of each parameter (TILE 32, PAD 1): the most shared memory, the widest rows
    # (the last choice its rules allow: for the ladder, its largest tiles)
    return make_problem(m, n, k, block=spec.default_block, params=spec.combinations()[-1] if spec.params else {})


@pytest.mark.parametrize("spec", registry.traceable(), ids=lambda s: s.name)
def test_every_kernel_computes_the_product_on_the_cpu(spec):
    m, n, k = (64, 96, 32) if any(r.sizes for r in spec.rules) else (37, 45, 29)   # tiled_unguarded: multiples of TILE
    t = tracer.trace(spec.name, _problem(spec, m, n, k), source="cpu")
    assert t.checked_outputs == m * n          # every element of C written by a traced block
    # vs float64 numpy of the float32 inputs: FP16-input kernels also carry their inputs' rounding
    assert t.rel_error < (1e-6 if spec.inputs is registry.Precision.FP32 else spec.tolerance)


def test_records_stay_within_the_registry_bound():
    for spec in registry.traceable():
        p = _problem(spec, 64, 64, 64)
        t = tracer.trace(spec.name, p, source="cpu")
        bound = sum(len(l.blocks) * l.block[0] * l.block[1] * launch.records_per_thread(p)
                    for l, launch in zip(t.launches, spec.launches))
        assert len(t) <= bound


def test_out_of_bounds_access_is_an_error_not_a_crash():
    p = make_problem(8, 8, 8)
    plan = single_launch_plan(str(__import__("pathlib").Path(__file__).parent / "cuda" / "fault_out_of_bounds.cu"),
                              p, (1, 1), (32, 1))
    with pytest.raises(EngineError, match="outside its bounds"):
        execute(plan, CpuDevice())
    # ... and the next request works.
    assert tracer.trace("naive_x_cols", make_problem(8, 8, 8), source="cpu").rel_error < 1e-6


def test_concurrent_cpu_traces_do_not_mix():
    from concurrent.futures import ThreadPoolExecutor
    probs = [make_problem(16 + i, 24, 8 + i, params={"TILE": 8}) for i in range(6)]
    with ThreadPoolExecutor(4) as pool:
        traces = list(pool.map(lambda p: tracer.trace("tiled_guarded", p, source="cpu"), probs))
    for p, t in zip(probs, traces):
        alone = tracer.trace("tiled_guarded", p, source="cpu")
        assert np.array_equal(alone.records, t.records)
        assert t.rel_error < 1e-6


def test_a_fault_names_its_line_and_the_first_thread_that_made_it():
    """An access outside its array had named only the array: the line (first, for the Playground's
    gutter) and the thread and block of the launch's first such access are now said too."""
    plan = single_launch_plan(str(_CUDA / "fault_out_of_bounds.cu"), make_problem(8, 8, 8), (1, 1), (32, 1))
    line = 1 + next(i for i, t in enumerate((_CUDA / "fault_out_of_bounds.cu").read_text().splitlines()) if "STG(C, far" in t)
    with pytest.raises(EngineError, match=rf"^fault_out_of_bounds\.cu:{line}: fault_out_of_bounds accessed C outside "
                                          r"its bounds \(thread \(0, 0\) of block \(0, 0\)\): the kernel is wrong"):
        execute(plan, CpuDevice())
    plan = single_launch_plan(str(_CUDA / "vec4_misaligned.cu"), make_problem(8, 8, 8), (1, 1), (32, 1))
    with pytest.raises(EngineError, match=r"^vec4_misaligned\.cu:\d+: vec4_misaligned made a vector access of B at an "
                                          r"address that is not a multiple of its size \(thread \(\d+, 0\) of block"):
        execute(plan, CpuDevice())


def test_shared_memory_out_of_bounds_is_an_error_not_a_crash():
    # Run in a child process: before shared arrays were bounds-checked, this store killed the
    # process (a segfault), which would take the whole test run with it.
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    script = f"""
from engine.tracing import tracer
from engine.devices.cpu import CpuDevice
from engine.errors import EngineError
from engine.tracing.execute import execute
from engine.tracing.plan import single_launch_plan
from engine.kernels.problem import make_problem
plan = single_launch_plan({str(root / "tests" / "cuda" / "shared_out_of_bounds.cu")!r}, make_problem(8, 8, 8, params={{"TILE": 16}}), (1, 1), (32, 1))
try:
    execute(plan, CpuDevice())
except EngineError as exc:
    print(exc)
print(tracer.trace("tiled_guarded", make_problem(8, 8, 8, params={{"TILE": 8}}), source="cpu").rel_error < 1e-6)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "shared_out_of_bounds.cu:8: shared_out_of_bounds accessed As outside its bounds (thread (0, 0) of block (0, 0)): "
        "the kernel is wrong for this size", "True"]


def test_shared_memory_in_bounds_at_every_tile_and_pad():
    # The shared bounds are the declared shapes, padding included: no correct kernel trips them.
    for spec in registry.traceable():
        for params in spec.combinations():
            if "TILE" in params:
                tile = params["TILE"]
                p = make_problem(2 * tile, tile, 2 * tile, block=spec.default_block, params=params)
                assert tracer.trace(spec.name, p, source="cpu").rel_error < 1e-6


def test_every_library_loaded_is_its_own():
    # Libraries are loaded from in-memory copies (/proc/self/fd/N): dlopen answers a path it has
    # seen with the library it loaded then, so no two may ever share a path.
    import ctypes

    from engine.devices import cpu
    fns = [cpu._library(f, {}) for f in ("naive_x_cols.cu", "naive_x_rows.cu", "transpose_b.cu")]
    assert len({ctypes.cast(fn, ctypes.c_void_p).value for fn in fns}) == 3


def test_a_one_block_trace_of_the_transposed_b_pipeline_transposes_only_what_it_reads():
    # Block (5, 3) computes C columns 160..191: it reads rows 160..191 of BT, which the transpose
    # blocks (5, y) write, for every y. Before, all 16 x 12 transpose blocks ran.
    p = make_problem(256, 512, 96, block=(32, 8))
    t = tracer.trace("naive_transposed_b", p, [(5, 3)], source="cpu")
    assert [tuple(b) for b in t.launches[0].blocks.tolist()] == [(5, y) for y in range(96 // 8)]
    assert not t.launches[0].traced
    assert t.checked_outputs == 32 * 8 and t.rel_error < 1e-6     # BT was complete where it was read


_CUDA = __import__("pathlib").Path(__file__).parent / "cuda"


def test_a_kernel_written_for_nvcc_compiles_and_computes_on_the_cpu(capfd):
    """Math functions, printf, assert, __restrict__ pointers, __constant__ and __device__ helpers had
    each failed the CPU build ("was not declared"; __restrict__ with a message from trace.cuh)."""
    run = execute(single_launch_plan(str(_CUDA / "host_functions.cu"), make_problem(37, 45, 29), (2, 6), (32, 8)),
                  CpuDevice())
    assert run.checked_outputs == 37 * 45 and run.rel_error < 1e-6
    assert "host_functions: K = 29" in capfd.readouterr().out   # printf goes to stdout, nowhere else


def test_warp_shuffles_are_warp_collectives_with_ptx_semantics():
    """__shfl_*_sync (idx, up, down, bfly; width; out-of-segment lanes read their own value), the
    votes and __syncwarp: the kernel's result is right only where each answers as the PTX ISA says."""
    run = execute(single_launch_plan(str(_CUDA / "warp_shuffles.cu"), make_problem(8, 8, 70), (8, 2), (32, 4)),
                  CpuDevice())
    assert run.checked_outputs == 64 and run.rel_error < 1e-6


def test_threads_meeting_at_syncs_of_different_lines_are_an_error():
    """SYNC() in both arms of a branch had traced green: CUDA allows __syncthreads() in conditional
    code only where every thread of the block takes the same branch. The message names the file and
    line first, where the Playground marks it."""
    plan = single_launch_plan(str(_CUDA / "sync_two_sites.cu"), make_problem(64, 64, 64), (1, 1), (64, 1))
    with pytest.raises(EngineError, match=r"^sync_two_sites\.cu:8: sync_two_sites: threads of a block met at "
                                          r"different SYNC\(\)s \(line 8 and line 10\)") as exc:
        execute(plan, CpuDevice())
    assert "\n" not in str(exc.value)


def test_threads_that_returned_do_not_hold_up_a_barrier():
    """Since compute capability 7.0 a barrier waits for the threads that have not exited: `if (row >= M)
    return;` before a tiled loop's SYNC()s is a kernel the GPU runs as written (tests/test_gpu.py checks
    it there), and this session's first barrier check had refused it."""
    run = execute(single_launch_plan(str(_CUDA / "sync_after_return.cu"), make_problem(64, 64, 64), (1, 1), (64, 1)),
                  CpuDevice())
    assert run.checked_outputs == 64


def test_local_arrays_past_a_threads_stack_are_refused_at_their_line(tmp_path, monkeypatch):
    """An 80 KB local array overflowed the 64 KB fiber stack and crashed the process; now the build
    refuses it, at the function's line, in words the Playground shows there."""
    from engine import playground
    from engine.kernels import build
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    with pytest.raises(EngineError, match="local arrays") as exc:
        build.build_cpu_library(str(_CUDA / "big_local_array.cu"), {})
    [found] = playground.diagnostics(str(exc.value))
    # (its 80,000-byte array and what the compiler keeps beside it: the total moves with the tracer's own code)
    assert found.line == 11 and "64 KB each emulated thread has" in found.message, found.message
    assert 80_000 <= int(re.search(r"take ([\d,]+) bytes", found.message).group(1).replace(",", "")) < 82_000


def test_a_stack_overflow_past_the_build_check_faults_in_its_guard_page():
    """Calls nested past the fiber stack (no one function over the build's limit) had run on over
    the next fiber's stack; the guard page below each stack stops it there (a segfault, which the
    sandbox reports as one line; no catalog kernel comes near)."""
    import signal
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    script = f"""
from engine.devices.cpu import CpuDevice
from engine.tracing.execute import execute
from engine.tracing.plan import single_launch_plan
from engine.kernels.problem import make_problem
execute(single_launch_plan({str(_CUDA / "deep_stack.cu")!r}, make_problem(8, 8, 8), (1, 1), (32, 1)), CpuDevice())
print("ran on")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGSEGV and "ran on" not in done.stdout, (done.returncode, done.stderr[-2000:])
