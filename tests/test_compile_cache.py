"""The compile cache: the server loads and runs what it finds there, so it must never load a damaged
or planted artefact, its failures are one-line errors, it stays within its budget (least recently
used entries go first), and what a killed build left behind is swept."""
import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.kernels import build
from engine.kernels.cache import _digest, _digest_file, build_key, cache_dir, verified_bytes

ROOT = Path(__file__).resolve().parent.parent


# The compile cache: the server loads and runs what it finds there, so it must never load a damaged
# or planted artefact, and its failures are one-line errors.

@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(path))
    return path


def _truncated(data: bytes) -> bytes:
    return data[:6000]


def _garbage(data: bytes) -> bytes:
    return bytes(range(256)) * (len(data) // 256)


def _planted(data: bytes) -> bytes:
    # Another kernel's library, put under this one's predictable name.
    return build.build_cpu_library("naive_x_rows.cu", {}).read_bytes()


def _builders():
    out = []
    if build.host_compiler():
        out.append(pytest.param(lambda: build.build_cpu_library("naive_x_cols.cu", {}), id="cpu-so"))
    if build.nvcc():
        out.append(pytest.param(lambda: build.build_cubin("naive_x_cols.cu", {}, False), id="cubin"))
    return out


@pytest.mark.parametrize("damage", [_truncated, _garbage, _planted], ids=["truncated", "garbage", "planted"])
@pytest.mark.parametrize("make", _builders())
def test_a_damaged_cache_entry_is_rebuilt_not_returned(cache, make, damage):
    target = make()
    good = target.read_bytes()
    bad = damage(good)
    assert bad != good
    target.write_bytes(bad)
    again = make()
    assert again == target and target.read_bytes() == good
    assert verified_bytes(target) == good


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_the_cli_survives_a_truncated_library_after_a_restart(cache):
    # Before: the truncated .so was loaded as is, a bus error that killed the process, every time.
    cmd = [sys.executable, "-m", "engine", "trace", "naive_x_cols", "--m", "32", "--n", "32", "--k", "32",
           "--source", "cpu"]
    assert subprocess.run(cmd, cwd=ROOT, capture_output=True).returncode == 0
    lib = next(cache.glob("naive_x_cols-cpu-*.so"))
    lib.write_bytes(lib.read_bytes()[:6000])
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["relative_error"] < 1e-6


def test_a_new_cache_directory_is_private(cache):
    assert cache_dir() == cache
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_cache_others_can_write_to_is_made_private(cache):
    cache.mkdir()
    cache.chmod(0o777)
    cache_dir()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_cache_of_another_user_is_refused(cache):
    cache.mkdir()
    os.chown(cache, 12345, 12345)
    with pytest.raises(EngineError, match=rf"compile cache {cache} belongs to another user.*MATMUL_EXPLORER_CACHE"):
        cache_dir()


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_a_read_only_cache_is_a_one_line_error(cache, monkeypatch):
    cache.mkdir(mode=0o700)
    if os.geteuid() == 0:   # root writes through 0500: fail the write as a read-only mount does
        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, "Read-only file system")
        monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    else:
        cache.chmod(0o500)
    with pytest.raises(EngineError) as err:
        build.build_cpu_library("naive_x_cols.cu", {})
    reason = "Read-only file system" if os.geteuid() == 0 else "Permission denied"
    assert str(err.value) == (f"the compile cache {cache} is not writable ({reason}); "
                              "set MATMUL_EXPLORER_CACHE to a writable directory")


def test_a_hung_compiler_is_stopped_with_a_one_line_error(cache, tmp_path, monkeypatch):
    fake = tmp_path / "hanging-g++"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "hanging-g++ 1.0"; exit 0; fi\n'
                    f'echo $$ > {tmp_path}/pid\nsleep 60\n')
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    monkeypatch.setattr(build, "COMPILE_TIMEOUT", 1)
    with pytest.raises(EngineError, match=r"^the C\+\+ compiler on naive_x_cols.cu took longer than 1 s and was stopped$"):
        build.build_cpu_library("naive_x_cols.cu", {})
    group = int((tmp_path / "pid").read_text())
    assert _running_in_group(group) == []   # the compiler and what it started (sleep) are gone


def test_a_compiler_killed_halfway_leaves_no_temporary_files_behind(cache, tmp_path, monkeypatch):
    # nvcc and g++ write their intermediate files (tmpxft_*, cc*.s) in TMPDIR and remove them only
    # when they finish; killed (a timeout, the server stopping), they left them in /tmp for good.
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    fake = tmp_path / "slow-g++"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "slow-g++ 1.0"; exit 0; fi\n'
                    'echo intermediate > "${TMPDIR:-/tmp}/cc$$.s"\nsleep 60\n')
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    monkeypatch.setattr(build, "COMPILE_TIMEOUT", 1)
    with pytest.raises(EngineError, match="took longer than 1 s and was stopped"):
        build.build_cpu_library("naive_x_cols.cu", {})
    assert list(system_tmp.iterdir()) == []
    assert [p.name for p in cache.iterdir() if p.is_dir()] == []   # nor in the cache: its folder went with the build


def _running_in_group(pgid: int) -> list[int]:
    """Processes of a process group that are not zombies (a killed grandchild is reaped by init
    a moment later)."""
    alive = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat_file.parent.name))
    return alive


@pytest.mark.parametrize("make", _builders())
def test_a_planted_entry_with_a_matching_digest_is_not_loaded(cache, make):
    """A digest shows damage only: whoever plants an artefact can plant its digest. An entry others
    could have written (here: writable by group and others, as in a cache that was not private
    before) is rebuilt, never loaded, even though its digest matches."""
    target = make()
    planted = _garbage(target.read_bytes())
    target.write_bytes(planted)
    _digest_file(target).write_text(_digest(planted))
    target.chmod(0o666)
    assert verified_bytes(target) is None
    make()
    assert target.read_bytes() != planted and verified_bytes(target) is not None


# ------------------------------------------------------------------ bounded, swept, shown and cleared

def _entry(folder: Path, stem: str, nbytes: int, age_s: float) -> None:
    for name, size in ((f"{stem}.so", nbytes), (f"{stem}.so.sha256", 72)):
        path = folder / name
        path.write_bytes(b"x" * size)
        os.utime(path, (time.time() - age_s,) * 2)


def test_the_cache_keeps_to_its_budget_least_recently_used_first(cache, monkeypatch):
    from engine.kernels import cache as compile_cache
    folder = cache_dir()
    for i, age in enumerate([5000, 4000, 3000, 2000, 30]):
        _entry(folder, f"k{i}-cpu-{i:020d}", 1_000_000, age)
    monkeypatch.setenv(compile_cache.BUDGET_ENV, "2.5")      # MB: room for two of the five
    compile_cache.evict()
    left = sorted({p.name.split(".")[0] for p in folder.iterdir()})
    # the oldest go first; the one used a moment ago stays whatever the budget (another process may
    # be loading it)
    assert left == ["k3-cpu-00000000000000000003", "k4-cpu-00000000000000000004"]
    assert compile_cache.usage(folder) == (2 * (1_000_000 + 72), 2)


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_a_new_build_evicts_and_a_used_entry_counts_as_recent(cache, monkeypatch):
    from engine.kernels import cache as compile_cache
    old = build.build_cpu_library("naive_x_cols.cu", {})
    keep = build.build_cpu_library("naive_x_rows.cu", {})
    for p in cache.iterdir():
        os.utime(p, (time.time() - 3600,) * 2)
    compile_cache._TOUCHED.clear()
    assert verified_bytes(keep) is not None                  # loaded: now the most recently used
    monkeypatch.setenv(compile_cache.BUDGET_ENV, str((keep.stat().st_size * 2.5) / 2**20))
    build.build_cpu_library("tiled_guarded.cu", {"TILE": 8})   # over budget now
    assert not old.exists() and keep.exists()


def test_what_a_killed_build_left_behind_is_swept_and_never_loaded(cache):
    from engine.kernels import cache as compile_cache
    folder = cache_dir()
    dead = 2**22 + 12345      # above pid_max's default: no such process
    (folder / f".building-{dead}-abc").mkdir()
    (folder / f".building-{dead}-abc" / "naive_x_cols-cpu-1.so").write_bytes(b"half")
    (folder / f".writing-{dead}-naive_x_cols-cpu-1.so.sha256.xyz").write_text("half")
    mine = folder / f".building-{os.getpid()}-live"
    mine.mkdir()
    assert compile_cache.sweep_stale(folder) == 2
    assert sorted(p.name for p in folder.iterdir()) == [mine.name]    # a live process's build stays


def test_the_cli_shows_the_cache_and_clears_it(cache, capsys):
    from engine.cli import main
    folder = cache_dir()
    _entry(folder, "k0-cpu-00000000000000000000", 3 * 2**20, 100)
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert f"{folder}: 1 build, 3.0 MB of 200 MB" in out
    assert main(["cache", "--clear"]) == 0
    assert "cleared 1 build (3.0 MB)" in capsys.readouterr().out
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("argv", [["cache"], ["cache", "--clear"]])
def test_looking_at_a_cache_that_is_not_there_does_not_make_it(cache, capsys, argv):
    from engine.cli import main
    assert main(argv) == 0
    assert f"{cache}: no builds yet" in capsys.readouterr().out
    assert not cache.exists()


def test_builds_that_could_not_be_removed_are_not_reported_cleared(cache, capsys, monkeypatch):
    """`cache --clear` ignored a failed unlink and said "cleared 2 builds" with one of them still there."""
    from engine.cli import main
    folder = cache_dir()
    _entry(folder, "k0-cpu-00000000000000000000", 2**20, 100)
    _entry(folder, "k1-cpu-11111111111111111111", 2**20, 100)
    real = Path.unlink

    def refuse(self, *args, **kwargs):
        if self.name.startswith("k1-"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", refuse)
    assert main(["cache", "--clear"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: cleared 1 build (1.0 MB) from {folder}, but 1 could not be removed, k1-cpu-"), err
    assert err.endswith("(Permission denied)") and "\n" not in err, err
    assert {p.name.split(".")[0] for p in folder.iterdir()} == {"k1-cpu-11111111111111111111"}


def test_an_entry_another_process_evicted_first_still_counts_as_freed(cache, monkeypatch):
    """Two processes evicting at once: the entry the other removed after this one's scan counted 0
    bytes freed, so this one went on and evicted the next entry too, leaving the cache under budget."""
    from engine.kernels import cache as compile_cache
    folder = cache_dir()
    for i, age in enumerate([5000, 4000, 3000]):
        _entry(folder, f"k{i}-cpu-{str(i) * 20}", 2**20, age)
    scan = compile_cache.entries

    def raced(path=None):
        found = scan(path)
        for f in found[0].files:   # the other process removes the oldest right after this scan
            f.unlink()
        return found

    monkeypatch.setattr(compile_cache, "entries", raced)
    compile_cache.evict(budget=2 * 2**20 + 2 * 72)
    assert {p.name.split(".")[0] for p in folder.iterdir()} == {"k1-cpu-" + "1" * 20, "k2-cpu-" + "2" * 20}


def test_a_budget_that_is_not_a_number_is_a_one_line_error(cache, monkeypatch):
    from engine.kernels import cache as compile_cache
    monkeypatch.setenv(compile_cache.BUDGET_ENV, "lots")
    with pytest.raises(EngineError, match="MATMUL_EXPLORER_COMPILE_CACHE_MB must be a number of megabytes"):
        compile_cache.budget_bytes()


def test_a_bad_budget_is_said_before_the_compile_not_after_it(cache, monkeypatch):
    """The budget was read only to evict after a new build: a trace compiled for seconds, then failed."""
    from engine.kernels import cache as compile_cache
    monkeypatch.setenv(compile_cache.BUDGET_ENV, "lots")
    built = []
    with pytest.raises(EngineError, match="MATMUL_EXPLORER_COMPILE_CACHE_MB must be a number of megabytes"):
        compile_cache.atomic_build(compile_cache.build_path("k0", "cpu", "0" * 20), built.append)
    assert built == []


# ------------------------------------------------------------------ only the build of its key is loaded

def _trace_cols() -> dict:
    cmd = [sys.executable, "-m", "engine", "trace", "naive_x_cols", "--m", "64", "--n", "64", "--k", "32",
           "--source", "cpu"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {k: v for k, v in json.loads(done.stdout).items() if k != "seconds"}   # all but the timings


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_another_kernels_library_with_its_matching_digest_is_rebuilt(cache):
    """A digest shows damage, not substitution: naive_x_rows's valid library and its own digest file,
    put under naive_x_cols's names, were loaded, and the coalescing lesson inverted."""
    right = _trace_cols()
    target = build.build_cpu_library("naive_x_cols.cu", {})
    other = build.build_cpu_library("naive_x_rows.cu", {})
    good = target.read_bytes()
    target.write_bytes(other.read_bytes())
    _digest_file(target).write_bytes(_digest_file(other).read_bytes())
    assert verified_bytes(target) is None
    assert _trace_cols() == right
    assert target.read_bytes() == good


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_a_forged_digest_does_not_make_another_build_this_one(cache):
    """The digest file written for this very name, as whoever can write the cache could: the key the
    artefact carries still tells it is not this build."""
    target = build.build_cpu_library("naive_x_cols.cu", {})
    other = build.build_cpu_library("naive_x_rows.cu", {}).read_bytes()
    target.write_bytes(other)
    _digest_file(target).write_text(_digest(other, build_key(target)))
    assert verified_bytes(target) is None
    build.build_cpu_library("naive_x_cols.cu", {})
    assert verified_bytes(target) is not None and target.read_bytes() != other


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_a_planted_library_is_never_loaded(cache, tmp_path):
    """A library with a constructor, planted under a build's name with a digest that matches: loading
    it would run the constructor in the worker. It is rebuilt instead, and the trace is right."""
    right = _trace_cols()
    target = next(cache.glob("naive_x_cols-cpu-*.so"))
    marker = tmp_path / "constructor-ran"
    source = tmp_path / "planted.cpp"
    source.write_text('#include <cstdio>\n'
                      f'__attribute__((constructor)) static void planted() {{ fopen("{marker}", "w"); }}\n'
                      'extern "C" int cpu_trace_run() { return 0; }\n')
    subprocess.run([build.host_compiler(), "-shared", "-fPIC", "-o", str(target), str(source)], check=True)
    planted = target.read_bytes()
    _digest_file(target).write_text(_digest(planted, build_key(target)))
    assert _trace_cols() == right
    assert not marker.exists()
    assert target.read_bytes() != planted and verified_bytes(target) is not None


def _returns_within(call, seconds: float = 120):
    """call()'s result, run in a thread of its own: a read that blocks forever fails the test
    instead of holding it."""
    import threading
    out = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "still blocked"
    return out[0]


@pytest.mark.parametrize("which", ["artefact", "digest"])
@pytest.mark.parametrize("make", _builders())
def test_a_fifo_in_an_entrys_place_is_rebuilt_not_waited_on(cache, make, which):
    """A named pipe where a build or its digest should be: reading it had blocked the reader, and every
    page view behind it, forever (open() waits for a writer). It is no regular file: rebuilt."""
    target = make()
    good = target.read_bytes()
    fifo = target if which == "artefact" else _digest_file(target)
    fifo.unlink()
    os.mkfifo(fifo, 0o600)
    again = _returns_within(make)
    assert again == target and target.read_bytes() == good and verified_bytes(target) == good


@pytest.mark.parametrize("which", ["artefact", "digest"])
@pytest.mark.parametrize("make", _builders())
def test_an_entry_grown_huge_is_rebuilt_not_read(cache, make, which):
    """A file grown huge (40 GB, sparse, in the review) where a build or its digest should be had been
    read whole into the server: a MemoryError on every view that used it, after a restart too. Longer than any build
    writes: rebuilt, without reading it."""
    target = make()
    good = target.read_bytes()
    grown = target if which == "artefact" else _digest_file(target)
    from engine.kernels import cache as compile_cache
    os.truncate(grown, compile_cache.MOST_BYTES + 1)   # a byte past what any build writes
    assert verified_bytes(target) is None
    again = _returns_within(make)
    assert again == target and target.read_bytes() == good and verified_bytes(target) == good


@pytest.mark.parametrize("value", ["inf", "-inf", "1e400", "nan", "1e308", "1e-300"])
def test_a_budget_that_is_no_finite_number_is_a_one_line_error(cache, monkeypatch, value):
    """inf and 1e400 had passed as budgets and failed converting to bytes (OverflowError, a traceback);
    so had 1e308, whose bytes overflow; 1e-300 had been taken as a budget of 0 bytes."""
    from engine.kernels import cache as compile_cache
    monkeypatch.setenv(compile_cache.BUDGET_ENV, value)
    with pytest.raises(EngineError, match="MATMUL_EXPLORER_COMPILE_CACHE_MB"):
        compile_cache.budget_bytes()


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("which", ["build", "digest"])
def test_a_directory_where_a_build_goes_is_named_and_cleared(cache, which):
    """A directory in a build's place was reported as 'the compile cache ... is not writable (Is a
    directory)': the wrong cause, and no way out."""
    from engine import cli
    cache.mkdir(mode=0o700)
    target = build.build_cpu_library("naive_x_cols.cu", {})
    for f in (target, target.with_name(target.name + ".sha256")):
        f.unlink()
    in_the_way = target if which == "build" else target.with_name(target.name + ".sha256")
    (in_the_way / "inner").mkdir(parents=True)
    with pytest.raises(EngineError) as err:
        build.build_cpu_library("naive_x_cols.cu", {})
    assert str(err.value) == (f"the compile cache holds a directory where a build goes ({in_the_way}); remove it, "
                              "or empty the cache: python -m engine cache --clear")
    assert cli.main(["cache", "--clear"]) == 0 and not in_the_way.exists()
    assert build.build_cpu_library("naive_x_cols.cu", {}) == target and target.is_file()


def test_eviction_and_clearing_touch_only_the_caches_own_builds(cache, monkeypatch):
    """Every file in the folder counted as a build: an ordinary trace's eviction deleted a user's
    thesis.tex from a MATMUL_EXPLORER_CACHE that named a folder of theirs, and --clear emptied it."""
    from engine.cli import main
    from engine.kernels import cache as compile_cache
    folder = cache_dir()
    _entry(folder, "k0-cpu-00000000000000000000", 2**20, 5000)
    theirs = [folder / "thesis.tex", folder / "notes.so", folder / "k0-cpu-1.so", folder / "sub" / "x",
              folder / "playground" / "0123" / "mine.cu"]
    for path in theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("keep me")
        os.utime(path, (time.time() - 9000,) * 2)
    monkeypatch.setenv(compile_cache.BUDGET_ENV, "0.001")
    compile_cache.evict()
    assert all(p.exists() for p in theirs) and compile_cache.usage(folder) == (0, 0)
    _entry(folder, "k0-cpu-00000000000000000000", 2**20, 5000)
    assert main(["cache", "--clear"]) == 0
    assert all(p.exists() for p in theirs) and compile_cache.usage(folder) == (0, 0)


@pytest.mark.parametrize("kind", ["trace", "plain", "cpu"])
def test_every_name_a_build_is_saved_under_is_one_the_cache_counts(cache, kind):
    """build.py and the cache's own count once spelled a build's name each on their own: a build
    named otherwise is never evicted, and the cache grows past its bound."""
    from engine.kernels import cache as compile_cache
    target = compile_cache.build_path("naive_x_rows", kind, "0123456789abcdef0123")
    for name in (target.name, target.name + ".sha256", target.with_suffix(".sass.json").name):
        assert compile_cache.is_build_name(name), name
    for kernel, key in (("a-b", "0" * 20), ("k", "0" * 19), ("k", "g" * 20)):
        with pytest.raises(ValueError, match="not a name the compile cache keeps"):
            compile_cache.build_path(kernel, kind, key)


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_a_real_build_is_counted_by_the_cache(cache):
    from engine.kernels import cache as compile_cache
    built = build.build_cpu_library("naive_x_rows.cu", {})
    assert compile_cache.is_build_name(built.name) and len(build_key(built).rsplit("-", 1)[1]) == compile_cache.KEY_LENGTH
