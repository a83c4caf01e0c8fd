"""The Benchmarks page: recorded runs in any mode; a live sweep in GPU mode (on the device)."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from engine import benchmark
from tests.test_pages import APP, TIMEOUT


def _open():
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/benchmarks.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_recorded_run_is_shown_and_labelled_with_its_gpu():
    runs = benchmark.recorded_runs()
    assert runs, "no recorded run shipped in engine/recorded/"
    at = _open()
    label = " ".join(str(m.value) for m in at.markdown)
    assert "Recorded on:" in label and "NVIDIA" in label
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    titles = [c["layout"]["title"]["text"] for c in charts]
    assert "Throughput against size" in titles and "Roofline" in titles
    g = charts[titles.index("Throughput against size")]
    assert {"naive_x_rows", "cublas_sgemm"} <= {t["name"].split(" ")[0] for t in g["data"]}
    table = at.dataframe[-1].value
    assert (table["status"] == "ok").sum() > 10 and table["gflops"].max() > 1e4


@pytest.mark.gpu
def test_live_sweep_streams_results_with_cublas_alongside():
    at = _open()
    at.selectbox[0].set_value("custom").run()
    at.text_input[0].set_value("128,256").run()
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    rows = at.session_state["bench_rows"]
    assert len(rows) == 2 * 5 and all(r["status"] == "ok" for r in rows)
    assert any(r["kernel"] == "cublas_sgemm" for r in rows)
    table = at.dataframe[0].value
    assert table["pct_cublas"].notna().sum() >= 4 and (table["gflops"] > 0).all()
