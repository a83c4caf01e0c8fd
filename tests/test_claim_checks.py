"""The documents' speed figures, checked, beside the same kernels of a recorded run: every figure of
this GPU comes from the run's rows (here a made-up run whose numbers the tests know), and what the
run lacks is named."""
import pandas as pd
import pytest

from engine.bench import benchmark, claim_checks
from tests.synthetic_runs import DIVISIBLE, PEAKS, SKINNY, SQUARE, document, row


def _load(rows, **prov):
    df, prov = benchmark.load_document(document(rows, **prov))
    return df, prov["peaks"]


def test_the_a100_table_is_set_beside_the_same_kernels_at_4096_on_this_gpu():
    m = claim_checks.cuda_table(*_load(SQUARE + SKINNY))
    assert m.shape == (4096, 4096, 4096) and m.gpu == "NVIDIA H200"
    t = m.table.set_index("as printed")
    # the document's own configuration (16x16 blocks, TILE 16), though a faster one was recorded
    assert t.loc["Naive CUDA", "kernel here"] == "naive_x_cols 16x16" and t.loc["Naive CUDA", "TFLOP/s here"] == 5.0
    assert t.loc["Tiled", "kernel here"] == "tiled_guarded T16" and t.loc["Tiled", "TFLOP/s here"] == 8.0
    assert t.loc["cuBLAS FP32", claim_checks.PCT_HERE] == pytest.approx(100 * 50000 / PEAKS["fp32_gflops"])
    assert t.loc["cuBLAS TF32", claim_checks.PCT_HERE] == pytest.approx(100 * 400000 / PEAKS["tf32_gflops_datasheet"])
    # a run recorded without an FP16 peak: the H200's from the datasheet table, by its name
    assert t.loc["cuBLAS FP16", "kernel here"] == "cublas_gemm_fp16" and t.loc["cuBLAS FP16", "TFLOP/s here"] == 700.0
    assert t.loc["cuBLAS FP16", claim_checks.PCT_HERE] == pytest.approx(100 * 700 / 989.4)
    assert t.loc["cuBLAS FP16", claim_checks.PEAK_HERE] == 989.4 and t.loc["cuBLAS TF32", claim_checks.PEAK_HERE] == 495.0
    assert m.missing == []
    here = claim_checks.cuda_table_here(m)
    assert here.startswith("On the NVIDIA H200 at 4096³: Naive CUDA (naive_x_cols 16x16) 5.0 TFLOP/s, ")
    assert f"cuBLAS FP32 (cublas_sgemm) 50.0 TFLOP/s, {100 * 50000 / PEAKS['fp32_gflops']:.1f}% of this GPU's FP32 peak" \
        in here


def test_the_printed_percentages_are_checked_against_the_a100_datasheet():
    t = claim_checks.cuda_table(*_load(SQUARE)).table.set_index("as printed")
    assert t.loc["cuBLAS FP32", "peak that % implies"] == pytest.approx(19 / 0.12)
    assert t.loc["cuBLAS FP32", "% of that peak"] == pytest.approx(100 * 19 / 19.5)
    text = claim_checks.cuda_table_check()
    assert "Naive CUDA, Tiled and cuBLAS FP32 are 0.3%, 3% and 12% of 158–167 TFLOP/s, near the A100's TF32 peak (156)" \
        in text
    assert "cuBLAS TF32 and cuBLAS FP16 are 50% and 95% of 300–316 TFLOP/s, near the A100's FP16 peak (312)" in text
    assert "cuBLAS FP32 97%, not 12%" in text and "cuBLAS TF32 96%, not 50%" in text and "cuBLAS FP16 96%, as printed" in text


def test_without_4096_cubed_the_largest_square_size_is_used_and_missing_kernels_are_named():
    rows = [r for r in SQUARE if r["m"] != 4096] + [row("naive_x_cols", 2048, 2048, 2048, 4000.0, block="32x32"),
                                                    row("cublas_sgemm", 2048, 2048, 2048, 30000.0)]
    m = claim_checks.cuda_table(*_load(rows))
    assert m.shape == (2048, 2048, 2048)
    assert m.missing == ["Naive CUDA: the document's own configuration is not in this run; naive_x_cols 32x32 is shown",
                         "Tiled: tiled_guarded is not in this run at 2048³",
                         "cuBLAS TF32: cublas_sgemm_tf32 is not in this run at 2048³",
                         "cuBLAS FP16: cublas_gemm_fp16 is not in this run at 2048³"]


def test_the_tensor_core_rows_are_each_against_their_own_precisions_peak_there_and_here():
    m = claim_checks.cuda_table(*_load(SQUARE, peaks={**PEAKS, "fp16_gflops_datasheet": 1000000.0}))
    t = m.table.set_index("as printed")
    assert t.loc["cuBLAS FP16", claim_checks.PCT_HERE] == pytest.approx(70.0)   # the peak the run recorded
    text = claim_checks.tensor_cores_here(m)
    assert text.startswith("On the A100, cuBLAS TF32 (about 150 TFLOP/s) is 96% of its TF32 peak (156) and cuBLAS "
                           "FP16 (about 300) 96% of its FP16 peak (312): FP16 2.0× TF32, the peaks 2.0× apart. ")
    assert text.endswith("On the NVIDIA H200 at 4096³, against its datasheet peaks (TF32 495.0, FP16 1,000.0 "
                         "TFLOP/s): cuBLAS TF32 80.8%; cuBLAS FP16 70.0%; FP16 1.75× TF32, the peaks 2.0× apart.")
    # a run without the TF32 row: what it has, and no ratio
    m = claim_checks.cuda_table(*_load([r for r in SQUARE if r["kernel"] != "cublas_sgemm_tf32"]))
    assert claim_checks.tensor_cores_here(m).endswith("at 4096³, against its datasheet peaks (FP16 989.4 TFLOP/s): "
                                                 "cuBLAS FP16 70.7%.")


def test_a_gpu_without_a_datasheet_peak_says_so_instead_of_a_percentage():
    m = claim_checks.cuda_table(*_load(SQUARE, gpu="Some Other GPU", peaks={"fp32_gflops": 50000.0, "bandwidth_gbs": 1000.0}))
    assert "cuBLAS FP16 (cublas_gemm_fp16) 700.0 TFLOP/s, no FP16 peak known for this GPU (not in the datasheet " \
        "table)." in claim_checks.cuda_table_here(m)
    assert claim_checks.tensor_cores_here(m).endswith("On the Some Other GPU at 4096³: cuBLAS TF32: no TF32 peak known for "
                                                 "this GPU (not in the datasheet table); cuBLAS FP16: no FP16 peak known "
                                                 "for this GPU (not in the datasheet table); FP16 1.75× TF32.")


def test_cublas_fp16_around_4096_says_what_divisible_by_8_is_worth_here():
    m = claim_checks.divisible(_load(SQUARE + DIVISIBLE)[0])
    assert m.missing == []
    t = m.table.set_index("N")
    assert list(t["divisible by"]) == ["÷8", "÷4", "odd", "÷16", "odd", "÷4", "÷8", "÷16"]
    assert t.loc[4095, "cublas_gemm_fp16 TFLOP/s"] == 400.0
    assert t.loc[4092, claim_checks.OF_4096] == pytest.approx(100 * 500 / 700)
    assert t.loc[4100, "torch_mm_fp16 TFLOP/s"] == pytest.approx(0.99 * 520) and pd.isna(t.loc[4095, "torch_mm_fp16 TFLOP/s"])
    assert t.loc[4100, claim_checks.TORCH_SHARE] == pytest.approx(99.0)
    text = claim_checks.divisible_here(m)
    assert text == ("On the NVIDIA H200, cublas_gemm_fp16: sizes not divisible by 8 (4092, 4095, 4097, 4100) ran a "
                    "median 460.0 TFLOP/s against 700.0 for multiples of 8 (4088, 4096, 4104, 4112), 66% as fast; the "
                    "slowest, 4095³ (odd), 400.0. Divisible by 8 matters here, as the document says. Multiples of 16 "
                    "(4096, 4112) against multiples of 8 only (4088, 4104): 715.0 against 695.0 TFLOP/s, the same "
                    "within 5%: 16 is no better than 8 here. torch.mm (FP16) at the same sizes ran 99% of cuBLAS "
                    "FP16's speed (the document: it calls cuBLAS GEMM).")


@pytest.mark.parametrize("scale, verdict, sixteen", [
    # every size as fast as 4096³ (700), but 4112³ 12% faster: no difference for 8, 16 better
    ({4088: 1.0, 4092: 1.0, 4095: 0.97, 4097: 1.0, 4100: 1.02, 4104: 1.0, 4112: 1.12},
     "as fast; the slowest, 4095³ (odd), 679.0. Divisible by 8 made no difference beyond 5% here.", "+6%: 16 is better"),
    # the sizes not divisible by 8 faster, and multiples of 8 only faster than multiples of 16
    ({4088: 1.3, 4092: 1.5, 4095: 1.5, 4097: 1.5, 4100: 1.5, 4104: 1.3, 4112: 1.0},
     "1.30× as fast; the slowest, 4096³ (÷16), 700.0. The reverse of the claim here", "-23%: 16 is worse")])
def test_the_verdicts_follow_the_rows(scale, verdict, sixteen):
    rows = [row("cublas_gemm_fp16", n, n, n, 700000.0 * f) for n, f in scale.items()]
    text = claim_checks.divisible_here(claim_checks.divisible(_load(SQUARE + rows)[0]))
    assert verdict in text and sixteen in text and "torch.mm" not in text


def test_a_run_without_the_sizes_around_4096_says_so_in_one_line():
    m = claim_checks.divisible(_load(SQUARE)[0])   # cuBLAS FP16 at 4096³ only
    assert m.missing == ["Sizes around 4096 this run lacks for cublas_gemm_fp16: 4088³, 4092³, 4095³, 4097³, 4100³, "
                         "4104³, 4112³"]
    assert claim_checks.divisible_here(m).startswith("This run cannot say")
    m = claim_checks.divisible(_load([r for r in SQUARE if r["kernel"] != "cublas_gemm_fp16"])[0])
    assert m.table.empty and m.missing == ["This run has no cublas_gemm_fp16 row at the sizes around 4096 (4088³, "
                                           "4092³, 4095³, 4096³, 4097³, 4100³, 4104³, 4112³): the claim is not measured here"]


def test_the_v100_headline_is_checked_and_set_beside_its_kernels_at_its_exact_shape():
    text = claim_checks.non_square_check()
    # 2 * 4096 * 4096 * 128 = 4,294,967,296 FLOP: 3,112 GFLOP/s in 0.00138 s; 3029.39 GFLOP/s takes 1.418 ms
    assert "4,294,967,296" in text and "3,112 GFLOP/s, not 3,029.39" in text and "1.418 ms" in text
    assert "disagree by 2.7%" in text and "19% of a V100 SXM2's FP32 peak" in text
    m = claim_checks.non_square(*_load(SQUARE + SKINNY))
    assert m.missing == [] and m.shape == (4096, 4096, 128)
    t = m.table.set_index("kernel")
    assert list(t.index) == ["shared_bank_conflicts T32 pad1", "shared_bank_conflicts T16 pad1",
                             "shared_bank_conflicts T32", "shared_bank_conflicts T16", "naive_transposed_b 32x32",
                             "warptile 128x128x16 w64x64 t8x4 i4", "cublas_sgemm"]
    assert t.loc["warptile 128x128x16 w64x64 t8x4 i4", "role"] == "the ladder's best"
    best = t.loc["shared_bank_conflicts T32 pad1"]
    assert best["GFLOP/s"] == 6000.0 and best[claim_checks.TIMES_PRINTED] == pytest.approx(6000 / 3029.39)
    assert best["% of cuBLAS"] == pytest.approx(100 * 6000 / 40000)
    assert best["median (ms)"] == pytest.approx(2 * 4096 * 4096 * 128 / 6000 / 1e6)
    here = claim_checks.non_square_here(m)
    assert "its fastest kernel, shared_bank_conflicts T32 pad1, runs 6,000 GFLOP/s (2.0× the V100 figure" in here
    assert "the ladder's best, warptile 128x128x16 w64x64 t8x4 i4, runs 25,000 GFLOP/s" in here


def test_a_run_without_the_headline_shape_says_which_rows_are_missing():
    m = claim_checks.non_square(*_load(SQUARE + [r for r in SKINNY if r["kernel"] in ("shared_bank_conflicts",)][:2]))
    assert m.missing == ["Not in this run at 4096×4096×128: naive_transposed_b, shared_bank_conflicts T32, "
                         "shared_bank_conflicts T32 pad1, any rung of the ladder, cublas_sgemm"]


# --------------------------------------------------------------------------- the figures the trace pages' claims quote

# A made-up run at N = 1024 with numbers no recorded run has: each claim must carry these, computed.
AT_1024 = [row("naive_x_rows", 1024, 1024, 1024, 1111.0, block="16x16"),
           row("naive_x_rows", 1024, 1024, 1024, 999.0, block="32x32"),      # another block shape: not quoted
           row("naive_x_cols", 1024, 1024, 1024, 6666.0, block="16x16"),
           row("naive_transposed_b", 1024, 1024, 1024, 555.0, block="32x32"),
           row("tiled_guarded", 1024, 1024, 1024, 9999.0, {"TILE": 16}),
           row("shared_bank_conflicts", 1024, 1024, 1024, 2222.0, {"TILE": 16, "PAD": 0})]


def _quoted(rows) -> claim_checks.Quoted:
    df, prov = benchmark.load_document(document(rows, date="2031-02-03T00:00:00+00:00"))
    return claim_checks.quoted(df, "recorded NVIDIA H200 run of 2031-02-03")


def _verdicts(q: claim_checks.Quoted) -> dict[str, list[str]]:
    from pages.lib import claim_texts
    return {page: [verdict for _, verdict in claim_texts.claims(page, q)] for page in claim_texts.CLAIMS}


def test_the_trace_pages_claims_carry_the_runs_figures_computed():
    q = _quoted(AT_1024)
    assert q.gflops == {"rows": 1111.0, "cols": 6666.0, "transposed": 555.0, "tiled": 9999.0, "conflicts16": 2222.0}
    v = _verdicts(q)
    wrong_way, transposed, right, _ = v["coalescing"]
    assert "recorded NVIDIA H200 run of 2031-02-03" in wrong_way
    assert "1,111 GFLOP/s, against 6,666" in wrong_way and "(6.0x)" in wrong_way
    assert "555 GFLOP/s with 32x32 blocks" in transposed and "(6,666, 16x16 blocks) runs 12.0x its speed" in transposed
    assert "(1,111, 16x16 blocks: 16 sectors per request) 2.0x" in transposed
    assert "6,666 GFLOP/s at N=1,024 with 16x16 blocks" in right
    assert "9,999 GFLOP/s for tiled_guarded (TILE 16) against 6,666" in v["tiling"][0] and "1.5x and not 16x" in v["tiling"][0]
    assert "only the unpadded kernel, at TILE 16: 2,222 GFLOP/s" in v["banks"][0] and "9,999 at the same TILE, 4.5x" in v["banks"][0]
    # The figures the documents' old verdicts typed in are gone: one number per measurement, from the run.
    for typed in ("486", "6,208", "943", "5,044", "5,171", "7,765", "9,104", "1.8x", "3.0x"):
        assert not any(typed in text for texts in v.values() for text in texts), typed


def test_padding_is_measured_where_the_run_has_padded_rows():
    padded = [row("shared_bank_conflicts", 1024, 1024, 1024, g, {"TILE": t, "PAD": p})
              for t, p, g in ((16, 1, 4444.0), (32, 0, 1000.0), (32, 1, 3500.0))]
    verdict = _verdicts(_quoted(AT_1024 + padded))["banks"][0]
    assert "Padding, measured in the recorded NVIDIA H200 run of 2031-02-03 at N=1,024: 2.0x faster at TILE 16, " \
           "3.5x faster at TILE 32." in verdict


def test_a_run_without_the_quoted_rows_says_which_it_lacks():
    v = _verdicts(_quoted([r for r in AT_1024 if r["kernel"] != "naive_x_cols"]))
    assert "has no row for naive_x_cols 16x16 at N=1,024" in v["coalescing"][0]
    assert "has no row for naive_x_cols 16x16 at N=1,024" in v["tiling"][0]
    v = _verdicts(_quoted([row("cublas_sgemm", 1024, 1024, 1024, 40000.0)]))
    assert all("GFLOP/s" not in text for texts in v.values() for text in texts)


def test_the_shipped_claims_quote_the_recorded_run_the_benchmarks_headline_reads():
    """The same measurement shows one number everywhere: the claims and the Benchmarks page's headline
    read the same rows of the recorded run the page opens on (not a newer run of the same kernels beside it)."""
    from pages.lib import claim_texts
    run = benchmark.opening_runs(benchmark.recorded_runs(holding=["naive_x_cols"]))[0]
    df, _ = benchmark.load_document(run.read_text())
    headline = benchmark.headline(df, claim_checks.QUOTED_N)
    q = claim_checks.recorded_quoted()
    for name in ("rows", "cols"):
        assert f"{q.label(name)} {q.speed(name)} GFLOP/s" in headline
    assert q.speed("cols") in claim_texts.claims("coalescing")[2][1]


def test_the_home_pages_opening_line_is_the_runs_fastest_over_its_slowest():
    from pages.lib import claim_texts
    q = _quoted(AT_1024 + [row("cublas_sgemm", 1024, 1024, 1024, 44400.0)])
    assert claim_texts.tagline(q).startswith("Why one matrix-multiplication kernel is 80.0x faster than another "
                                             "(cublas_sgemm against naive_transposed_b 32x32 at N=1,024, "
                                             "recorded NVIDIA H200 run of 2031-02-03)")
    assert "x faster" not in claim_texts.tagline(_quoted(AT_1024))
