"""The half-precision entries (cuBLAS GemmEx FP16 and BF16, torch.mm FP16) in a run's figures: % of
cuBLAS against cuBLAS at the row's own precision, the datasheet peaks they are set against, their
precision in the table, a colour of their own and a roof of their own in the charts."""
import pandas as pd
import pytest

from engine.bench import benchmark
from engine.kernels import registry
from engine.plots import charts, style
from tests.synthetic_runs import PEAKS, document, row

N = 4096


def _derived(rows, **prov):
    df, prov = benchmark.load_document(document(rows, **prov))
    return df.set_index("kernel"), prov


def test_each_precision_has_its_own_cublas_and_torch_mm_is_measured_against_it():
    assert benchmark.CUBLAS_AT == {"fp32": "cublas_sgemm", "tf32": "cublas_sgemm_tf32", "fp16": "cublas_gemm_fp16",
                                   "bf16": "cublas_gemm_bf16"}
    # torch.mm first in row order: it must not become the FP16 rows' cuBLAS
    df, _ = _derived([row("torch_mm_fp16", N, N, N, 630000.0), row("cublas_sgemm", N, N, N, 50000.0),
                      row("cublas_gemm_fp16", N, N, N, 700000.0), row("cublas_gemm_bf16", N, N, N, 720000.0),
                      row("warptile", N, N, N, 25000.0)])
    assert df.loc["torch_mm_fp16", "pct_cublas"] == pytest.approx(90.0)
    assert df.loc["cublas_gemm_fp16", "pct_cublas"] == 100.0 and df.loc["cublas_gemm_bf16", "pct_cublas"] == 100.0
    assert df.loc["warptile", "pct_cublas"] == 50.0
    assert list(df["precision"]) == ["fp16", "fp32", "fp16", "bf16", "fp32"]


def test_the_datasheet_peaks_are_by_gpu_and_precision_in_one_table():
    info = {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "sm_clock_mhz": 1980, "memory_clock_mhz": 2619,
            "memory_bus_bits": 5120, "compute_capability": "9.0"}
    peaks = benchmark.device_peaks(info)
    assert (peaks["tf32_gflops_datasheet"], peaks["fp16_gflops_datasheet"], peaks["bf16_gflops_datasheet"]) == \
        (494700.0, 989400.0, 989400.0)
    assert benchmark.datasheet_gflops("NVIDIA A100-SXM4-80GB", "fp16") == 312000.0
    assert benchmark.datasheet_gflops("NVIDIA GeForce RTX 4090", "fp16") is None
    # and a run's recorded peaks are read back with them
    _, prov = _derived([row("cublas_sgemm", N, N, N, 50000.0)], peaks={**PEAKS, "fp16_gflops_datasheet": 989400.0})
    assert prov["peaks"]["fp16_gflops_datasheet"] == 989400.0


def test_the_results_table_says_each_rows_precision():
    df, _ = _derived([row("cublas_gemm_bf16", N, N, N, 720000.0), row("torch_mm_fp16", N, N, N, 630000.0),
                      row("cublas_sgemm_tf32", N, N, N, 400000.0)])
    table = benchmark.table(df.reset_index())
    assert list(table["precision"]) == ["bf16", "fp16", "tf32"]
    assert list(table.columns[:3]) == ["GPU", "kernel", "precision"]


def test_every_kernel_the_benchmarks_show_gets_a_colour_of_its_own():
    kernels = registry.showing("benchmarks")
    df = pd.DataFrame([row(k, N, N, N, 1000.0) for k in kernels])
    colours = charts.colors(df)
    assert len(colours) == len(kernels) and len(set(colours.values())) == len(kernels)
    assert len(set(style.PALETTE)) == len(style.PALETTE)


def test_half_precision_rows_get_their_tensor_roof_and_torch_mm_its_share_of_cublas():
    rows = [row("cublas_sgemm", N, N, N, 50000.0), row("cublas_gemm_fp16", N, N, N, 700000.0),
            row("torch_mm_fp16", N, N, N, 630000.0)]
    df, prov = _derived(rows, peaks={**PEAKS, "fp16_gflops_datasheet": 989400.0, "bf16_gflops_datasheet": 989400.0})
    df = df.reset_index()
    roofs = [a.text for a in charts.roofline(df, prov["peaks"]).layout.annotations if "roof" in a.text]
    assert roofs[1:] == ["TF32 tensor roof 495 TFLOP/s (datasheet)", "FP16 tensor roof 989 TFLOP/s (datasheet)"]
    fp32_only = df[df["precision"] == "fp32"]
    assert not any("FP16" in a.text for a in charts.roofline(fp32_only, prov["peaks"]).layout.annotations)
    shares = {t.name: list(t.y) for t in charts.pct_of_cublas(df).data if t.name}
    assert shares == {"torch_mm_fp16": [90.0]}   # cuBLAS rows are the 100% line, not curves
