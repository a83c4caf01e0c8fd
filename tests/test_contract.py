"""The kernel contract (engine/kernels/contract.py): every entry keeps it, requests are checked against it,
and a new kernel with a new parameter is a .cu file with its contract block, nothing else."""
import re
from pathlib import Path

import numpy as np
import pytest

from engine import cli
from engine.errors import EngineError
from engine.kernels import build, declared, registry, sources, warmup
from engine.kernels.problem import make_problem
from engine.metrics import analysis
from engine.tracing import tracer

CONTRACT_CU = str(Path(__file__).parent / "cuda" / "contract" / "rows_1d.cu")
MOVED_CU = str(Path(__file__).parent / "cuda" / "contract" / "moved_pointers.cu")


@pytest.mark.parametrize("spec", registry.CATALOG, ids=lambda s: s.name)
def test_every_entry_keeps_the_contract(spec):
    for name, allowed in spec.params.items():
        # build.used_defines decides which parameters reach the compiler by this test (KernelSource.uses)
        assert any(sources.load(launch.file).uses(name) for launch in spec.launches), name
        assert spec.default_params()[name] in allowed
        assert all(isinstance(v, int) for v in allowed)
    assert set(spec.defaults) <= set(spec.params)
    assert set(spec.shows) <= set(registry.VIEWS)
    assert isinstance(spec.kind, registry.Kind)
    assert {spec.inputs, spec.compute, spec.accumulate} <= set(registry.Precision)
    if set(spec.shows) & set(registry.TRACED_VIEWS):
        assert spec.traceable
    for params in spec.combinations():   # every choice the pages can ask for binds
        registry.bind(spec, make_problem(96, 96, 96, block=spec.default_block, params=params))


def test_the_precisions_a_tensor_core_kernel_needs_can_be_declared():
    assert {"fp16", "bf16", "tf32", "fp32"} <= {str(p) for p in registry.Precision}
    assert all(p in registry.TOLERANCE for p in registry.Precision)
    assert registry.get("cublas_sgemm_tf32").precision == "tf32"


def test_a_broken_entry_is_refused():
    base = registry.get("tiled_guarded")
    for change, why in (({"params": {"TILE": (8, 16)}, "defaults": {"TILE": 32}}, "default TILE=32"),
                        ({"params": {"TILE": (8,), "WIDTH": (4,)}}, "no source of it uses WIDTH"),
                        ({"shows": frozenset({"roofline"})}, "roofline"),
                        ({"params": {}, "defaults": {}}, "(tile_phases|bank_conflicts) view needs")):
        with pytest.raises(ValueError, match=why), registry.registered(_renamed(base, **change)):
            pass


def _renamed(spec, **change):
    from dataclasses import replace
    return replace(spec, name=f"{spec.name}_copy", **change)


def _rows_1d() -> registry.KernelSpec:
    """The whole of what a new kernel takes: its .cu file, contract block included."""
    return declared.spec_from_source(CONTRACT_CU)


def test_a_new_kernel_is_a_source_and_an_entry():
    with registry.registered(_rows_1d()) as spec:
        m, n, k = 37, 45, 29
        t = tracer.trace("rows_1d", make_problem(m, n, k, params={"BS": 128}), source="cpu")
        assert t.launches[-1].block == (128, 1) and t.launches[-1].grid == (-(-m * n // 128), 1)
        assert t.problem.params == {"BS": 128}
        assert t.checked_outputs == m * n          # every element of C, each checked ...
        assert t.rel_error < 1e-6                  # ... against float64 numpy
        default = tracer.trace("rows_1d", make_problem(m, n, k), source="cpu")
        assert default.launches[-1].block == (64, 1) and default.rel_error < 1e-6
        # the pages, the background compiles and the catalog see it too
        assert "rows_1d" in registry.showing("coalescing") and "rows_1d" not in registry.showing("tile_phases")
        assert set(warmup.jobs("rows_1d", warmup.choices_of({"BS": (64, 128, 96)}), "cpu")) == {
            warmup.Job("cpu", CONTRACT_CU, (("BS", 64),)), warmup.Job("cpu", CONTRACT_CU, (("BS", 128),))}
        assert cli.parameters(spec) == ["BS 64/128"]
        with pytest.raises(EngineError, match=re.escape("rows_1d takes BS 64, 128, not 96")):
            tracer.trace("rows_1d", make_problem(m, n, k, params={"BS": 96}), source="cpu")
        with pytest.raises(EngineError, match=re.escape("rows_1d has no parameter TILE (it takes BS)")):
            tracer.trace("rows_1d", make_problem(m, n, k, params={"TILE": 16}), source="cpu")
    assert "rows_1d" not in registry.showing("coalescing")


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
def test_the_new_kernel_builds_for_the_gpu():
    assert build.build_cubin(CONTRACT_CU, {"BS": 128}, traced=True).stat().st_size > 0


def test_requests_are_checked_against_the_declaration():
    spec = registry.get("shared_bank_conflicts")
    with pytest.raises(EngineError, match=re.escape("shared_bank_conflicts takes PAD 0, 1, not 2")):
        registry.bind(spec, make_problem(32, 32, 32, params={"PAD": 2}))
    with pytest.raises(EngineError, match=re.escape("has no parameter BM (it takes TILE, PAD)")):
        registry.bind(spec, make_problem(32, 32, 32, params={"BM": 64}))
    assert registry.bind(spec, make_problem(32, 32, 32, params={"PAD": 1})).params == {"TILE": 16, "PAD": 1}


def test_cli_takes_any_parameter_by_name(capsys):
    assert cli.main(["trace", "shared_bank_conflicts", "--m", "32", "--n", "32", "--k", "32",
                     "--param", "TILE=8", "--param", "PAD=1", "--source", "cpu"]) == 0
    assert '"params": {\n    "TILE": 8,\n    "PAD": 1\n  }' in capsys.readouterr().out
    assert cli.main(["trace", "naive_x_cols", "--m", "8", "--n", "8", "--k", "8", "--param", "TILE"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def _moved_pointers() -> registry.KernelSpec:
    """A tiled kernel written the production way: moved pointers, 1-D shared tiles, a template helper."""
    return declared.spec_from_source(MOVED_CU)


def test_moved_pointers_record_each_element_by_its_place_in_the_matrix():
    """A += blockIdx.y * BS * K; LDG(A, row * K + col): the record says the element of the whole
    matrix that was read, not an index from the moved pointer."""
    bs, m, n, k = 8, 24, 16, 32
    with registry.registered(_moved_pointers()):
        t = tracer.trace("moved_pointers", make_problem(m, n, k, params={"TILE": bs}), source="cpu")
    assert t.rel_error < 1e-6 and t.checked_outputs == m * n
    r = t.records
    row, col = r["thread_x"] // bs, r["thread_x"] % bs
    by, bx = r["block_y"].astype(int), r["block_x"].astype(int)
    step = r["ordinal"].astype(int)          # the K step of a tile load: its ordinal
    site = np.array([(s.site.array, s.site.op) for s in t.sites])[r["site"]]
    expected = {
        ("A", "load"): (by * bs + row, step * bs + col),
        ("B", "load"): (step * bs + row, bx * bs + col),
        ("C", "store"): (by * bs + row, bx * bs + col),
        ("As", "store"): (0, row * bs + col),              # 1-D: one row
    }
    for (array, op), (want_row, want_col) in expected.items():
        mine = (site[:, 0] == array) & (site[:, 1] == op)
        assert mine.sum() > 0
        assert np.array_equal(r["row"][mine], np.broadcast_to(want_row, mine.shape)[mine]), array
        assert np.array_equal(r["col"][mine], np.broadcast_to(want_col, mine.shape)[mine]), array
    # The helper's reads of As: element row * BS + kk, kk = the helper's loop step.
    reads = (site[:, 0] == "As") & (site[:, 1] == "load")
    assert np.array_equal(r["col"][reads], (row * bs + r["ordinal"].astype(int) % bs)[reads])
    assert {t.arrays[a] for a in np.unique(r["array"])} == {"A", "B", "C", "As", "Bs"}


def test_tiling_written_two_ways_has_one_hardware_story():
    """moved_pointers (moved pointers, 1-D tiles, a helper) and tiled_guarded (indices from the
    original pointers, 2-D tiles) make the same accesses: every Nsight Compute total agrees."""
    m, n, k = 64, 48, 32
    with registry.registered(_moved_pointers()):
        moved = tracer.trace("moved_pointers", make_problem(m, n, k, params={"TILE": 16}), source="cpu")
    tiled = tracer.trace("tiled_guarded", make_problem(m, n, k, params={"TILE": 16}), source="cpu")
    totals = [analysis.ncu_totals(analysis.site_summary(t)) for t in (moved, tiled)]
    assert totals[0] == totals[1]
    assert totals[0]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] > 0


@pytest.mark.parametrize("body, why", [
    ("  const float *a = A + 4;\n  STG(C, 0, LDG(a, 0));", "copied into another pointer"),
    ("  A = B;\n  STG(C, 0, LDG(A, 0));", "pointed somewhere else"),
])
def test_a_pointer_may_move_but_not_be_copied_or_repointed(tmp_path, body, why):
    src = tmp_path / "k.cu"
    src.write_text(f'#include "trace.cuh"\nextern "C" __global__ void k(const float *A, const float *B, float *C) {{\n'
                   f"{body}\n}}\n")
    with pytest.raises(ValueError, match=why):
        sources.load(str(src))


@pytest.mark.parametrize("helper, why", [
    ("__device__ float f(const float *As) { return LDS(As, 0); }", "reference to the array named As"),
    ("__device__ float f(const float (&Bs)[8]) { return LDS(Bs, 0); }", "reference to the array named As"),
])
def test_a_shared_array_goes_to_a_helper_by_reference_under_its_name(tmp_path, helper, why):
    src = tmp_path / "k.cu"
    src.write_text(f'#include "trace.cuh"\n{helper}\nextern "C" __global__ void k(const float *A, float *C) {{\n'
                   "  __shared__ float As[8];\n  STS(As, threadIdx.x, LDG(A, threadIdx.x));\n  SYNC();\n"
                   "  STG(C, threadIdx.x, f(As));\n}\n")
    with pytest.raises(ValueError, match=why):
        sources.load(str(src))


HALF_CU = str(Path(__file__).parent / "cuda" / "contract" / "half_inputs.cu")
BF16_CU = str(Path(__file__).parent / "cuda" / "contract" / "bf16_inputs.cu")


def _low_precision(name: str, file: str, inputs: registry.Precision) -> registry.KernelSpec:
    """A naive kernel whose A and B are stored in 16 bits: the entry says so (inputs), whatever A stores."""
    return declared.spec_from_source(file, name=name, inputs=inputs, compute=registry.Precision.FP32)


def _rounded_error(p, inputs: registry.Precision) -> float:
    """The error a product of inputs rounded to that precision has against float64 of the inputs."""
    from engine.kernels.problem import make_inputs
    from engine.kernels.reference import relative_error
    from engine.tracing.plan import array_dtype, to_storage
    a, b = make_inputs(p)
    if inputs == registry.Precision.FP16:
        ra, rb = a.astype(np.float16), b.astype(np.float16)
    else:   # bfloat16 bits back to float32
        ra, rb = ((to_storage(x, array_dtype("A", inputs)).astype(np.uint32) << 16).view(np.float32) for x in (a, b))
    return relative_error(ra.astype(np.float64) @ rb.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("name, file, inputs", [("half_inputs", HALF_CU, registry.Precision.FP16),
                                                ("bf16_inputs", BF16_CU, registry.Precision.BF16)])
def test_inputs_are_stored_in_the_precision_the_entry_declares(name, file, inputs):
    with registry.registered(_low_precision(name, file, inputs)) as spec:
        p = make_problem(37, 45, 29)
        t = tracer.trace(name, p, source="cpu")
    assert t.checked_outputs == 37 * 45 and t.rel_error <= spec.tolerance
    # The error is that of the rounded inputs (rounded to nearest even, as the GPU rounds), not
    # float32's, nor another rounding's.
    want = _rounded_error(p, inputs)
    assert want > 1e-5 and abs(t.rel_error - want) < 0.01 * want   # float32 alone: about 1e-7
    # Records count 2-byte elements of A: offsets are twice the index.
    r = t.records
    a = r[r["array"] == t.arrays.index("A")]
    assert np.array_equal(a["offset"], (a["row"].astype(np.uint32) * 29 + a["col"]) * 2)


def test_an_entry_whose_source_stores_other_inputs_is_refused():
    spec = _low_precision("half_inputs", HALF_CU, registry.Precision.FP32)
    with pytest.raises(ValueError, match="declares A as __half, and its inputs are fp32"), registry.registered(spec):
        pass
