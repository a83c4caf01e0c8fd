"""The Playground's engine side (engine/playground.py): share links, keeping a student's source, and
messages at their lines. What runs the student's code is tested in tests/test_sandbox*.py."""
import base64
import zlib

import pytest

from engine import playground
from engine.errors import EngineError
from engine.kernels import registry


def test_every_starter_has_a_source_and_the_blank_one_comes_first():
    names = playground.starters()
    assert names[0] == playground.BLANK
    assert "tiled_guarded" in names and "warptile" in names
    assert "naive_transposed_b" not in names   # two launches: not one editor
    assert not [n for n in names[1:] if not registry.get(n).traceable]
    for name in names:
        assert 'extern "C" __global__' in playground.starter_source(name)


@pytest.mark.parametrize("text", ["", "x", "é ü ∑ CUDA", open(playground.BLANK_FILE).read() * 3])
def test_a_share_link_brings_the_same_text_back(text):
    token = playground.share_token(text)
    assert token.isascii() and "/" not in token and "+" not in token and "=" not in token
    assert playground.source_from_token(token) == text


def test_a_share_link_is_a_fraction_of_the_source():
    text = playground.starter_source("warptile")
    assert len(playground.share_token(text)) < len(text) / 2


@pytest.mark.parametrize("token, says", [
    ("abc", "not in a format"),
    ("v1.!!!!", "damaged"),
    (playground.share_token("kernel")[:-3], "damaged"),
    ("v1." + base64.urlsafe_b64encode(b"not zlib").decode(), "damaged"),
    ("v1." + base64.urlsafe_b64encode(zlib.compress(b"\xff\xfe")).decode(), "not UTF-8"),
    ("v1." + base64.urlsafe_b64encode(zlib.compress(b"a\0b")).decode(), "NUL"),
])
def test_a_bad_share_link_is_one_line(token, says):
    with pytest.raises(EngineError, match=says) as exc:
        playground.source_from_token(token)
    assert "\n" not in str(exc.value)


def test_a_share_link_cannot_inflate_past_the_limit():
    bomb = "v1." + base64.urlsafe_b64encode(zlib.compress(b" " * (50 * 2**20), 9)).decode()
    assert len(bomb) < 100_000    # 50 MB of spaces is a 70 KB token
    with pytest.raises(EngineError, match="over 64 KB"):
        playground.source_from_token(bomb)


def test_a_source_is_kept_once_under_its_digest(tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    text = playground.starter_source("tiled_guarded")
    first, again = playground.save(text), playground.save(text)
    assert first.path == again.path and first.path.read_text() == text
    assert first.kernel == "tiled_guarded" and first.path.name == "tiled_guarded.cu"
    assert tmp_path in first.path.parents
    assert first.problems == []
    other = playground.save(text.replace("sum += a * b;", "sum += b * a;"))
    assert other.path != first.path


@pytest.mark.parametrize("text, says", [
    ("int main() { return 0; }", "no kernel found"),
    ("x" * (playground.MAX_SOURCE_BYTES + 1), "takes up to 64 KB"),
    ('extern "C" __global__ void k() {}\0', "NUL"),
    # An unhandled OSError (file name too long) and UnicodeEncodeError before these.
    ('extern "C" __global__ void ' + "k" * 240 + "() {}", "names of up to 100"),
    ('extern "C" __global__ void k() {} // \ud800', "lone surrogate"),
    # accepted, then refused at the build as "not a name the compile cache keeps"
    ('extern "C" __global__ void kérnel() {}', "not made of ASCII letters"),
])
def test_what_is_not_a_kernel_is_refused_in_one_line(tmp_path, monkeypatch, text, says):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    with pytest.raises(EngineError, match=says):
        playground.save(text)


def test_a_broken_tracing_rule_comes_back_at_its_line_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    text = playground.starter_source("tiled_guarded")
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "float a = LDS(As, ty, k);" in line)
    lines[at] = lines[at].replace("LDS(As, ty, k)", "As[ty][k]")   # a read the trace would not see
    saved = playground.save("\n".join(lines) + "\n")
    assert [p.line for p in saved.problems] == [at + 1]
    assert "indexed directly; use LDG/STG (global) or LDS/STS (shared)" in saved.problems[0].message


@pytest.mark.parametrize("text, expect", [
    ("kernel.cu(12): error: identifier \"x\" is undefined", [(12, 'error: identifier "x" is undefined')]),
    ("/tmp/s/kernel.cu:7:5: error: expected ';'", [(7, "error: expected ';'")]),
    ("kernel.cu:3: As is used outside the access macros", [(3, "As is used outside the access macros")]),
    ("something failed\nmore", [(0, "something failed")]),
    ("the C++ compiler on /c/ab/k.cu failed: /c/ab/k.cu:24:9: error: expected ';' before 'int'",
     [(24, "error: expected ';' before 'int'")]),
])
def test_messages_are_read_at_their_lines(text, expect):
    assert [(d.line, d.message) for d in playground.diagnostics(text)] == expect


def test_records_a_kernel_wrote_over_are_one_line_not_a_crash(tmp_path, monkeypatch):
    """A kernel runs in its sandbox with its own records in reach: what comes back may be nonsense
    that fits the plan's shapes (a site that does not exist); the page gets one line."""
    import numpy as np

    from engine.sandbox import runs
    from engine.tracing.execute import RawLaunch, RawRun
    from engine.tracing.records import RAW_DTYPE
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    saved = playground.save(playground.starter_source("tiled_guarded"))
    spec = playground.spec_of(saved)
    problem = playground.problem_for(spec, 16, 16, 16, {})

    def forged(plan, limits=None, whole=False):
        lp = plan.launches[-1]
        counts = np.zeros(len(lp.blocks) * lp.block[0] * lp.block[1], dtype=np.uint32)
        counts[0] = 1
        records = np.zeros(1, dtype=RAW_DTYPE)
        records["site"] = 250
        return RawRun([RawLaunch(counts, records)], 0.0, 1, "CPU", {})
    monkeypatch.setattr(runs, "trace", forged)
    with pytest.raises(EngineError, match="not readable"):
        playground.trace(saved, spec, problem, [(0, 0)])


def test_a_zip_bomb_on_the_result_pipe_is_not_inflated(tmp_path, monkeypatch):
    """A kernel can write anything to its result pipe, a compressed archive too: one that would inflate
    to 1 GiB is refused unread, as is anything but an answer np.savez could have written."""
    import io
    import zipfile

    import numpy as np

    from engine.sandbox import Outcome, runs
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.npy", b"\0" * (1 << 30))
    assert len(bomb.getvalue()) < 2 << 20
    monkeypatch.setattr(runs, "run_sandboxed", lambda *a, **k: Outcome(True, "", "", bomb.getvalue(), 0.1))
    opened = []
    real_load = np.load
    monkeypatch.setattr(runs.np, "load", lambda *a, **k: opened.append(1) or real_load(*a, **k))
    with pytest.raises(EngineError, match="no readable answer"):
        runs._job({"op": "trace"}, tmp_path, None)
    assert not opened     # refused before numpy read (and inflated) any of it
    honest = io.BytesIO()
    np.savez(honest, meta=np.frombuffer(b'{"error": "its own words"}', dtype=np.uint8))
    monkeypatch.setattr(runs, "run_sandboxed", lambda *a, **k: Outcome(True, "", "", honest.getvalue(), 0.1))
    with pytest.raises(EngineError, match="its own words"):
        runs._job({"op": "trace"}, tmp_path, None)


def test_students_sources_stay_within_their_budget_least_recently_used_first(tmp_path, monkeypatch):
    """<cache>/playground/ grew with every source built (about 20 KB a library) and nothing bounded it."""
    import os
    import time
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    text = playground.starter_source("tiled_guarded")
    saved = [playground.save(text.replace("// ", f"// {i} ", 1)) for i in range(4)]
    for i, s in enumerate(saved):   # the first three used long ago, oldest first; the last just now
        (s.path.parent / "build-x").mkdir()
        (s.path.parent / "build-x" / "kernel.so").write_bytes(b"\0" * 50_000)
        if i < 3:
            os.utime(s.path.parent, (time.time() - 3600 + i, time.time() - 3600 + i))
    size = sum(f.stat().st_size for f in saved[0].path.parent.rglob("*") if f.is_file())
    monkeypatch.setenv(playground.BUDGET_ENV, str(2.5 * size / 2**20))
    playground.save(saved[1].text)            # reused: marked as used, so it stays
    playground.save(text.replace("// ", "// new ", 1))   # a new source: over budget, the oldest two go
    assert not saved[0].path.exists() and not saved[2].path.exists()
    assert saved[1].path.exists() and saved[3].path.exists()
    assert playground.evict(budget=1) == 0    # over it still, but what is left was used in the last minute
    monkeypatch.setenv(playground.BUDGET_ENV, "-1")
    with pytest.raises(EngineError, match="MATMUL_EXPLORER_PLAYGROUND_CACHE_MB must be a positive number"):
        playground.evict()


def test_a_wrong_result_on_the_gpu_is_one_line_not_a_median_of_no_times(tmp_path, monkeypatch):
    """The gate times nothing when a kernel's result is wrong; the page then took the median of no
    times (StatisticsError). Now it is an EngineError saying how wrong, the worst element too: a few
    wrong elements fail it though the whole's relative error passes."""
    from engine.sandbox import runs
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    saved = playground.save(playground.starter_source("tiled_guarded"))
    problem = playground.problem_for(playground.spec_of(saved), 64, 64, 64, {})
    monkeypatch.setattr(runs, "time_on_gpu", lambda *a, **k: {
        "gpu": "NVIDIA H200", "times_ms": [], "correct": False, "rel_error": 3e-5, "worst_error": 2e-2,
        "tolerance": 1e-4})
    with pytest.raises(EngineError) as exc:
        playground.time_on_gpu(saved, problem)
    said = str(exc.value)
    assert "\n" not in said and "wrong" in said and "2.0e-02" in said and "3.0e-05" in said and "not timed" in said


@pytest.mark.parametrize("require, says", [
    # 2 GB and 5 s in the server for the first, a MemoryError for the second, RecursionError for the third.
    ("(1 << 16000000000) > 0", "a shift by 16000000000"),
    ("(1 << 62) * (1 << 62) > 0", "past 64 bits"),
    ("(" * 300 + "1" + ")" * 300, "nested too deeply"),
    ("+".join(["1"] * 3000) + " > 0", "nested too deeply"),
    ("~0xFFFFFFFFFFFFFFFF < 0", "past 64 bits"),
    ("1" * 5000 + " > 0", "past 64 bits"),
])
def test_a_contract_past_what_c_computes_is_one_line_not_the_servers_memory(tmp_path, monkeypatch, require, says):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    blank = playground.starter_source(playground.BLANK)
    assert "REQUIRE(BX * BY <= 1024" in blank
    saved = playground.save(blank.replace("REQUIRE(BX * BY <= 1024", f"REQUIRE({require} && BX * BY <= 1024"))
    with pytest.raises(EngineError, match=says):
        playground.spec_of(saved)


def test_a_shared_array_sized_past_what_c_reads_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    text = playground.starter_source("tiled_guarded")
    assert "__shared__ float As[TILE][TILE];" in text
    saved = playground.save(text.replace("__shared__ float As[TILE][TILE];",
                                         "__shared__ float As[" + "(" * 300 + "TILE" + ")" * 300 + "][TILE];"))
    with pytest.raises(EngineError, match="nested too deeply"):
        spec = playground.spec_of(saved)
        playground.trace(saved, spec, playground.problem_for(spec, 16, 16, 16, {}), [(0, 0)])


def test_a_diagnostic_quoting_a_very_long_line_stays_short(tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    text = playground.starter_source("tiled_guarded")
    assert "__shared__ float As[TILE][TILE];" in text
    saved = playground.save(text.replace("__shared__ float As[TILE][TILE];",
                                         "__shared__ float As[TILE][TILE], X[2];" + " " * 16000 + "// long"))
    assert saved.problems and all(len(str(p)) <= playground.MAX_MESSAGE_CHARS + 10 for p in saved.problems)


def test_a_source_of_repeated_kernel_keywords_is_read_in_linear_time(tmp_path, monkeypatch):
    """Each `__global__` of 60 KB of them had its parameter-list scan run to the end of the text:
    5 s of the server's time (the GIL held, every session waiting) for one save; 0.1 s now."""
    import time
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    blank = playground.starter_source(playground.BLANK)
    text = blank + "\n#if 0\n" + 'extern "C" __global__ ' * 2700 + "\n#endif\n"
    started = time.perf_counter()
    playground.save(text)
    assert time.perf_counter() - started < 2.0


def test_nested_cdiv_is_evaluated_once_per_level(tmp_path, monkeypatch):
    """CDIV computed its divisor twice at every level: CDIV(1, CDIV(1, ...)) 24 deep took 2^24
    evaluations (about 10 s in the server; 60 deep, 541 bytes, never ended). Now linear."""
    import time
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    blank = playground.starter_source(playground.BLANK)
    nested = "CDIV(1, " * 24 + "1" + ")" * 24
    saved = playground.save(blank.replace("REQUIRE(BX * BY <= 1024", f"REQUIRE({nested} == 1 && BX * BY <= 1024"))
    started = time.perf_counter()
    spec = playground.spec_of(saved)
    playground.problem_for(spec, 16, 16, 16, {})
    assert time.perf_counter() - started < 2.0
