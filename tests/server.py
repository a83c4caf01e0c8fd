"""A real app server for tests and benchmark scripts, and a client that speaks the browser's protocol.

`start` runs `streamlit run app.py` on a loopback port and waits for its health check; `open_page`
is one Streamlit session over the websocket (a "rerun" with the page and its URL parameters, then
the server's messages until the script finishes): what the server does for a browser, without a
browser's rendering competing for a small machine's cores.
"""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port: int, timeout: float = 1.0) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=timeout).status == 200
    except OSError:
        return False


def start(port: int, env: dict | None = None, wait_s: float = 60) -> subprocess.Popen:
    """`streamlit run app.py` on 127.0.0.1:port, once it answers its health check. Its output goes to
    a temporary file, whose end a failure to start quotes."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false",
                             # Streamlit takes itself for a development checkout, which refuses --server.port,
                             # where it is not installed under site-packages (a GPU machine's wheels in a folder)
                             "--global.developmentMode", "false"], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=log, stderr=subprocess.STDOUT,
                            # a process group of its own, as a terminal gives it: os.killpg(pid, SIGINT) is Ctrl-C
                            start_new_session=True)
    proc.log = log

    def tail() -> str:
        log.seek(0)
        return log.read().decode(errors="replace")[-2000:]

    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if healthy(port):
            return proc
        if proc.poll() is not None:
            raise RuntimeError(f"the app server exited at start (exit code {proc.returncode}):\n{tail()}")
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the app server did not start:\n{tail()}")


async def _session(port: int, page: str, query: str, timeout: float) -> tuple[float, str]:
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    start_t = time.perf_counter()
    url = f"ws://127.0.0.1:{port}/_stcore/stream"
    async with websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=timeout) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        await ws.send(msg.SerializeToString())
        problem, chart = "", None
        while True:
            raw = await asyncio.wait_for(ws.recv(), timeout - (time.perf_counter() - start_t))
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                what = element.WhichOneof("type")
                if what == "plotly_chart" and chart is None:
                    chart = time.perf_counter() - start_t
                if what == "exception":
                    problem = f"exception: {element.exception.message[:100]}"
                if what == "alert" and element.alert.format == 1:   # st.error
                    problem = f"error: {element.alert.body[:100]}"
            # The first run of a session can end early to rerun (ui's routing): wait for the rerun.
            if kind == "script_finished" and fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                if chart is None:
                    return float("nan"), problem or "finished without a chart"
                return chart, problem


def open_page(port: int, page: str, query: str = "", timeout: float = 180) -> tuple[float, str]:
    """Seconds until the page's first chart arrives, and what went wrong if it did not."""
    return asyncio.run(_session(port, page, query, timeout))


def descendants(pid: int) -> list[int]:
    """Every process below pid, children first; compilers run in sessions of their own but are still
    children of the process that started them."""
    by_parent: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        by_parent.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in by_parent.get(todo.pop(0), []):
            out.append(child)
            todo.append(child)
    return out


def compiling(pid: int) -> bool:
    """A compiler, or a stage of one (the assembler, the linker), is running below pid."""
    stages = ("g++", "cc1plus", "/as ", "collect2", "/ld", "nvcc", "cicc", "ptxas")
    return any(any(s in c for s in stages) for c in map(command, descendants(pid)))


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting to be reaped."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def child_cpu_seconds(pid: int) -> float:
    """CPU time of the children pid has waited for (cutime + cstime): the compilers it ran, each
    with what it started, once they finished."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
