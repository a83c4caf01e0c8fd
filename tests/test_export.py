"""Benchmark exports are real files, made by the command line from a run recorded on a GPU."""
import json
import struct
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from engine import benchmark
from engine.cli import main
from tests import browser

RECORDED = benchmark.recorded_runs()[0]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])   # the IHDR chunk
    return width, height


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    formats = "csv,json,html" + (",png,svg" if browser.available() is None else "")
    assert main(["bench", "--from", str(RECORDED), "--out", str(out), "--formats", formats]) == 0
    return out


def test_csv_round_trips_with_provenance(exported):
    doc = json.loads(RECORDED.read_text())
    df = pd.read_csv(exported / "results.csv")
    assert len(df) == len(doc["results"])
    assert set(df["gpu"]) == {doc["provenance"]["gpu"]} and set(df["date"]) == {doc["provenance"]["date"]}
    assert json.loads(df["settings"][0]) == doc["provenance"]["settings"]
    ok = df[df["status"] == "ok"]
    want = pd.DataFrame(doc["results"]).query("status == 'ok'")
    assert ok["gflops"].round(6).tolist() == want["gflops"].round(6).tolist()


def test_json_round_trips_with_provenance(exported):
    again, prov = benchmark.load_document((exported / "results.json").read_text())
    original, prov0 = benchmark.load_document(RECORDED.read_text())
    assert prov == prov0
    pd.testing.assert_frame_equal(again.reset_index(drop=True), original.reset_index(drop=True))


def test_html_charts_are_written(exported):
    for name in ("gflops_vs_size", "percent_of_cublas", "roofline"):
        assert "plotly" in (exported / f"{name}.html").read_text().lower()


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
def test_png_decodes_at_the_asked_size_and_svg_parses(exported):
    for name in ("gflops_vs_size", "roofline"):
        assert png_size((exported / f"{name}.png").read_bytes()) == (1200, 700)
        root = ET.parse(exported / f"{name}.svg").getroot()
        assert root.tag.endswith("svg") and root.get("width") == "1200"


def test_uploads_that_are_not_exports_get_a_clear_message():
    from engine.errors import EngineError
    with pytest.raises(EngineError, match="not a benchmark export"):
        benchmark.load_document(b'{"results": []}')
    with pytest.raises(EngineError, match="not a benchmark export"):
        benchmark.load_document(b"not json")


def test_bench_without_a_gpu_says_to_use_a_recorded_run(capsys, monkeypatch, tmp_path):
    from engine import gpu_client
    monkeypatch.setattr(gpu_client, "status", lambda refresh=False: gpu_client.GpuStatus(False, reason="no driver"))
    assert main(["bench", "--out", str(tmp_path)]) == 2
    assert "--from a recorded results.json" in capsys.readouterr().err


def test_size_lists_parse_and_bad_ones_are_refused():
    assert benchmark.parse_sizes("1024, 1000x2000x512") == [(1024, 1024, 1024), (1000, 2000, 512)]
    from engine.errors import EngineError
    with pytest.raises(EngineError):
        benchmark.parse_sizes("10x20")


def test_percent_of_cublas_is_against_the_same_precision_and_size():
    df, prov = benchmark.load_document(RECORDED.read_text())
    row = df[(df["kernel"] == "tiled_guarded") & (df["m"] == 4096) & (df["n"] == 4096)].iloc[0]
    ref = df[(df["kernel"] == "cublas_sgemm") & (df["m"] == 4096) & (df["n"] == 4096)].iloc[0]
    assert row["pct_cublas"] == pytest.approx(100 * row["gflops"] / ref["gflops"])
    tf32 = df[(df["kernel"] == "cublas_sgemm_tf32") & (df["m"] == 4096) & (df["n"] == 4096)].iloc[0]
    assert tf32["pct_cublas"] == pytest.approx(100)
