"""Uploaded benchmark exports are untrusted: the classroom server is shared by a room of browsers.

Every damaged or hostile file gets a one-line message naming the field and what was expected; the
recorded run (and every other upload) is still charted; nothing an upload says is read as Markdown.
"""
import html
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.bench import benchmark, schema
from engine.kernels import registry
from engine.plots import charts
from tests.test_pages import APP, TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
# An H200 run in format 1, recorded before rows carried their parameters and provenance its toolkit
# and cuBLAS versions (the shipped run's predecessor): what older exports look like, kept as they are.
RECORDED = Path(__file__).parent / "data" / "h200-2026-11-21-format1.json"
EVIL = "![x](http://evil/img.png)"


def _doc() -> dict:
    return json.loads(RECORDED.read_text())


def _bytes(doc) -> bytes:
    return json.dumps(doc).encode()


def _with(change) -> bytes:
    doc = _doc()
    change(doc)
    return _bytes(doc)


def _set_row(i, field, value):
    return lambda doc: doc["results"][i].__setitem__(field, value)


def _set_prov(field, value):
    return lambda doc: doc["provenance"].__setitem__(field, value)


# name -> (file content, the field its message names, whether the rest of the file is still charted)
HOSTILE = {
    "missing-peaks": (_with(lambda d: d["provenance"].pop("peaks")), "provenance.peaks", False),
    "gflops-string": (_with(_set_row(3, "gflops", "fast")), 'results[3].gflops: expected a number, got "fast"', False),
    "precision-fp64": (_with(_set_row(3, "precision", "fp64")), 'results[3].precision', True),
    "kernel-7": (_with(_set_row(3, "kernel", 7)), "results[3].kernel: expected a kernel name", False),
    "date-number": (_with(_set_prov("date", 20261121)), "provenance.date: expected", False),
    "provenance-list": (_with(lambda d: d.__setitem__("provenance", [d["provenance"]])),
                        "provenance: expected an object", False),
    "deep-nesting": (b'{"format": "cuda-matmul-explorer benchmark 1", "provenance": ' + b"[" * 100_000
                     + b"]" * 100_000 + b', "results": []}', "nested", False),
    "oversize": (_bytes(_doc()) + b" " * (schema.MAX_BYTES + 1), "16 MB", False),
    # Python's parser refuses integers of more than 4,300 digits with a ValueError: the page crashed
    # ("This app has encountered an error", the recorded charts gone) and the CLI printed a traceback.
    "huge-integer": (_bytes(_doc()).replace(b'"m": 1024', b'"m": ' + b"9" * 5000, 1), "5,000 digits", False),
    # Within the interpreter's recursion limit, but far deeper than an export nests.
    "nesting-500": (_with(_set_prov("settings", json.loads("[" * 500 + "]" * 500))), "nested too deeply", False),
    "params-unknown": (_with(_set_row(3, "params", {"BS": 128})), "results[3].params: tiled_guarded has no "
                       "parameter BS (it takes TILE)", True),
    "params-lower-case": (_with(_set_row(3, "params", {"tile": 16})), "results[3].params: expected an object of "
                          "compile-time parameters", False),
    # A NaN the file gives was called missing, and 1e308 "not a number": each is now said as it is.
    "gflops-nan": (_with(_set_row(3, "gflops", float("nan"))), "results[3].gflops: expected a positive number for a "
                   "timed row, got NaN", False),
    "gflops-absent": (_with(lambda d: d["results"][3].pop("gflops")), "results[3].gflops: missing; expected a "
                      "positive number for a timed row", False),
    "gflops-1e308": (_with(_set_row(3, "gflops", 1e308)), "results[3].gflops: expected a number from -1e300 to "
                     "1e300, got 1e+308", False),
    "peak-1e308": (_with(lambda d: d["provenance"]["peaks"].__setitem__("fp32_gflops", 1e308)),
                   "provenance.peaks.fp32_gflops: expected a number above 0, at most 1e300, got 1e+308", False),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_upload_gets_one_line_per_problem_naming_the_field(case):
    data, field, kept = HOSTILE[case]
    run, messages = benchmark.load_upload("hostile.json", data)
    assert (run is not None) == kept, messages
    assert messages and len(messages) <= schema.MAX_MESSAGES + 2, messages
    assert messages[0].startswith("hostile.json"), messages
    assert any(field in m for m in messages), messages
    assert all("\n" not in m and len(m) < 400 for m in messages), messages


def test_a_row_this_explorer_does_not_know_is_left_out_and_the_rest_kept():
    data = _with(lambda d: (_set_row(3, "precision", "fp64")(d), _set_row(5, "kernel", "winograd_fp16")(d)))
    (df, prov), messages = benchmark.load_upload("newer.json", data)
    assert len(df) == len(_doc()["results"]) - 2
    text = " ".join(messages)
    assert 'results[3].precision: expected bf16 or fp16 or fp32 or tf32, got "fp64"' in text
    assert 'results[5].kernel: expected a kernel of this explorer' in text and '"winograd_fp16"' in text


def test_problems_are_capped_to_a_few_lines_per_file():
    data = _with(lambda d: [r.__setitem__("gflops", "fast") for r in d["results"]])
    run, messages = benchmark.load_upload("many.json", data)
    assert run is None and len(messages) == schema.MAX_MESSAGES + 2
    assert messages[-1] == f"… and {len(_doc()['results']) - schema.MAX_MESSAGES} more"


def test_not_json_and_wrong_format_are_one_line():
    for data, want in ((b"not json", "not JSON"), (b"\xff\xfe", "not JSON"), (b'{"results": []}', "format"),
                       (b"[]", "expected an object")):
        run, messages = benchmark.load_upload("x.json", data)
        assert run is None and any(want in m for m in messages), (data, messages)


def test_a_file_cut_inside_a_string_is_said_in_plain_words():
    """It read "not JSON: Unterminated string starting at at line 1, column 39"."""
    run, messages = benchmark.load_upload("cut.json", b'{"format": 1, "results": [ {"kernel": "naive')
    assert run is None and messages[1:] == ["not JSON: Unterminated string starting at line 1, column 39"], messages


def test_an_empty_file_is_said_to_be_empty():
    """It read "not JSON: Expecting value at line 1, column 1", the parser's words for a file with nothing in it."""
    for data, want in ((b"", "the file is empty"), (b"  \n\t", "the file holds only blank space")):
        run, messages = benchmark.load_upload("empty.json", data)
        assert run is None and messages[1:] == [want], (data, messages)


def test_values_that_would_break_a_chart_are_refused():
    for change, field in ((_set_row(0, "m", -4), "results[0].m"), (_set_row(0, "gflops", float("inf")), "results[0].gflops"),
                          (_set_row(0, "tile", 12), "results[0].tile"), (_set_row(0, "block", [16, 16]), "results[0].block"),
                          (lambda d: d["provenance"]["peaks"].__setitem__("fp32_gflops", 0), "provenance.peaks.fp32_gflops"),
                          (_set_row(0, "status", None), "results[0].status")):
        run, messages = benchmark.load_upload("x.json", _with(change))
        assert any(field in m for m in messages), (field, messages)


# Wrong type, out of range, not finite, nested, too long: each into every field the format names.
HOSTILE_VALUES = [None, "x", -1, 0, 10**400, float("nan"), float("inf"), True, [[[[]]]], {"a": {}}, "x" * 5000]


# The row fields the charts draw from (all are in the table)
CHARTED = ("kernel", "m", "n", "k", "tile", "pad", "block", "block_x", "block_y", "status", "gflops", "intensity",
           "sm_clock_mhz", "power_w")


def test_any_value_in_any_field_gives_messages_never_an_exception():
    doc = _doc()
    places = ([(lambda d, f=f: d, f) for f in doc] + [(lambda d: d["provenance"], f) for f in schema.PROVENANCE]
              + [(lambda d: d["provenance"]["peaks"], f) for f in schema.PEAKS]
              + [(lambda d: d["provenance"]["settings"], f) for f in schema.SETTINGS]
              + [(lambda d: d["results"][0], f) for f in schema.ROW])
    for where, field in places:
        for value in HOSTILE_VALUES:
            d = _doc()
            where(d)[field] = value
            try:
                data = json.dumps(d).encode()
            except (ValueError, RecursionError):   # not writable as JSON: Python's own limits
                continue
            run, messages = benchmark.load_upload("x.json", data)
            assert run is not None or messages, (field, value)
            if run is not None:
                df, prov = run
                if field in CHARTED and value != doc["results"][0].get(field):
                    charts.all_charts(benchmark.derive(df, prov["peaks"]), prov["peaks"], provs=[prov],
                                      extra=benchmark.headline(df, escape=schema.plain))
                    benchmark.table(df)


def test_the_recorded_run_and_an_export_pass_unchanged(tmp_path):
    doc = _doc()
    document = schema.read(RECORDED.read_bytes())
    assert doc["format"] == "cuda-matmul-explorer benchmark 1" and document.skipped == []
    assert document.prov == doc["provenance"]
    # Format 1's tile and pad come back as params: those of the parameters each row's kernel declares.
    older = {"TILE": "tile", "PAD": "pad"}
    assert [{k: v for k, v in r.items() if k != "params"} for r in document.rows] == \
        [{k: v for k, v in r.items() if k not in older.values()} for r in doc["results"]]
    assert [r["params"] for r in document.rows] == [
        {name: r[field] for name, field in older.items() if name in registry.get(r["kernel"]).params}
        for r in doc["results"]]
    assert {"TILE": 16, "PAD": 0} in [r["params"] for r in document.rows]
    again = schema.read(json.dumps(schema.to_document(document.rows, document.prov)))
    assert again.rows == document.rows and again.prov == document.prov
    pd.testing.assert_frame_equal(again.frame, document.frame)


def _format_2(change=lambda rows: None) -> bytes:
    """The recorded run as an export of today's format: each row's parameters in params."""
    doc = schema.read(RECORDED.read_bytes())
    rows = doc.rows
    change(rows)
    return json.dumps(schema.to_document(rows, doc.prov)).encode()


def test_rows_carry_their_parameters_by_name_and_are_labelled_by_them():
    def tile_32_pad_1(rows):
        rows[5]["params"] = {"TILE": 32, "PAD": 1}   # shared_bank_conflicts
        rows[3]["params"] = {"TILE": 8}              # tiled_guarded
    run, messages = benchmark.load_upload("x.json", _format_2(tile_32_pad_1))
    assert run is not None and messages == [], messages
    df, _ = run
    assert df["params"].iloc[5] == {"TILE": 32, "PAD": 1} and df["params"].iloc[0] == {}
    names = set(charts.labels(df))
    assert {"shared_bank_conflicts T32 pad1", "tiled_guarded T8", "tiled_guarded T16", "naive_x_rows 16x16"} <= names


@pytest.mark.parametrize("params, message", [
    ({"TILE": 12}, "results[3].params.TILE: expected 8, 16 or 32 for tiled_guarded, got 12"),
    ({"TILE": 16, "PAD": 1}, "results[3].params: tiled_guarded has no parameter PAD (it takes TILE)"),
])
def test_a_parameter_its_kernel_does_not_take_leaves_the_row_out(params, message):
    run, messages = benchmark.load_upload("x.json", _format_2(lambda rows: rows[3].__setitem__("params", params)))
    assert run is not None and message in " ".join(messages), messages
    df, _ = run
    assert len(df) == len(_doc()["results"]) - 1


def test_params_and_an_older_field_that_disagree_leave_the_row_out():
    run, messages = benchmark.load_upload("x.json", _with(_set_row(3, "params", {"TILE": 32})))   # tile is 16
    assert run is not None and "results[3].params.TILE: 32, but its tile field says 16" in " ".join(messages)
    run, messages = benchmark.load_upload("x.json", _with(_set_row(3, "params", {"TILE": 16})))   # agrees
    assert run is not None and messages == []


@pytest.mark.parametrize("params", [{"TILE": True}, {"TILE": 2**31}, {"TILE": -1}, {"TILE": 16.0}, {"TILE": [16]},
                                    {f"P{i}": 1 for i in range(schema.MAX_PARAMS + 1)}, {"T" * 41: 1}, {"": 1},
                                    {"TILE\n": 1}, []])
def test_params_that_are_not_names_to_whole_numbers_are_refused(params):
    run, messages = benchmark.load_upload("x.json", _format_2(lambda rows: rows[3].__setitem__("params", params)))
    assert run is None and any("results[3].params: expected an object of compile-time parameters" in m
                               for m in messages), messages


def test_markdown_in_upload_text_is_escaped():
    shown = schema.plain(EVIL)
    assert "![" not in shown and "](" not in shown
    # a Markdown renderer shows the original text (with an invisible word joiner that stops autolinks)
    assert re.sub(r"\\(.)", r"\1", shown).replace(schema.WORD_JOINER, "") == EVIL
    assert "://" not in re.sub(r"\\(.)", r"\1", shown)


def test_chart_texts_from_uploads_are_not_html():
    prov = {**_doc()["provenance"], "gpu": "<b>GPU</b>"}
    assert "&lt;b&gt;GPU&lt;/b&gt;" in charts.notes([prov]) and "<b>" not in charts.notes([prov])
    df = pd.concat([pd.DataFrame(_doc()["results"]).assign(gpu="<i>A</i>"),
                    pd.DataFrame(_doc()["results"]).assign(gpu="B")], ignore_index=True)
    names = [t.name for t in charts.gflops_vs_size(df).data]
    assert "naive_x_rows 16x16 · &lt;i&gt;A&lt;/i&gt;" in names and not any("<i>" in n for n in names)


# ------------------------------------------------------------------ derived figures: linear, unchanged

def _derive_pairwise(df: pd.DataFrame, peaks: dict) -> pd.DataFrame:
    """benchmark.derive as it was (one filter of the whole frame per row): the reference."""
    df = df.copy()
    if "gflops" not in df:
        return df
    df["pct_fp32_peak"] = 100 * df["gflops"] / peaks["fp32_gflops"]
    ref = {("fp32",): "cublas_sgemm", ("tf32",): "cublas_sgemm_tf32"}
    if "gpu" not in df:
        df["gpu"] = None
    pct = []
    for _, r in df.iterrows():
        base = df[(df["kernel"] == ref[(r["precision"],)]) & (df["m"] == r["m"]) & (df["n"] == r["n"])
                  & (df["k"] == r["k"]) & ((df["gpu"] == r["gpu"]) | df["gpu"].isna())]
        pct.append(100 * r["gflops"] / base["gflops"].iloc[0] if len(base) and pd.notna(r.get("gflops")) else None)
    df["pct_cublas"] = pct
    return df


def _frames():
    rows = pd.DataFrame(_doc()["results"])
    peaks = _doc()["provenance"]["peaks"]
    two = pd.concat([rows.assign(gpu="A"), rows.assign(gpu="B").sample(frac=1, random_state=1)], ignore_index=True)
    two.loc[two.sample(frac=0.2, random_state=2).index, "gflops"] = float("nan")
    mixed = pd.concat([rows.assign(gpu=None), rows.assign(gpu="B"),
                       rows[rows["kernel"].str.startswith("cublas")].assign(gpu="C", gflops=lambda d: d["gflops"] * 2)],
                      ignore_index=True)
    no_cublas = rows[~rows["kernel"].str.startswith("cublas")].assign(gpu="A")
    return {"recorded": (rows, peaks), "two-gpus-shuffled-with-gaps": (two, peaks), "unnamed-gpu": (mixed, peaks),
            "no-cublas": (no_cublas, peaks), "no-gpu-column": (rows, peaks), "no-gflops": (rows.drop(columns="gflops"), peaks)}


@pytest.mark.parametrize("name", list(_frames()))
def test_derive_matches_the_pairwise_version(name):
    df, peaks = _frames()[name]
    new, old = benchmark.derive(df, peaks), _derive_pairwise(df, peaks)
    assert list(new.columns) == list(old.columns)
    if "pct_cublas" in old:
        assert pd.to_numeric(old["pct_cublas"]).isna().equals(new["pct_cublas"].isna())
        pd.testing.assert_series_equal(new["pct_cublas"].astype(float), pd.to_numeric(old["pct_cublas"]).astype(float))
    pd.testing.assert_frame_equal(new.drop(columns="pct_cublas", errors="ignore"), old.drop(columns="pct_cublas", errors="ignore"))


def test_cublas_timed_twice_at_a_size_is_taken_at_its_fastest_as_the_size_table_takes_it():
    """The sweeps time cuBLAS twice at each size: this page had divided by the first timing, the size
    table (selection) by the last and the Ladder by the fastest, up to 1.5% apart."""
    from engine.bench import tuning
    rows, peaks = _frames()["recorded"]
    sgemm = rows[rows["kernel"] == "cublas_sgemm"]
    slower = sgemm.assign(gflops=sgemm["gflops"] * 0.9)
    once = benchmark.derive(rows, peaks)["pct_cublas"].to_numpy()
    for twice in (pd.concat([slower, rows], ignore_index=True), pd.concat([rows, slower], ignore_index=True)):
        derived = benchmark.derive(twice, peaks)
        np.testing.assert_array_equal(derived["pct_cublas"].to_numpy()[len(slower):] if twice.iloc[0].equals(slower.iloc[0])
                                      else derived["pct_cublas"].to_numpy()[:len(rows)], once)
        pct = derived.set_index("kernel")["pct_cublas"]
        assert pct["cublas_sgemm"].max() == pytest.approx(100) and pct["cublas_sgemm"].min() == pytest.approx(90)
        kept = tuning.combine([(twice.assign(params=[{}] * len(twice)), {"date": "2026-01-01"})])
        assert kept.loc[kept["kernel"] == "cublas_sgemm", "gflops"].tolist() == sgemm["gflops"].tolist()


def _column_passes(derive, df: pd.DataFrame, peaks: dict) -> int:
    """How many times `derive` reads a column of a frame or compares a whole column: each is a pass over
    the rows."""
    calls = 0

    def counting(original):
        def wrapper(*args, **kwargs):
            nonlocal calls
            calls += 1
            return original(*args, **kwargs)
        return wrapper

    with pytest.MonkeyPatch.context() as mp:
        for cls, name in ((pd.DataFrame, "__getitem__"), (pd.Series, "__eq__")):
            mp.setattr(cls, name, counting(getattr(cls, name)))
        derive(df, peaks)
    return calls


def test_derive_passes_over_the_rows_a_fixed_number_of_times():
    """derive once filtered the whole frame for each row (20,000 rows took 23.5 s): its passes over the
    columns must not grow with the rows. The pairwise reference's do, so the count tells the two apart
    without a clock; tests/benchmarks/bench_upload.py prints the time."""
    rows = pd.DataFrame(_doc()["results"])
    peaks = _doc()["provenance"]["peaks"]
    big = pd.concat([rows.assign(m=rows["m"] + i, n=rows["n"] + i, k=rows["k"] + i) for i in range(10)], ignore_index=True)
    assert _column_passes(benchmark.derive, big, peaks) == _column_passes(benchmark.derive, rows, peaks)
    assert _column_passes(_derive_pairwise, big, peaks) > 5 * _column_passes(_derive_pairwise, rows, peaks)
    assert benchmark.derive(big, peaks)["pct_cublas"].notna().sum() == 10 * benchmark.derive(rows, peaks)["pct_cublas"].notna().sum() > 0


# ------------------------------------------------------------------ the page, with a hostile upload

def _page() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/benchmarks.py")
    at.run()
    return at


def _texts(at) -> str:
    return "\n".join(str(e.value) for e in list(at.markdown) + list(at.caption) + list(at.error) + list(at.warning)
                     + list(at.info))


@pytest.mark.parametrize("case", HOSTILE)
def test_page_shows_a_message_for_a_hostile_upload_and_still_charts_the_recorded_run(case):
    data, field, kept = HOSTILE[case]
    at = _page()
    at.file_uploader[0].set_value(("hostile.json", data, "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [str(m.value) for m in (at.warning if kept else at.error)]
    assert any("hostile" in m and re.sub(r"\\(.)", r"\1", field) in re.sub(r"\\(.)", r"\1", m) for m in shown), shown
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert "Throughput against size" in titles and "Roofline" in titles
    assert "Traceback" not in _texts(at) and 'File "/' not in _texts(at)


def test_page_shows_markdown_in_an_uploaded_gpu_name_and_file_name_as_text():
    at = _page()
    recorded = next(m for m in at.multiselect if m.label.startswith("Recorded"))
    recorded.set_value([]).run()
    at.file_uploader[0].set_value([(f"{EVIL}.json", _with(_set_prov("gpu", EVIL)), "application/json"),
                                   ("broken ![y](http://evil/y.png).json", b"{", "application/json")]).run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert "evil" in text and "Recorded on:" in text
    assert not re.search(r"(?<!\\)!(?<!\\)\[[^\]]*(?<!\\)\]\(", text), text   # no Markdown image left to render
    assert at.get("plotly_chart"), "the upload itself is charted"


# ------------------------------------------------------------------ server settings

def test_server_settings_suit_a_shared_machine():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"   # no tracebacks (server paths) in remote browsers
    assert config["browser"]["gatherUsageStats"] is False
    # The browser refuses what is over maxUploadSize megabytes of 1,000,000 bytes (Streamlit's FileUploader
    # off Windows); the engine refuses from the same byte on, so no file passes one and fails the other.
    assert config["server"]["maxUploadSize"] == schema.MAX_MB and schema.MAX_BYTES == schema.MAX_MB * 1_000_000
    assert config["server"]["address"] == "127.0.0.1"
    # and Streamlit, started here as `streamlit run app.py` is, reads them so
    code = ("from streamlit import config; print(*(config.get_option(o) for o in ('client.showErrorDetails', "
            "'server.maxUploadSize', 'server.address', 'browser.gatherUsageStats')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["none", str(schema.MAX_MB), "127.0.0.1", "False"]
    readme = (ROOT / "README.md").read_text()
    assert "streamlit run app.py --server.address 0.0.0.0" in readme and "8501" in readme


def test_the_engine_takes_exactly_what_the_browser_sends():
    """16,000,000 bytes is the most the browser sends (maxUploadSize = 16, in megabytes of 10**6 bytes):
    the engine read up to 16 MiB, so a file the page could never receive was one the CLI took."""
    assert schema.read(_bytes(_doc()).ljust(16_000_000)).prov   # padded with blanks: still JSON
    # a byte over it is said in bytes: "the file is 16.0 MB; the limit is 16 MB" read as no excess
    with pytest.raises(schema.BadDocument, match="the file is 16,000,001 bytes; the limit is 16 MB"):
        schema.read(_bytes(_doc()).ljust(16_000_001))
    page = (ROOT / "pages" / "benchmarks.py").read_text()
    assert "max_upload_size=schema.MAX_MB" in page


def test_a_20000_row_export_fits_under_the_upload_limit():
    rows = (schema.read(RECORDED.read_bytes()).rows * 300)[:20_000]   # as exported today: with params
    assert len(json.dumps(schema.to_document(rows, _doc()["provenance"]), indent=1)) < schema.MAX_BYTES


# ------------------------------------------------------------------ the command line

@pytest.mark.parametrize("case", ["missing", "not-json", "invalid", "huge-integer"])
def test_bench_from_a_bad_file_is_one_line_on_stderr(case, tmp_path):
    source = tmp_path / "results.json"
    if case == "not-json":
        source.write_text("<html>not an export</html>")
    elif case == "invalid":
        source.write_bytes(HOSTILE["gflops-string"][0])
    elif case == "huge-integer":
        source.write_bytes(HOSTILE["huge-integer"][0])
    out = subprocess.run([sys.executable, "-m", "engine", "bench", "--from", str(source), "--out", str(tmp_path / "o"),
                          "--formats", "csv"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1, out.stderr
    assert str(source) in out.stderr
    if case == "invalid":
        assert 'results[3].gflops: expected a number, got "fast"' in out.stderr
    if case == "huge-integer":
        assert out.returncode == 2 and "5,000 digits" in out.stderr


def test_bench_from_an_export_with_unknown_rows_writes_the_rest_and_says_so(tmp_path, capsys):
    from engine.cli import main
    source = tmp_path / "newer.json"
    source.write_bytes(HOSTILE["precision-fp64"][0])
    assert main(["bench", "--from", str(source), "--out", str(tmp_path / "out"), "--formats", "json"]) == 0
    err = capsys.readouterr().err
    total = len(_doc()["results"])
    assert err.startswith(f"warning: {source}: 1 of {total} rows left out: results[3].precision") and err.count("\n") == 1
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(written["results"]) == total - 1 and written["provenance"] == _doc()["provenance"]


def test_an_upload_with_nothing_timed_charts_without_an_error():
    """Only failed rows (here one point a kernel refused): empty charts, not a KeyError."""
    doc = _doc()
    keep = ("kernel", "title", "precision", "m", "n", "k", "block")
    doc["results"] = [{k: doc["results"][0][k] for k in keep if k in doc["results"][0]}
                      | {"status": "error", "error": "refused"}]
    run, problems = benchmark.load_upload("failed.json", json.dumps(doc).encode())
    assert run is not None, problems
    df, prov = run
    figs = charts.all_charts(benchmark.derive(df, prov["peaks"]), prov["peaks"])
    assert set(figs) >= {"gflops_vs_size", "percent_of_cublas", "roofline"}


def test_nothing_timed_with_null_timings_charts_and_exports_without_an_error(tmp_path):
    """The same with gflops (and the other timings) null rather than absent, as measure() writes an
    untimed row: a column of None, and derive's % of cuBLAS raised TypeError, in an upload and in
    `bench --from` alike."""
    from engine.cli import main
    doc = _doc()
    row = dict(doc["results"][0], status="error", error="launch failed")
    row.update({k: None for k in ("gflops", "median_ms", "min_ms", "max_ms", "spread", "bandwidth_gbs")})
    doc["results"] = [row]
    run, problems = benchmark.load_upload("failed.json", json.dumps(doc).encode())
    assert run is not None, problems
    df, prov = run
    assert df["pct_cublas"].isna().all()
    assert set(charts.all_charts(df, prov["peaks"])) >= {"gflops_vs_size", "roofline"}
    source = tmp_path / "failed.json"
    source.write_text(json.dumps(doc))
    assert main(["bench", "--from", str(source), "--out", str(tmp_path / "out"), "--formats", "json"]) == 0
    assert json.loads((tmp_path / "out" / "results.json").read_text())["results"][0]["gflops"] is None


def test_legend_entries_of_long_named_uploads_fit_the_figure_and_stay_apart():
    """An upload's long GPU name and its run's ("valid-renamed.json (uploaded) #2") pushed legend
    entries past the figure's right edge at 1280 px, where Plotly clips them: two uploads of one file
    could not be told apart."""
    from engine.plots import style
    doc = _doc()
    doc["provenance"]["gpu"] = "Other H200 ![img](http://evil/x.png) <b>bold</b> " + "x" * 30
    (up, prov), _ = benchmark.load_upload("valid-renamed.json", _bytes(doc))
    (rec, _), _ = benchmark.load_upload("recorded.json", _bytes(_doc()))
    df = pd.concat([rec.assign(run="h200-2026-11-21.json"), up.assign(run="valid-renamed.json (uploaded)"),
                    up.assign(run="valid-renamed.json (uploaded) #2")], ignore_index=True)
    df = benchmark.derive(df, prov["peaks"])
    font = style.SCREEN.chart
    room = 0.98 * (style.SCREEN.narrowest - 110)   # the plot at its narrowest, as charts._legend_grid counts it
    for name, fig in charts.all_charts(df, prov["peaks"], font=font).items():
        entries = [t for t in fig.data if t.showlegend is not False and t.name]
        names = [t.name for t in entries]
        assert len(set(names)) == len(names), (name, names)
        legend_font = fig.layout.legend.font.size
        for n in names:
            assert 24 + 0.5 * legend_font * len(html.unescape(n)) + 16 <= room, (name, n, legend_font)
        assert any("#2" in n for n in names), (name, names)


def test_two_runs_legend_each_kernel_once_and_key_the_runs_apart():
    """Shown beside an H100 run, an H200 run doubled every legend: one entry per kernel and GPU, each
    naming the GPU, 40 entries in a column that made each chart about 2,000 px tall. Now each kernel
    has one entry (a click hides it in both runs) and a key says which line style is which GPU."""
    (h200, prov), _ = benchmark.load_upload("h200.json", _bytes(_doc()))
    one = benchmark.derive(h200.assign(gpu="NVIDIA H200"), prov["peaks"])
    both = benchmark.derive(pd.concat([h200.assign(gpu="NVIDIA H200", run="a.json"),
                                       h200.assign(gpu="NVIDIA H100 80GB HBM3", run="b.json")], ignore_index=True), prov["peaks"])
    alone, paired = charts.all_charts(one, prov["peaks"]), charts.all_charts(both, prov["peaks"])
    for name in ("gflops_vs_size", "percent_of_cublas", "roofline"):
        entries = [t for t in paired[name].data if t.showlegend is not False and t.name]
        kernels = [t.name for t in entries if t.legend != charts.KEY]
        assert kernels == [t.name for t in alone[name].data if t.showlegend is not False and t.name], name
        key = [t for t in entries if t.legend == charts.KEY]
        assert [t.name for t in key] == ["H200", "H100 80GB HBM3"], name
        styles = {t.name: t.line.dash if name != "roofline" else t.marker.symbol for t in key}
        drawn = {t.name.rsplit(" · ", 1)[1]: t.line.dash if name != "roofline" else t.marker.symbol
                 for t in paired[name].data if t.showlegend is False and (t.name or "").rsplit(" · ", 1)[0] in kernels}
        assert styles == drawn and len(set(styles.values())) == 2, (name, styles, drawn)
        # each curve hides with its kernel's entry, and hovers with its GPU named
        curves = [t for t in paired[name].data if t.showlegend is False and (t.name or "").rsplit(" · ", 1)[0] in kernels]
        assert len(curves) >= 2 * len(kernels) and all(t.legendgroup == t.name.rsplit(" · ", 1)[0] for t in curves), name
        assert all(t.name in t.hovertemplate for t in curves), name
        # the key's rows add to the chart's height, not a second set of the kernels'
        assert paired[name].layout.height <= alone[name].layout.height + 60, name
        assert paired[name].layout.legend2.itemclick is False, name


def test_legends_of_two_gpus_keep_the_model_that_tells_them_apart():
    """Cut in the middle, "NVIDIA H100 80GB HBM3" was "NVIDIA H1… 80GB HBM3" in the legends: the
    model, the one word that tells an H100's lines from an H200's, was what the cut gave up."""
    (h200, prov), _ = benchmark.load_upload("h200.json", _bytes(_doc()))
    (h100, _), _ = benchmark.load_upload("h100.json", _with(_set_prov("gpu", "NVIDIA H100 80GB HBM3")))
    df = benchmark.derive(pd.concat([h200.assign(gpu="NVIDIA H200"), h100.assign(gpu="NVIDIA H100 80GB HBM3")],
                                    ignore_index=True), prov["peaks"])
    for name, fig in charts.all_charts(df, prov["peaks"]).items():
        # the runs' key where the kernels are charted; the telemetry's entries name theirs
        gpus = {t.name for t in fig.data if t.legend == charts.KEY} or {
            t.name.rsplit(" · ", 1)[-1] for t in fig.data if t.showlegend is not False and t.name and " · " in t.name}
        assert gpus == {"H200", "H100 80GB HBM3"}, (name, gpus)
    assert charts.short_gpu("NVIDIA GeForce RTX 4090 Laptop GPU") == "GeForce RTX 4090 La…"
