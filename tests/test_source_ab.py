"""source_ab.py's pieces that need no GPU: each version's folder, sizes, the rounds' order, the summary."""
from pathlib import Path

import pytest

from tests.benchmarks.source_ab import lay_out, rotated, sizes, summary, versions


def test_each_version_builds_from_its_own_headers_and_the_base_falls_back_to_cuda(tmp_path):
    base = tmp_path / "old"
    base.mkdir()
    (base / "wgmma.cuh").write_text("// the old wgmma.cuh\n")
    files = lay_out(versions([base]), {"wgmma_epilogue": "wgmma_epilogue.cu"}, tmp_path / "out")
    old, new = files[("wgmma_epilogue", "base")], files[("wgmma_epilogue", "work")]
    assert (old.parent / "wgmma.cuh").read_text() == "// the old wgmma.cuh\n"
    assert (new.parent / "wgmma.cuh").read_text().startswith("// wgmma.cuh:")
    # What the base folder lacks (here all but wgmma.cuh) is today's file: an A/B of one header.
    assert old.read_text() == new.read_text()
    assert (old.parent / "wgmma_persistent.cuh").read_text() == (new.parent / "wgmma_persistent.cuh").read_text()


def test_a_build_key_tells_the_versions_apart_by_a_header_they_reach_through_another(tmp_path):
    from engine.kernels import build, sources
    base = tmp_path / "old"
    base.mkdir()
    (base / "wgmma.cuh").write_text("// the old wgmma.cuh\n")
    files = lay_out(versions([base]), {"wgmma_epilogue": "wgmma_epilogue.cu"}, tmp_path / "out")
    old, new = (build.local_headers(sources.load(str(files[("wgmma_epilogue", v)]))) for v in ("base", "work"))
    assert "// the old wgmma.cuh" in old and "// the old wgmma.cuh" not in new


def test_a_version_that_differs_only_in_an_engine_header_gets_a_build_of_its_own(tmp_path):
    """contract.cuh is in every key as cuda/ has it; a version's own copy must count too, or the two
    versions would share one cached build."""
    from engine.kernels import build, sources
    base = tmp_path / "old"
    base.mkdir()
    (base / "contract.cuh").write_text((sources.CUDA_DIR / "contract.cuh").read_text() + "// the old one\n")
    files = lay_out(versions([base]), {"wgmma_epilogue": "wgmma_epilogue.cu"}, tmp_path / "out")
    old, new = (build.local_headers(sources.load(str(files[("wgmma_epilogue", v)]))) for v in ("base", "work"))
    assert "// the old one" in old and old != new
    # cuda/'s own kernels key their engine headers once, through _inputs_hash, as before.
    assert (sources.CUDA_DIR / "contract.cuh").read_text() not in build.local_headers(sources.load("wgmma_epilogue.cu"))


def test_a_header_only_a_version_has_is_laid_out_and_a_kernel_is_its_last_launchs_file(tmp_path):
    base = tmp_path / "old"
    base.mkdir()
    (base / "extra.cuh").write_text("// only the old version has this\n")
    files = lay_out(versions([base]), {"split_k": "split_k_sum.cu"}, tmp_path / "out")
    assert (files[("split_k", "base")].parent / "extra.cuh").is_file()
    assert not (files[("split_k", "work")].parent / "extra.cuh").exists()
    assert files[("split_k", "work")].name == "split_k_sum.cu" and files[("split_k", "work")].is_file()


def test_the_summary_pairs_each_version_with_the_kernels_first_round_by_round():
    flops = 1e12
    # Rounds drift together: work is 1% faster than base in every round, whatever the round's speed.
    base = [flops / 700e12, flops / 800e12, flops / 750e12]
    work = [t / 1.01 for t in base]
    lines = summary(flops, {("k", "base"): base, ("k", "work"): work, ("cublas_gemm_fp16", ""): [flops / 760e12] * 3},
                    ("cublas_gemm_fp16", ""))
    assert "paired" not in lines[0] and "paired against base: +1.00%" in lines[1] and "paired" not in lines[2]


def test_sizes_rounds_and_summary():
    assert sizes("4096,4096x4096x1024,") == [(4096, 4096, 4096), (4096, 4096, 1024)]
    assert rotated(["a", "b", "c"], 0) == ["a", "b", "c"] and rotated(["a", "b", "c"], 4) == ["b", "c", "a"]
    flops = 2.0 * 4096 ** 3
    lines = summary(flops, {("k", "work"): [flops / 800e12, flops / 790e12, flops / 810e12],
                            ("cublas_gemm_fp16", ""): [flops / 780e12] * 3}, ("cublas_gemm_fp16", ""))
    assert "800.0 TF" in lines[0] and "102.56%" in lines[0] and "range 790.0-810.0" in lines[0]
    assert lines[1].split()[0] == "cublas_gemm_fp16" and "100.00%" in lines[1]


def test_several_bases_are_named_by_their_folders_and_work_comes_last(tmp_path):
    named = versions([tmp_path / "pf" / "cuda", tmp_path / "rd"])
    assert list(named) == ["pf", "rd", "work"] and named["work"].name == "cuda"
    with pytest.raises(SystemExit):
        versions([tmp_path / "a" / "cuda", tmp_path / "a"])   # both would be "a"
    with pytest.raises(SystemExit):
        versions([tmp_path / "work", Path("x")])
