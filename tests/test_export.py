"""Benchmark exports are real files, made by the command line from a run recorded on a GPU."""
import csv
import io
import json
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from engine.bench import benchmark, export, schema
from engine.cli import main
from engine.errors import EngineError
from engine.plots import charts
from tests import browser

# An H200 run in format 1, recorded before rows carried their parameters and provenance its toolkit
# and cuBLAS versions (the shipped run's predecessor): what older exports look like, kept as they are.
RECORDED = Path(__file__).parent / "data" / "h200-2026-11-21-format1.json"
ROOT = Path(__file__).resolve().parent.parent
KERNEL_LABELS = ["naive_x_rows 16x16", "naive_x_cols 16x16", "naive_transposed_b 32x32", "tiled_guarded T16",
                 "tiled_unguarded T16", "shared_bank_conflicts T16", "cublas_sgemm", "cublas_sgemm_tf32"]


def decoded(page: str) -> str:
    """The page with its JSON \\uXXXX escapes decoded: what the figure says, however Plotly escaped it
    (with orjson installed it writes "·" as is, without it as \\u00b7; a browser shows both alike)."""
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), page)


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


def test_csv_writes_whole_numbers_whole_beside_a_failed_row(exported):
    """A failed row has no reps nor clock: pandas made those columns floats, written 20.0 and 1980.0."""
    doc = json.loads(RECORDED.read_text())
    assert any(r["status"] != "ok" for r in doc["results"]), "the recorded run has no failed row to test with"
    rows = list(csv.DictReader(io.StringIO((exported / "results.csv").read_text())))
    ok = [r for r in rows if r["status"] == "ok"]
    for column in ("reps", "launches_per_sample", "m"):
        assert all(re.fullmatch(r"[0-9]+", r[column]) for r in ok), {r[column] for r in ok}
    assert all(r["reps"] == "" for r in rows if r["status"] != "ok")


def test_json_round_trips_with_provenance(exported):
    again, prov = benchmark.load_document((exported / "results.json").read_text())
    original, prov0 = benchmark.load_document(RECORDED.read_text())
    assert prov == prov0
    pd.testing.assert_frame_equal(again.reset_index(drop=True), original.reset_index(drop=True))


def test_html_charts_are_written(exported):
    for name in ("gflops_vs_size", "percent_of_cublas", "roofline"):
        assert "plotly" in (exported / f"{name}.html").read_text().lower()


def test_two_runs_measured_alike_are_each_given_what_they_were_measured_with():
    """An H100 run beside an H200 run, the same cuBLAS, toolkit and driver: the line saying so stood
    under the H100's provenance only (the H200's, said again, was dropped as a duplicate), and under the
    Share chart the same line twice, unnamed. Now one line for both; lines that differ are named."""
    h100 = {"gpu": "NVIDIA H100 80GB HBM3", "date": "2026-11-26T01:00", "cublas_version": 130100,
            "toolkit": "Cuda compilation tools, V13.0.88", "driver": "580.159.04"}
    h200 = {**h100, "gpu": "NVIDIA H200", "date": "2026-11-26T02:00"}
    with_ = "100% = cuBLAS 13.1.0 · nvcc 13.0.88 · driver 580.159.04 · SM clock not recorded"
    assert charts.notes([h100, h200]).split("<br>") == ["NVIDIA H100 80GB HBM3 · 2026-11-26", "NVIDIA H200 · 2026-11-26",
                                                        f"both runs: {with_}"]
    assert charts.measured_lines([h100, h200]) == [f"both runs: {with_}"]
    newer = {**h200, "driver": "581.1"}
    assert charts.notes([h100, newer]).split("<br>") == ["NVIDIA H100 80GB HBM3 · 2026-11-26", with_,
                                                         "NVIDIA H200 · 2026-11-26", with_.replace("580.159.04", "581.1")]
    assert charts.measured_lines([h100, newer]) == [f"H100 80GB HBM3 2026-11-26: {with_}",
                                                    f"H200 2026-11-26: {with_.replace('580.159.04', '581.1')}"]
    assert charts.measured_lines([h100]) == [with_]
    later = {**newer, "date": "2026-11-26T09:30", "driver": "582"}   # two H200 runs of one day: by the minute
    assert charts.measured_lines([newer, later]) == [f"H200 2026-11-26 02:00: {with_.replace('580.159.04', '581.1')}",
                                                     f"H200 2026-11-26 09:30: {with_.replace('580.159.04', '582')}"]


def test_a_run_recorded_before_the_versions_were_says_not_recorded_beside_its_percentages(exported):
    """The shipped run predates the toolkit and cuBLAS fields: it loads, and says so; its clock is in its rows."""
    line = "100% = cuBLAS (version not recorded) · toolkit not recorded · SM clock 1,980 MHz"
    assert line in decoded((exported / "percent_of_cublas.html").read_text())
    df, prov = benchmark.load_document(RECORDED.read_text())
    assert line in charts.notes([prov], df)
    assert charts.notes([prov, prov], df) == charts.notes([prov], df)   # two runs alike are said once
    table = benchmark.table(df)
    assert set(table["cuBLAS"]) == set(table["toolkit"]) == {"not recorded"}
    assert charts.cublas_text({"cublas_version": 130001}) == "13.0.1"
    assert charts.cublas_text({"cublas_version": 120405}) == "12.4.5"
    assert charts.toolkit_text({"toolkit": "Cuda compilation tools, release 12.8, V12.8.93"}) == "nvcc 12.8.93"
    clocks = pd.DataFrame({"status": ["ok", "ok", "ok", "error"], "sm_clock_mhz": [1755, 1980, 1980, 600]})
    assert charts.clock_text(clocks) == "SM clock 1,755–1,980 MHz (median 1,980)"   # of the timed rows
    assert charts.clock_text(clocks.drop(columns="sm_clock_mhz")) == "SM clock not recorded"


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
def test_png_decodes_at_the_asked_size_and_svg_parses(exported):
    doc = schema.read(RECORDED.read_bytes())
    figs = export.figures(doc.rows, doc.prov)
    for name in ("gflops_vs_size", "roofline"):
        assert png_size((exported / f"{name}.png").read_bytes()) == (1200, figs[name].layout.height)
        root = ET.parse(exported / f"{name}.svg").getroot()
        assert root.tag.endswith("svg") and root.get("width") == "1200"


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
def test_a_chart_with_a_long_key_is_pictured_at_its_own_height(tmp_path):
    """The pictures were pressed into 1200 x 700 whatever the chart: a recorded run of 22 tensor-core
    kernels and configurations, whose charts are drawn 1,145 to 1,251 px tall for their key, lost its plot."""
    run = max(benchmark.recorded_runs(), key=lambda p: len({(r["kernel"], json.dumps(r.get("params")))
                                                              for r in json.loads(p.read_text())["results"]}))
    doc = schema.read(run.read_bytes())
    fig = export.figures(doc.rows, doc.prov)["gflops_vs_size"]
    assert fig.layout.height > 1000
    assert main(["bench", "--from", str(run), "--out", str(tmp_path), "--formats", "png"]) == 0
    assert png_size((tmp_path / "gflops_vs_size.png").read_bytes()) == (1200, fig.layout.height)


def test_html_embeds_plotly_js_so_it_opens_offline(exported):
    for name in ("gflops_vs_size", "percent_of_cublas", "roofline"):
        page = (exported / f"{name}.html").read_text()
        assert not re.search(r"<script[^>]*src=", page), "loads a script from elsewhere"
        assert len(page) > 3_000_000 and "plotly.js v" in page[:200_000]   # plotly.js itself is inside


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
def test_pictures_carry_their_provenance_and_the_whole_legend(exported):
    """Rendered by kaleido: the SVG's texts are what the PNG shows (looked at: see the report)."""
    for name in ("gflops_vs_size", "percent_of_cublas", "roofline"):
        svg = (exported / f"{name}.svg").read_text()
        assert "NVIDIA H200 · 2026-11-21 · CUDA 13.0.0 · driver's CUDA 13.0 · median of 20 reps" in svg, name
        said = "100% = cuBLAS" if name == "percent_of_cublas" else "cuBLAS"   # a 100% where the chart has one
        assert f"{said} (version not recorded) · toolkit not recorded · SM clock 1,980 MHz" in svg, name
        assert name == "percent_of_cublas" or "100% =" not in svg, name
        legend = re.search(r'<g class="legend"[^>]*translate\(([\d.]+),\s*([\d.]+)\)"><rect class="bg"[^>]*'
                           r'width="([\d.]+)" height="([\d.]+)"', svg)
        x, y, w, h = map(float, legend.groups())
        assert x >= 0 and y >= 0 and x + w <= 1200 and y + h <= 700, (name, x, y, w, h)
        assert re.search(r'class="scrollbar"[^>]*width="0" height="0"', svg), f"{name}: the legend scrolls"
        entries = re.findall(r'class="legendtext"[^>]*>([^<]*)<', svg)
        want = KERNEL_LABELS if name != "percent_of_cublas" else KERNEL_LABELS[:6]
        assert entries == want, (name, entries)


def test_without_chrome_pictures_fail_with_one_clear_line(monkeypatch, tmp_path, capsys):
    """kaleido's own message starts with blank lines: it used to print as an empty 'RuntimeError:'."""
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chrome-here"))
    with pytest.raises(EngineError, match="needs Chrome or Chromium.*apt install chromium"):
        with export.image_session():
            pass
    assert main(["bench", "--from", str(RECORDED), "--out", str(tmp_path), "--formats", "png"]) == 0
    skipped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipped")]
    assert skipped == [f"skipped png/svg: {export.NO_CHROME}"]


def test_kaleido_is_a_requirement():
    reqs = (ROOT / "requirements.txt").read_text().splitlines()
    assert any(re.match(r"kaleido\b", line) for line in reqs)


def test_download_names_say_chart_gpu_and_date():
    assert export.chart_filename("roofline", ["NVIDIA H200"], ["2026-11-21T07:44:59+00:00"]) == \
        "roofline-NVIDIA-H200-2026-11-21"
    assert export.chart_filename("roofline", ["A/B: C*", "A/B: C*", None], ["2026-01-02"]) == "roofline-A-B-C-2026-01-02"
    # the dates of several sweeps oldest first, whatever order the files were read in (it read 26-27-22)
    assert export.chart_filename("autotuning", ["NVIDIA H200"], ["2026-11-26", "2026-11-27", "2026-11-22T01:00"]) == \
        "autotuning-NVIDIA-H200-2026-11-22-2026-11-26-2026-11-27"


def test_labels_carry_the_block_shape_in_either_spelling():
    assert charts.label({"kernel": "naive_x_rows", "block": "32x32"}) == "naive_x_rows 32x32"
    assert charts.label({"kernel": "naive_x_cols", "block_x": 16, "block_y": 16}) == "naive_x_cols 16x16"
    assert charts.label({"kernel": "shared_bank_conflicts", "tile": 32, "pad": 1}) == "shared_bank_conflicts T32 pad1"


def test_ladder_rows_are_labelled_by_every_parameter_they_ran_with():
    warp = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "WNITER": 4, "TM": 8, "TN": 4}
    assert charts.label({"kernel": "warptile", "params": warp}) == "warptile 128x128x16 w64x64 t8x4 i4"
    # a row carries every parameter; the label names them all, in LADDER_PARTS' order whatever the row's
    assert charts.label({"kernel": "warptile", "params": dict(reversed(warp.items()))}) == \
        "warptile 128x128x16 w64x64 t8x4 i4"
    assert charts.label({"kernel": "blocktile_1d", "params": {"BM": 64, "BN": 32, "BK": 8, "TM": 4}}) == \
        "blocktile_1d 64x32x8 t4"
    assert charts.label({"kernel": "vectorized", "params": {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4}}) == \
        "vectorized 128x64x16 t8x4"
    # The older kernels' labels are as they were, from params or from format 1's fields.
    assert charts.label({"kernel": "shared_bank_conflicts", "params": {"TILE": 32, "PAD": 1}}) == \
        "shared_bank_conflicts T32 pad1"
    assert charts.label({"kernel": "tiled_guarded", "params": {"TILE": 16}, "tile": 16.0}) == "tiled_guarded T16"
    assert charts.label({"kernel": "cublas_sgemm", "params": {}}) == "cublas_sgemm"


def test_a_sweep_of_one_kernels_configurations_draws_one_series_each():
    from engine.bench.schema import as_frame
    configs = [{"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "WNITER": 4, "TM": 8, "TN": 4},
               {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 32, "WNITER": 2, "TM": 8, "TN": 4},
               {"BM": 64, "BN": 128, "BK": 8, "WM": 32, "WN": 64, "WNITER": 1, "TM": 4, "TN": 4}]
    rows = [{"kernel": "warptile", "precision": "fp32", "m": n, "n": n, "k": n, "params": p, "status": "ok",
             "gflops": 1000.0 * (i + 1) * n / 1024, "intensity": n / 6} for i, p in enumerate(configs)
            for n in (1024, 2048)]
    fig = charts.gflops_vs_size(as_frame(rows).assign(gpu="GPU"))
    names = [t.name for t in fig.data]
    assert sorted(names) == ["warptile 128x128x16 w64x32 t8x4 i2", "warptile 128x128x16 w64x64 t8x4 i4",
                             "warptile 64x128x8 w32x64 t4x4 i1"]
    assert len({t.line.color for t in fig.data}) == 3
    assert all(len(t.x) == 2 for t in fig.data)


def test_colours_are_the_same_in_every_chart_and_in_exports():
    df, prov = benchmark.load_document(RECORDED.read_text())
    page = charts.all_charts(df, prov["peaks"], 14)
    files = export.figures(json.loads(RECORDED.read_text())["results"], prov)
    colours = {}
    for fig in list(page.values())[:3] + list(files.values())[:3]:
        for t in fig.data:
            if t.name in KERNEL_LABELS:
                colours.setdefault(t.name, set()).add(t.marker.color)
    assert set(colours) == set(KERNEL_LABELS) and all(len(c) == 1 for c in colours.values()), colours
    assert len({c.pop() for c in colours.values()}) == len(KERNEL_LABELS)


def test_two_gpus_keep_the_kernel_colour_and_differ_by_dash():
    rows = pd.DataFrame(json.loads(RECORDED.read_text())["results"])
    both = pd.concat([rows.assign(gpu="GPU A"), rows.assign(gpu="GPU B")], ignore_index=True)
    fig = charts.gflops_vs_size(benchmark.derive(both, json.loads(RECORDED.read_text())["provenance"]["peaks"]))
    lines = {t.name: (t.line.color, t.line.dash) for t in fig.data if t.mode == "lines+markers"}
    assert lines["naive_x_rows 16x16 · GPU A"][0] == lines["naive_x_rows 16x16 · GPU B"][0]
    assert lines["naive_x_rows 16x16 · GPU A"][1] != lines["naive_x_rows 16x16 · GPU B"][1]
    assert lines["naive_x_rows 16x16 · GPU A"][0] != lines["naive_x_cols 16x16 · GPU A"][0]


def test_readme_shows_bench_as_gpu_only_and_the_recorded_rerender(tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text()
    command = "python -m engine bench --from engine/bench/recorded/h200-2026-11-22.json --out results/"
    assert command in readme
    bench_lines = [line for line in readme.splitlines() if line.startswith("python -m engine bench --kernels")]
    assert bench_lines and all("GPU only" in line for line in bench_lines)
    monkeypatch.chdir(ROOT)   # the README's command, as written, works here without a GPU
    out = tmp_path / "results"
    assert main(command.split()[3:-1] + [str(out), "--formats", "csv,json"]) == 0
    assert (out / "results.json").exists()


def test_uploads_that_are_not_exports_get_a_clear_message():
    from engine.errors import EngineError
    with pytest.raises(EngineError, match="not a benchmark export"):
        benchmark.load_document(b'{"results": []}')
    with pytest.raises(EngineError, match="not a benchmark export"):
        benchmark.load_document(b"not json")


def test_bench_without_a_gpu_says_to_use_a_recorded_run(capsys, monkeypatch, tmp_path):
    from engine.devices import gpu_client
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


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
def test_the_browser_drawing_pictures_runs_at_the_lowest_priority_and_the_caller_at_its_own():
    """An export's Chrome took the cores the server's page views needed (on two cores its start
    and pictures are seconds of both): every thread of its processes runs at BROWSER_NICE once it
    has drawn, while the thread asking for the pictures keeps its priority."""
    import os
    import threading

    from engine.devices import host_memory
    fig = export.figures(*benchmark.load_document(RECORDED.read_text()))["roofline"]
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with export.image_session():
        export.image(fig, "svg", 400, 300)
        threads = {}
        for pid in host_memory.descendants():
            if b"chrom" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].lower():
                for task in Path(f"/proc/{pid}/task").iterdir():
                    threads[int(task.name)] = os.getpriority(os.PRIO_PROCESS, int(task.name))
    assert threads and set(threads.values()) == {export.BROWSER_NICE}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine


def test_two_runs_of_one_gpu_each_take_their_own_cublas_and_are_told_apart():
    """Shown together, a second run of the same GPU was divided by the first run's cuBLAS (an upload of
    the same run at 10x read 981% of cuBLAS), and its lines, legend and headline were the first's."""
    doc = json.loads(RECORDED.read_text())
    rows = pd.DataFrame(doc["results"]).assign(gpu="NVIDIA H200")
    faster = rows.assign(gflops=rows["gflops"] * 10)
    both = benchmark.derive(pd.concat([rows.assign(run="a.json"), faster.assign(run="b.json (uploaded)")],
                                      ignore_index=True), doc["provenance"]["peaks"])
    alone = benchmark.derive(rows, doc["provenance"]["peaks"])
    for run in ("a.json", "b.json (uploaded)"):
        got = both[both["run"] == run]["pct_cublas"].to_numpy()
        assert got == pytest.approx(alone["pct_cublas"].to_numpy(), nan_ok=True)
    fig = charts.gflops_vs_size(both)
    lines = {t.name: t.line.dash for t in fig.data if t.mode == "lines+markers"}
    assert lines["naive_x_rows 16x16 · a.json"] != lines["naive_x_rows 16x16 · b.json (uploaded)"]
    assert benchmark.headline(both).count("naive_x_rows") == 2   # once by name, once in the closing ratio
    assert list(benchmark.table(both)["run"].unique()) == ["a.json", "b.json (uploaded)"]
    assert "run" not in benchmark.table(both[both["run"] == "a.json"])


def test_two_uploads_of_one_name_are_two_runs_and_one_run_is_not_named_in_its_labels():
    """Two uploads of results.json were one run (the second divided by the first's cuBLAS: 1066%); a
    single run of an unnamed GPU had ' · a.json' on every label, and rows with a run but no GPU a KeyError."""
    assert benchmark.unique_name("results.json (uploaded)", set()) == "results.json (uploaded)"
    assert benchmark.unique_name("r (uploaded)", {"r (uploaded)", "r (uploaded) #2"}) == "r (uploaded) #3"
    rows = pd.DataFrame(json.loads(RECORDED.read_text())["results"])
    assert not charts.labels(rows.assign(gpu=None, run="a.json")).str.contains("a.json").any()
    assert not charts.labels(rows.assign(run="a.json")).str.contains("a.json").any()
    both = pd.concat([rows.assign(gpu="H100", run="a.json"), rows.assign(gpu="H200", run="b.json")], ignore_index=True)
    assert "run" not in benchmark.table(both)   # a run per GPU: the GPU column tells them apart


def test_results_json_is_strict_json_whatever_numbers_a_row_has(tmp_path):
    """A result not checked (rel_error NaN) was written as a bare NaN, which browsers' JSON.parse, jq and
    strict readers refuse; now null, and the file reads back as the same run."""
    doc = json.loads(RECORDED.read_text())
    doc["results"][0]["rel_error"] = float("nan")
    doc["results"][1]["rel_error"] = None
    source = tmp_path / "in.json"
    source.write_text(json.dumps(doc))
    assert main(["bench", "--from", str(source), "--out", str(tmp_path / "out"), "--formats", "json"]) == 0
    text = (tmp_path / "out" / "results.json").read_text()

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    written = json.loads(text, parse_constant=refuse)
    assert written["results"][0]["rel_error"] is None
    assert len(written["results"]) == len(doc["results"])
