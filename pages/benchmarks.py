"""Benchmarks: the kernels timed against cuBLAS, live on the GPU or from runs recorded on one."""
import hashlib
import json
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from engine.bench import benchmark, claim_checks, export, schema, speeds, tuning
from engine.errors import EngineError
from engine.kernels import registry
from engine.plots import charts, style
from pages.lib import cached, choice, claim_texts, query, settings, ui, view_state
from pages.lib.slots import LINE, heavy

ui.setup_page("benchmarks", "Benchmarks", "The same kernels timed on the GPU against cuBLAS: median of many CUDA-event-timed "
              "repetitions after warm-up, each result checked against float64 numpy before it is shown.")

SIZE_PRESETS = {
    "powers of two": "256,512,1024,2048,4096",
    "odd sizes": "255,1000,1500,3000",
    "non-square": "4096x1024x2048,1024x4096x512,2000x3000x700",
}
timeable = registry.showing("benchmarks")
status = ui.device_status()
font = style.sizes(view_state.presenter()).chart


NUMBER_FORMATS = {"GFLOP/s": "%,.0f", "% of cuBLAS": "%.1f", "% of FP32 peak": "%.1f", "median (ms)": "%.4f",
                  "spread (IQR/median)": "%.3f", "repetitions": "%d", "bandwidth (GB/s)": "%,.0f",
                  "FLOP per byte": "%.0f", "relative error": "%.1e", "SM clock (MHz)": "%,.0f", "power (W)": "%.0f",
                  "temperature (°C)": "%.0f"}


def camera(fmt: str, filename: str) -> dict:
    """A chart's camera button: the picture as the page draws it, at its size on the page, twice as
    many pixels (sharp on a slide). A fixed 1200 x 700 had squeezed a chart drawn taller for a long key
    (22 kernels: the page figure 1,280 px high) into a picture with no plot left in it."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": fmt, "width": None, "height": None, "scale": 2, "filename": filename}}


def drawn(df: pd.DataFrame, peaks: dict, provs: list[dict]) -> tuple:
    """What show() draws of the runs: the derived rows, the charts, the headline and the table."""
    df = benchmark.derive(df, peaks)
    return (df, charts.all_charts(df, peaks, font, provs=provs),
            benchmark.headline(df, escape=schema.plain), benchmark.table(df))


def show(df: pd.DataFrame, peaks: dict, key: str, heading: str, provs: list[dict], files: tuple = ()) -> None:
    """Charts (full width: side by side they are too small to read at 1280 px), the table, the exports.
    files: the versions of the files the runs came from, when they all did (every session showing
    them is shown the same, drawn once)."""
    build = lambda: drawn(df, peaks, provs)   # noqa: E731
    df, figs, headline, table = cached.page_part(("benchmarks", files, font), build) if files else build()
    st.markdown(headline)
    with ui.controls("Chart pictures"):
        fmt = st.radio("Camera button in each chart saves", ["png", "svg"], horizontal=True, key=f"fmt-{key}")
    for name, fig in figs.items():
        filename = export.chart_filename(name, [p.get("gpu") for p in provs], [p.get("date") for p in provs])
        st.plotly_chart(fig, width="stretch", config=camera(fmt, filename), key=f"{key}-{name}")
        if name == "percent_of_cublas":   # what every % depends on, under the chart too (and in its picture)
            st.caption("  \n".join(schema.plain(line) for line in charts.measured_lines(provs, df)))
    ui.fitting_table(table, ("GPU", "kernel", "GFLOP/s", "% of cuBLAS"), hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(c, format=f) for c, f in NUMBER_FORMATS.items()})
    ladder = df["kernel"].isin([k.name for k in registry.LADDER]).any()
    st.caption(heading + (" " + charts.LABEL_KEY if ladder else ""))


def take_place(name: str) -> None:
    st.session_state[name] = LINE.number()


def exports(rows: list[dict], prov: dict, key: str, run: str = "") -> None:
    """A run's data and charts as files; run (the run's file name, when several are shown) is in every
    file name: two runs of one GPU and day would otherwise save files of the same names."""
    def named(filename: str) -> str:
        stem, dot, suffix = filename.rpartition(".")
        return f"{stem}-{run}{dot}{suffix}" if run else filename
    a, b, c = st.columns([1, 1.4, 1.8])   # each label whole at 1280 px with the sidebar open
    # on_click="ignore": a download is no rerun, so the chart files made below stay on the page
    a.download_button("Data as CSV", export.results_csv(rows, prov), named(export.file_stem("results", prov) + ".csv"),
                      "text/csv", on_click="ignore", key=f"csv-{key}")
    b.download_button("Data as JSON (with provenance)", json.dumps(schema.to_document(rows, prov), indent=1,
                      default=float), named(export.file_stem("results", prov) + ".json"), "application/json",
                      on_click="ignore", key=f"json-{key}")
    # The click's place in line is taken as it arrives (callbacks run before the page is drawn again):
    # sessions clicking one after another are served in that order, however long each page takes.
    if not c.button("Make PNG, SVG and HTML files of every chart", key=f"img-{key}", on_click=take_place,
                    args=(f"line-{key}",)):
        return
    started = time.perf_counter()
    # Made in the server's line, once for every session exporting this run: the place in line shows
    # above the status while it waits.
    with st.status("Making PNG, SVG and HTML files of every chart: the first picture starts Chrome "
                   "(a few seconds)", expanded=True) as box:
        try:
            files, skipped = cached.chart_files(rows, prov, ("html", "png", "svg"),
                                                lambda chart: box.write(f"{chart}: PNG and SVG"),
                                                st.session_state.pop(f"line-{key}", None))
        except EngineError as exc:
            box.update(label=str(exc), state="error")
            return
        for line in skipped:
            st.warning(line, icon=":material/warning:")
        box.update(label=f"Made {len(files)} files in {time.perf_counter() - started:.1f} s", state="complete")
    cols = st.columns(3)
    for i, (filename, data, mime) in enumerate(sorted(files)):
        # on_click="ignore": downloading one file keeps the others on the page
        cols[i % 3].download_button(named(filename), data, named(filename), mime, on_click="ignore",
                                    key=f"{key}-{filename}")


CLAIM_FORMATS = {"A100 TFLOP/s": "%g", "% of peak": "%g", "peak that % implies": "%,.0f",
                 "A100 peak at its precision": "%g", "% of that peak": "%.1f", "TFLOP/s here": "%,.1f",
                 claim_checks.PCT_HERE: "%.1f", "GFLOP/s": "%,.0f", "median (ms)": "%.3f", claim_checks.TIMES_PRINTED: "%.2f",
                 claim_checks.FP32_PCT_HERE: "%.1f", "% of cuBLAS": "%.1f", claim_checks.PEAK_HERE: "%,.1f", "N": "%d",
                 claim_checks.SPEED: "%,.1f", claim_checks.OF_4096: "%.1f", claim_checks.TORCH_SPEED: "%,.1f", claim_checks.TORCH_SHARE: "%.1f"}


def _cubes(rows: pd.DataFrame, cubes: tuple[int, ...] | None) -> int:
    """How many of the sizes N³ in cubes (None: how many sizes at all) rows hold timed."""
    rows = rows[rows["status"] == "ok"]   # what the claims read
    if cubes is None:
        return len(rows[["m", "n", "k"]].drop_duplicates())
    return len(set(speeds.square_sizes(rows, rows["kernel"].unique())) & set(cubes))


def measuring(df: pd.DataFrame, kernels: list[str], shown: list[str], size: int | None = None,
              cubes: tuple[int, ...] | None = None) -> tuple[pd.DataFrame, str]:
    """The rows a claim is measured from: the runs shown (file names `shown`), and for each of the
    claim's kernels none of them timed, its rows from the shipped run on the same GPU that timed it at
    the most of the claim's sizes N³, `cubes` (None: at the most sizes), since runs are recorded per
    topic (the FP32 run shown by default has no cuBLAS FP16): a claim whose measurement ships shows it
    by default, with the words that name that run. With size (a claim
    that quotes each kernel at size³ on its own, not a comparison within one run), a kernel's rows
    there are its run of record's (claim_checks.run_of_record), the run the other pages quote."""
    parts, names, of_record = [df], [], {}
    for kernel in kernels:
        record = claim_checks.run_of_record(kernel, set(df["gpu"]), size) if size else None
        if record is not None:
            name, rows = record
            parts[0] = parts[0][~((parts[0]["kernel"] == kernel) & (parts[0]["m"] == size) & (parts[0]["n"] == size)
                                  & (parts[0]["k"] == size) & parts[0]["gpu"].isin(set(rows["gpu"])))]
            parts.append(rows)
            if name not in shown:
                of_record.setdefault(name, []).append(kernel)
            continue
        if (df["kernel"] == kernel).any():
            continue
        # Of the runs on the same GPU, the one that timed it at the most of the claim's sizes (the first
        # of those in name order): a run of two sizes that sorts first would leave the others blank.
        runs = [(path, run) for path, run, _ in cached.readable(benchmark.recorded_runs(holding=[kernel]))]
        runs = [(path, run[run["kernel"] == kernel]) for path, run in runs if run["gpu"].iloc[0] in set(df["gpu"])]
        if runs:
            path, rows = max(runs, key=lambda r: _cubes(r[1], cubes))
            parts.append(rows)
            names.append(f"{kernel} from {path.name}, a recorded run not selected above")
    for name, ks in of_record.items():
        listed = (", ".join(ks[:-1]) + " and " if len(ks) > 1 else "") + ks[-1]
        names.append(f"{listed} from {name}, the newest recorded run that timed {'them' if len(ks) > 1 else 'it'} at "
                     f"{size:,}³ (the run every page quotes)")
    return pd.concat(parts, ignore_index=True), "".join(f"  \n{schema.plain(n)}." for n in names)


def measured_claims(df: pd.DataFrame, peaks: dict, shown: list[str]) -> None:
    """The documents' speed figures, checked, beside the same kernels of the run shown (its first GPU)."""
    st.subheader("What the documents claim, measured here")
    config = {c: st.column_config.NumberColumn(c, format=f) for c, f in CLAIM_FORMATS.items()}
    # The claims take each kernel's rows where they are (measuring: from other runs too), labelled by
    # kernel alone: which run a row is from they say in words, not in a label's tail.
    all_rows = df.drop(columns="run", errors="ignore")
    df, added = measuring(all_rows, [p.kernel for p in claim_checks.CUDA_TABLE], shown, claim_checks.SQUARE)
    table = claim_checks.cuda_table(df, peaks)
    st.markdown(f"- *{claim_texts.MEASURED['cuda_table']}*  \n  {claim_checks.cuda_table_check()}  \n  "
                f"{claim_checks.cuda_table_here(table, schema.plain)}  \n  {claim_checks.tensor_cores_here(table, schema.plain)}")
    ui.fitting_table(table.table, hide_index=True, width="stretch", column_config=config)
    st.caption("The same kernels here: " + claim_checks.cuda_table_kernels() + " % of this GPU's peak: FP32 from its "
               "attributes, TF32 and FP16 (dense, on tensor cores) from NVIDIA's datasheet. Peaks in TFLOP/s."
               + "".join(f"  \n{line}." for line in table.missing) + added)
    df, added = measuring(all_rows, [claim_checks.DIVISIBLE_KERNEL, claim_checks.TORCH_KERNEL], shown,
                          cubes=claim_checks.DIVISIBLE_SIZES)
    sizes = claim_checks.divisible(df)
    st.markdown(f"- *{claim_texts.MEASURED['divisible']}*" +
                (f"  \n  {claim_checks.divisible_here(sizes, schema.plain)}" if len(sizes.table) else ""))
    if len(sizes.table):
        ui.fitting_table(sizes.table, hide_index=True, width="stretch", column_config=config)
    st.caption(f"Each size N is N³ (M = N = K); ÷16 sizes are multiples of 8 too. Speeds within "
               f"{claim_checks.SAME_WITHIN:.0%} are called the same." + "".join(f"  \n{line}." for line in sizes.missing) + added)
    df = all_rows
    headline = claim_checks.non_square(df, peaks)
    st.markdown(f"- *{claim_texts.MEASURED['non_square']}*  \n  {claim_checks.non_square_check()}  \n  "
                f"{claim_checks.non_square_here(headline, schema.plain)}")
    if len(headline.table):
        ui.fitting_table(headline.table, hide_index=True, width="stretch", column_config=config)
    if headline.missing:
        st.caption("  \n".join(f"{line}." for line in headline.missing))


def size_choice(beside: str | None) -> None:
    """Per GPU, family and size swept, the fastest kernel and configuration, and why (engine/bench/selection.py);
    opened on `beside`'s sweeps (this GPU, or the first recorded run's) where it was swept."""
    st.subheader("Which configuration at which size")
    families = ("FP32", "Tensor cores")
    family = st.radio("Family", families, horizontal=True, key=view_state.state("family", families[0], families))
    view_state.remember(family=family)
    choice.size_choice("fp32" if family == "FP32" else "tensor", "choice", beside)


SWEEP_FORMATS = {"GFLOP/s": "%,.0f", "% of the winner": "%.1f", "% of cuBLAS": "%.1f", "rank": "%d",
                 "winner GFLOP/s": "%,.0f", "default GFLOP/s": "%,.0f", "default's rank": "%d",
                 "configurations timed": "%d"}


def autotuning_sweep() -> None:
    """The recorded sweeps of each family's rungs (the FP32 ladder, the tensor rungs): per family, its
    configurations ranked, each winner against the registry's default (a default that is not the winner
    is flagged), and one figure of them all."""
    st.subheader("Autotuning sweep")
    paths = benchmark.tuning_runs()
    if not paths:
        st.info("No autotuning sweep recorded yet. A sweep times the configurations of each ladder rung worth "
                "timing (tests/benchmarks/tune_ladder.py) at 4096³ on a GPU; it is kept in "
                "engine/bench/recorded/tuning/.", icon=":material/tune:")
        return
    sweeps = [(path.name, df, prov) for path, df, prov in cached.readable(paths)]
    if not sweeps:
        return   # each left out, said above
    # The GPU most sweeps were recorded on first (the one whose sweeps cover both families), not
    # the first in file order: an H100 sweep of one tensor rung sorts before the H200's full ladder.
    swept_on = [df["gpu"].iloc[0] for _, df, _ in sweeps]
    gpus = sorted(dict.fromkeys(swept_on), key=lambda g: -swept_on.count(g))
    if len(gpus) > 1:   # kept in the URL (?tuned_on=; ?swept= is the size choice's), so a link opens on it
        gpu = st.selectbox("Swept on", gpus, key=view_state.state("tuned_on", gpus[0], gpus))
        view_state.remember(tuned_on=gpu)
    else:
        gpu = gpus[0]
    runs = [(name, df, prov) for name, df, prov in sweeps if df["gpu"].iloc[0] == gpu]
    def ranked():
        # % of cuBLAS again over the files together: a tensor sweep's cuBLAS FP16 is in a file of its own.
        df = benchmark.derive(tuning.combine([(d, prov) for _, d, prov in runs]), runs[-1][2]["peaks"])
        return df, [(family, ranked) for family in tuning.FAMILIES if not (ranked := tuning.ranking(df, family.rungs)).empty]
    files = tuple(cached.file_version(p) for p in paths)
    df, shown = cached.page_part(("sweeps", files, gpu), ranked)
    if not shown:
        st.warning(f"The sweeps on the {schema.plain(gpu)} hold no row of a ladder or tensor rung.")
    for family, ranked in shown:
        # The files with a row of the family at the size it is ranked at: not a sweep of another size beside it.
        n = tuning.sweep_size(df, family.rungs)
        sweep_family(family, ranked, df, [(name, prov) for name, d, prov in runs if (
            d["kernel"].isin(family.rungs) & (d["m"] == n) & (d["n"] == n) & (d["k"] == n)).any()], files)


def sweep_family(family: tuning.Family, ranked: pd.DataFrame, df: pd.DataFrame, runs: list[tuple[str, dict]],
                 files: tuple) -> None:
    """files: the sweep files' versions (what is drawn is drawn once for every session)."""
    provs = [prov for _, prov in runs]
    gpu = df["gpu"].iloc[0]
    rung = "ladder rung" if family.rungs == tuning.RUNGS else "tensor rung"
    found, fig = cached.page_part(("sweep_family", files, gpu, font, family.name), lambda: (
        tuning.verdicts(ranked), charts.tuning_sweep(ranked, font, charts.notes(provs, df, percent=False), tuning.cublas_gflops(df, family),
                                                     rung, family.cublas_name)))
    st.markdown(f"**The {family.name}.** Every configuration swept of each rung, timed at "
                f"{tuning.sweep_size(df, family.rungs)}³ on the {schema.plain(gpu)}; the winner is starred, the "
                f"registry's default ringed; the dotted line: {family.cublas_name} ({family.cublas}).")
    st.caption(schema.plain(f"From {', '.join(name for name, _ in runs)}" + (
        ": a configuration timed in more than one file shows its latest timing." if len(runs) > 1 else ".")))
    st.plotly_chart(fig, width="stretch", key=f"sweep-figure-{rung}", config=camera(
        "png", export.chart_filename(f"autotuning-{rung.replace(' ', '-')}", [gpu], [p.get("date") for p in provs])))
    ui.fitting_table(tuning.summary(found), hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(c, format=f) for c, f in SWEEP_FORMATS.items()})
    for v in found:
        (st.markdown if v.default_wins else st.warning)(v.text())
    # Only the open tab's table is drawn (choosing another reruns the page): the page redraws every
    # table it shows when presenter mode switches, and a table a rung, each hidden, made that slow.
    tabs = st.tabs([v.rung for v in found], on_change="rerun", key=f"sweep-tabs-{rung}")
    for tab, v in zip(tabs, found):
        if not tab.open:
            continue
        part = ranked[ranked["kernel"] == v.rung]
        with tab:
            ui.table(pd.DataFrame({
                "rank": part["rank"], "configuration": part["label"], "": part["winner"].map({True: "★ winner", False: ""})
                + part["default"].map({True: " ○ registry default", False: ""}), "GFLOP/s": part["gflops"],
                "% of the winner": part["pct_of_winner"], "% of cuBLAS": part.get("pct_cublas"), "status": part["status"]}),
                hide_index=True, width="stretch",
                # the marks wide enough for both ("★ winner ○ registry default" had been cut to "★ winner ○ r…")
                column_config={"": st.column_config.TextColumn("", width="medium"),
                               **{c: st.column_config.NumberColumn(c, format=f) for c, f in SWEEP_FORMATS.items()}})


# ------------------------------------------------------------------ live, on this machine's GPU
if status.available:
    st.subheader(f"Live on this {status.name}")
    kernels = st.multiselect("Kernels", timeable, default=list(registry.SWEEP_DEFAULT), format_func=ui.kernel_label)
    c1, c2, c5, c6 = st.columns([1.3, 2.7, 0.9, 0.9])
    preset = c1.selectbox("Sizes", list(SIZE_PRESETS) + ["custom"])
    sizes_text = c2.text_input("N or MxNxK, comma-separated", SIZE_PRESETS.get(preset, "1024,1000x2000x512"),
                               disabled=preset != "custom")
    reps = c5.number_input("Repetitions", 5, 200, 20)
    flush = c6.toggle("Flush L2", help="clear the L2 before every timed repetition (outside the timed region)")
    # One kernel's parameters (and block shape) chosen here; every other kernel runs with its defaults.
    tunable = [k for k in kernels if registry.get(k).params or registry.get(k).block_shapes]
    tuned = st.selectbox("Parameters of", tunable, key=view_state.state("tuned", tunable[0], tunable),
                         help="the kernel of the sweep whose compile-time parameters are set below; the "
                              "others run with their defaults") if tunable else None
    if tuned:
        view_state.remember(tuned=tuned)
        chosen, block = settings.parameter_inputs([tuned], label=f"Parameters of {tuned}")
        asked = {tuned: chosen[tuned]}
        blocks = {tuned: block} if registry.get(tuned).block_shapes else {}
    else:
        asked, blocks = {}, {}
    # The chosen parameters against the kernel's rules at each size asked for, said before anything runs.
    try:
        wrong = next((why for size in benchmark.parse_sizes(sizes_text) if tuned
                      for why in [settings.reason(tuned, *size, asked[tuned], blocks.get(tuned))] if why), None)
    except EngineError as exc:
        wrong = str(exc)
    if wrong:
        st.error(wrong, icon=":material/error:")
    go, stop = st.columns([1, 5])
    start = go.button("Start sweep", type="primary", disabled=bool(wrong))
    stop.button("Stop", help="stops after the point being measured; what was measured stays")
    if start:
        try:
            sizes = benchmark.parse_sizes(sizes_text)
        except EngineError as exc:
            st.error(str(exc))
            query.stop()
        timing = benchmark.Settings(reps=int(reps), flush_l2=flush)
        st.session_state["bench_prov"] = benchmark.provenance(status.info, timing)
        st.session_state["bench_rows"] = rows = []
        peaks = st.session_state["bench_prov"]["peaks"]
        total = len(sizes) * len(kernels)
        progress = st.progress(0.0, "starting")
        live = st.empty()
        # One sweep at a time on the GPU, in the server's line with the rest of the heavy work; each
        # point is drawn as it is measured.
        with heavy("benchmark", 0, "Live sweep"):
            points = [(kernel, size) for size in sizes for kernel in kernels]   # every kernel at a size, then the next
            for i, row in enumerate(benchmark.measure(kernel, *size, timing, asked.get(kernel), blocks.get(kernel))
                                    for kernel, size in points):
                rows.append(row)
                progress.progress((i + 1) / total, f"{i + 1} of {total}: {row['kernel']} {row['m']}x{row['n']}x{row['k']}"
                                                   f" {row['status']}")
                with live.container():
                    df = benchmark.derive(schema.as_frame(rows).assign(gpu=status.name), peaks)
                    a, b = st.columns(2)
                    a.plotly_chart(charts.gflops_vs_size(df, font), width="stretch", key=f"live-g-{i}")
                    if "sm_clock_mhz" in df:
                        b.plotly_chart(charts.telemetry(df, font), width="stretch", key=f"live-t-{i}")
        live.empty()
        progress.empty()
    if st.session_state.get("bench_rows"):
        rows, prov = st.session_state["bench_rows"], st.session_state["bench_prov"]
        show(benchmark.of_run(schema.as_frame(rows), prov), prov["peaks"], "live",
             f"Measured live on {prov['gpu']} on {prov['date']}; settings {prov['settings']}.", [prov])
        exports(rows, prov, "live")
else:
    st.info("No NVIDIA GPU here, so nothing is timed live. Below: runs **recorded on a real GPU** with "
            "`python -m engine bench`, labelled with the GPU, driver and date they came from.",
            icon=":material/history:")

# ------------------------------------------------------------------ recorded runs and uploads
st.subheader("Recorded runs" + ("" if status.available else " (not live)"))
runs = benchmark.recorded_runs()
for line in benchmark.damaged_runs():   # a shipped file cut short or overwritten: named, never read
    st.warning(line, icon=":material/warning:")
# Folded away in presenter mode (ui.controls), as every page's controls: the chart on the first screen.
runs_box = ui.controls("Runs shown")
with runs_box:
    choices = st.multiselect("Recorded on a GPU", [p.name for p in runs],
                             key=view_state.names_state("runs", [p.name for p in runs],
                                                        [p.name for p in benchmark.opening_runs(runs)], "a recorded run here"))
    view_state.remember(runs=",".join(choices))   # the runs shown are in the link too: an H100-beside-H200 view to hand out
    uploads = st.file_uploader("Add JSON exports from other machines, to compare GPUs", type="json",
                               accept_multiple_files=True, max_upload_size=schema.MAX_MB)
frames, peaks, labels, provs, files, shown = [], None, [], [], [], []
for path, df, prov in cached.readable([benchmark.RECORDED / name for name in choices]):
    shown.append(path.name)
    files.append(cached.file_version(path))
    frames.append(df.assign(run=path.name))   # each run against its own cuBLAS, and named where a GPU has two
    provs.append(prov)
    peaks = peaks or prov["peaks"]
    labels.append(schema.plain(f"{path.name}: {charts.provenance_note(prov)}"))   # the file tells same-day runs apart
# An upload comes from anyone in the room: a bad one gets its problems, one line each, and is left
# out; everything it says is shown as plain text (a Markdown image in a GPU's name is not fetched).
for up in uploads or []:
    run, problems = benchmark.load_upload(up.name, up.getvalue())
    files.append(("upload", hashlib.sha256(up.getvalue()).hexdigest()))
    if problems:
        (st.warning if run else st.error)("  \n".join(map(schema.plain, problems)))
    if run is None:
        continue
    df, prov = run
    # each upload a run of its own, even where two share a name (`bench --out` writes results.json)
    frames.append(df.assign(run=benchmark.unique_name(f"{up.name} (uploaded)", {f["run"].iloc[0] for f in frames if len(f)})))
    provs.append(prov)
    peaks = peaks or prov["peaks"]
    labels.append(schema.plain(f"{df['gpu'].iloc[0]} (uploaded {up.name}, recorded {prov['date'][:10]})"))
if frames:
    runs_box.markdown("**Recorded on:** " + "; ".join(labels))   # with the pickers: folded away with them too
    show(pd.concat(frames, ignore_index=True), peaks, "recorded",
         "Recorded results, not measured now. Roofs are those of the first GPU listed.", provs, tuple(files))
    for i, name in enumerate(shown):   # each run shown, exported as it was recorded
        doc = cached.recorded_document(benchmark.RECORDED / name)
        if len(frames) > 1:
            st.markdown(f"**Exports of {schema.plain(name)}**")
        exports(doc.rows, doc.prov, f"recorded-{i}" if i else "recorded", Path(name).stem if len(frames) > 1 else "")
    if uploads:
        st.caption("Uploaded runs are not exported again: each is already the export it was uploaded as.")
    measured_claims(pd.concat(frames, ignore_index=True), peaks, shown)
else:
    st.info("No recorded run selected: choose one under **Recorded on a GPU** above, or upload a JSON export, "
            "to see its charts and table.", icon=":material/arrow_upward:")

size_choice(status.name if status.available else provs[0].get("gpu") if provs else None)
autotuning_sweep()

view_state.leave_out_unknown()   # what the link named and the page did not read: said in one line, left out
