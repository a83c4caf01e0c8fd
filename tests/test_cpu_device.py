"""The CPU trace source runs the kernels' own sources: results must be right, faults reported."""
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
        "shared_out_of_bounds accessed As outside its bounds: the kernel is wrong for this size", "True"]


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
