import pytest

from engine import build, sass

pytestmark = pytest.mark.skipif(sass.nvdisasm() is None or build.nvcc() is None, reason="no nvdisasm/nvcc")


def test_seed001_tile_a_reads_merge_into_lds128_without_padding_only():
    src_line = next(s.line for s in __import__("engine.sources", fromlist=["x"]).load("shared_bank_conflicts.cu").sites
                    if s.array == "tile_A" and s.op == "load")
    plain = sass.memory_instructions("shared_bank_conflicts.cu", 32, 0)
    padded = sass.memory_instructions("shared_bank_conflicts.cu", 32, 1)
    assert "LDS.128" in plain["by_line"][src_line] and "LDS.128" in plain["note"]
    assert set(padded["by_line"][src_line]) == {"LDS"}


def test_naive_kernel_sass_is_scalar():
    info = sass.memory_instructions("naive_x_cols.cu", 16, 0)
    assert info["note"].startswith("SASS matches the source")
