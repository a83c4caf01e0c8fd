"""A kernel's contract, declared in its source (cuda/contract.cuh) and read by the engine
(engine/kernels/declared.py, engine/kernels/cexpr.py): C expressions evaluated as C does, every
source compiling on its own, and a contract the engine cannot use refused with its line."""
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.kernels import build, cexpr, declared, registry, sources
from engine.kernels.problem import make_problem

# (expression, value in C): precedence, associativity, truncating division of negatives, ?:, the
# short-circuit of && and ||, and the contract's own functions.
TABLE = [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("10 - 4 - 3", 3), ("64 / 4 / 2", 8), ("2 * 3 % 4", 2),
    ("7 / 2", 3), ("-7 / 2", -3), ("7 / -2", -3), ("-7 / -2", 3), ("-7 % 2", -1), ("7 % -2", 1), ("-8 % 3", -2),
    ("1 << 4 >> 2", 4), ("1 << 2 + 1", 8), ("5 & 3 | 8 ^ 1", 9), ("6 ^ 3 & 1", 7), ("~0", -1), ("!5", 0), ("!0", 1),
    ("-(-3)", 3), ("- -3", 3), ("2 < 3 == 1", 1), ("3 > 2 > 1", 0), ("4 <= 4 && 5 >= 6", 0), ("0 || 7", 1),
    ("1 != 2 == 1", 1), ("0 && 1 / 0", 0), ("1 || 1 / 0", 1), ("1 ? 2 : 3", 2), ("0 ? 2 : 3", 3),
    ("0 ? 1 : 0 ? 2 : 3", 3), ("1 ? 0 ? 4 : 5 : 6", 5), ("2 + (1 ? 10 : 20) * 2", 22), ("0x10 + 10u + 3L", 29),
    ("CDIV(10, 4)", 3), ("CDIV(8, 4)", 2), ("MIN(3, 9) + MAX(3, 9)", 12), ("MAX(CDIV(65, 64) * 64, 1)", 128),
    ("sizeof(float) * 2 + sizeof(__half)", 10), ("sizeof(unsigned int)", 4),
]
_C_FUNCTIONS = "#define CDIV(a, b) (((a) + (b) - 1) / (b))\n#define MIN(a, b) ((a) < (b) ? (a) : (b))\n" \
               "#define MAX(a, b) ((a) > (b) ? (a) : (b))\ntypedef short __half;\n"


@pytest.mark.parametrize("text, value", TABLE, ids=[t for t, _ in TABLE])
def test_an_expression_has_the_value_c_gives_it(text, value):
    assert cexpr.evaluate(text, {}) == value


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_the_table_is_what_a_c_compiler_computes(tmp_path):
    """The expected values above are C's, not this module's idea of C's: a compiler prints them."""
    lines = "".join(f'    printf("%lld\\n", (long long)({text}));\n' for text, _ in TABLE)
    (tmp_path / "t.cpp").write_text(f"#include <cstdio>\n{_C_FUNCTIONS}int main() {{\n{lines}}}\n")
    subprocess.run(["g++", "-w", "-o", str(tmp_path / "t"), str(tmp_path / "t.cpp")], check=True, timeout=120)
    printed = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in printed] == [v for _, v in TABLE]


def test_names_are_looked_up_and_what_cannot_be_evaluated_is_one_line():
    assert cexpr.evaluate("BM * BN / (TM * TN)", {"BM": 64, "BN": 64, "TM": 8, "TN": 4}) == 128
    assert cexpr.parse("CDIV(N, BN) + kThreads").names == {"N", "BN", "kThreads"}
    for text, why in (("8 / (BM - 64)", "division by zero"), ("4 % 0", "division by zero"), ("Q + 1", "Q is not defined"),
                      ("pow(2, 3)", "not a function the engine knows"), ("1 +", "ends too early"),
                      ("(1 + 2", "ends too early"), ("(1 + 2 3)", "expected ')'"),
                      ("2 $ 3", "cannot read"), ("sizeof(char3)", "not of an element type"),
                      ("1 << -1", "shift"), ("CDIV(1)", "takes 2 arguments")):
        with pytest.raises(ValueError, match=re.escape(why)) as info:
            cexpr.evaluate(text, {"BM": 64})
        assert "\n" not in str(info.value)


def test_parsing_never_runs_python():
    with pytest.raises(ValueError):
        cexpr.evaluate("__import__('os').getcwd()", {})
    with pytest.raises(ValueError):
        cexpr.evaluate("[1][0]", {})


# ---- every source compiles on its own ------------------------------------------------------------

def _arch(file: str) -> str:
    """The architecture the catalog builds the source for (wgmma: sm_90a)."""
    return next((lc.arch for k in registry.CATALOG for lc in k.launches if lc.file == file and lc.arch), "sm_90")


CUDA_SOURCES = sorted(p.name for p in sources.CUDA_DIR.glob("*.cu"))


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
def test_every_source_compiles_standalone_with_nvcc(tmp_path):
    """nvcc -c with no -D: every parameter has its default in the source, and every contract line is
    C++ the compiler checks (REQUIREs hold for the defaults, launch lines name what the file defines)."""
    def compile_one(name: str) -> str | None:
        arch = _arch(name)
        target = ["-gencode", f"arch=compute_{arch[3:]},code={arch}"]
        done = subprocess.run([build.nvcc(), *target, "-c", str(sources.CUDA_DIR / name), f"-I{sources.CUDA_DIR}",
                               "-o", str(tmp_path / f"{name}.o")], capture_output=True, text=True, timeout=600)
        return None if done.returncode == 0 else f"{name}: {done.stderr.strip()[:400]}"
    with ThreadPoolExecutor(2) as pool:   # two cores on a laptop: the suite's budget
        failed = [f for f in pool.map(compile_one, CUDA_SOURCES) if f]
    assert not failed, "\n".join(failed)


def test_every_source_in_cuda_declares_its_launch():
    on_their_own = set(CUDA_SOURCES) - {lc.file for k in registry.CATALOG for lc in k.launches}
    assert on_their_own <= {"fragment_probe.cu"}   # a probe the Tensor cores page launches itself
    for name in set(CUDA_SOURCES) - on_their_own:
        d = declared.read(name)
        assert {"GRID", "BLOCK"} <= set(d.launch), name


# ---- a contract the engine cannot use is refused, with its line ----------------------------------

_GOOD = """#include "trace.cuh"
#ifndef BS
#define BS 64   // one of: 64 128
#endif
{extra}
LAUNCH_GRID(CDIV(M * N, BS), 1);
LAUNCH_BLOCK(BS, 1);
TRACE_RECORDS(2 * K + 1);
extern "C" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {{
    int i = blockIdx.x * BS + threadIdx.x;
    if (i < M * N) STG(C, i, LDG(A, i % M) + LDG(B, i % N));
}}
"""


def _source(tmp_path, text: str) -> str:
    path = tmp_path / f"k{abs(hash(text))}.cu"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("extra, line, why", [
    ("REQUIRE(BS % WARP == 0, \"needs BS to be a multiple of WARP\");", 5, "WARP is not defined"),
    ("REQUIRE(BS >= 128, \"needs BS of 128 or more\");", 5, "the defaults (BS=64) break it: needs BS of 128 or more"),
    ("REQUIRE(M % BS == 0, \"needs M to be a multiple of BS\");", 5, "use REQUIRE_SIZES"),
    ("#define WIDE (pow(BS, 2))\nREQUIRE_SIZES(M < WIDE, \"too wide\");", 6, "WIDE is not defined"),
    ("REQUIRE_SIZES(M < BS[0], \"needs\");", 5, "cannot read"),
    ("REQUIRE(BS > 0);", 5, "needs a condition and a message"),
    ("#ifndef TN\n#define TN\n#endif", 5, "TN has no default"),
    ("#ifndef TN\n#define TN 3   // one of: 4 8\n#endif", 6, "the default TN=3 is not one of 4 8"),
    # Had been read as no list at all, so TN could only be its default, without a word.
    ("#ifndef TN\n#define TN 8   // one of: 8 16 abc\n#endif", 6,
     "the values after 'one of:' must be whole numbers, like 'one of: 8 16 32', got '8 16 abc'"),
    ("LAUNCH_GRID(1, 1);", 6, "a second LAUNCH_GRID (the first is on line 5)"),
    ("#define LOOP (LOOP + 1)\nREQUIRE(LOOP > 0, \"needs LOOP\");", 5, "LOOP is defined in terms of itself"),
])
def test_a_contract_the_engine_cannot_use_is_refused_with_its_line(tmp_path, extra, line, why):
    path = _source(tmp_path, _GOOD.format(extra=extra))
    with pytest.raises(declared.ContractError, match=re.escape(why)) as info:
        declared.read(path)
    assert f"{Path(path).name}:{line}:" in str(info.value) and "\n" not in str(info.value)


def test_a_source_without_its_launch_or_trace_bound_is_refused(tmp_path):
    text = _GOOD.format(extra="")
    with pytest.raises(declared.ContractError, match=r"declares no LAUNCH_GRID\(x, y\)"):
        declared.read(_source(tmp_path, text.replace("LAUNCH_GRID(CDIV(M * N, BS), 1);\n", "")))
    with pytest.raises(declared.ContractError, match="declares no TRACE_RECORDS"):
        declared.read(_source(tmp_path, text.replace("TRACE_RECORDS(2 * K + 1);\n", "")))


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
def test_the_compiler_refuses_what_the_engine_refuses(tmp_path):
    """The same REQUIRE is a static_assert: a default that breaks it stops nvcc too, with its message."""
    path = _source(tmp_path, _GOOD.format(extra='REQUIRE(BS >= 128, "needs BS of 128 or more");'))
    done = subprocess.run([build.nvcc(), "-arch=sm_90", "-c", path, f"-I{sources.CUDA_DIR}", "-o",
                           str(tmp_path / "k.o")], capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "needs BS of 128 or more" in done.stderr


def test_a_value_the_contract_cannot_compute_for_a_request_is_a_one_line_error(tmp_path):
    path = _source(tmp_path, _GOOD.format(extra='REQUIRE(256 % (BS - 64) == 0, "needs BS - 64 to divide 256");')
                   .replace("#define BS 64   // one of: 64 128", "#define BS 128   // one of: 64 128"))
    spec = declared.spec_from_source(path, name="zero_divisor")
    assert registry.bind(spec, make_problem(64, 64, 64)).params == {"BS": 128}
    with pytest.raises(EngineError, match=r"k\d+\.cu:5: .*division by zero"):
        registry.bind(spec, make_problem(64, 64, 64, params={"BS": 64}))


# ---- what a source declares is what the engine uses -----------------------------------------------

def test_a_message_quotes_the_values_that_break_the_rule():
    spec = registry.get("mma_pipelined")
    with pytest.raises(EngineError, match=re.escape("mma_pipelined needs at most 227 KB of shared memory, a block's most (it would take 240 KB)")):
        registry.bind(spec, make_problem(256, 256, 256, params={"BN": 256, "STAGES": 5, "BK": 64}))
    with pytest.raises(EngineError, match=re.escape("wmma_warp needs M, N and K to be multiples of 16 (M=4096, N=4096, K=4095)")):
        registry.bind(registry.get("wmma_warp"), make_problem(4096, 4096, 4095))
    # what the catalog lists: the rule without the values
    assert "needs M, N and K to be multiples of 16" in [r.says for r in registry.get("wmma_warp").rules]
    assert "needs M, N and K to be multiples of TILE" in [r.says for r in registry.get("tiled_unguarded").rules]


def test_a_kernel_outside_the_catalog_is_one_source(tmp_path):
    """spec_from_source: the entry the Playground makes of a student's kernel, as the catalog's are made."""
    path = tmp_path / "cols.cu"
    path.write_text(sources.load("naive_x_cols.cu").text.replace("naive_x_cols(", "cols("))
    spec = declared.spec_from_source(path)
    assert (spec.name, spec.kind, spec.inputs, spec.params) == ("cols", registry.Kind.CUDA, registry.Precision.FP32, {})
    assert spec.title == "One thread per element of C, with threadIdx.x walking the COLUMNS of C"
    assert spec.block_shapes == registry.NAIVE_BLOCKS   # its launch lines read BLOCK_X, BLOCK_Y
    p = make_problem(100, 70, 9, block=(32, 8))
    catalog = registry.get("naive_x_cols").launches[0]
    assert spec.launches[0].grid(p) == catalog.grid(p) == (3, 13)
    assert spec.launches[0].block(p) == (32, 8) and spec.launches[0].records_per_thread(p) == 19
    opaque = declared.spec_from_source(sources.CUDA_DIR / "wmma_warp.cu", name="mine")
    assert opaque.kind == registry.Kind.OPAQUE and opaque.inputs == registry.Precision.FP16
    with pytest.raises(EngineError, match="multiples of 16"):
        registry.bind(opaque, make_problem(100, 64, 64))


def test_the_catalog_lists_no_geometry_of_its_own():
    """The parameters, defaults and rules of every entry are its sources' declarations."""
    for spec in registry.CATALOG:
        if not spec.launches:
            continue
        fields = declared.entry_fields(*spec.launches)
        assert spec.params == fields["params"] and spec.default_params() == fields["defaults"], spec.name
        assert [r.says for r in spec.rules] == [r.says for r in fields["rules"]], spec.name


@pytest.mark.parametrize(("change", "said"), [
    (("LAUNCH_GRID(CDIV(N, BX), CDIV(M, BY));", "LAUNCH_GRID(1, M * N);"),
     "my_kernel launches a grid of 1 x 409,600 blocks at 640x640x8: a GPU launches at most 2,147,483,647 across "
     "and 65,535 down"),
    (("LAUNCH_GRID(CDIV(N, BX), CDIV(M, BY));", "LAUNCH_GRID(CDIV(N, BX), CDIV(M - 640, BY));"),
     "my_kernel launches a grid of 20 x 0 blocks at 640x640x8: no block runs"),
    (("LAUNCH_BLOCK(BX, BY);", "LAUNCH_BLOCK(BX * 64, BY);"), "my_kernel's LAUNCH_BLOCK is 2048 x 8 threads"),
    (("extern \"C\"", "__shared__ float big[128][128];\nextern \"C\""),
     "my_kernel's __shared__ arrays take 64.0 KB at these parameters: a block declares at most 48 KB of them"),
])
def test_a_launch_no_gpu_makes_is_refused_before_it_is_traced(tmp_path, change, said):
    """plan_for checks every launch as a GPU would take it: the CPU tracer has none of its limits, and
    had traced a block of 2,048 threads and 64 KB of static shared memory and shown them green."""
    from engine.tracing.plan import plan_for
    text = (sources.CUDA_DIR / "playground" / "blank.cu").read_text()
    assert change[0] in text
    path = tmp_path / "my_kernel.cu"
    path.write_text(text.replace(*change, 1))
    spec = declared.spec_from_source(path, name="my_kernel")
    with pytest.raises(EngineError, match=re.escape(said)):
        plan_for(spec, make_problem(640, 640, 8, block=spec.default_block))


def test_a_source_of_two_kernels_is_refused_at_the_second(tmp_path):
    """Of two __global__ kernels in one source the first had been traced without a word."""
    text = (sources.CUDA_DIR / "playground" / "blank.cu").read_text()
    lines = len(text.splitlines())
    path = tmp_path / "my_kernel.cu"
    # Neither in a comment nor in #if 0 (code the preprocessor drops, as a kept old version) is a kernel.
    path.write_text(text + "// extern \"C\" __global__ void in_a_comment(float *C) {}\n"
                    "#if 0\nextern \"C\" __global__ void old_version(float *C, int M) {}\n#endif\n"
                    "extern \"C\" __global__ void __launch_bounds__(256) other(float *C, int M) {}\n")
    with pytest.raises(ValueError, match=re.escape(f"my_kernel.cu:{lines + 5}: a second __global__ kernel, other: a "
                                                   "source holds one kernel, here my_kernel")):
        sources.load(str(path))
    kept = tmp_path / "kept" / "my_kernel.cu"
    kept.parent.mkdir()
    kept.write_text(text + "#if 0\nextern \"C\" __global__ void old_version(float *C, int M) {}\n#endif\n")
    assert sources.load(str(kept)).name == "my_kernel"
