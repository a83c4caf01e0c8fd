"""The autotuning sweep as recorded: kept apart from the recorded runs, each rung's configurations
ranked, and a registry default that is not its rung's winner shown as such (a made-up sweep whose
numbers the tests know)."""
import pytest

from engine.bench import benchmark, tuning
from engine.plots import charts
from tests.synthetic_runs import (
    DEFAULT_1D,
    DEFAULT_DOUBLE,
    DEFAULT_WARP,
    SLOW_1D,
    WIN_1D,
    N,
    document,
    label,
    row,
    sweep_rows,
)


@pytest.fixture
def ranked():
    df, _ = benchmark.load_document(document(sweep_rows()))
    return df, tuning.ranking(df)


def test_sweeps_live_apart_from_the_recorded_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(benchmark, "RECORDED", tmp_path)
    monkeypatch.setattr(benchmark, "TUNING", tmp_path / "tuning")
    (tmp_path / "tuning").mkdir()
    (tmp_path / "h200.json").write_text(document([row("cublas_sgemm", N, N, N, 50000.0)]))
    (tmp_path / "tuning" / "ladder-h200.json").write_text(document(sweep_rows()))
    assert [p.name for p in benchmark.recorded_runs()] == ["h200.json"]
    assert [p.name for p in benchmark.tuning_runs()] == ["ladder-h200.json"]
    monkeypatch.undo()   # the shipped folders: the sweeps' is inside the recorded runs' and not listed with them
    assert benchmark.TUNING.parent == benchmark.RECORDED
    assert not [p for p in benchmark.recorded_runs() if p.parent == benchmark.TUNING]


def test_each_rung_is_ranked_at_the_sweeps_size_fastest_first(ranked):
    _, r = ranked
    assert list(dict.fromkeys(r["kernel"])) == ["blocktile_1d", "warptile", "double_buffered"]   # ladder order
    one = r[r["kernel"] == "blocktile_1d"]
    assert one["label"].tolist() == [label("blocktile_1d", p) for p in (WIN_1D, DEFAULT_1D, SLOW_1D)]
    assert one["rank"].tolist() == [1, 2, 3] and one["winner"].tolist() == [True, False, False]
    assert one["default"].tolist() == [False, True, False]
    assert one["pct_of_winner"].tolist() == pytest.approx([100, 75, 50])
    assert one["pct_cublas"].tolist() == pytest.approx([24, 18, 12])
    double = r[r["kernel"] == "double_buffered"]
    assert double["rank"].isna().tolist() == [False, True] and double["status"].tolist() == ["ok", "error"]


def test_a_default_that_is_not_the_winner_is_said_and_flagged(ranked):
    _, r = ranked
    found = {v.rung: v for v in tuning.verdicts(r)}
    assert found["warptile"].default_wins
    assert found["warptile"].text() == (f"warptile: the winner of 2 timed configurations is {label('warptile', DEFAULT_WARP)}, "
                                        "30,000 GFLOP/s: the registry's default.")
    assert not found["blocktile_1d"].default_wins
    assert found["blocktile_1d"].text() == (
        f"blocktile_1d: the winner of 3 timed configurations is {label('blocktile_1d', WIN_1D)}, 12,000 GFLOP/s; the "
        f"registry's default, {label('blocktile_1d', DEFAULT_1D)}, is not the winner: it ranks 2 at 9,000 GFLOP/s (75% "
        "of the winner).")
    assert f"the registry's default, {label('double_buffered', DEFAULT_DOUBLE)}, was not timed in this sweep" in \
        found["double_buffered"].text()
    table = tuning.summary(list(found.values())).set_index("rung")
    assert table["default is the winner"].to_dict() == {"blocktile_1d": "NO", "warptile": "yes", "double_buffered": "NO"}


def test_the_figure_stars_each_winner_rings_each_default_and_draws_cublas(ranked):
    df, r = ranked
    fig = charts.tuning_sweep(r, cublas=tuning.cublas_gflops(df))
    stars = [t for t in fig.data if t.name == "the winner" and t.x[0] is not None]
    rings = [t for t in fig.data if t.name == "the registry's default" and t.x[0] is not None]
    assert [list(t.y) for t in stars] == [[12000.0], [30000.0], [31000.0]]
    assert [list(t.y) for t in rings] == [[9000.0], [30000.0]]   # double_buffered's default was not timed
    assert list(fig.layout.xaxis.ticktext) == ["blocktile_1d", "warptile", "double_buffered"]
    assert any(s.y0 == 50000.0 for s in fig.layout.shapes)
    assert "cuBLAS 50,000 GFLOP/s" in [a.text for a in fig.layout.annotations]
    # the strip: fastest on the left of its rung's place
    config = [t for t in fig.data if t.name == "a configuration"][0]
    assert list(config.y) == [12000.0, 9000.0, 6000.0] and list(config.x) == sorted(config.x)



def test_a_sweep_in_two_files_is_one_sweep_each_configuration_at_its_latest_timing():
    first = benchmark.load_document(document(sweep_rows(), date="2026-11-21T23:00:00+00:00"))
    # a second file, later, re-times blocktile_1d's default (now the winner) and adds a configuration
    added = {**DEFAULT_1D, "BK": 16 if DEFAULT_1D["BK"] != 16 else 8}
    again = [row("blocktile_1d", N, N, N, 13000.0, DEFAULT_1D), row("blocktile_1d", N, N, N, 5000.0, added)]
    second = benchmark.load_document(document(again, date="2026-11-21T23:30:00+00:00"))
    for runs in ([first, second], [second, first]):   # by the files' dates, whatever their order
        r = tuning.ranking(tuning.combine(runs))
        one = r[r["kernel"] == "blocktile_1d"]
        assert one["label"].tolist() == [label("blocktile_1d", p) for p in (DEFAULT_1D, WIN_1D, SLOW_1D, added)]
        assert one["gflops"].tolist() == [13000.0, 12000.0, 6000.0, 5000.0]
        assert {v.rung: v.default_wins for v in tuning.verdicts(r)}["blocktile_1d"]


def test_a_sweep_file_whose_every_row_failed_is_combined_not_refused():
    """Such a file has no gflops column (a row that failed has none): combining it raised KeyError
    once each file's configurations were taken at their fastest."""
    import pandas as pd
    failed = pd.DataFrame([{"kernel": "prefetched", "m": 4096, "n": 4096, "k": 4096, "params": {"BM": 64},
                            "status": "failed", "error": "out of memory"}] * 2)
    kept = tuning.combine([(failed, {"date": "2026-01-01"})])
    assert len(kept) == 1 and kept["status"].tolist() == ["failed"] and "_configuration" not in kept
