"""The documents' speed figures, checked, beside the same kernels of a recorded run: every figure of
this GPU comes from the run's rows (here a made-up run whose numbers the tests know), and what the
run lacks is named."""
import pytest

from engine.bench import benchmark, claimed
from tests.synthetic_runs import PEAKS, SKINNY, SQUARE, document, row


def _load(rows):
    df, prov = benchmark.load_document(document(rows))
    return df, prov["peaks"]


def test_the_a100_table_is_set_beside_the_same_kernels_at_4096_on_this_gpu():
    m = claimed.cuda_table(*_load(SQUARE + SKINNY))
    assert m.shape == (4096, 4096, 4096) and m.gpu == "NVIDIA H200"
    t = m.table.set_index("as printed")
    # the document's own configuration (16x16 blocks, TILE 16), though a faster one was recorded
    assert t.loc["Naive CUDA", "kernel here"] == "naive_x_cols 16x16" and t.loc["Naive CUDA", "TFLOP/s here"] == 5.0
    assert t.loc["Tiled", "kernel here"] == "tiled_guarded T16" and t.loc["Tiled", "TFLOP/s here"] == 8.0
    assert t.loc["cuBLAS FP32", claimed.PCT_HERE] == pytest.approx(100 * 50000 / PEAKS["fp32_gflops"])
    assert t.loc["cuBLAS TF32", claimed.PCT_HERE] == pytest.approx(100 * 400000 / PEAKS["tf32_gflops_datasheet"])
    assert t.loc["cuBLAS FP16", "kernel here"] == "—"
    assert m.missing == ["cuBLAS FP16: the catalog has no FP16 kernel yet, so it is not measured here"]
    here = claimed.cuda_table_here(m)
    assert here.startswith("On the NVIDIA H200 at 4096³: Naive CUDA (naive_x_cols 16x16) 5.0 TFLOP/s, ")
    assert f"cuBLAS FP32 (cublas_sgemm) 50.0 TFLOP/s, {100 * 50000 / PEAKS['fp32_gflops']:.1f}% of this GPU's FP32 peak" \
        in here


def test_the_printed_percentages_are_checked_against_the_a100_datasheet():
    t = claimed.cuda_table(*_load(SQUARE)).table.set_index("as printed")
    assert t.loc["cuBLAS FP32", "peak that % implies"] == pytest.approx(19 / 0.12)
    assert t.loc["cuBLAS FP32", "% of that peak"] == pytest.approx(100 * 19 / 19.5)
    text = claimed.cuda_table_check()
    assert "Naive CUDA, Tiled and cuBLAS FP32 are 0.3%, 3% and 12% of 158–167 TFLOP/s, near the A100's TF32 peak (156)" \
        in text
    assert "cuBLAS TF32 and cuBLAS FP16 are 50% and 95% of 300–316 TFLOP/s, near the A100's FP16 peak (312)" in text
    assert "cuBLAS FP32 97%, not 12%" in text and "cuBLAS TF32 96%, not 50%" in text and "cuBLAS FP16 96%, as printed" in text


def test_without_4096_cubed_the_largest_square_size_is_used_and_missing_kernels_are_named():
    rows = [r for r in SQUARE if r["m"] != 4096] + [row("naive_x_cols", 2048, 2048, 2048, 4000.0, block="32x32"),
                                                    row("cublas_sgemm", 2048, 2048, 2048, 30000.0)]
    m = claimed.cuda_table(*_load(rows))
    assert m.shape == (2048, 2048, 2048)
    assert m.missing == ["Naive CUDA: the document's own configuration is not in this run; naive_x_cols 32x32 is shown",
                         "Tiled: tiled_guarded is not in this run at 2048³",
                         "cuBLAS TF32: cublas_sgemm_tf32 is not in this run at 2048³",
                         "cuBLAS FP16: the catalog has no FP16 kernel yet, so it is not measured here"]


def test_the_v100_headline_is_checked_and_set_beside_its_kernels_at_its_exact_shape():
    text = claimed.non_square_check()
    # 2 * 4096 * 4096 * 128 = 4,294,967,296 FLOP: 3,112 GFLOP/s in 0.00138 s; 3029.39 GFLOP/s takes 1.418 ms
    assert "4,294,967,296" in text and "3,112 GFLOP/s, not 3,029.39" in text and "1.418 ms" in text
    assert "disagree by 2.7%" in text and "19% of a V100 SXM2's FP32 peak" in text
    m = claimed.non_square(*_load(SQUARE + SKINNY))
    assert m.missing == [] and m.shape == (4096, 4096, 128)
    t = m.table.set_index("kernel")
    assert list(t.index) == ["shared_bank_conflicts T32 pad1", "shared_bank_conflicts T16 pad1",
                             "shared_bank_conflicts T32", "shared_bank_conflicts T16", "naive_transposed_b 32x32",
                             "warptile 128x128x16 w64x64 t8x4 i4", "cublas_sgemm"]
    assert t.loc["warptile 128x128x16 w64x64 t8x4 i4", "role"] == "the ladder's best"
    best = t.loc["shared_bank_conflicts T32 pad1"]
    assert best["GFLOP/s"] == 6000.0 and best[claimed.TIMES_PRINTED] == pytest.approx(6000 / 3029.39)
    assert best["% of cuBLAS"] == pytest.approx(100 * 6000 / 40000)
    assert best["median (ms)"] == pytest.approx(2 * 4096 * 4096 * 128 / 6000 / 1e6)
    here = claimed.non_square_here(m)
    assert "its fastest kernel, shared_bank_conflicts T32 pad1, runs 6,000 GFLOP/s (2.0× the V100 figure" in here
    assert "the ladder's best, warptile 128x128x16 w64x64 t8x4 i4, runs 25,000 GFLOP/s" in here


def test_a_run_without_the_headline_shape_says_which_rows_are_missing():
    m = claimed.non_square(*_load(SQUARE + [r for r in SKINNY if r["kernel"] in ("shared_bank_conflicts",)][:2]))
    assert m.missing == ["Not in this run at 4096×4096×128: naive_transposed_b, shared_bank_conflicts T32, "
                         "shared_bank_conflicts T32 pad1, any rung of the ladder, cublas_sgemm"]
