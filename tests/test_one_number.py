"""One measurement, one number everywhere: every speed the pages quote by default for a kernel's
configuration at a size (the trace pages' claims and the home page's line, the Benchmarks page's
headline and its table of the documents' figures, the Tensor cores page's bars), collected from
what each page produces, must agree at the precision each page prints it with.

Left out on purpose: the tables of one experiment whose figures must all come from one run to be
compared (the divisible-by-8 sizes, the autotuning sweeps' rankings); each names its own files."""
import json
import math

import pytest

from engine.bench import benchmark, claim_checks
from engine.plots import charts
from pages.lib import claim_texts
from tests.test_pages import open_page

pytestmark = pytest.mark.usefixtures("cpu_mode")

# What a page prints: (configuration label, M, N, K) -> (GFLOP/s, the step it is printed in, GFLOP/s).
Quotes = dict[tuple[str, int, int, int], tuple[float, float]]


def _claims() -> Quotes:
    """The figures the Coalescing, Tile phases and Bank conflicts pages' verdicts and the home page's
    line quote (claim_texts, from claim_checks.recorded_quoted), printed to 1 GFLOP/s."""
    q = claim_checks.recorded_quoted()
    texts = " ".join(v for page in claim_texts.CLAIMS for _, v in claim_texts.claims(page, q)) + claim_texts.tagline(q)
    out = {}
    for name, g in q.gflops.items():
        if q.speed(name) in texts:
            out[(q.label(name), q.n, q.n, q.n)] = (g, 1.0)
    return out


def _headline(at) -> Quotes:
    """The Benchmarks page's headline: 'label N GFLOP/s' for each kernel at N = 1,024 of the run shown."""
    name = at.multiselect[0].value[0]
    df, _ = benchmark.load_document((benchmark.RECORDED / name).read_text())
    ok = df[(df["status"] == "ok") & (df["m"] == 1024) & (df["n"] == 1024) & (df["k"] == 1024)]
    ok = ok.assign(label=charts.labels(ok))
    text = next(m.value for m in at.markdown if str(m.value).startswith("At N=1,024"))
    return {(r["label"], 1024, 1024, 1024): (r["gflops"], 1.0) for _, r in ok.iterrows()
            if f"{r['label']} {r['gflops']:,.0f} GFLOP/s" in text}


def _documents_table(at) -> Quotes:
    """The Benchmarks page's table of the documents' figures: 'kernel here' and 'TFLOP/s here' (0.1)."""
    table = next(d.value for d in at.dataframe if "TFLOP/s here" in d.value.columns)
    n = claim_checks.SQUARE
    return {(r["kernel here"], n, n, n): (1000 * r["TFLOP/s here"], 100.0) for _, r in table.iterrows()
            if isinstance(r["kernel here"], str) and not math.isnan(r["TFLOP/s here"])}


def _tensor_bars(at) -> Quotes:
    """The Tensor cores page's speed chart: the baselines' bars, printed in whole TFLOP/s (the rungs
    are labelled by their kernel alone, and no other page quotes them from a run)."""
    fig = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
               if "TFLOP/s at" in json.loads(c.proto.spec)["layout"].get("title", {}).get("text", ""))
    title = fig["layout"]["title"]["text"]
    n = int(title.split("TFLOP/s at ")[1].split("³")[0].replace(",", ""))
    bars = fig["data"][0]
    return {(k, n, n, n): (1000 * y, 1000.0) for k, y in zip(bars["x"], bars["y"]) if k.startswith("cublas")}


def disagreements(sources: dict[str, Quotes]) -> list[str]:
    """Each measurement two pages print differently: at the coarser of their two steps."""
    found = []
    names = list(sources)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for key in sources[a].keys() & sources[b].keys():
                (va, sa), (vb, sb) = sources[a][key], sources[b][key]
                step = max(sa, sb)
                if round(va / step) != round(vb / step):
                    found.append(f"{key}: {a} prints {va:,.1f}, {b} {vb:,.1f} GFLOP/s")
    return found


def test_the_same_measurement_prints_the_same_number_on_every_page():
    bench, tensor = open_page("pages/benchmarks.py"), open_page("pages/tensor_cores.py")
    sources = {"the trace pages' claims": _claims(), "Benchmarks headline": _headline(bench),
               "Benchmarks, the documents' figures": _documents_table(bench), "Tensor cores bars": _tensor_bars(tensor)}
    assert all(sources.values()), {k: len(v) for k, v in sources.items()}
    # The sources overlap: the same kernels at the same sizes, quoted on several pages.
    keys = [set(v) for v in sources.values()]
    assert sum(len(a & b) for i, a in enumerate(keys) for b in keys[i + 1:]) >= 4
    assert disagreements(sources) == []


def test_a_difference_between_two_pages_is_found():
    """The check itself: two pages printing one measurement differently are reported; the same number
    printed at two precisions is not."""
    key = ("cublas_gemm_fp16", 4096, 4096, 4096)
    assert disagreements({"a": {key: (771_600.0, 100.0)}, "b": {key: (756_700.0, 1000.0)}}) == \
        ["('cublas_gemm_fp16', 4096, 4096, 4096): a prints 771,600.0, b 756,700.0 GFLOP/s"]
    assert disagreements({"a": {key: (51_300.0, 100.0)}, "b": {key: (51_400.0, 1000.0)}}) == []
