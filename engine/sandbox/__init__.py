"""The one place that runs a student's code (the Playground's kernels): inside bubblewrap (`bwrap`, the
sandbox Flatpak uses), as an unprivileged user, with resource limits, never in the server or its
shared trace workers. Compiling counts as running: a compiler reads what `#include` names.

What a sandboxed job sees and may do, and why:
- Its own namespaces (--unshare-all): no network (not even loopback to the server), its own process
  tree (it cannot signal anything outside), no IPC with the host.
- Read-only: /usr (compilers, CUDA under /usr/local, the system's Python and libraries), the Python
  the server runs (and its virtual environment), the project's engine/ and cuda/ (the job runs the
  engine's own tracer), and the student's source folder. Nothing else of the host: no /etc, /home,
  /root, the server's caches or other students' kernels. /dev holds /dev/null alone, so
  `#include </dev/random>` finds nothing to read.
- Writable: a tmpfs /tmp of TMP_BYTES (the compiler's files and the build), gone when it ends.
- As a user id of its own (no root, no capabilities), so that the process limit (RLIMIT_NPROC) holds
  a fork bomb and a file of the host is only readable where anyone may read it.
- Limits (prlimit): CPU seconds, address space, processes, bytes per file written, open files, no
  core dumps; a wall-clock limit on top, after which the whole sandbox is killed (bwrap's
  --die-with-parent takes every process in it along).
- Its environment is cleared (--clearenv): the server's variables do not reach it.
- What it prints is kept up to OUTPUT_BYTES; its result comes back through a pipe of its own, read
  up to RESULT_BYTES, and is parsed as plain data (JSON or numpy arrays without pickle), never run.

Off unless the person running the server turns it on: MATMUL_EXPLORER_PLAYGROUND=1, or
`streamlit run app.py -- --playground`.
"""
from __future__ import annotations

import itertools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.errors import EngineError

SWITCH_ENV = "MATMUL_EXPLORER_PLAYGROUND"
SWITCH_FLAG = "--playground"
ROOT = Path(__file__).resolve().parents[2]
# Each sandbox runs as a user id of its own, from a pool far above the system's and the usual
# login range, so its process limit is its own and its files are nobody else's.
_UIDS = itertools.count(200_000 + (os.getpid() % 1000) * 1000)
_RUNNING: dict[int, subprocess.Popen] = {}
_LOCK = threading.Lock()
_STOPPED = threading.Event()


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 20                  # CPU seconds per process
    wall_s: float = 45.0             # for the whole job
    memory_bytes: int = 4 << 30      # address space per process (nvcc's front end maps ~1.5 GB)
    processes: int = 64              # for the sandbox's user id
    file_bytes: int = 64 << 20       # largest file it may write
    open_files: int = 256
    tmp_bytes: int = 512 << 20       # its /tmp
    output_bytes: int = 64 << 10     # what it prints, kept
    result_bytes: int = 256 << 20    # its result, read
    # A job (not a GPU one: it may wait on the GPU) that computes next to nothing this long is stopped:
    # a sleep used no CPU time and held its place in the server's line of heavy work for the whole
    # wall_s, so a student's sleep(100) kept another's build waiting 45 s.
    idle_s: float = 10.0


LIMITS = Limits()


def switched_on() -> bool:
    """The server's operator turned the Playground on (environment or command-line switch)."""
    return os.environ.get(SWITCH_ENV, "0") == "1" or SWITCH_FLAG in sys.argv[1:]


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why a sandbox cannot be made on this machine, or None: bwrap missing, or refused here."""
    for tool, package in (("bwrap", "bubblewrap"), ("unshare", "util-linux"), ("setpriv", "util-linux"),
                          ("prlimit", "util-linux")):
        if not shutil.which(tool):
            return f"{tool} is not installed (Debian: `sudo apt install {package}`)"
    if os.geteuid() != 0 and not _userns_allowed():
        return "this machine does not allow user namespaces, which bubblewrap needs"
    try:
        done = run_sandboxed(["/bin/true"], limits=Limits(wall_s=20))
    except EngineError as exc:
        return f"bubblewrap could not start a sandbox here: {exc}"
    return None if done.ok else f"bubblewrap could not start a sandbox here: {done.reason}"


def _userns_allowed() -> bool:
    try:
        return int(Path("/proc/sys/user/max_user_namespaces").read_text()) > 0
    except (OSError, ValueError):
        return False


def status() -> tuple[bool, str]:
    """(on, what to say): the Playground runs students' code only where both are true."""
    if not switched_on():
        return False, ("The Playground is off on this server. Whoever runs it turns it on with "
                       f"`streamlit run app.py -- {SWITCH_FLAG}` (or {SWITCH_ENV}=1): students' kernels are then "
                       "compiled and run in a bubblewrap sandbox, without network or access to the server's files.")
    why = unavailable()
    if why:
        return False, f"The Playground is switched on, but it cannot run kernels safely here: {why}."
    return True, "Your kernel is compiled and run in a bubblewrap sandbox."


@dataclass
class Outcome:
    ok: bool
    reason: str          # one line: what went wrong ("" when ok)
    output: str          # what it printed (stdout and stderr), cut at OUTPUT_BYTES
    result: bytes        # what it wrote to its result pipe
    seconds: float


_SIGNALS = {signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error", signal.SIGFPE: "arithmetic error",
            signal.SIGILL: "illegal instruction", signal.SIGABRT: "aborted"}


def _python_roots() -> list[Path]:
    """The Python this server runs and its virtual environment, where they are not under /usr."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.prefix)}
    return sorted(r for r in roots if not r.is_relative_to("/usr") and r.exists())


def gpu_binds() -> list[str]:
    """For a job that runs the student's kernel on the GPU: the driver's device files, as devices (CUDA
    opens them), and /sys read-only (CUDA reads the PCI topology there). The driver's libraries are
    under /usr (bound already, with the mounts under it); the toolkit is bound by engine_binds."""
    args = []
    for path in sorted(Path("/dev").glob("nvidia*")):
        args += ["--dev-bind", str(path), str(path)]
    # The loader's cache: where the toolkit's libraries (libcurand, libcublas) are, which PyCUDA and the
    # timing's cuBLAS load. A list of library folders, nothing private.
    return args + ["--ro-bind-try", "/sys", "/sys", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]


def _top_level() -> list[str]:
    """/bin, /lib, ... as the host has them: links into /usr where /usr is merged (Debian 12), else
    their own read-only binds (the loader looks for libcuda in /lib on some GPU machines)."""
    args = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    return args


def _tool(name: str) -> str:
    """Its path as the server finds it (the sandbox's chain starts with an environment of its own)."""
    return shutil.which(name) or name


def _command(argv: list[str], uid: int, stage: Path, binds: list[tuple[Path, Path]], limits: Limits,
             env: dict[str, str], result_fd: int | None, gpu: bool = False, writable: Path | None = None) -> list[str]:
    """prlimit -> unshare (a private mount namespace, as root: the read-only sources are bound into
    `stage` first, since the sandbox's user may not pass through their parents, /root for one) ->
    setpriv (the sandbox's own user id, no capabilities) -> bwrap -> the job."""
    staged, mounts = [], []
    for i, (src, dest) in enumerate(binds):
        point = stage / str(i)
        point.mkdir()
        # --rbind: with the mounts under it (a GPU machine's driver libraries are often a mount of their own)
        staged.append(f"mount --rbind {shlex.quote(str(src))} {shlex.quote(str(point))} && "
                      f"mount -o remount,bind,ro {shlex.quote(str(point))}")
        mounts += ["--ro-bind", str(point), str(dest)]
    if writable is not None:   # the one host folder a job may write (its build's), owned by its user
        point = stage / "rw"
        point.mkdir()
        staged.append(f"mount --bind {shlex.quote(str(writable))} {shlex.quote(str(point))}")
        mounts += ["--bind", str(point), str(writable)]
    box = [_tool("bwrap"), "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
           "--disable-userns",
           "--ro-bind", "/usr", "/usr", *_top_level(),
           "--proc", "/proc", "--dev-bind", "/dev/null", "/dev/null",
           "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", *mounts, *(gpu_binds() if gpu else []),
           "--chdir", "/tmp",
           "--setenv", "PATH", ":".join([*_toolkit_bin(), "/usr/local/bin", "/usr/bin", "/bin"]), "--setenv", "HOME", "/tmp",
           "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8"]
    for k, v in env.items():
        box += ["--setenv", k, v]
    if result_fd is not None:
        box += ["--setenv", "SANDBOX_RESULT_FD", str(result_fd)]
    drop = [_tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all"]
    # CPU: SIGXCPU at the soft limit (the job ends saying why), SIGKILL a second later.
    # A CUDA context maps tens of GB of address space it never touches: a GPU job's memory is the
    # GPU's and its own /tmp, not an address-space limit.
    memory = "unlimited" if gpu else limits.memory_bytes
    limit = [_tool("prlimit"), f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}", f"--as={memory}", f"--nproc={limits.processes}",
             f"--fsize={limits.file_bytes}", f"--nofile={limits.open_files}", "--core=0", "--"]
    script = " && ".join(staged + ['exec "$@"'])
    return [*limit, _tool("unshare"), "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sandbox",
            *drop, *box, "--", *argv]


def _reader(stream, keep: int, out: list, cut: list) -> threading.Thread:
    """Drains a pipe (a job that writes more is not blocked, just not kept), keeping `keep` bytes."""
    def drain():
        got = 0
        while chunk := stream.read(1 << 16):
            if got < keep:
                out.append(chunk[:keep - got])
            got += len(chunk)
            if got > keep:
                cut.append(True)
        stream.close()
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    return t


def run_sandboxed(argv: list[str], *, binds: list[tuple[Path, Path]] = (), limits: Limits | None = None,
                  env: dict[str, str] | None = None, stdin: bytes = b"", want_result: bool = False,
                  gpu: bool = False, writable: Path | None = None) -> Outcome:
    """Runs argv in a fresh sandbox; binds: (host path, path inside) pairs, read-only. The job's
    result pipe (want_result) is the file descriptor named by $SANDBOX_RESULT_FD inside. limits:
    LIMITS (read when called, so a test may set smaller ones) where not given."""
    limits = limits or LIMITS
    if _STOPPED.is_set():
        raise EngineError("the server is stopping")
    uid = next(_UIDS)
    stage = Path(tempfile.mkdtemp(prefix="mmx-sandbox-"))
    read_end = write_end = None
    try:
        stage.chmod(0o755)
        if want_result:
            read_end, write_end = os.pipe()
        if writable is not None:
            os.chown(writable, uid, uid)
        cmd = _command(argv, uid, stage, list(binds), limits, env or {}, write_end, gpu, writable)
        started = time.perf_counter()
        # bwrap's own processes keep the environment they start with (--clearenv is for the job), and
        # the job can read theirs in /proc: so they start with nothing of the server's.
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=(write_end,) if write_end is not None else (), start_new_session=True,
                                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"})
        with _LOCK:
            _RUNNING[proc.pid] = (proc, uid)
        if write_end is not None:
            os.close(write_end)
            write_end = None
        output, out_cut, result, result_cut = [], [], [], []
        threads = [_reader(proc.stdout, limits.output_bytes, output, out_cut)]
        if read_end is not None:
            threads.append(_reader(os.fdopen(read_end, "rb"), limits.result_bytes, result, result_cut))
            read_end = None
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        timed_out = idle = False
        watch = _IdleWatch(uid, limits.idle_s if not gpu else 0.0)
        while True:
            try:
                proc.wait(timeout=min(_POLL_S, max(0.0, started + limits.wall_s - time.perf_counter())))
                break
            except subprocess.TimeoutExpired:
                pass
            if time.perf_counter() >= started + limits.wall_s:
                timed_out = True
                break
            if watch.idle():
                idle = True
                break
        # Whatever of it is left: a process it forked that outlived bwrap holds its user id.
        _kill(proc, uid)
        proc.wait()
        for t in threads:
            t.join(timeout=5)
        seconds = time.perf_counter() - started
        text = b"".join(output).decode("utf-8", errors="replace")
        reason = _reason(proc.returncode, timed_out, bool(result_cut), limits, text, idle)
        return Outcome(not reason, reason, text + ("\n[output cut]" if out_cut else ""), b"".join(result), seconds)
    finally:
        for fd in (read_end, write_end):
            if fd is not None:
                os.close(fd)
        with _LOCK:
            for pid in [p for p, (pr, _) in _RUNNING.items() if pr.poll() is not None]:
                del _RUNNING[pid]
        shutil.rmtree(stage, ignore_errors=True)
        if writable is not None:   # the server's again: no later sandbox (another user id) may change it
            for path in [writable, *writable.rglob("*")]:
                if not path.is_symlink():
                    os.chown(path, 0 if os.geteuid() == 0 else os.geteuid(), os.getegid())
                    path.chmod(0o755 if path.is_dir() else 0o644)


def _reason(code: int, timed_out: bool, result_cut: bool, limits: Limits, output: str, idle: bool = False) -> str:
    if idle:
        return (f"computed nothing for {limits.idle_s:g} s (a sleep, or a wait for something that never comes): "
                "the sandbox stops a job that does")
    if timed_out:
        return f"stopped after {limits.wall_s:g} s (the sandbox's time limit): does it loop forever?"
    if result_cut:
        # said after "your kernel": "your kernel its result is over ..." had read as a broken sentence
        return f"made a result over {limits.result_bytes >> 20} MiB, the most the sandbox hands back: try a smaller size"
    if code == 0:
        return ""
    # bwrap passes on the job's exit status; a job killed by a signal exits 128 + the signal.
    sig = -code if code < 0 else code - 128 if code > 128 else 0
    if sig == signal.SIGXCPU:
        return f"ran out of CPU time ({limits.cpu_s} s, the sandbox's limit)"
    if sig == signal.SIGXFSZ:
        return f"wrote a file over {limits.file_bytes >> 20} MiB (the sandbox's limit)"
    if sig in _SIGNALS:
        return f"crashed ({_SIGNALS[signal.Signals(sig)]}, signal {sig})"
    if sig:
        return f"was killed by signal {sig}"
    return f"exited with status {code}"


# How often a running job is looked at (its end, its time limits).
_POLL_S = 0.25
_TICKS = os.sysconf("SC_CLK_TCK")


class _IdleWatch:
    """Whether a sandbox's processes (its user id's) have used less than 1% of a core over the last
    idle_s seconds (0: never). CPU time is counted in clock ticks, the job's own and what its waited-for
    children used (a compiler's passes): a busy job, even one on a crowded machine at a lower priority,
    gets more than that."""

    def __init__(self, uid: int, idle_s: float):
        self.uid, self.idle_s = uid, idle_s
        self.since, self.ticks = time.perf_counter(), 0
        self.least = max(1, int(0.01 * idle_s * _TICKS))

    def idle(self) -> bool:
        if not self.idle_s:
            return False
        now, ticks = time.perf_counter(), _cpu_ticks(self.uid)
        if ticks >= self.ticks + self.least:
            self.since, self.ticks = now, ticks
        elif ticks < self.ticks:   # a process ended before its parent counted it: the sum drops, not the time
            self.ticks = ticks
        return now - self.since >= self.idle_s


def _cpu_ticks(uid: int) -> int:
    """The CPU time, in clock ticks, of a user id's live processes and of the children they waited for
    (utime, stime, cutime and cstime of /proc/PID/stat)."""
    total = 0
    for pid in _processes_of(uid):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])
        except (OSError, IndexError, ValueError):
            pass
    return total


def _kill(proc: subprocess.Popen, uid: int) -> None:
    """bwrap and everything under it. bwrap's --die-with-parent does not outlive the change of user
    ids inside, so each sandbox's own user id is what finds its processes: every process of it is
    killed (a fork bomb's too) until none is left."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    deadline = time.monotonic() + 2.0
    while (left := _processes_of(uid)) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def _processes_of(uid: int) -> list[int]:
    """The live processes of a user id (zombies are gone already: they wait for a parent to reap them,
    and a signal does nothing to them)."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid and Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(entry.name))
            except (OSError, IndexError):
                pass
    return pids


def stop() -> None:
    """Ends every sandbox at once (the server is stopping)."""
    _STOPPED.set()
    with _LOCK:
        running = list(_RUNNING.values())
    for proc, uid in running:
        _kill(proc, uid)


def engine_binds() -> list[tuple[Path, Path]]:
    """What a job that runs the engine's own code needs besides /usr: the project's engine/ and cuda/,
    and the Python it runs on (read-only, at the same paths)."""
    return [(ROOT / "engine", ROOT / "engine"), (ROOT / "cuda", ROOT / "cuda"),
            *[(p, p) for p in _python_roots()], *[(p, p) for p in _toolkit_roots()]]


def _toolkit_bin() -> list[str]:
    """nvcc's folder by its real path: /usr/local/cuda is often a link through /etc/alternatives,
    which the sandbox does not have."""
    nvcc = shutil.which("nvcc")
    return [str(Path(nvcc).resolve().parent)] if nvcc else []


def _toolkit_roots() -> list[Path]:
    """The CUDA toolkit (nvcc, nvdisasm, its libraries) where it lives outside /usr (a GPU machine's
    /usr/local/cuda may be a link to it): bound at its own path, so the link resolves inside."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return []
    root = Path(nvcc).resolve().parents[1]
    return [] if root.is_relative_to("/usr") or root == Path("/") else [root]
