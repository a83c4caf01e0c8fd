"""The compile cache: where builds are kept, checked before they are loaded, and evicted.

Builds live under $MATMUL_EXPLORER_CACHE or ~/.cache/cuda-matmul-explorer, named by a hash of
everything that goes into them (engine/kernels/build.py makes the names). The server loads and runs
what it finds here, so the directory is private to its user (0700) and every artefact has a digest
file (size, sha256 and the build's key, written after it), and carries its key compiled in: an
artefact whose digest is missing or does not match (truncated, overwritten, planted), or that is not
the build of its own key (another kernel's valid build moved under this name), is built again, never
loaded.

The cache is bounded in bytes ($MATMUL_EXPLORER_COMPILE_CACHE_MB, 200 by default): after each new
build the least recently used entries go. Half-written entries never become visible (each build is
made in a folder of its own and renamed into place), and what a killed process left behind is swept
the next time a process opens the cache. `python -m engine cache` shows its size and clears it.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engine.errors import EngineError

ENV = "MATMUL_EXPLORER_CACHE"
BUDGET_ENV = "MATMUL_EXPLORER_COMPILE_CACHE_MB"
DEFAULT_BUDGET_MB = 200
MAX_BUDGET_MB = 2**40   # 1 EiB: a budget past any machine (every cache budget setting's bound)
# Temporary names carry the pid of the process writing them, so that what a killed process left
# behind can be told from what a live one is still writing.
_BUILDING = ".building-"
_WRITING = ".writing-"
# An entry used this recently is never evicted: another process may be about to load it.
_RECENT_S = 60.0

_OPENED: set[Path] = set()
_OPENED_LOCK = threading.Lock()
_IN_FLIGHT: set[Path] = set()       # this process's build folders, removed at shutdown if still there
_IN_FLIGHT_LOCK = threading.Lock()
_CLOSED = threading.Event()          # set at shutdown (discard_in_flight): no build starts after it
_TOUCHED: set[Path] = set()         # entries this process has marked as used (once is enough)
_TARGET_LOCKS: dict[Path, threading.Lock] = {}
_TARGET_LOCKS_LOCK = threading.Lock()
_BUILDERS: dict[Path, bool] = {}    # targets being built now: True where the background builds it
_EVICT_LOCK = threading.Lock()


def cache_root() -> Path:
    """Where the cache is, made or not."""
    return Path(os.environ.get(ENV) or Path.home() / ".cache" / "cuda-matmul-explorer")


def cache_dir() -> Path:
    """The cache, made (private) where it is not yet."""
    path = cache_root()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        _make_private(path)
    except OSError as exc:
        raise EngineError(f"the compile cache {path} cannot be used ({exc.strerror or exc}); "
                          f"set {ENV} to a directory of yours") from None
    with _OPENED_LOCK:
        first = path not in _OPENED
        _OPENED.add(path)
    if first:
        sweep_stale(path)
    return path


def _make_private(path: Path) -> None:
    """What is in the cache gets loaded and run: nobody else may write there."""
    st = path.stat()
    if st.st_uid != os.geteuid():
        raise EngineError(f"the compile cache {path} belongs to another user (uid {st.st_uid}); "
                          f"set {ENV} to a directory of yours")
    if st.st_mode & 0o022:
        if st.st_mode & stat.S_ISVTX:   # a shared directory like /tmp: not ours to lock up
            raise EngineError(f"the compile cache {path} is a shared directory; "
                              f"set {ENV} to a directory of yours")
        path.chmod(0o700)


def unwritable(path: Path, exc: OSError) -> EngineError:
    return EngineError(f"the compile cache {path} is not writable ({exc.strerror or exc}); "
                       f"set {ENV} to a writable directory")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _writer_pid(name: str) -> int | None:
    for prefix in (_BUILDING, _WRITING):
        if name.startswith(prefix):
            head = name[len(prefix):].split("-", 1)[0]
            return int(head) if head.isdigit() else None
    return None


def sweep_stale(path: Path) -> int:
    """Removes the build folders and half-written files of processes that are gone (killed mid-build):
    they are never loaded, but would otherwise stay for good. Returns how many were removed."""
    removed = 0
    try:
        names = os.listdir(path)
    except OSError:
        return 0
    for name in names:
        pid = _writer_pid(name)
        if pid is None or pid == os.getpid() or _pid_alive(pid):
            continue
        target = path / name
        try:
            shutil.rmtree(target) if target.is_dir() else target.unlink()
            removed += 1
        except OSError:
            pass
    return removed


# What the cache names itself (engine/kernels/build.py: "<kernel>-<trace|plain|cpu>-<key>.cubin" or
# ".so", and beside a build its ".sha256" and ".sass.json"): only these are counted, evicted and
# cleared. Whatever else is in the folder (the Playground's sources, or a user's own files where the
# setting names a folder of theirs) is not the cache's to remove: eviction had deleted it.
# build_path makes the names, so the two cannot drift apart.
KEY_LENGTH = 20                                                   # hex digits of a build's key
_BUILD_KINDS = {"trace": ".cubin", "plain": ".cubin", "cpu": ".so"}   # kind of build -> what it is saved as
_BUILD_NAME = re.compile(rf"[A-Za-z0-9_]+-(?:{'|'.join(_BUILD_KINDS)})-[0-9a-f]{{{KEY_LENGTH}}}"
                         r"\.(?:cubin|so|sass\.json)(?:\.sha256)?")


def is_build_name(name: str) -> bool:
    return _BUILD_NAME.fullmatch(name) is not None


def build_path(kernel: str, kind: str, key: str) -> Path:
    """Where the cache keeps a build of `kernel` ("trace", "plain" or "cpu") whose inputs hash to `key`."""
    name = f"{kernel}-{kind}-{key}{_BUILD_KINDS[kind]}"
    if not is_build_name(name):   # a name eviction would never count: the cache would grow past its bound
        raise ValueError(f"{name!r} is not a name the compile cache keeps")
    return cache_dir() / name


def _digest_file(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def build_key(target: Path) -> str:
    """An entry's key: its name without suffixes ("naive_x_cols-cpu-<hash of its inputs>")."""
    return target.name.split(".", 1)[0]


# Every build carries its own key, compiled in (engine/kernels/build.py key_source): a digest shows
# damage, not substitution, and a different valid build with a matching digest under this name (the
# coalescing lesson's 16 sectors per request became 2) or a planted library would otherwise be loaded.
KEY_PREFIX = "MATMUL_BUILD_KEY="


def key_marker(key: str) -> bytes:
    """The bytes a build of key carries: the C string, with its terminating NUL."""
    return f"{KEY_PREFIX}{key}\0".encode()


def _digest(data: bytes, key: str = "") -> str:
    """The digest file's line: size, sha256 and the key of the build it vouches for."""
    return f"{len(data)} {hashlib.sha256(data).hexdigest()} {key}".rstrip()


def _touch(target: Path) -> None:
    """Marks an entry as used, for least-recently-used eviction (once per process and entry: the
    order only needs to be right between entries used minutes apart)."""
    if target in _TOUCHED:
        return
    try:
        os.utime(target)
        _TOUCHED.add(target)
    except OSError:
        pass


# The most a cache file read back may hold: far above what a build writes (the largest, a traced
# cubin, is about 2.4 MB). A file grown past it (a full disk's junk, a planted 40 GB sparse file) had
# been read whole into the server, a MemoryError on every view that used it, after restarts too.
MOST_BYTES = 64 * 1024 * 1024


def read_own(path: Path) -> bytes:
    """A cache file's bytes, where it is a regular file of ours that nobody else can write and at most
    MOST_BYTES long; OSError otherwise. A digest shows damage, not who wrote the file: whoever can plant an artefact can plant
    its digest too, so the file must also be ours (the cache directory is private, but one that was
    not before may still hold what others put there). Opened without waiting and without following a
    link, and checked on the open file: reading a FIFO put in a file's place had held its reader, and
    every page view queued behind it, forever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise OSError(f"{path.name} is not a regular file of this cache's own")
        if st.st_size > MOST_BYTES:
            raise OSError(f"{path.name} is {st.st_size:,} bytes, more than any build writes")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MOST_BYTES + 1)   # (a file that grows meanwhile is cut, and fails its digest)
    finally:
        os.close(fd)


def verified_bytes(target: Path) -> bytes | None:
    """The artefact's bytes if its digest file vouches for them, else None (missing, damaged, not
    a regular file, or not written by this cache)."""
    try:
        data = read_own(target)
        if read_own(_digest_file(target)).decode().strip() != _digest(data, build_key(target)):
            return None
    except (OSError, UnicodeDecodeError):
        return None
    # Checked on the very bytes the loader gets, before anything loads them (a library's constructors
    # run when it is loaded): only the build of this key is this entry.
    if key_marker(build_key(target)) not in data:
        return None
    _touch(target)
    return data


def checked_bytes(target: Path) -> bytes:
    """verified_bytes for a loader: what it will run, or a one-line error (the entry changed
    between its build or check and this read; asking again rebuilds it)."""
    data = verified_bytes(target)
    if data is None:
        raise EngineError(f"the compiled kernel {target.name} changed in the compile cache while it was "
                          "being loaded; ask again")
    return data


def is_built(target: Path) -> bool:
    return verified_bytes(target) is not None


def write_atomic(path: Path, data: bytes) -> None:
    """Writes a file that readers see whole or not at all."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{_WRITING}{os.getpid()}-{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_build(target: Path, build, background: bool = False) -> Path:
    """target, built by build(path) into a folder of its own first unless the cache already holds it.
    One build per target in this process: a request that needs what another request is compiling
    right now waits for it instead of compiling it a second time. Never behind the background,
    though: its compiler runs at the lowest priority, which a busy machine starves, so a view
    that needs the same build compiles it itself, side by side (the renames keep that safe, as
    with other processes racing: the digest is written after its artefact, so a reader sees either
    a matching pair or a mismatch it rebuilds)."""
    if is_built(target):
        return target
    budget = budget_bytes()   # a bad setting said before the compile, not after its seconds of work
    with _TARGET_LOCKS_LOCK:
        lock = _TARGET_LOCKS.setdefault(target, threading.Lock())
        behind_background = _BUILDERS.get(target) is True and not background
    if behind_background:
        _build_into(target, build)
    else:
        with lock:
            if is_built(target):
                return target
            _BUILDERS[target] = background
            try:
                _build_into(target, build)
            finally:
                _BUILDERS.pop(target, None)
    evict(budget)
    return target


def _in_the_way(target: Path) -> EngineError | None:
    """A directory where the build or its digest goes (rename cannot replace it): said as that, with
    the way out, not as a cache that is not writable."""
    for path in (target, _digest_file(target)):
        if path.is_dir() and not path.is_symlink():
            return EngineError(f"the compile cache holds a directory where a build goes ({path}); remove it, "
                               "or empty the cache: python -m engine cache --clear")
    return None


def _build_into(target: Path, build) -> None:
    if (err := _in_the_way(target)) is not None:
        raise err
    try:
        # Made and registered in one step, and never once shutdown has cleared the register: a
        # thread that went on building while the server stopped left its folder behind for good.
        with _IN_FLIGHT_LOCK:
            if _CLOSED.is_set():
                raise EngineError("the server is stopping: no new builds")
            folder = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{_BUILDING}{os.getpid()}-"))
            _IN_FLIGHT.add(folder)
        try:
            out = folder / target.name
            build(out)
            data = out.read_bytes()
            if key_marker(build_key(target)) not in data:   # else it would be rebuilt on every use
                raise EngineError(f"the build {target.name} does not carry its key ({KEY_PREFIX}...); "
                                  "the compiler dropped it")
            os.replace(out, target)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            with _IN_FLIGHT_LOCK:
                _IN_FLIGHT.discard(folder)
        write_atomic(_digest_file(target), _digest(data, build_key(target)).encode())
    except OSError as exc:   # the compilers' own failures arrive as EngineError
        raise unwritable(target.parent, exc) from None


def discard_in_flight() -> None:
    """At shutdown: the build folders of compilers that were just killed."""
    with _IN_FLIGHT_LOCK:
        _CLOSED.set()
        folders = list(_IN_FLIGHT)
        _IN_FLIGHT.clear()
    for folder in folders:
        _remove_folder(folder)


def discard_in_flight_now() -> None:
    """discard_in_flight for a worker told to stop (workers._stop_now), which may have stopped while
    holding the register's lock: without it (the worker exits right after; what a race leaves, the
    app sweeps once the worker is gone)."""
    try:
        folders = list(_IN_FLIGHT)
    except RuntimeError:   # another thread changed it meanwhile: the app's sweep has them
        return
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _remove_folder(folder: Path, tries: int = 20) -> None:
    """rmtree, again while the folder is still there: a build thread writing its next input file
    (build.py writes a header before it starts the compiler) can put one in after rmtree listed the
    folder, so that the folder is not empty when rmtree removes it, and the interpreter then exits
    before that thread removes it itself. Once the folder is gone, that thread cannot write into it."""
    for _ in range(tries):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(0.01)


def sweep_opened() -> None:
    """At shutdown, once the workers are gone: what they were building when they were killed (a
    worker builds what the app had not built for it) goes now, not at the next start."""
    with _OPENED_LOCK:
        opened = list(_OPENED)
    for path in opened:
        sweep_stale(path)


# ------------------------------------------------------------------ size, eviction and clearing

def budget_bytes(env: str = BUDGET_ENV, default_mb: float = DEFAULT_BUDGET_MB) -> int:
    """A budget in bytes from a setting in megabytes (the compile cache's by default)."""
    raw = os.environ.get(env, str(default_mb))
    try:
        mb = float(raw)
    except ValueError:
        raise EngineError(f"{env} must be a number of megabytes, got {raw!r}") from None
    # inf (or 1e400) would fail turned into bytes, and so did 1e308 (its bytes overflow); 1e-300 was 0 bytes.
    if not 2**-20 <= mb <= MAX_BUDGET_MB:
        raise EngineError(f"{env} must be a positive number of megabytes, a byte's worth at least and at most "
                          f"{MAX_BUDGET_MB:,}, got {raw!r}")
    return int(mb * 2**20)


@dataclass
class Entry:
    """One build and what sits beside it (digest, SASS listing): the unit that is evicted."""
    stem: str
    files: list[Path]
    nbytes: int
    used: float        # the newest modification time of its files (touched when loaded)


def entries(path: Path | None = None) -> list[Entry]:
    """The cache's entries, least recently used first."""
    path = path or cache_dir()
    groups: dict[str, Entry] = {}
    try:
        scan = list(os.scandir(path))
    except OSError:
        return []
    for item in scan:
        if not is_build_name(item.name) or not item.is_file(follow_symlinks=False):
            continue
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        # "<kernel>-<kind>-<key>.so", ".so.sha256", ".cubin.sass.json": one entry per stem
        stem = item.name.split(".", 1)[0]
        entry = groups.setdefault(stem, Entry(stem, [], 0, 0.0))
        entry.files.append(Path(item.path))
        entry.nbytes += st.st_size
        entry.used = max(entry.used, st.st_mtime)
    return sorted(groups.values(), key=lambda e: e.used)


def usage(path: Path | None = None) -> tuple[int, int]:
    """(bytes, entries) the cache holds."""
    found = entries(path)
    return sum(e.nbytes for e in found), len(found)


def evict(budget: int | None = None, path: Path | None = None) -> int:
    """Removes the least recently used entries until the cache is within its budget (entries used
    in the last minute stay: another process may be loading them). Returns the bytes freed."""
    budget = budget_bytes() if budget is None else budget
    with _EVICT_LOCK:
        found = entries(path)
        total = sum(e.nbytes for e in found)
        freed, now = 0, time.time()
        for entry in found:
            if total - freed <= budget:
                break
            if now - entry.used < _RECENT_S:
                continue
            # what stayed is not freed; a file another process removed first is (it counted in total)
            freed += entry.nbytes - sum(size for _, _, size in _remove_files(entry.files)[1])
        return freed


def _remove_files(files: list[Path]) -> tuple[int, list[tuple[Path, OSError, int]]]:
    """Removes files; (bytes removed, each file that stayed with why and its size). A file already
    gone counts as removed (another process evicted it first), with no bytes."""
    freed, failed = 0, []
    for f in files:
        size = 0
        try:
            size = f.lstat().st_size
            f.unlink()
            freed += size
        except FileNotFoundError:
            pass
        except OSError as exc:
            failed.append((f, exc, size))
    return freed, failed


def builds_text(count: int) -> str:
    """"1 build", "3 builds": how messages count builds."""
    return f"{count:,} build{'' if count == 1 else 's'}"


def clear(path: Path | None = None) -> tuple[int, int]:
    """Empties the cache (builds of processes still running are left to finish). Returns (bytes,
    entries) removed; an EngineError that says so where a file could not be removed."""
    path = path or cache_dir()
    found = entries(path)
    freed, failed, removed = 0, [], 0   # failed: one (file, why) per build that stayed
    for entry in found:
        nbytes, stayed = _remove_files(entry.files)
        freed += nbytes
        failed += stayed[:1]
        removed += not stayed
    # Builds are files: a directory under a build's name is in its way (_in_the_way), and clearing is
    # the way out it names. Other folders (the Playground's) are not builds.
    try:
        strays = [d for d in os.scandir(path) if is_build_name(d.name) and d.is_dir(follow_symlinks=False)]
    except OSError:
        strays = []
    for d in strays:
        shutil.rmtree(d.path, ignore_errors=True)
        if os.path.lexists(d.path):
            failed.append((Path(d.path), OSError("a directory that could not be emptied"), 0))
        else:
            removed += 1
    sweep_stale(path)
    if failed:   # had been reported as cleared, every entry counted
        where, exc, _ = failed[0]
        raise EngineError(f"cleared {builds_text(removed)} ({freed / 2**20:.1f} MB) from {path}, but {len(failed)} "
                          f"could not be removed, {where.name} among them ({exc.strerror or exc})")
    return freed, removed
