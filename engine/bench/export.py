"""Benchmark exports: data as CSV and JSON with provenance, every chart as PNG, SVG and HTML."""
from __future__ import annotations

import hashlib
import json
import logging
import math
import numbers
import os
import re
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from engine import lifecycle, outputs
from engine.bench.benchmark import derive, of_run
from engine.bench.schema import FORMATS as DOCUMENT_FORMATS
from engine.bench.schema import as_frame, to_document
from engine.errors import EngineError
from engine.plots import charts, style

FORMATS = ("csv", "json", "html", "png", "svg")
MIME = {"html": "text/html", "png": "image/png", "svg": "image/svg+xml"}
PROVENANCE_COLUMNS = ("gpu", "driver_cuda_version", "driver", "cuda", "toolkit", "cublas_version", "date",
                      "engine_commit")
NO_KALEIDO = "PNG/SVG export needs the kaleido package: python3 -m pip install -r requirements.txt"
NO_CHROME = ("PNG/SVG export needs Chrome or Chromium, and kaleido found neither: install one "
             "(`apt install chromium`, or `python3 -c 'import kaleido; kaleido.get_chrome_sync()'`)")
# kaleido's server is one per process: exports take turns.
_IMAGES = threading.Lock()
# What making a run's chart files holds while it runs, for the server's memory budget
# (engine/devices/line.py): the Chrome kaleido starts (~250 MB resident) and the figures.
CHART_FILES_BYTES = 400 * 2**20


def results_csv(rows: list[dict], prov: dict) -> str:
    """One row per point, each carrying the provenance, so a CSV alone still says where it came from;
    a row's compile-time parameters as JSON, like the settings."""
    df = pd.DataFrame(rows)
    # A column of whole numbers with a gap (a failed row has no reps) is floats to pandas: written
    # "20.0" and "1980.0". Those the run recorded as whole numbers stay whole, the gaps left empty.
    for column in df.columns[(df.dtypes == "float64").to_numpy() & df.isna().any().to_numpy()]:
        given = [row[column] for row in rows if row.get(column) is not None]
        if given and all(isinstance(value, numbers.Integral) and not isinstance(value, bool) for value in given):
            df[column] = df[column].astype("Int64")
    if "params" in df:
        df["params"] = df["params"].map(lambda p: json.dumps(p) if isinstance(p, dict) else p)
    for key in PROVENANCE_COLUMNS:
        df[key] = prov.get(key)
    settings = prov.get("settings", {})
    df["settings"] = json.dumps(settings, sort_keys=True)
    return df.to_csv(index=False)


def chart_filename(chart: str, gpus, dates) -> str:
    """'roofline-NVIDIA-H200-2026-11-21': chart, GPU(s) and date(s) (oldest first), safe as a file name
    everywhere."""
    def unique(values):
        return list(dict.fromkeys(str(v) for v in values if v))
    name = "-".join([chart] + unique(gpus) + sorted(unique(str(d)[:10] for d in dates)))
    return re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9._-]+", "-", name)).strip("-.")[:150]


def html(fig) -> str:
    """A self-contained page: plotly.js embedded (about 4.5 MB), so it opens offline."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


def _image_error(exc: Exception) -> EngineError:
    """kaleido's own message starts with blank lines (an empty 'RuntimeError:' in one-line reports)."""
    text = " ".join(str(exc).split())
    if "chrome" in text.lower() or "browser" in text.lower() or type(exc).__name__ == "ChromeNotFoundError":
        return EngineError(NO_CHROME)
    return EngineError(f"PNG/SVG export failed: {type(exc).__name__}: {text or 'no message'}")


def _chrome_found() -> bool:
    """Whether kaleido will find a browser: asked first, because a kaleido server started without one
    hangs instead of failing."""
    try:
        from choreographer.browsers.chromium import Chromium  # noqa: PLC0415 - kaleido's own lookup
        path = Chromium.find_browser(skip_local=False)
    except Exception:   # noqa: BLE001 - another kaleido version: let kaleido itself try
        return True
    return bool(path) and Path(path).is_file()


# The niceness of the browser kaleido starts: a chart export takes seconds of both cores (Chrome's
# start and each picture), and the server's page views must not wait for them.
BROWSER_NICE = 19


def _start_browser(kaleido, profile: str) -> None:
    """kaleido's server, started from a thread of its own that first lowers its own priority: the
    thread kaleido starts, and the browser processes that thread starts, inherit it (on Linux a
    thread's nice value is its own and passes to what it creates), while the server's threads keep
    theirs (a process cannot raise its priority back without privileges). Waited for in short steps,
    so a Ctrl-C is taken while Chrome starts (_interruptible). profile: the folder Chrome keeps its
    profile in (lifecycle.browser_profile)."""
    def start():
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BROWSER_NICE)
        except (OSError, AttributeError):   # not Linux, or not allowed: at the usual priority
            pass
        kaleido.start_sync_server(silence_warnings=True, tmp_dir=profile)   # (passed on to choreographer)
    _interruptible(start, "kaleido-start")


def _lower_browser() -> None:
    """Every thread of the browser's processes at BROWSER_NICE: the browser may have raised its own
    (Chrome gives its main threads a higher priority where it is allowed to, as root)."""
    for pid in lifecycle.browser_pids():
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                os.setpriority(os.PRIO_PROCESS, int(task.name), BROWSER_NICE)
        except (OSError, ValueError, AttributeError):   # gone meanwhile, not Linux, or not allowed
            continue


def _kill_browser() -> None:
    """Ctrl-C: the browser goes at once. kaleido's own close waits for it to shut down in order (2 to
    7 s measured), past the 2 s in which a stopped export must have ended."""
    # kaleido's threads then report the browser they lost as a traceback, after "stopped": theirs are
    # left unsaid (only theirs: the threads running now but this one). kaleido's server stays marked
    # running with its browser gone, so no picture is made in this process after a Ctrl-C: the CLI's
    # process ends, and the Streamlit server's script threads never receive KeyboardInterrupt.
    theirs, previous = set(threading.enumerate()) - {threading.current_thread()}, threading.excepthook
    threading.excepthook = lambda args: None if args.thread in theirs else previous(args)
    for pid in lifecycle.browser_pids():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    # kaleido's exit handler asks its server thread to close the browser and joins it; with the browser
    # killed, choreographer's watchdog then waits a second more and cleans up, and the Ctrl-C took 2.4
    # to 2.5 s to end (1 run in 5). The join is given a thread that has ended already (private state:
    # kaleido offers no way to leave its server without the orderly close).
    server = getattr(sys.modules.get("kaleido"), "_global_server", None)
    if server is not None and getattr(server, "_thread", None) is not None:
        ended = threading.Thread(target=lambda: None, name="kaleido-left")
        ended.start()
        ended.join()
        server._thread = ended
    # ...and its watchdog's "Wait expired, Browser is being closed" is the browser killed here, not news
    # to print after "stopped"
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if name.split(".")[0] in ("choreographer", "kaleido") and isinstance(logger, logging.Logger):
            logger.disabled = True


def _interruptible(fn, name: str = "kaleido-picture"):
    """fn() in a thread of its own while this one waits in short steps: kaleido waits for its picture
    in a queue's join, which a Ctrl-C delivered to another of the process's threads does not wake, so
    the stop waited for the picture in hand (and the next began)."""
    done: dict = {}

    def run():
        try:
            done["value"] = fn()
        except BaseException as exc:   # noqa: BLE001 - handed to the caller's thread
            done["error"] = exc
    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.05)
    if "error" in done:
        raise done["error"]
    return done["value"]


@contextmanager
def image_session():
    """One Chrome for a batch of pictures: the first costs ~3 s to start it, each later one ~0.3 s."""
    try:
        import kaleido  # noqa: PLC0415 - optional until a picture is asked for
    except ImportError:
        raise EngineError(NO_KALEIDO) from None
    if not _chrome_found():
        raise EngineError(NO_CHROME)
    with _IMAGES, warnings.catch_warnings(), lifecycle.browser_profile("matmul-charts-profile-") as profile:
        warnings.simplefilter("ignore")   # plotly warns that its defaults are ignored by a running server
        stopped = False
        try:
            try:
                _start_browser(kaleido, profile)
                lifecycle.browser_started(profile)
            except Exception as exc:   # noqa: BLE001 - kaleido raises bare RuntimeErrors
                raise _image_error(exc) from None
            yield
        except KeyboardInterrupt:
            stopped = True
            _kill_browser()   # and no orderly close: kaleido's thread is a daemon, it ends with the process
            raise
        finally:
            if not stopped:
                kaleido.stop_sync_server(silence_warnings=True)


def image(fig, fmt: str, width: int = 1200, height: int | None = None, scale: float = 1.0) -> bytes:
    """PNG or SVG through kaleido, which drives a local Chrome or Chromium; a one-line EngineError
    saying what is missing when it cannot. height None: the figure's own (a chart is drawn taller for a
    long key: pressed into 700 px, one of 22 kernels had its key over its title and no plot left)."""
    height = height or fig.layout.height or 700
    try:
        picture = _interruptible(lambda: fig.to_image(format=fmt, width=width, height=height, scale=scale))
        _lower_browser()   # its processes and threads as they are once it has drawn
        return picture
    except ImportError:
        raise EngineError(NO_KALEIDO) from None
    except Exception as exc:   # noqa: BLE001 - kaleido raises bare RuntimeErrors
        raise _image_error(exc) from None


def figures(rows: list[dict], prov: dict, font: int = style.EXPORT_FONT) -> dict:
    """Every chart of one run, each carrying its provenance in the picture."""
    df = derive(of_run(as_frame(rows), prov), prov["peaks"])
    return charts.all_charts(df, prov["peaks"], font, provs=[prov]) if len(df) else {}


def write_json(rows: list[dict], prov: dict, path: Path) -> Path:
    """The run as the JSON document the explorer reads back (recorded runs, uploads)."""
    # Strict JSON, which browsers, jq and pandas read: a NaN (a result not checked, or read so from
    # the file it came from) had been written as a bare NaN, which none of them takes.
    outputs.write(path, json.dumps(_finite(to_document(rows, prov)), indent=1, default=float, allow_nan=False))
    return path


def _finite(value):
    """value with every NaN or infinite number (numpy's too) as None: JSON's null."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f"):
        return float(value) if math.isfinite(value) else None
    return value


# What each file bench writes begins with: an existing file of one of its names is replaced only if
# it begins so (engine/outputs.py), and is otherwise someone else's, left alone.
_CSV_TAIL = ",".join((*PROVENANCE_COLUMNS, "settings")).encode()
_DOCUMENT = re.compile(rb'\s*\{\s*"format":\s*"(' + b"|".join(re.escape(f.encode()) for f in DOCUMENT_FORMATS) + rb')"')
OURS = {
    ".csv": lambda head: head.split(b"\n", 1)[0].rstrip(b"\r").endswith(_CSV_TAIL),
    ".json": lambda head: _DOCUMENT.match(head) is not None,
    # plotly 7 begins its page with a doctype, older ones with <html>: it had refused to replace its own pages.
    ".html": lambda head: re.match(rb"\s*(?:<!doctype html>\s*)?<html", head, re.IGNORECASE) is not None
    and b"plotly" in head.lower(),
    ".png": lambda head: head.startswith(b"\x89PNG\r\n\x1a\n"),
    ".svg": lambda head: b"<svg" in head[:512],
}
KINDS = {".csv": "a results CSV", ".json": "a benchmark export", ".html": "a chart page", ".png": "a chart picture",
         ".svg": "a chart picture"}


def check_out(out: Path, names=("results.csv", "results.json"), make: bool = False) -> None:
    """--out: a folder (in one that exists; made if missing where make) that takes new files, where each
    of names is new or a file bench wrote before. A one-line EngineError otherwise. Checked before any
    work, made only when there is something to write into it."""
    outputs.make_folder(out, make=make)
    if not out.is_dir():   # not made yet: nothing in it to replace
        return
    for name in names:
        suffix = Path(name).suffix
        outputs.check_replaceable(out / name, OURS[suffix], KINDS[suffix])


def write_all(rows: list[dict], prov: dict, out: Path, formats=FORMATS, width: int = 1200,
              height: int | None = None) -> tuple[list[Path], list[str]]:
    """Writes the exports into `out` (each whole, through a temporary file; every name checked first by
    check_out); returns the files written and what could not be (one line each)."""
    figs = figures(rows, prov)
    pictures = [f for f in ("png", "svg") if f in formats]
    names = ([f"results.{f}" for f in ("csv", "json") if f in formats]
             + [f"{name}.{fmt}" for name in figs for fmt in ("html", *pictures) if fmt in formats])
    check_out(out, names, make=True)
    written, skipped = [], []
    if "csv" in formats:
        outputs.write(out / "results.csv", results_csv(rows, prov))
        written.append(out / "results.csv")
    if "json" in formats:
        written.append(write_json(rows, prov, out / "results.json"))
    if "html" in formats:
        for name, fig in figs.items():
            outputs.write(out / f"{name}.html", html(fig))
            written.append(out / f"{name}.html")
    if pictures and figs:
        try:
            with image_session():
                for name, fig in figs.items():
                    for fmt in pictures:
                        outputs.write(out / f"{name}.{fmt}", image(fig, fmt, width, height))
                        written.append(out / f"{name}.{fmt}")
        except EngineError as exc:   # no kaleido or no Chrome/Chromium on this machine: say so once
            skipped.append(f"png/svg: {exc}")
    return written, skipped


def file_stem(what: str, prov: dict) -> str:
    return chart_filename(what, [prov.get("gpu")], [prov.get("date")])


def run_digest(rows: list[dict], prov: dict) -> str:
    """Which run this is, whatever session shows it: the same run exported twice is made once."""
    text = json.dumps(to_document(rows, prov), sort_keys=True, default=float)
    return hashlib.sha256(text.encode()).hexdigest()


def chart_files(rows: list[dict], prov: dict, formats=("html", "png", "svg"),
                progress=lambda chart: None) -> tuple[list[tuple[str, bytes | str, str]], list[str]]:
    """Every chart of a run as (file name, data, MIME type) in the formats asked, and what could not
    be made (one line each); progress(chart) before each chart's pictures."""
    figs = figures(rows, prov)
    files = [(f"{file_stem(n, prov)}.html", html(fig), "text/html") for n, fig in figs.items() if "html" in formats]
    pictures = [f for f in ("png", "svg") if f in formats]
    skipped = []
    if pictures and figs:
        try:
            with image_session():
                for n, fig in figs.items():
                    progress(n)
                    files += [(f"{file_stem(n, prov)}.{f}", image(fig, f), MIME[f]) for f in pictures]
        except EngineError as exc:   # no kaleido or no Chrome/Chromium on this machine: say so once
            skipped.append(str(exc))
    return files, skipped
