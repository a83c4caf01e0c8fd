"""The size-aware choice (engine/bench/selection.py): read from the recorded size sweeps, used when a
run names none of split_k's parameters, and shown with its reason on the Ladder and Benchmarks pages."""
import pandas as pd
import pytest

from engine.bench import benchmark, selection
from engine.kernels import registry
from tests.test_pages import open_page


def test_every_size_swept_has_its_fastest_fp32_kernel_and_a_reason():
    df = selection.load()
    table = selection.table(df)
    ok = df[df["status"] == "ok"]
    assert len(table) == len(ok.groupby(["gpu", "m", "n", "k"]))
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
    chosen = selection.chosen("split_k", 4097, 4097, 4097)
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
