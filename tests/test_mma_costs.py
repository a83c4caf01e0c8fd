"""What mma_pipelined's barrier, copies and stores of C cost it (tests/benchmarks/mma_costs.py, run on the
GPU; its runs shipped in engine/bench/recorded/costs/): the variants the script times are the source
with exactly those lines left out, and build; the table, the story and the chart the Tensor cores page
shows are the recorded file's numbers; a damaged file is a one-line warning on the page."""
import json
import shutil
from pathlib import Path

import pytest

from engine.bench import benchmark, speeds
from engine.errors import EngineError
from engine.kernels import build, registry
from engine.plots import tensor_figures
from tests.benchmarks import mma_costs, tensor_record
from tests.test_pages import open_page

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (ROOT / "cuda" / "mma_pipelined.cu").read_text()


def _removed(a: str, b: str) -> list[str]:
    """Lines of a not in b (b is a with lines taken out and, for the stores, one line put in)."""
    return [line for line in a.splitlines() if line not in b.splitlines()]


def test_each_variant_leaves_out_what_it_is_named_for_and_nothing_else():
    v = {name: text for name, (_, text) in mma_costs.variants(SOURCE).items()}
    assert v["as written"] == SOURCE
    assert _removed(SOURCE, v["no barrier"]) == ["                SYNC();"]   # the k-loop's; the one before it stays
    assert v["no barrier"].count("SYNC();") == SOURCE.count("SYNC();") - 1
    assert _removed(SOURCE, v["no copies"]) == [mma_costs.COPIES.rstrip("\n")]
    assert "copy_tiles<kCopies>(As, Bs, A, B, M, N, K, row0, col0, s, s)" in v["no copies"]   # the ring's first fill stays
    added = [line for line in v["no stores"].splitlines() if line not in SOURCE.splitlines()]
    assert _removed(SOURCE, v["no stores"]) == [] and len(added) == 1 and "if (M > 0) return;" in added[0]
    none = v["none of the three"]
    assert set(_removed(SOURCE, none)) == {"                SYNC();", mma_costs.COPIES.rstrip("\n")}
    assert "if (M > 0) return;" in none


def test_the_script_stops_where_the_source_no_longer_has_a_line_it_leaves_out():
    with pytest.raises(SystemExit, match="no longer has this line once"):
        mma_costs.variants(SOURCE.replace(mma_costs.COPIES, ""))


def test_every_variant_builds_at_the_tiles_it_is_timed_with(tmp_path):
    if build.nvcc() is None:
        pytest.skip("no nvcc")
    for name, (_, text) in mma_costs.variants(SOURCE).items():
        f = tmp_path / f"mma_pipelined_{name.replace(' ', '_')}.cu"
        f.write_text(text)
        assert build.build_cubin(str(f), mma_costs.BEST, traced=False).stat().st_size > 0


def _best(sweep: str) -> dict:
    return tensor_record.winner(benchmark.TUNING / sweep, "mma_pipelined")


def test_the_tiles_timed_are_the_sweeps_best_on_both_gpus():
    """The tiles: the tile sweeps' best (made before COPY_AT was a choice); where the copies go: the
    COPY_AT sweeps' best, at those tiles, on both GPUs and at both sizes."""
    tiles = {k: v for k, v in mma_costs.BEST.items() if k != "COPY_AT"}
    for gpu in ("h100-2026-11-26", "h100-2026-11-27", "h200-2026-11-27"):
        assert _best(f"{gpu}-tensor-mma-4096.json") == tiles, gpu
    for gpu in ("h100", "h200"):
        for n in (4096, 8192):
            best = _best(f"{gpu}-2026-11-27-mma-pipelined-copy-at-{n}.json")
            assert best["COPY_AT"] == mma_costs.BEST["COPY_AT"] == registry.get("mma_pipelined").default_params()["COPY_AT"]
    assert registry.get("mma_pipelined").takes(mma_costs.BEST) == mma_costs.BEST


def _run() -> dict:
    return json.loads(benchmark.costs_run().read_text())


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_a_run_on_each_gpu_ships_and_reads(gpu):
    """Both GPUs' runs read as tables, each with its own GPU named; the page shows the newest."""
    costs = speeds.costs_from_file(benchmark.COSTS / f"{gpu}-copy-at-2026-11-27.json")
    assert gpu.upper() in costs.gpu and set(costs.table["size"]) == {4096, 8192}
    assert benchmark.costs_run().name == "h200-copy-at-2026-11-27.json"   # the same day: by name


def test_the_table_is_the_runs_own_numbers():
    run = _run()
    costs = speeds.mma_costs(run)
    t = costs.table
    assert list(t["variant"]) == list(speeds.COST_VARIANTS) * len(run["cublas_fp16_tflops"])
    for r in run["rows"]:
        row = t[(t["size"] == r["size"]) & (t["variant"] == r["variant"])].iloc[0]
        ref = max(run["cublas_fp16_tflops"][str(r["size"])].values())
        written = next(w["tflops"] for w in run["rows"] if w["size"] == r["size"] and w["variant"] == "as written")
        assert row["tflops"] == r["tflops"] and row["pct"] == pytest.approx(100 * r["tflops"] / ref)
        assert row["gain"] == pytest.approx(r["tflops"] / written - 1)
        # Each figure is its time's: 2 n^3 FLOP over the median of its rounds.
        assert r["tflops"] == pytest.approx(2 * r["size"] ** 3 / r["ms"] / 1e9) and r["ms"] in r["rounds_ms"]
    # What was timed as written and as mma_tma came out right; the variants are allowed not to.
    assert all(r["correct"] for r in run["rows"] if r["variant"] in ("as written", "mma_tma"))
    # What ran: the source's defaults where the run named no value (its COPY_AT, the source's default
    # then, was named only by later runs).
    ran = {**registry.get("mma_pipelined").default_params(), **costs.params}
    assert costs.gpu == run["provenance"]["gpu"] and ran == {**ran, **mma_costs.BEST}


def test_the_story_says_the_runs_figures_at_the_size_asked():
    costs = speeds.mma_costs(_run())
    story = speeds.costs_story(costs, 4096)
    t = costs.table[costs.table["size"] == 4096].set_index("variant")
    for variant in ("no barrier", "no stores", "no copies"):
        assert f"{100 * t.loc[variant, 'gain']:+.0f}%" in story
    for variant in ("as written", "none of the three", "mma_tma"):
        assert f"{t.loc[variant, 'tflops']:,.0f}" in story and f"({t.loc[variant, 'pct']:.0f}%" in story
    assert f"At 4,096³ on the {costs.gpu}" in story and "128 × 256 tiles, a ring of 4" in story


def test_the_chart_draws_each_size_as_a_share_of_cublas_up_to_its_line():
    costs = speeds.mma_costs(_run())
    fig = tensor_figures.costs_figure(costs, "a note").to_plotly_json()
    bars = [d for d in fig["data"] if d["type"] == "bar"]
    assert [b["name"] for b in bars] == [f"{n:,}³" for n in sorted(set(costs.table["size"]))]
    for b, (_, t) in zip(bars, costs.table.groupby("size")):
        assert list(b["x"]) == list(speeds.COST_VARIANTS) and list(b["y"]) == list(t["pct"])
        assert list(b["text"]) == [f"{v:,.0f}<br>{p:.0f}%" for v, p in zip(t["tflops"], t["pct"])]
    assert any(s.get("y0") == 100 for s in fig["layout"]["shapes"])   # cuBLAS FP16's 100%
    assert fig["layout"]["yaxis"]["range"][1] > 100 > max(max(b["y"]) for b in bars)


@pytest.mark.parametrize("damage", ["not json", '{"format": "something else"}',
                                    '{"format": "cuda-matmul-explorer mma costs 1", "rows": []}'])
def test_a_damaged_run_is_one_line(tmp_path, damage):
    bad = tmp_path / "h200-2026-11-27.json"
    bad.write_text(damage)
    with pytest.raises(EngineError) as exc:
        speeds.costs_from_file(bad)
    assert "\n" not in str(exc.value) and bad.name in str(exc.value)


@pytest.mark.parametrize("damage", ["a row twice", "cuBLAS at 0", "no rows key"])
def test_a_run_damaged_in_its_numbers_is_one_line_too(tmp_path, damage):
    """A row twice made the story format a column, not a number (TypeError, outside the page's except);
    cuBLAS at 0 divided by zero."""
    run = _run()
    if damage == "a row twice":
        run["rows"].append(dict(run["rows"][0]))
    elif damage == "cuBLAS at 0":
        run["cublas_fp16_tflops"]["4096"] = {"before": 0.0, "after": 0.0}
    else:
        del run["rows"]
    bad = tmp_path / "h200-2026-11-27.json"
    bad.write_text(json.dumps(run))
    with pytest.raises(EngineError) as exc:
        speeds.costs_from_file(bad)
    assert "\n" not in str(exc.value) and bad.name in str(exc.value)


def test_the_page_shows_the_story_and_the_chart(cpu_mode):
    at = open_page("pages/tensor_cores.py")
    costs = speeds.mma_costs(_run())
    texts = " ".join(str(e.value) for e in list(at.markdown) + list(at.caption))
    assert speeds.costs_story(costs, 4096) in texts
    assert " ".join(registry.get("mma_pipelined").notes) in texts   # the instruction's ceiling has a place
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in at.get("plotly_chart")]
    assert any("mma_pipelined with three costs taken out" in t for t in titles)


def test_the_page_says_a_damaged_run_in_one_line_and_goes_on(cpu_mode, tmp_path, monkeypatch):
    costs = tmp_path / "costs"
    shutil.copytree(benchmark.COSTS, costs)
    (costs / "h200-2099-01-01.json").write_text("{ damaged")   # the newest: the one the page reads
    monkeypatch.setattr(benchmark, "COSTS", costs)
    at = open_page("pages/tensor_cores.py")
    warning = next(w.value for w in at.warning if "h200-2099-01-01.json" in w.value)
    assert "could not be read" in warning and "\n" not in warning
    assert "6. Sizes that are not multiples of 8: cuBLAS's cliff, and rungs without one" in [s.value for s in at.subheader]


def test_the_readme_table_is_the_runs_figures():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| 4096³ / 8192³ | H100 | H200 |"):]
    table = table[:table.index("\n\n")]
    runs = {g: speeds.mma_costs(json.loads((benchmark.COSTS / f"{g}-copy-at-2026-11-27.json").read_text())).table
            for g in ("h100", "h200")}
    names = {"as written": "as written", "no barrier": "no barrier in the k-loop", "no stores": "no stores of C",
             "no copies": "no copies in the k-loop", "none of the three": "none of the three", "mma_tma": "`mma_tma`"}
    for variant, name in names.items():
        line = next(row.strip() for row in table.splitlines() if row.strip().startswith(f"| {name} |"))
        cells = []
        for g in ("h100", "h200"):
            t = runs[g][runs[g]["variant"] == variant].set_index("size")
            # A variant's gain over as written; the others' share of cuBLAS FP16.
            share = {n: f"{100 * t.loc[n, 'gain']:+.1f}%" if variant.startswith("no ") else f"{t.loc[n, 'pct']:.1f}%"
                     for n in (4096, 8192)}
            cells.append(" / ".join(f"{t.loc[n, 'tflops']:.1f} ({share[n]})" for n in (4096, 8192)))
        assert line == f"| {name} | {cells[0]} | {cells[1]} |"
    # The peak run's figure for 64 x 64 warp tiles at 8 warps an SM, which the README sets beside them.
    peak = json.loads((benchmark.RECORDED / "peak" / "h100-2026-11-26.json").read_text())
    tiles = next(r for r in peak["rows"] if r["config"] == "mma_smem 64x64 8 warps/SM")
    cublas = max(peak["cublas_fp16_tflops"]["4096"].values())
    said = " ".join(readme.split())
    assert (f"the ceiling run above measured {tiles['tflops']:.0f} for such warp tiles alone, "
            f"{100 * tiles['tflops'] / cublas:.0f}% of its cuBLAS FP16 ({cublas:.0f}," in said)
