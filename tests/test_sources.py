import pytest

from engine import sources


def test_trace_arrays_read_from_trace_header():
    names = sources.trace_arrays()
    assert names[:4] == ("A", "B", "C", "BT")
    assert "tile_A" in names and "As" in names


def test_sites_carry_line_array_and_kind():
    src = sources.load("tiled_guarded.cu")
    lines = src.text.splitlines()
    assert src.name == "tiled_guarded"
    assert [n for _, n in src.params] == ["A", "B", "C", "M", "N", "K"]
    kinds = {(s.array, s.space, s.op) for s in src.sites}
    assert ("As", "shared", "store") in kinds and ("A", "global", "load") in kinds and ("C", "global", "store") in kinds
    for s in src.sites:
        assert s.array in lines[s.line - 1]  # the recorded line really holds that access


def test_shared_shapes_follow_tile_and_pad():
    src = sources.load("shared_bank_conflicts.cu")
    assert src.shared_shape("tile_A", {"TILE": 32, "PAD": 1}) == (32, 33)
    assert src.shared_shape("tile_B", {"TILE": 16, "PAD": 0}) == (16, 16)


def test_two_accesses_of_one_array_on_a_line_are_refused(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('#include "trace.cuh"\nextern "C" __global__ void bad(const float *A, float *C) {\n'
                   "  STG(C, 0, LDG(A, 0) + LDG(A, 1));\n}\n")
    with pytest.raises(ValueError, match="cannot be told apart"):
        sources.load(str(bad))
