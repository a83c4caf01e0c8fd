"""The size-aware choice (engine/bench/selection.py): read from the recorded size sweeps, used when a
run names none of split_k's parameters, and shown with its reason on the Ladder and Benchmarks pages."""
import json

import pandas as pd
import pytest

from engine.bench import benchmark, selection
from engine.kernels import registry
from tests.test_pages import open_page


def test_every_size_swept_has_its_fastest_fp32_kernel_and_a_reason():
    df = selection.load()
    table = selection.table(df)
    ok = df[df["status"] == "ok"]
    assert len(table) == len(ok[ok["kernel"].isin(selection.FP32_KERNELS)].groupby(["gpu", "m", "n", "k"]))
    for row in table.itertuples():
        m, n, k = map(int, row.size.split("x"))
        here = ok[(ok["gpu"] == row.GPU) & (ok["m"] == m) & (ok["n"] == n) & (ok["k"] == k)]
        fastest = here[here["kernel"].isin(selection.FP32_KERNELS)]["gflops"].max()
        assert row._6 * 1e3 == pytest.approx(fastest)   # TFLOP/s
        assert row.kernel in selection.FP32_KERNELS
    for gpu in selection.gpus(df):
        mine = selection.table(df, gpu).set_index("size")
        assert (mine["GPU"] == gpu).all()
        small = mine.loc["1024x1024x1024"]   # 32 tiles of 128 x 256 for 132 SMs: K split to fill them
        assert small["kernel"] == "split_k" and small["why"].startswith("32 tiles x") and small["SMs"] == 132
        assert mine.loc["4097x4097x4097", "kernel"] == "split_k_padded"
        assert mine.loc["4097x4097x4097", "why"].endswith("rows padded")


def test_a_run_naming_no_split_k_parameter_takes_the_sweeps_choice_for_its_size():
    """Before the table, split_k ran its defaults (128 x 256, SPLITK 4) at every size."""
    from engine.devices import gpu_client
    here = gpu_client.status()   # on a GPU machine: that GPU's own sweep (the H100's and the H200's differ)
    chosen = selection.chosen("split_k", 4097, 4097, 4097, gpu=here.name, sm_count=here.info.get("sm_count"))
    assert chosen != registry.get("split_k").default_params()
    row = benchmark.measure("split_k", 4097, 4097, 4097, benchmark.Settings())   # no GPU: an error row, its params
    assert row["params"] == chosen
    asked = benchmark.measure("split_k", 4097, 4097, 4097, benchmark.Settings(), {"SPLITK": 8})
    assert asked["params"] == {**registry.get("split_k").default_params(), "SPLITK": 8}
    assert selection.chosen("prefetched", 1024, 1024, 1024) == {}   # the others: their defaults


def test_the_nearest_size_swept_decides():
    rows = pd.DataFrame([
        {"gpu": "G", "kernel": "split_k", "status": "ok", "m": 1024, "n": 1024, "k": 1024, "gflops": 2.0,
         "params": {"SPLITK": 4}},
        {"gpu": "G", "kernel": "split_k", "status": "ok", "m": 1024, "n": 1024, "k": 1024, "gflops": 1.0,
         "params": {"SPLITK": 1}},
        {"gpu": "G", "kernel": "split_k", "status": "ok", "m": 8192, "n": 8192, "k": 8192, "gflops": 3.0,
         "params": {"SPLITK": 2}}])
    assert selection.chosen("split_k", 1000, 1000, 1000, rows) == {"SPLITK": 4}
    assert selection.chosen("split_k", 6000, 6000, 6000, rows) == {"SPLITK": 2}


@pytest.mark.usefixtures("cpu_mode")
@pytest.mark.parametrize("page", ["pages/ladder.py", "pages/benchmarks.py"])
def test_the_pages_show_which_configuration_ran_at_which_size_and_why(page):
    at = open_page(page)
    assert any(s.value.endswith("which configuration at which size") or s.value == "Which configuration at which size"
               for s in at.subheader)
    shown = pd.concat([d.value for d in at.dataframe if "why" in d.value.columns])
    assert (shown["kernel"] == "split_k").any() and shown["why"].str.contains("blocks").any()
    assert shown["why"].str.contains("rows padded").any()


def test_every_size_swept_has_its_fastest_tensor_rung_against_cublas_fp16():
    """The tensor sweeps (size_sweep.py --tensor) on both GPUs: at 1024³, 32 tiles of 128 x 256 leave most
    of 132 SMs idle, and the choice is wgmma_stream_k at 128 x 128; at 8192³ (2,048 tiles) it is 256."""
    df = selection.load()
    tensor = selection.table(df, family="tensor")
    ok = df[df["status"] == "ok"]
    assert len(tensor) == len(ok[ok["kernel"].isin(registry.TENSOR_RUNGS)].groupby(["gpu", "m", "n", "k"]))
    assert set(tensor["kernel"]) <= set(registry.TENSOR_RUNGS)
    for row in tensor.itertuples():
        m, n, k = map(int, row.size.split("x"))
        here = ok[(ok["gpu"] == row.GPU) & (ok["m"] == m) & (ok["n"] == n) & (ok["k"] == k)]
        assert row._6 * 1e3 == pytest.approx(here[here["kernel"].isin(registry.TENSOR_RUNGS)]["gflops"].max())
        assert row._7 * 1e3 == pytest.approx(here[here["kernel"] == "cublas_gemm_fp16"]["gflops"].max())
    swept = [g for g in selection.gpus(df) if len(selection.table(df, g, "tensor"))]
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA H200"} <= set(swept)
    for gpu in swept:
        mine = selection.table(df, gpu, "tensor").set_index("size")
        small = mine.loc["1024x1024x1024"]
        assert small["kernel"] == "wgmma_stream_k" and small["why"].startswith("64 tiles 128x128, ")
        assert "BN=128" in small["parameters"] and small["% of cuBLAS"] > 60
        assert selection.chosen("wgmma_stream_k", 1024, 1024, 1024, df, gpu)["BN"] == 128
        assert selection.chosen("wgmma_stream_k", 8192, 8192, 8192, df, gpu)["BN"] == 256
        assert mine.loc["4097x4097x4097", "why"].endswith("; padded")   # rows TMA cannot copy


def test_a_tensor_run_naming_no_stream_k_parameter_takes_the_sweeps_choice():
    from engine.devices import gpu_client
    here = gpu_client.status()   # on a GPU machine: that GPU's own sweep
    chosen = selection.chosen("wgmma_stream_k", 1000, 1000, 1000, gpu=here.name, sm_count=here.info.get("sm_count"))
    assert chosen["BN"] == 128 and chosen != registry.get("wgmma_stream_k").default_params()
    assert benchmark.measure("wgmma_stream_k", 1000, 1000, 1000, benchmark.Settings())["params"] == chosen
    # The other tensor rungs keep their defaults.
    assert selection.chosen("wgmma_epilogue", 1000, 1000, 1000) == {}


@pytest.mark.parametrize("run", ["h100-tensor-sizes-chosen-2026-11-27.json", "h200-tensor-sizes-chosen-2026-11-27.json"])
def test_the_recorded_tensor_runs_timed_the_chosen_configurations(run):
    """The runs recorded after the tensor sweeps: wgmma_stream_k ran, at each size, its GPU's choice."""
    df, prov = benchmark.load_document((benchmark.RECORDED / run).read_bytes())
    sweeps = selection.load()
    rows = df[(df["kernel"] == "wgmma_stream_k") & (df["status"] == "ok")]
    assert len(rows) >= 12
    for r in rows.itertuples():
        assert dict(r.params) == {**registry.get("wgmma_stream_k").default_params(),
                                  **selection.chosen("wgmma_stream_k", r.m, r.n, r.k, sweeps, prov["gpu"])}
    at = df[(df["m"] == 1024) & (df["n"] == 1024) & (df["k"] == 1024) & (df["status"] == "ok")].set_index("kernel")["gflops"]
    assert at["wgmma_stream_k"] > 1.4 * at["wgmma_epilogue"]   # 128 x 128 tiles against 128 x 256 at 1024³


@pytest.mark.usefixtures("cpu_mode")
def test_the_benchmarks_page_shows_the_tensor_choice_and_the_tensor_page_too():
    at = open_page("pages/benchmarks.py")
    next(r for r in at.radio if r.label == "Family").set_value("Tensor cores").run()
    shown = pd.concat([d.value for d in at.dataframe if "why" in d.value.columns])
    assert (shown["kernel"] == "wgmma_stream_k").any() and shown["why"].str.contains("tiles 128x128").any()
    assert any("wgmma\\_stream\\_k\\'s block tiles" in c.value for c in at.caption)   # schema.plain escapes Markdown
    tc = open_page("pages/tensor_cores.py")
    assert any(m.value == "**Which configuration at which size.**" for m in tc.markdown)
    shown = pd.concat([d.value for d in tc.dataframe if "why" in d.value.columns])
    assert shown.loc[shown["size"] == "1024x1024x1024", "kernel"].eq("wgmma_stream_k").all()


@pytest.mark.parametrize("family", ["fp32", "tensor"])
def test_the_reason_fits_beside_the_size_kernel_and_share_at_1280_px(family):
    """The table's four lead columns show at 1280 px with the sidebar open (ui.fitting_table): the tensor
    reasons first written in full sentences ("64 tiles of 128 x 128 on 128 blocks; a partial last wave's
    tiles shared by up to 4") pushed "why" into the expander."""
    from pages.lib import ui
    for gpu in selection.gpus():
        table = selection.table(gpu=gpu, family=family)
        if len(table):
            lead = ("size", "kernel", "% of cuBLAS", "why")
            assert sum(ui.column_px(table, c) for c in lead) <= ui.TABLE_PX, (gpu, table["why"].tolist())


def test_the_gpu_tests_have_the_chosen_stream_k_configurations_to_run():
    """tests/test_gpu.py runs every configuration the sweeps choose; an empty list would run none, silently."""
    from tests.test_gpu import _stream_k_chosen
    chosen = _stream_k_chosen()
    assert len(chosen) >= 4 and {c["BN"] for c in chosen} == {128, 256}


def test_a_size_no_kernel_takes_or_a_gpu_with_fewer_sms_gets_no_choice():
    """Sizes of 0 or below had raised ZeroDivisionError in the distance between sizes; a GPU with fewer
    SMs than a configuration launches blocks for (wgmma_stream_k needs them all resident) is not given it."""
    assert selection.chosen("wgmma_stream_k", 0, 8, 8) == {} and selection.chosen("split_k", -1, 8, 8) == {}
    assert benchmark.measure("wgmma_stream_k", 0, 8, 8, benchmark.Settings())["status"] == "error"
    small = selection.chosen("wgmma_stream_k", 1024, 1024, 1024, sm_count=130)
    assert small and small["SMS"] <= 130
    assert selection.chosen("wgmma_stream_k", 1024, 1024, 1024, sm_count=100) == {}


def test_a_live_run_times_the_chosen_rung_with_the_settings_on_screen_even_at_its_defaults():
    """Left at its defaults on the Tensor cores page, wgmma_stream_k had been timed with the sweeps' choice
    for the size (BN 128 at 1024³), not the BN 256 the settings showed."""
    from pages.lib.speed_runs import own_params
    stream_k, pipelined = (registry.get(k).default_params() for k in ("wgmma_stream_k", "mma_pipelined"))
    assert own_params({"wgmma_stream_k": stream_k}) == {"wgmma_stream_k": stream_k}
    assert own_params({"mma_pipelined": pipelined}) == {}   # at its defaults: timed with the others
    assert own_params({"mma_pipelined": {**pipelined, "BK": 32}}) == {"mma_pipelined": {**pipelined, "BK": 32}}


@pytest.mark.usefixtures("cpu_mode")
def test_a_damaged_sweep_file_is_one_line_on_the_pages_that_show_the_choice(tmp_path, monkeypatch):
    """selection.gpus() had been called unguarded: a sweep file that is not an export took the Tensor
    cores page down below section 5 (its section 6 too)."""
    (tmp_path / "h200-2026-11-27-tensor-sizes.json").write_text('{"format": "not ours"}')
    monkeypatch.setattr(selection, "SELECTION", tmp_path)
    for page in ("pages/tensor_cores.py", "pages/benchmarks.py", "pages/ladder.py"):
        at = open_page(page)
        said = [w.value for w in at.warning if "h200-2026-11-27-tensor-sizes.json" in w.value]
        assert said and all("\n" not in w for w in said), page
    assert selection.chosen("wgmma_stream_k", 1024, 1024, 1024) == {}   # a run takes the defaults, and says so in its row


@pytest.mark.usefixtures("cpu_mode")
def test_the_choice_table_sizes_its_columns_to_their_own_text_in_either_family():
    """Switched from FP32 to the tensor cores, the table had kept the FP32 columns' widths and cut the
    longest reason off at 1280 px ("...; pad"): each lead column now says its own width."""
    import json as js

    from pages.lib import ui
    at = open_page("pages/benchmarks.py")
    for family in ("FP32", "Tensor cores"):
        next(r for r in at.radio if r.label == "Family").set_value(family).run()
        grid = next(d for d in at.dataframe if "why" in d.value.columns)
        widths = {name: c.get("width") for name, c in js.loads(grid.proto.columns).items()}
        for column in ("size", "kernel", "% of cuBLAS", "why"):
            assert widths[column] == round(ui.column_px(grid.value, column)), (family, column)


def test_the_sweeps_are_read_once_for_every_caller():
    """Every benchmark.measure of a kernel chosen per size asks selection.chosen, which reads the sweeps:
    read anew each time (a decorator had slipped onto the helper that reads one file), a size sweep of
    hundreds of points reread all of them before each point."""
    assert selection.load() is selection.load()


@pytest.mark.usefixtures("cpu_mode")
@pytest.mark.parametrize("page, family", [("pages/tensor_cores.py", None), ("pages/ladder.py", None),
                                          ("pages/benchmarks.py", "FP32"), ("pages/benchmarks.py", "Tensor cores")])
def test_the_choice_opens_on_the_gpu_of_the_run_shown_beside_it(page, family):
    """The table had opened on the first GPU by name (the H100's sweeps) under the H200's speed chart."""
    at = open_page(page)
    if family:
        next(r for r in at.radio if r.label == "Family").set_value(family).run()
        shown = benchmark.opening_runs(benchmark.recorded_runs())[0]
    else:
        shown = next(s for s in at.selectbox if s.label == "Recorded run").value
    gpu = json.loads((benchmark.RECORDED / shown).read_text())["provenance"]["gpu"]
    swept = next(s for s in at.selectbox if s.label == "Sizes swept on")
    assert gpu in selection.gpus() and swept.value == gpu, (shown, swept.value)


@pytest.mark.usefixtures("cpu_mode")
@pytest.mark.parametrize("page", ["pages/ladder.py", "pages/tensor_cores.py"])
def test_the_choice_follows_a_run_of_another_gpu_and_keeps_the_users_choice_across_pages(page):
    """Only a page's first view had opened on the run's GPU: a run of the H100 chosen after left the H200's
    choices under its chart. A GPU chosen for the table was lost on leaving the page and coming back (kept
    under one name, looked for under another), and so was the recorded run (never kept)."""
    def swept(at):
        return next(s for s in at.selectbox if s.label == "Sizes swept on")
    at = open_page(page)
    assert swept(at).value == "NVIDIA H200"   # beside the newest run, an H200's
    swept(at).set_value("NVIDIA H100 80GB HBM3").run()   # the user's own choice, beside the same run, stays
    at.switch_page("pages/home.py").run()
    at.switch_page(page).run()
    assert swept(at).value == "NVIDIA H100 80GB HBM3"
    swept(at).set_value("NVIDIA H200").run()
    runs = next(s for s in at.selectbox if s.label == "Recorded run")
    runs.set_value(next(r for r in runs.options if r.startswith("h100"))).run()
    assert swept(at).value == "NVIDIA H100 80GB HBM3"   # a run of another GPU: the table goes with it
    at.switch_page("pages/home.py").run()
    at.switch_page(page).run()
    assert next(s for s in at.selectbox if s.label == "Recorded run").value.startswith("h100")
    assert swept(at).value == "NVIDIA H100 80GB HBM3"


@pytest.mark.usefixtures("cpu_mode")
@pytest.mark.parametrize("page", ["pages/ladder.py", "pages/tensor_cores.py", "pages/benchmarks.py"])
def test_a_shared_link_opens_on_its_own_gpus_sweeps_beside_another_gpus_run(page):
    at = open_page(page, {"swept": "NVIDIA H100 80GB HBM3"})
    assert next(s for s in at.selectbox if s.label == "Sizes swept on").value == "NVIDIA H100 80GB HBM3"
