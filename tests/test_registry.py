import pytest

from engine.errors import EngineError
from engine.kernels import registry, sources
from engine.kernels.problem import make_problem


def test_every_cuda_source_in_the_catalog_exists_and_parses():
    for spec in registry.traceable():
        assert spec.launches
        for launch in spec.launches:
            assert sources.load(launch.file).name == launch.kernel


def test_catalog_covers_every_seed():
    seeds = {s for k in registry.CATALOG for s in k.seeds}
    assert seeds == {"000", "001", "002", "003", "004"}


def test_unknown_kernel():
    with pytest.raises(EngineError, match="unknown kernel 'nope'"):
        registry.get("nope")


def test_unguarded_kernel_refuses_non_multiples_with_the_reason():
    spec = registry.get("tiled_unguarded")
    with pytest.raises(EngineError, match="no boundary guards") as info:
        registry.bind(spec, make_problem(100, 64, 64, tile=16))
    assert "M=100" in str(info.value) and "N=" not in str(info.value)
    registry.bind(spec, make_problem(96, 64, 64, tile=16))


def test_tile_and_pad_choices_are_checked():
    with pytest.raises(EngineError, match="TILE"):
        registry.bind(registry.get("tiled_guarded"), make_problem(8, 8, 8, tile=12))
    with pytest.raises(EngineError, match="no parameter PAD"):
        registry.bind(registry.get("tiled_guarded"), make_problem(8, 8, 8, pad=1))


def test_the_ladder_starts_at_the_tiled_kernel_and_each_rung_knows_the_one_before():
    assert registry.LADDER_RUNGS == ("tiled_guarded", *(k.name for k in registry.LADDER))
    assert registry.LADDER_RUNGS[:6] == ("tiled_guarded", "blocktile_1d", "blocktile_2d", "vectorized", "warptile",
                                         "double_buffered")
    assert registry.showing("ladder") == list(registry.LADDER_RUNGS)
    assert registry.previous_rung("tiled_guarded") is None
    assert [registry.previous_rung(n) for n in registry.LADDER_RUNGS[1:]] == list(registry.LADDER_RUNGS[:-1])
