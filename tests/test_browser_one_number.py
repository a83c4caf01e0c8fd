"""One measurement, one number, as Chromium shows the pages at 1280x720 (CPU mode, the shipped runs):
the Coalescing page's verdicts quote the naive kernels as the Benchmarks page's headline does, and the
Benchmarks page's table of the documents' figures quotes cuBLAS FP16 and TF32 as the Tensor cores
page's bars do. Screenshots go to $MATMUL_EXPLORER_SCREENSHOTS, to be looked at."""
import pytest

from engine.bench import claim_checks
from tests import browser

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))


def _open(page, url: str, charts: int) -> str:
    page.goto(url)
    page.wait_for_selector("h1", timeout=60000)
    browser.wait_for_chart(page, charts, 120000)
    browser.wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    return page.inner_text("body")


def test_coalescing_benchmarks_and_tensor_cores_show_one_number_per_measurement(server, page, shots):
    q = claim_checks.recorded_quoted()
    rows, cols, transposed = q.speed("rows"), q.speed("cols"), q.speed("transposed")

    coalescing = _open(page, f"{server}/coalescing", 1)
    page.get_by_text("What the source documents say").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "one-number-coalescing-1280x720.png"))
    assert f"{rows} GFLOP/s, against {cols} for the mapping with threadIdx.x on columns ({q.ratio('cols', 'rows')})" in coalescing
    assert f"{transposed} GFLOP/s with 32x32 blocks" in coalescing and f"{cols} GFLOP/s at N=1,024 with 16x16 blocks" in coalescing
    assert q.run in coalescing

    bench = _open(page, f"{server}/benchmarks", 4)
    page.get_by_text("At N=1,024 on the").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "one-number-benchmarks-headline-1280x720.png"))
    for name, speed in (("rows", rows), ("cols", cols), ("transposed", transposed)):
        assert f"{q.label(name)} {speed} GFLOP/s" in bench
    assert f"({q.label('cols')}) run {q.ratio('cols', 'rows')} faster" in bench
    page.get_by_text("What the documents claim, measured here").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "one-number-benchmarks-documents-1280x720.png"))
    shown = claim_checks.SQUARE
    fp16 = claim_checks.run_of_record("cublas_gemm_fp16", {"NVIDIA H200"}, shown)[1]["gflops"].max() / 1000
    tf32 = claim_checks.run_of_record("cublas_sgemm_tf32", {"NVIDIA H200"}, shown)[1]["gflops"].max() / 1000
    assert f"cuBLAS FP16 (cublas_gemm_fp16) {fp16:,.1f} TFLOP/s" in bench
    assert f"cuBLAS TF32 (cublas_sgemm_tf32) {tf32:,.1f} TFLOP/s" in bench

    _open(page, f"{server}/tensor_cores", 5)
    page.locator("h3", has_text="TFLOP/s").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "one-number-tensor-speeds-1280x720.png"))
    bars = page.evaluate("""() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(g => ((g.layout.title || {}).text || '').includes('TFLOP/s at'));
        return Object.fromEntries(d.data[0].x.map((k, i) => [k, d.data[0].text[i]])); }""")
    assert bars["cublas_gemm_fp16"] == f"{fp16:,.0f}" and bars["cublas_sgemm_tf32"] == f"{tf32:,.0f}"
    assert not page.errors, page.errors
