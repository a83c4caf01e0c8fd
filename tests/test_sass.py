import pytest

from engine.kernels import build, sass
from tests.conftest import FAILING_NVCC

pytestmark = pytest.mark.skipif(sass.nvdisasm() is None or build.nvcc() is None, reason="no nvdisasm/nvcc")


def test_seed001_tile_a_reads_merge_into_lds128_without_padding_only():
    src_line = next(s.line for s in __import__("engine.kernels.sources", fromlist=["x"]).load("shared_bank_conflicts.cu").sites
                    if s.array == "tile_A" and s.op == "load")
    plain = sass.memory_instructions("shared_bank_conflicts.cu", {"TILE": 32, "PAD": 0})
    padded = sass.memory_instructions("shared_bank_conflicts.cu", {"TILE": 32, "PAD": 1})
    assert "LDS.128" in plain["by_line"][src_line] and "LDS.128" in plain["note"]
    assert set(padded["by_line"][src_line]) == {"LDS"}


def test_naive_kernel_sass_is_scalar():
    info = sass.memory_instructions("naive_x_cols.cu", {"TILE": 16, "PAD": 0})
    assert info["note"].startswith("SASS matches the source")


def test_a_failing_nvdisasm_is_reported_never_read_as_a_match(tmp_path, monkeypatch):
    # Before: nvdisasm's empty output was counted as "SASS matches the source".
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    monkeypatch.setattr(sass, "nvdisasm", lambda: "/bin/false")
    info = sass.memory_instructions("naive_x_cols.cu", {"TILE": 16, "PAD": 0})
    assert info["available"] is False and info["by_line"] == {}
    assert info["note"].startswith("SASS listing unavailable: nvdisasm failed on naive_x_cols-plain-")
    assert not list(tmp_path.glob("*.sass.json"))   # a failure is never kept


def test_a_failing_nvcc_is_reported_not_raised(failing_nvcc):
    info = sass.memory_instructions("naive_x_cols.cu", {"TILE": 16, "PAD": 0})
    assert info["available"] is False
    assert info["note"] == f"SASS listing unavailable: nvcc on naive_x_cols.cu failed: {FAILING_NVCC}"


@pytest.mark.skipif(not (sass.nvdisasm() and build.nvcc()), reason="needs nvcc and nvdisasm")
@pytest.mark.parametrize("saved", ["[]", "null", '{"available": true, "by_line": {}, "note": ""}',
                                   '{"by_line": {"15": {"LDS": 1}}, "note": ""}', '{"available": true}'],
                         ids=["list", "null", "empty-listing", "no-available", "no-lines"])
def test_a_damaged_saved_listing_is_listed_again_never_shown(tmp_path, monkeypatch, saved):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path / "cache"))
    first = sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0})
    assert first["available"] and first["by_line"]
    kept = next((tmp_path / "cache").glob("*.sass.json"))
    kept.write_text(saved)
    again = sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0})
    assert again == first


def test_every_shared_access_ptxas_predicated_says_so_with_a_skip():
    """A shared access that ptxas predicated instead of branching around is issued by every warp that
    gets there, lanes on or not, and Nsight Compute counts each issue. The trace sees those issues only
    through the SKIP_ forms on the lanes that skip (Trace.issued): a kernel whose SASS predicates a
    shared load or store on a line without one would count fewer instructions than the hardware."""
    import re
    import subprocess

    from engine.kernels import registry, sources
    from engine.kernels.problem import make_problem
    guarded = re.compile(r"/\*[0-9a-f]{4,}\*/\s+@!?U?P\d\s+((?:STS|LDS)[A-Z0-9_.]*)")
    missing, seen = [], 0
    for spec in registry.traceable():
        params = registry.bind(spec, make_problem(128, 128, 128)).params
        for launch in spec.launches:
            listing = subprocess.run([sass.nvdisasm(), "--print-line-info",
                                      str(build.build_cubin(launch.file, params, traced=False))],
                                     capture_output=True, text=True, check=True).stdout
            text, line = sources.load(launch.file).text.splitlines(), None
            for raw in listing.splitlines():
                if "//## File" in raw:
                    m = re.search(r'File "([^"]+)", line (\d+)', raw)
                    line = int(m.group(2)) if m and m.group(1).endswith("/" + launch.file) else None
                elif line and guarded.search(raw):
                    seen += 1
                    if "SKIP_" not in text[line - 1]:
                        missing.append(f"{launch.file}:{line} {guarded.search(raw).group(1)}")
    assert seen, "no predicated shared access found: the listing was not read"
    assert missing == []


def test_mma_pipelined_copies_zero_fill_with_no_predicate_in_one_run_per_matrix():
    """Its copies were cp.async predicated by lane, and ptxas, out of predicate registers, branched
    around one pass in eight: warps wholly past K skipped it while the trace counted it (24 shared-load
    instructions too many at 144x80x48 on both GPUs). Zero-filling copies take no predicate: no LDGSTS
    is guarded, and each matrix's copies of a tile are one straight run behind one set of three
    @!PT LDS, which the listing places on the copy's source line (3 per run of A's passes, 3 per run
    of B's, whatever their lengths: the trace counts the issues of each line)."""
    import re
    import subprocess

    from engine.kernels import registry, sources
    from engine.kernels.problem import make_problem
    spec = registry.get("mma_pipelined")
    for tiles in ({}, {"BM": 64}):   # 8 passes of A's tile and 8 of B's; 8 and 16
        params = registry.bind(spec, make_problem(144, 80, 48, params=tiles)).params
        listing = subprocess.run([sass.nvdisasm(), str(build.build_cubin("mma_pipelined.cu", params, traced=False))],
                                 capture_output=True, text=True, check=True).stdout
        copies = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?LDGSTS", listing)
        assert copies and not any(copies), "an LDGSTS behind a lane predicate"
        threads = params["BM"] // params["WM"] * params["BN"] // params["WN"] * 32
        passes = {"A": params["BM"] // (threads // (params["BK"] // 8)), "B": params["BK"] // (threads // (params["BN"] // 8))}
        lines = {s.array: s.line for s in sources.load("mma_pipelined.cu").sites if s.copy and s.space == "global"}
        per_line = sass.memory_instructions("mma_pipelined.cu", params)["never_per_copy_line"]
        assert {m: per_line[lines[m]]["LDS"] for m in passes} == {m: pytest.approx(3 / n) for m, n in passes.items()}


def test_prefetched_interior_copies_of_b_are_one_unguarded_run_counted_on_their_own_line():
    """A block wholly inside C copies B's tile with no guard (multiply<false>): ptxas issues those
    LDGSTS as one straight run behind one set of three @!PT LDS, where the guarded copies of the edge
    blocks each sit behind their own branch with three before every one. The listing places each
    set on its copy's source line, so the interior line counts 3 per run of kBLoads copies and the
    guarded line 3 per copy: one line for both would count the interior blocks' shared loads as the
    edge blocks' (what Nsight Compute measured before B's copies lost their guards)."""
    from engine.kernels import registry, sources
    from engine.kernels.problem import make_problem
    spec = registry.get("prefetched")
    lines = sorted(s.line for s in sources.load("prefetched.cu").sites if s.copy and s.space == "global")
    assert len(lines) == 2, lines   # the interior blocks' copy of B, then the edge blocks' guarded one
    for choice in ({}, {"BK": 8}, {"BM": 64}):   # runs of 4 copies a thread; 2 (BK 8); 8 (128 threads)
        params = registry.bind(spec, make_problem(256, 256, 256, params=choice)).params
        threads = params["BM"] // params["WM"] * params["BN"] // params["WN"] * 32
        run = params["BK"] * params["BN"] // 4 // threads
        per_line = sass.memory_instructions("prefetched.cu", params)["never_per_copy_line"]
        assert {ln: per_line[ln]["LDS"] for ln in lines} == {lines[0]: pytest.approx(3 / run), lines[1]: 3}, choice


def test_a_fingerprint_is_the_machine_code_not_the_file(tmp_path):
    """Two builds of one source from two folders differ as files (their debug sections name the
    folder) and share a fingerprint; a source that compiles to other instructions gets another."""
    import shutil
    import subprocess

    from engine.kernels import sources
    fingerprints, files = [], []
    for folder, edit in (("a", False), ("b", False), ("c", True)):
        root = tmp_path / folder
        shutil.copytree(sources.CUDA_DIR, root / "cuda")
        if edit:   # the same kernel, one more multiply-add per element
            src = root / "cuda" / "tiled_guarded.cu"
            text = src.read_text()
            assert text.count("sum += ") >= 1
            src.write_text(text.replace("sum += ", "sum = 2.0f * sum + ", 1))
        out = root / "k.cubin"
        subprocess.run([build.nvcc(), "-cubin", f"-arch={build.GPU_ARCH}", "-O3", "-lineinfo", f"-I{root / 'cuda'}",
                        "-o", str(out), str(root / "cuda" / "tiled_guarded.cu")], check=True, capture_output=True)
        files.append(out.read_bytes())
        fingerprints.append(sass.fingerprint(out))
    assert files[0] != files[1]
    assert fingerprints[0] == fingerprints[1] != fingerprints[2]


@pytest.mark.skipif(not (sass.nvdisasm() and build.nvcc()), reason="needs nvcc and nvdisasm")
def test_a_saved_listing_changed_by_one_count_is_listed_again_never_shown(tmp_path, monkeypatch):
    """The saved listing had no digest: one count changed on disk (tiled_guarded's 16 LDS of a line made
    99), or one line number, was shown as what nvcc compiled. It carries a digest of itself now."""
    import json
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path / "cache"))
    first = sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0})
    kept = next((tmp_path / "cache").glob("*.sass.json"))
    saved = json.loads(kept.read_text())
    line, ops = next(iter(saved["by_line"].items()))
    op = next(iter(ops))
    saved["by_line"][line][op] = ops[op] + 83
    kept.write_text(json.dumps(saved))
    assert sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0}) == first
    saved = json.loads(kept.read_text())   # listed again and kept again, whole
    saved["by_line"][str(int(line) + 9)] = saved["by_line"].pop(line)
    kept.write_text(json.dumps(saved))
    assert sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0}) == first


@pytest.mark.skipif(not (sass.nvdisasm() and build.nvcc()), reason="needs nvcc and nvdisasm")
def test_a_fifo_in_place_of_a_saved_listing_is_listed_again_not_waited_on(tmp_path, monkeypatch):
    import os

    from tests.test_compile_cache import _returns_within
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path / "cache"))
    first = sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0})
    kept = next((tmp_path / "cache").glob("*.sass.json"))
    kept.unlink()
    os.mkfifo(kept, 0o600)
    again = _returns_within(lambda: sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0}))
    assert again == first


@pytest.mark.skipif(not (sass.nvdisasm() and build.nvcc()), reason="needs nvcc and nvdisasm")
def test_a_saved_listing_grown_huge_is_listed_again_not_read(tmp_path, monkeypatch):
    """A 40 GB (sparse) listing had been read whole: a MemoryError on the Ladder and Bank conflicts pages."""
    import os
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path / "cache"))
    first = sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0})
    kept = next((tmp_path / "cache").glob("*.sass.json"))
    from engine.kernels import cache
    os.truncate(kept, cache.MOST_BYTES + 1)
    assert sass.memory_instructions("tiled_guarded.cu", {"TILE": 16, "PAD": 0}) == first
