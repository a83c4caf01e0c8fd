"""The kernel contract (engine/kernels/registry.py): every entry keeps it, requests are checked against it,
and a new kernel with a new parameter is a .cu file and a registry entry, nothing else."""
import re
from pathlib import Path

import pytest

from engine import cli
from engine.errors import EngineError
from engine.kernels import build, registry, sources
from engine.kernels.problem import make_problem
from engine.tracing import tracer

CONTRACT_CU = str(Path(__file__).parent / "cuda" / "contract" / "rows_1d.cu")


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
    """The whole of what a new kernel takes: this entry and its .cu file."""
    def bs(p):
        return p.params["BS"]
    return registry.KernelSpec(
        name="rows_1d", title="One thread per output, 1-D blocks", seeds=("002",),
        lesson="A block-size parameter the engine has never heard of.",
        launches=(registry.Launch(CONTRACT_CU, grid=lambda p: (-(-p.m * p.n // bs(p)), 1),
                                  block=lambda p: (bs(p), 1), records_per_thread=lambda p: 2 * p.k + 1),),
        params={"BS": (64, 128)}, shows=frozenset({"coalescing", "benchmarks"}))


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
        # the pages, the prebuild and the catalog see it too
        assert "rows_1d" in registry.showing("coalescing") and "rows_1d" not in registry.showing("tile_phases")
        assert set(build.variants(["rows_1d"])) == {("cpu", CONTRACT_CU, (("BS", 64),)),
                                                             ("cpu", CONTRACT_CU, (("BS", 128),))}
        assert cli.parameters(spec) == ["BS 64/128"]
        with pytest.raises(EngineError, match=re.escape("rows_1d takes BS 64, 128, not 96")):
            tracer.trace("rows_1d", make_problem(m, n, k, params={"BS": 96}), source="cpu")
        with pytest.raises(EngineError, match=re.escape("rows_1d has no parameter TILE (it takes BS)")):
            tracer.trace("rows_1d", make_problem(m, n, k, tile=16), source="cpu")
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
    assert registry.bind(spec, make_problem(32, 32, 32, pad=1)).params == {"TILE": 16, "PAD": 1}


def test_cli_takes_any_parameter_by_name(capsys):
    assert cli.main(["trace", "shared_bank_conflicts", "--m", "32", "--n", "32", "--k", "32",
                     "--param", "TILE=8", "--param", "PAD=1", "--source", "cpu"]) == 0
    assert '"params": {\n    "TILE": 8,\n    "PAD": 1\n  }' in capsys.readouterr().out
    assert cli.main(["trace", "naive_x_cols", "--m", "8", "--n", "8", "--k", "8", "--param", "TILE"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err
