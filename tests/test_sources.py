import pytest

from engine.kernels import sources


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


def _kernel(tmp_path, body: str, params: str = "const float *A, const float *B, float *C, int M, int N, int K"):
    src = tmp_path / "k.cu"
    src.write_text(f'#include "trace.cuh"\nextern "C" __global__ void k({params}) {{\n{body}\n}}\n')
    return str(src)


@pytest.mark.parametrize("body, line, says", [
    # Production style: the product is right, but every record of A would say row 0.
    ("  int row = blockIdx.y;\n  A += row * K;\n  STG(C, row, LDG(A, 0));", 4, "A is moved"),
    ("  for (int k = 0; k < K; k++, B += N) STG(C, k, LDG(B, 0));", 3, "B is moved"),
    ("  const float *a = A + blockIdx.y * K;\n  STG(C, 0, 1.0f);", 3, "A is copied into another pointer"),
    ("  const float *a = &A[blockIdx.y * K];\n  STG(C, 0, 1.0f);", 3, "A is copied into another pointer"),
    ("  C[threadIdx.x] = LDG(A, threadIdx.x);", 3, "C is indexed directly"),
    ("  STG(C, 0, *A);", 3, "A is dereferenced directly"),
    ("  __shared__ float As[TILE][TILE];\n  As[0][threadIdx.x] = 1.0f;\n  STG(C, 0, LDS(As, 0, 0));", 4,
     "As is indexed directly"),
], ids=["moved", "moved-in-for", "alias", "alias-address", "raw-store", "raw-deref", "raw-shared"])
def test_an_access_the_trace_would_get_wrong_is_refused_with_its_line(tmp_path, body, line, says):
    with pytest.raises(ValueError, match=rf"k.cu:{line}: {says}"):
        sources.load(_kernel(tmp_path, body))


def test_what_looks_like_an_access_but_is_not_passes(tmp_path):
    body = ("  // A += 1 in a comment, and /* C[0] = 2 */ in a block comment\n"
            "  int n = N; n += 1; float a = LDG(A, 0);\n"
            "  if (a == 0.0f && M == N) STG(C, 0, a);")
    params = "const float *A,\n    const float *B, float *C, int M, int N, int K"   # a signature over two lines
    assert [s.array for s in sources.load(_kernel(tmp_path, body, params)).sites] == ["A", "C"]


@pytest.mark.parametrize("body, line, says", [
    ("  float4 b = reinterpret_cast<const float4 *>(B)[threadIdx.x];\n  STG(C, 0, b.x);", 3, "B is used outside"),
    ("  const float *a = A;\n  STG(C, 0, 1.0f);", 3, "A is used outside"),
    ("  const float *a;\n  a = (A) + 4;\n  STG(C, 0, 1.0f);", 4, "A is used outside"),
    ("  __shared__ float As[4][4];\n  float (*p)[4] = As;\n  STG(C, 0, LDS(As, 0, 0));", 4, "As is used outside"),
    ("  __shared__ float As[4][4], Bs[4][4];\n  STG(C, 0, LDS(As, 0, 0));", 3, "declare one __shared__ array"),
], ids=["cast", "plain-copy", "copy-in-parens", "shared-pointer", "two-shared-in-one"])
def test_any_other_use_of_a_traced_array_is_refused(tmp_path, body, line, says):
    with pytest.raises(ValueError, match=rf"k.cu:{line}: {says}"):
        sources.load(_kernel(tmp_path, body))


def test_helpers_and_strings_that_name_an_array_are_not_accesses(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('#include "trace.cuh"\n'
                   "__device__ float first(const float *A) { return LDG(A, 0); }\n"
                   'extern "C" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n'
                   '  if (M < 0) printf("A = %p, C += 1\\n", M);\n'
                   "  STG(C, 0, first(A));\n}\n")
    # The helper's own parameter and the string are fine; handing A on is refused (conservatively:
    # the helper might be given A + offset, whose records would count from the wrong start).
    with pytest.raises(ValueError, match="k.cu:5: A is used outside"):
        sources.load(str(src))
