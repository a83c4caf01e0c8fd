import itertools
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.kernels import registry, sources
from engine.kernels.problem import make_problem

ROOT = Path(__file__).resolve().parents[1]


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
        registry.bind(spec, make_problem(100, 64, 64, params={"TILE": 16}))
    assert "M=100" in str(info.value) and "N=" not in str(info.value)
    registry.bind(spec, make_problem(96, 64, 64, params={"TILE": 16}))


def test_tile_and_pad_choices_are_checked():
    with pytest.raises(EngineError, match="TILE"):
        registry.bind(registry.get("tiled_guarded"), make_problem(8, 8, 8, params={"TILE": 12}))
    with pytest.raises(EngineError, match="no parameter PAD"):
        registry.bind(registry.get("tiled_guarded"), make_problem(8, 8, 8, params={"PAD": 1}))


# The FP32 ladder as a person wrote it down, each rung with the words its own .cu header uses for the
# rung it fixes ("Fixes: in the vectorized kernel ..."): written here, not read from the registry.
LADDER = (
    ("tiled_guarded", None),
    ("blocktile_1d", "the tiled kernel"),
    ("blocktile_2d", "1-D register tiling"),
    ("vectorized", "2-D register tiling"),
    ("warptile", "the vectorized kernel"),
    ("double_buffered", "the warp-tiled kernel"),
    ("prefetched", "the double-buffered kernel"),
)


def _header(file: str) -> str:
    """A kernel file's opening comment, as one line of prose."""
    lines = (ROOT / "cuda" / file).read_text().splitlines()
    return " ".join(line.lstrip("/").strip() for line in itertools.takewhile(lambda s: s.startswith("//"), lines))


def test_the_ladder_is_the_written_order_and_each_rung_fixes_the_one_its_header_names():
    names = [name for name, _ in LADDER]
    assert list(registry.LADDER_RUNGS) == names
    assert registry.showing("ladder") == names
    for (name, fixes), before in zip(LADDER, [None, *names]):
        assert registry.previous_rung(name) == before
        file = registry.get(name).launches[-1].file
        assert file == f"{name}.cu" and (ROOT / "cuda" / file).is_file()
        header = _header(file)
        assert header.startswith(f"{name}.cu: ")
        if fixes is not None:   # its "Fixes:" sentence names the rung before, as the Ladder page quotes it
            assert f"Fixes: {fixes}" in header or f"Fixes: in {fixes}" in header, header
        assert registry.get(name).lesson


@pytest.mark.parametrize("kernel", ["double_buffered", "prefetched", "warptile", "split_k", "split_k_padded"])
def test_a_block_tile_smaller_than_the_warp_tile_is_refused_by_that_rule(kernel):
    """BM 32 with WM 128 (a choice the Ladder page offers) had been refused as "needs a multiple of 32
    threads per block, up to 1024 (it would run 0)": true, but no hint of which parameter to change.
    The rule that names the warp and block tiles comes first now."""
    with pytest.raises(EngineError, match=r"needs warp tiles \(WM x WN\) that divide the block's tile \(BM x BN\)"):
        registry.bind(registry.get(kernel), make_problem(256, 256, 256, params={"BM": 32, "WM": 128}))
