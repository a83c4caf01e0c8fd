"""Every .cu compiles with nvcc in both builds (CI has nvcc; compile only), and for the host."""
import errno
import json
import os
import stat
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.kernels import build, registry, sources

ROOT = Path(__file__).resolve().parent.parent
ALL_CU = sorted((ROOT / "cuda").glob("*.cu")) + sorted((ROOT / "tests" / "cuda").glob("*.cu"))


TRACED_CU = [p for p in ALL_CU if sources.load(str(p)).traced]


def _choices(path: Path) -> list[dict[str, int]]:
    """The first and last parameter choices of the catalog entries that launch the source (the tests'
    own sources take TILE and PAD)."""
    combos = [c for spec in registry.CATALOG if spec.compiled for launch in spec.launches
              if launch.file == path.name for c in spec.combinations()] or [{"TILE": 8, "PAD": 0}, {"TILE": 32, "PAD": 1}]
    return [combos[0], combos[-1]]


def _arch(path: Path) -> str | None:
    """The architecture the catalog builds the source for, where it needs one (wgmma: sm_90a)."""
    return next((launch.arch for spec in registry.CATALOG for launch in spec.launches if launch.file == path.name),
                None)


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
@pytest.mark.parametrize("path", ALL_CU, ids=lambda p: p.name)
@pytest.mark.parametrize("traced", [False, True], ids=["plain", "traced"])
def test_nvcc_builds_every_kernel(path, traced):
    for params in _choices(path):
        if traced and path not in TRACED_CU:   # the hardware addresses its loads: nothing to record
            with pytest.raises(EngineError, match="not traced"):
                build.build_cubin(str(path), params, traced, _arch(path))
            continue
        cubin = build.build_cubin(str(path), params, traced, _arch(path))
        assert cubin.stat().st_size > 0


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("path", TRACED_CU, ids=lambda p: p.name)
def test_host_compiler_builds_every_kernel_for_cpu_traces(path):
    assert build.build_cpu_library(str(path), _choices(path)[-1]).stat().st_size > 0


@pytest.mark.skipif(build.nvcc() is None, reason="nvcc not installed")
def test_plain_build_has_no_tracing_code():
    cubin = build.build_cubin("naive_x_cols.cu", {}, traced=False)
    traced = build.build_cubin("naive_x_cols.cu", {}, traced=True)
    assert b"trace_records" not in cubin.read_bytes() and b"trace_records" in traced.read_bytes()


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
    assert build.verified_bytes(target) == good


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_the_cli_survives_a_truncated_library_after_a_restart(cache):
    # Before: the truncated .so was loaded as is, a bus error that killed the process, every time.
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "engine", "trace", "naive_x_cols", "--m", "32", "--n", "32", "--k", "32",
           "--source", "cpu"]
    assert subprocess.run(cmd, cwd=ROOT, capture_output=True).returncode == 0
    lib = next(cache.glob("naive_x_cols-cpu-*.so"))
    lib.write_bytes(lib.read_bytes()[:6000])
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["relative_error"] < 1e-6


def test_a_new_cache_directory_is_private(cache):
    assert build.cache_dir() == cache
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_cache_others_can_write_to_is_made_private(cache):
    cache.mkdir()
    cache.chmod(0o777)
    build.cache_dir()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_cache_of_another_user_is_refused(cache):
    cache.mkdir()
    os.chown(cache, 12345, 12345)
    with pytest.raises(EngineError, match=rf"compile cache {cache} belongs to another user.*MATMUL_EXPLORER_CACHE"):
        build.cache_dir()


@pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
def test_a_read_only_cache_is_a_one_line_error(cache, monkeypatch):
    cache.mkdir(mode=0o700)
    if os.geteuid() == 0:   # root writes through 0500: fail the write as a read-only mount does
        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, "Read-only file system")
        monkeypatch.setattr(build.tempfile, "TemporaryDirectory", refuse)
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
    build._digest_file(target).write_text(build._digest(planted))
    target.chmod(0o666)
    assert build.verified_bytes(target) is None
    make()
    assert target.read_bytes() != planted and build.verified_bytes(target) is not None
