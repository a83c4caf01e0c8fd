import numpy as np
import pytest

from engine.kernels import sources
from engine.kernels.problem import make_problem
from engine.tracing import tracer
from engine.tracing.plan import single_launch_plan


def test_traced_arrays_are_the_pointer_parameters_then_the_shared_arrays():
    src = sources.load("tiled_guarded.cu")
    assert [(a.name, a.space, a.element, a.dims) for a in src.arrays] == [
        ("A", "global", "float", ()), ("B", "global", "float", ()), ("C", "global", "float", ()),
        ("As", "shared", "float", ("TILE", "TILE")), ("Bs", "shared", "float", ("TILE", "TILE"))]
    # The build numbers them in that order: records carry these numbers.
    defines = src.trace_defines()
    assert {k: v for k, v in defines.items() if "ARRAY" in k or "_ID_" in k} == {
        "TRACE_ID_A": 0, "TRACE_ID_B": 1, "TRACE_ID_C": 2, "TRACE_ID_As": 3, "TRACE_ID_Bs": 4, "TRACE_ARRAY_COUNT": 5}


def test_every_site_counts_its_executions_on_its_own_however_close_the_lines(tmp_path):
    """Twelve sites on twelve neighbouring lines (the first engine's 32-slot hash of the line made
    such kernels fail to load): each record's ordinal is how often its thread had run that site."""
    body = "\n".join(f"  for (int i = 0; i < {1 + s % 3}; i++) STG(C, {s} * 4 + i, LDG(A, {s} * 4 + i));"
                     for s in range(6))
    src = sources.load(_kernel(tmp_path, body))
    assert len(src.sites) == 12 and src.trace_defines()["TRACE_SITE_COUNT"] == 12
    p = make_problem(8, 8, 8)
    plan = single_launch_plan(src.path, p, (1, 1), (32, 1))
    t = tracer.assemble(plan, tracer.run_plan(plan, "cpu"), "cpu")
    r = t.records
    for thread in range(32):
        mine = r[r["thread_x"] == thread]
        for site in np.unique(mine["site"]):
            assert mine["ordinal"][mine["site"] == site].tolist() == list(range((mine["site"] == site).sum()))


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
    # A pointer may move along its allocation (A += row * K), not be pointed at another.
    ("  A = B;\n  STG(C, 0, LDG(A, 0));", 3, "A is pointed somewhere else"),
    ("  for (int k = 0; k < K; k++, B = A) STG(C, k, LDG(B, 0));", 3, "B is pointed somewhere else"),
    ("  const float *a = A + blockIdx.y * K;\n  STG(C, 0, 1.0f);", 3, "A is copied into another pointer"),
    ("  const float *a = &A[blockIdx.y * K];\n  STG(C, 0, 1.0f);", 3, "A is copied into another pointer"),
    ("  C[threadIdx.x] = LDG(A, threadIdx.x);", 3, "C is indexed directly"),
    ("  STG(C, 0, *A);", 3, "A is dereferenced directly"),
    ("  STG(C, 0,\n      LDG(A, 0));", 3, "write each access macro on one line"),
    ("  __shared__ float As[TILE][TILE];\n  As[0][threadIdx.x] = 1.0f;\n  STG(C, 0, LDS(As, 0, 0));", 4,
     "As is indexed directly"),
], ids=["repointed", "repointed-in-for", "alias", "alias-address", "raw-store", "raw-deref", "two-lines", "raw-shared"])
def test_an_access_the_trace_would_get_wrong_is_refused_with_its_line(tmp_path, body, line, says):
    with pytest.raises(ValueError, match=rf"k.cu:{line}: {says}"):
        sources.load(_kernel(tmp_path, body))


@pytest.mark.parametrize("body, says", [
    # A move whose value is used is an access (or a copy) the trace would not see.
    ("  float v = A++[threadIdx.x];\n  STG(C, 0, v);", "A is used outside"),
    ("  float v = (A += 0)[threadIdx.x];\n  STG(C, 0, v);", "A is used outside"),
    ("  float v = __ldg(A++);\n  STG(C, 0, v);", "A is used outside"),
    ("  const float *p = (A -= 0);\n  STG(C, 0, p[0]);", "A is used outside"),
    ("  A++[threadIdx.x] = 1.0f;", "A is used outside"),
    # A line that declares a shared array is checked like any other.
    ("  __shared__ float As[32]; float v = *(A + threadIdx.x);\n  STS(As, 0, v);", "A is"),
    # Shared arrays of every spelling are traced arrays, or refused.
    ("  __shared__ volatile float red[32];\n  red[threadIdx.x] = 1.0f;", "red is indexed directly"),
    ("  __shared__ unsigned int hist[32];\n  hist[threadIdx.x] = 1;", "hist is indexed directly"),
    ("  extern __shared__ float smem[];\n  STS(smem, threadIdx.x, 1.0f);", "smem has no size"),
    # Dynamic shared memory is traced through its typed views, laid end to end, and nothing else.
    ("  extern __shared__ unsigned char smem[];\n  smem[threadIdx.x] = 1;", "without a typed view"),
    ("  extern __shared__ unsigned char smem[];\n  auto &Xs = *reinterpret_cast<float (*)[32]>(smem);\n"
     "  STS(Xs, threadIdx.x, 1.0f); smem[0] = 1;", "k.cu:5: the dynamic shared memory smem is used outside"),
    ("  extern __shared__ unsigned char smem[];\n  auto &Xs = *reinterpret_cast<float (*)[32]>(smem);\n"
     "  auto &Ys = *reinterpret_cast<float (*)[32]>(smem);\n  STS(Xs, 0, 1.0f);\n  STS(Ys, 0, 1.0f);",
     r"Ys must start where the views before it end, at \(smem \+ sizeof\(Xs\)\)"),
    ("  extern __shared__ unsigned char smem[];\n  auto &Xs = *reinterpret_cast<float (*)[32]>(smem);\n"
     "  float *p = Xs[0];\n  STS(Xs, 0, 1.0f);", "Xs is indexed directly"),
    # A // in a string is the string's.
    ('  printf("//"); float v = A[threadIdx.x];\n  STG(C, 0, v);', "k.cu:3: A is"),
], ids=["post-increment-index", "move-as-value", "move-as-argument", "move-copied", "post-increment-store",
        "declaration-line", "volatile", "unsigned-int", "extern", "dynamic-no-view", "dynamic-used-raw",
        "views-overlap", "view-indexed", "string-comment"])
def test_what_the_first_rules_let_through_is_refused(tmp_path, body, says):
    with pytest.raises(ValueError, match=says):
        sources.load(_kernel(tmp_path, body))


def test_views_of_dynamic_shared_memory_are_shared_arrays_and_size_the_launch(tmp_path):
    src = sources.load(_kernel(tmp_path, "  extern __shared__ __align__(128) unsigned char smem[];\n"
                                         "  auto &Xs = *reinterpret_cast<float (*)[2 * BM][BK]>(smem);\n"
                                         "  auto &Ys = *reinterpret_cast<__half (*)[BK]>(smem + sizeof(Xs));\n"
                                         "  STS(Xs, 0, 0, 1.0f);\n  STS(Ys, 1, __float2half(1.0f));"))
    assert src.shared == ("Xs", "Ys") and src.dynamic == "smem"
    assert src.shared_shape("Xs", {"BM": 64, "BK": 32}) == (128, 32)
    assert src.dynamic_shared_bytes({"BM": 64, "BK": 32}) == 128 * 32 * 4 + 32 * 2


@pytest.mark.parametrize("bounds", ["256", "BM * BN / (TM * TN)"])
def test_launch_bounds_and_helpers_without_parameters_load(tmp_path, bounds):
    src = tmp_path / "k.cu"
    src.write_text('#include "trace.cuh"\n__device__ float zero() { return 0.0f; }\n'
                   f'extern "C" __global__ void __launch_bounds__({bounds}) k(const float *A, float *C) {{\n'
                   "  STG(C, threadIdx.x, LDG(A, threadIdx.x) + zero());\n}\n")
    loaded = sources.load(str(src))
    assert loaded.name == "k" and [a.name for a in loaded.arrays] == ["A", "C"]


@pytest.mark.parametrize("attributes", ["__cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)",
                                        "__launch_bounds__(384, 1) __cluster_dims__(2, 1, 1)", "__cluster_dims__(2)"])
def test_a_kernel_launched_in_clusters_is_named_by_its_own_name(tmp_path, attributes):
    """__cluster_dims__ (thread-block clusters, wgmma_cluster.cu) beside __launch_bounds__: the kernel
    is the name after them (the name was read as __cluster_dims__, and the launch found no such symbol)."""
    src = tmp_path / "k.cu"
    src.write_text(f'extern "C" __global__ void {attributes} k(const float *A, float *C, int M) {{\n  C[0] = A[0];\n}}\n')
    loaded = sources.load(str(src))
    assert loaded.name == "k" and [name for _, name in loaded.params] == ["A", "C", "M"]


def test_two_arrays_of_one_name_and_too_many_sites_are_refused(tmp_path):
    src = tmp_path / "twice.cu"
    src.write_text('#include "trace.cuh"\n__device__ void h() { __shared__ float C[4]; }\n'
                   'extern "C" __global__ void k(const float *A, float *C) {\n  STG(C, 0, LDG(A, 0));\n}\n')
    with pytest.raises(ValueError, match="two traced arrays are named C"):
        sources.load(str(src))
    body = "\n".join(f"  STG(C, {i}, 1.0f);" for i in range(300))
    with pytest.raises(ValueError, match="300 access sites; a traced kernel has at most 255"):
        sources.load(_kernel(tmp_path, body))


def test_a_helper_that_records_as_a_must_be_given_a(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('#include "trace.cuh"\n__device__ float first(const float *A) { return LDG(A, 0); }\n'
                   'extern "C" __global__ void k(const float *A, float *C) {\n  float regs[4] = {0, 0, 0, 0};\n'
                   "  STG(C, 0, first(regs));\n}\n")
    with pytest.raises(ValueError, match="k.cu:5: first records its accesses as A's, so it must be passed A itself"):
        sources.load(str(src))


def test_a_pointer_moved_along_its_allocation_is_recorded_from_the_allocation(tmp_path):
    # Production style: before, every record of A said row 0 here; now each says its row.
    body = "  A += blockIdx.y * K;\n  for (int k = 0; k < K; k++, B += N) STG(C, blockIdx.y * K + k, LDG(A, k) + 0.0f * LDG(B, 0));"
    src = sources.load(_kernel(tmp_path, body))
    assert {(s.array, s.op) for s in src.sites} == {("A", "load"), ("B", "load"), ("C", "store")}


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
    ("  __shared__ float As[4][4], Bs[4][4];\n  STG(C, 0, LDS(As, 0, 0));", 3, "declare each shared array as __shared__ TYPE name"),
], ids=["cast", "plain-copy", "copy-in-parens", "shared-pointer", "two-shared-in-one"])
def test_any_other_use_of_a_traced_array_is_refused(tmp_path, body, line, says):
    with pytest.raises(ValueError, match=rf"k.cu:{line}: {says}"):
        sources.load(_kernel(tmp_path, body))


def test_helpers_and_strings_that_name_an_array_are_not_accesses(tmp_path):
    kernel = ('#include "trace.cuh"\n'
              "__device__ float first(const float *A) { return LDG(A, 0); }\n"
              'extern "C" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {\n'
              '  if (M < 0) printf("A = %p, C += 1\\n", M);\n'
              "  STG(C, 0, first(ARG));\n}\n")
    # The helper's own parameter and the string are fine, and so is handing A on to a helper that
    # takes it as A (its LDG records as A's, counted from A's allocation) ...
    src = tmp_path / "k.cu"
    src.write_text(kernel.replace("ARG", "A"))
    assert [s.array for s in sources.load(str(src)).sites] == ["A", "C"]
    # ... but not handing B to it: its records would say A.
    src = tmp_path / "k2.cu"
    src.write_text(kernel.replace("ARG", "B"))
    with pytest.raises(ValueError, match="k2.cu:5: first records its accesses as A.s, so it must be passed A itself"):
        sources.load(str(src))




def test_a_warp_whose_lanes_all_skip_a_predicated_store_still_issues_it(tmp_path):
    """SKIP_STS / SKIP_CP_ASYNC: ptxas predicated the access instead of branching around it, so a warp
    issues it even when every lane has it off, and Nsight Compute counts that issue. The trace has no
    record of it; Trace.issued counts it from the skips, and the ncu totals take it."""
    from engine.metrics import analysis
    body = ("  __shared__ float Xs[64];\n"
            "  int t = threadIdx.x;\n"
            "  for (int pass = 0; pass < 3; pass++) {\n"
            "    if (t < 40 && pass != 1) STS(Xs, t, 1.0f); else SKIP_STS(Xs);\n"
            "  }\n"
            "  SYNC();\n"
            "  STG(C, t, LDS(Xs, t % 40));")
    src = sources.load(_kernel(tmp_path, body))
    plan = single_launch_plan(src.path, make_problem(16, 16, 16), (1, 1), (70, 1))   # a partial third warp
    t = tracer.assemble(plan, tracer.run_plan(plan, "cpu"), "cpu")
    store = next(i for i, ts in enumerate(t.sites) if ts.site.array == "Xs" and ts.site.op == "store")
    summary = analysis.site_summary(t)
    # Warp 0 stores on passes 0 and 2, warp 1 (lanes 32..39) too; warp 2 never: with their third
    # pass, every warp issues 3.
    assert summary.loc[store, "requests"] == 4 and t.issued[store] == 9 and summary.loc[store, "off"] == 5
    totals = analysis.ncu_totals(summary)
    assert totals[analysis.NCU_METRICS["shared", "store", "requests"]] == 9
    assert totals[analysis.NCU_METRICS["shared", "load", "requests"]] == 3    # no skips: what the records show


@pytest.mark.parametrize("line, says", [
    ("  __shared__ float Xs[64];\n  SKIP_STS(Xs); STG(C, 0, LDS(Xs, 0));", r"SKIP_STS\(Xs\) is for the lanes"),
    ("  __shared__ float Xs[64];\n  STS(Xs, 0, 1.0f); SKIP_CP_ASYNC(Xs, A);", r"SKIP_CP_ASYNC\(Xs, A\) is for the lanes"),
])
def test_a_skip_without_its_access_on_the_line_is_refused(tmp_path, line, says):
    with pytest.raises(ValueError, match=says):
        sources.load(_kernel(tmp_path, line))
