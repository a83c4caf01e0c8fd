"""An uploaded benchmark export of 20,000 and 40,000 rows, from bytes to the page's charts. Prints its figures.

    python3 tests/benchmarks/bench_upload.py                 # 20,000 and 40,000 rows
    python3 tests/benchmarks/bench_upload.py 5000            # other row counts
    python3 tests/benchmarks/bench_upload.py --no-apptest    # the engine path only

The export is a valid one, made like the recorded run (engine/bench/recorded/): every kernel of it at many
sizes, each size with its cuBLAS rows, so that every row's % of cuBLAS is computed. Measured:
  read:    engine/bench/schema.read, the schema check (JSON parse included);
  upload:  benchmark.load_upload, what the page calls per file (read + derived figures);
  derive:  benchmark.derive on the rows shown (the page derives them again, with the first GPU's peaks);
  charts:  charts.all_charts, headline and table, the engine calls of the page's `show`;
  page:    pages/benchmarks.py run by Streamlit's AppTest with the file uploaded, next to the recorded
           run (its first load, without the upload, is not counted).
An export over the upload limit (16 MB: a 40,000-row export is about 26 MB) is refused by size first;
that refusal is timed too, and the rest of its path is measured from the engine calls below the check.
"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from engine.bench import benchmark, schema  # noqa: E402
from engine.plots import charts  # noqa: E402

RECORDED = benchmark.opening_runs(benchmark.recorded_runs())[0]


def export(rows: int) -> bytes:
    """A valid export of `rows` rows: the recorded run's kernels at 1,024 cubed, repeated at sizes
    256, 264, 272 ... with throughput scaled, as `python -m engine bench` writes it (indented)."""
    doc = json.loads(RECORDED.read_text())
    base = [r for r in doc["results"] if (r["m"], r["n"], r["k"]) == (1024, 1024, 1024)]
    out, i = [], 0
    while len(out) < rows:
        size = 256 + 8 * i
        scale = (size / 1024) ** 3
        out += [{**r, "m": size, "n": size, "k": size, "gflops": r["gflops"] * (0.5 + 0.5 * scale),
                 "median_ms": r["median_ms"] * scale} for r in base]
        i += 1
    return json.dumps(schema.to_document(out[:rows], doc["provenance"]), indent=1).encode()


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def engine_path(data: bytes) -> dict[str, float]:
    """The page's calls for one upload, next to the recorded run, without Streamlit."""
    figures = {}
    if len(data) > schema.MAX_BYTES:
        (run, problems), figures["refused by size"] = timed(benchmark.load_upload, "big.json", data)
        assert run is None and "limit" in problems[1], problems
        # below the size check: the same calls on the parsed file
        limit, schema.MAX_BYTES = schema.MAX_BYTES, len(data)
        try:
            return {**figures, **engine_path(data)}
        finally:
            schema.MAX_BYTES = limit
    _, figures["read"] = timed(schema.read, data)
    (run, problems), figures["upload"] = timed(benchmark.load_upload, "big.json", data)
    assert run is not None and not problems, problems
    recorded, prov = benchmark.load_document(RECORDED.read_bytes())
    both = pd.concat([recorded, run[0]], ignore_index=True)
    df, figures["derive"] = timed(benchmark.derive, both, prov["peaks"])

    def show():   # pages/benchmarks.py show(), less the Streamlit calls
        charts.all_charts(df, prov["peaks"], 14, provs=[prov, run[1]])
        benchmark.headline(df, escape=schema.plain)
        benchmark.table(df)
    _, figures["charts"] = timed(show)
    figures["total"] = figures["upload"] + figures["derive"] + figures["charts"]
    return figures


def page_path(data: bytes) -> float:
    from streamlit.testing.v1 import AppTest  # noqa: PLC0415
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("pages/benchmarks.py")
    at.run()
    at.file_uploader[0].set_value(("big.json", data, "application/json"))
    _, seconds = timed(at.run)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return seconds


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    counts = [int(a) for a in args] or [20_000, 40_000]
    for rows in counts:
        data = export(rows)
        print(f"{rows:,} rows, {len(data) / 2**20:.1f} MB:")
        for name, seconds in engine_path(data).items():
            print(f"  {name:17} {seconds:6.2f} s")
        if "--no-apptest" not in sys.argv and len(data) <= schema.MAX_BYTES:
            print(f"  {'page (AppTest)':17} {page_path(data):6.2f} s   (rerun after the upload)")


if __name__ == "__main__":
    main()
