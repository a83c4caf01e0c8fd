import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import cli
from engine.bench import bench_cli, schema
from engine.cli import main
from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.tracing.plan import check_fits_host, make_plan

ROOT = Path(__file__).resolve().parent.parent


def test_kernels_lists_the_catalog(capsys):
    assert main(["kernels"]) == 0
    out = capsys.readouterr().out
    for name in ("naive_x_rows", "tiled_unguarded", "shared_bank_conflicts", "cublas_sgemm", "cpu_reference"):
        assert name in out


def test_trace_prints_json_metrics_and_writes_the_trace(capsys, tmp_path):
    out = tmp_path / "t.npz"
    assert main(["trace", "shared_bank_conflicts", "--m", "32", "--n", "32", "--k", "32", "--tile", "32",
                 "--source", "cpu", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["source"] == "cpu" and summary["records"] > 0 and summary["relative_error"] < 1e-6
    ncu = summary["ncu"]["shared_bank_conflicts"]
    assert ncu["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 32 * 32 * (32 + 1)  # 32 warps x 32 p: 32-way + broadcast
    import numpy as np
    assert len(np.load(out)["records"]) == summary["records"]
    assert [p.name for p in tmp_path.iterdir()] == ["t.npz"]      # written through a temporary file, renamed


def test_every_parameter_of_the_catalog_is_an_option_of_its_own(capsys):
    """--bk, --tm, --stages ... come from the kernels' contracts, as --tile and --pad do: none is a
    special case. Named twice with two values, or for a kernel without it, is one line."""
    assert main(["trace", "blocktile_2d", "--m", "64", "--n", "64", "--k", "64", "--bk", "8", "--tn", "8",
                 "--blocks", "0,0", "--source", "cpu"]) == 0
    params = json.loads(capsys.readouterr().out)["params"]
    assert params["BK"] == 8 and params["TN"] == 8 and params["BM"] == 64
    assert main(["trace", "blocktile_2d", "--m", "64", "--n", "64", "--k", "64", "--bk", "8", "--param", "BK=16",
                 "--source", "cpu"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["error: BK is given twice, as 16 and as 8"]
    assert main(["trace", "blocktile_2d", "--m", "64", "--n", "64", "--k", "64", "--tile", "16", "--source", "cpu"]) == 2
    assert "blocktile_2d has no parameter TILE" in capsys.readouterr().err


def test_bad_input_is_one_line_on_stderr(capsys):
    assert main(["trace", "naive_x_rows", "--m", "-1", "--n", "4", "--k", "4", "--source", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: M must be at least 1") and err.count("\n") == 1


def test_over_the_cap_says_cap_and_size(capsys):
    assert main(["trace", "naive_x_cols", "--m", "4096", "--n", "4096", "--k", "4096", "--source", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "137,455,730,688 records" in err and "cap of 30,000,000" in err


def test_one_block_of_every_ladder_rung_at_4096_fits_the_default_cap(monkeypatch):
    monkeypatch.delenv("MATMUL_EXPLORER_RECORD_CAP", raising=False)
    monkeypatch.delenv("MATMUL_EXPLORER_HOST_MEMORY", raising=False)
    for spec in registry.LADDER:   # with its default parameters
        plan = make_plan(spec.name, make_problem(4096, 4096, 4096), [(3, 5)])
        assert plan.estimate <= plan.cap
        check_fits_host(plan)


def test_one_block_of_a_big_product_is_cheap(capsys):
    assert main(["trace", "naive_x_cols", "--m", "4096", "--n", "4096", "--k", "1024", "--blocks", "255,255",
                 "--source", "cpu"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 256 * (2 * 1024 + 1) and summary["traced_blocks"] == 1


def _strict(text: str):
    """json.loads that refuses NaN and Infinity, as strict parsers and Node's JSON.parse do."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    return captured.err.strip()


TRACE_32 = ["trace", "naive_x_cols", "--m", "32", "--n", "32", "--k", "8", "--source", "cpu"]


@pytest.mark.parametrize("block", ["99999999999999999999,0", "0,4294967296", "-1,0", "2,0"])
def test_blocks_beyond_the_grid_or_any_integer_type_are_outside_the_grid(capsys, block):
    assert _one_line_error(capsys, TRACE_32 + [f"--blocks={block}"]) == \
        f"error: block {block} is outside the grid of 2x2 blocks for 32x32x8"


@pytest.mark.parametrize("out, message", [
    ("/nonexistent/dir/t.npz", "error: --out /nonexistent/dir/t.npz: the directory /nonexistent/dir does not exist"),
    ("/proc/t.npz", "error: --out /proc/t.npz: cannot write in /proc ("),
    ("{tmp}/t.json", "error: --out {tmp}/t.json: a trace is written as .npz or .csv, not .json"),
    ("{tmp}", "error: --out {tmp}: a trace is written as .npz or .csv, not a name without a suffix"),
    # a file where the folder would be had been called a directory that does not exist
    ("{tmp}/afile/t.npz", "error: --out {tmp}/afile/t.npz: {tmp}/afile is not a directory"),
])
def test_out_is_checked_before_anything_is_traced(capsys, monkeypatch, tmp_path, out, message):
    def never(*args, **kwargs):
        raise AssertionError("traced before --out was checked: the work would be lost")
    monkeypatch.setattr(cli.tracer, "trace", never)
    if "afile" in out:
        (tmp_path / "afile").write_text("mine")
    err = _one_line_error(capsys, TRACE_32 + ["--out", out.format(tmp=tmp_path)])
    assert err.startswith(message.format(tmp=tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == (["afile"] if "afile" in out else [])   # nothing left behind


def test_trace_json_is_strict_json(capsys):
    # pandas fills the shared columns of global sites (and the reverse) with NaN: json.dumps wrote them bare.
    assert main(["trace", "tiled_guarded", "--m", "32", "--n", "32", "--k", "32", "--source", "cpu"]) == 0
    summary = _strict(capsys.readouterr().out)
    shared = next(s for s in summary["sites"] if s["space"] == "shared")
    assert shared["sectors"] is None and shared["wavefronts"] > 0


def test_info_json_is_strict_json(capsys):
    assert main(["info"]) == 0
    assert _strict(capsys.readouterr().out)["mode"].lower() in ("gpu", "cpu")


def test_record_cap_from_the_environment(capsys, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_RECORD_CAP", "1e2")
    assert "over the cap of 100:" in _one_line_error(capsys, TRACE_32)
    for bad in ("2.5", "ten", "inf"):
        monkeypatch.setenv("MATMUL_EXPLORER_RECORD_CAP", bad)
        assert _one_line_error(capsys, TRACE_32) == ("error: MATMUL_EXPLORER_RECORD_CAP must be a whole number of "
                                                     f"records like 10000000 or 1e7, got {bad!r}")
    for bad in ("-3", "0"):
        monkeypatch.setenv("MATMUL_EXPLORER_RECORD_CAP", bad)
        assert _one_line_error(capsys, TRACE_32) == f"error: MATMUL_EXPLORER_RECORD_CAP must be at least 1 record, got {bad}"


def test_a_bad_record_cap_does_not_stop_the_engine_from_importing():
    env = {**os.environ, "MATMUL_EXPLORER_RECORD_CAP": "lots"}
    done = subprocess.run([sys.executable, "-m", "engine", "kernels"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "naive_x_rows" in done.stdout, done.stderr


def test_host_memory_is_refused_before_it_is_allocated(capsys, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_HOST_MEMORY", "100MiB")
    err = _one_line_error(capsys, ["trace", "naive_x_cols", "--m", "32768", "--n", "32768", "--k", "1024",
                                   "--blocks", "0,0", "--source", "cpu"])
    # A and B whole; C: the one block's share; records: 256 threads x 2049 at 16 + 32 bytes.
    assert err == ("error: 32768x32768x1024 needs 280 MiB of host memory (A 128 MiB, B 128 MiB, C 1 KiB, "
                   "records 24 MiB); the limit is 100 MiB (MATMUL_EXPLORER_HOST_MEMORY): trace a smaller size")


def test_one_block_of_a_big_product_does_not_touch_all_of_c():
    # 16384 x 16384 floats of C are 1 GiB: filled with NaN, a one-block trace's memory was all of it.
    # The peak is VmHWM, this process's own: ru_maxrss outlives exec, so a child forked from a large
    # pytest process reported the parent's size (770 MiB after tests/test_long_k.py had run).
    script = ("import re; from engine.cli import main; "
              "main(['trace', 'naive_x_cols', '--m', '16384', '--n', '16384', '--k', '64', '--blocks', '5,7', "
              "'--source', 'cpu']); "
              "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) // 1024)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary, peak_mib = done.stdout.rsplit("\n", 2)[0], int(done.stdout.split()[-1])
    assert _strict(summary)["relative_error"] < 1e-6
    assert peak_mib < 700, peak_mib


# ------------------------------------------------------------------ every path a user gives is checked

def test_a_size_is_bounded_before_it_is_quoted(capsys):
    """--m 1e300 echoed the 301-digit integer it converts to."""
    err = _one_line_error(capsys, ["trace", "naive_x_rows", "--m", "1e300", "--n", "4", "--k", "4", "--source", "cpu"])
    assert err == "error: M must be an integer from 1 to 65,535, got 1e+300"


def _victim(tmp_path: Path) -> Path:
    """A file of someone else's (the stand-in for /etc/passwd: the tests run as root)."""
    victim = tmp_path / "victim"
    victim.write_text("root:x:0:0:root:/root:/bin/bash\n")
    return victim


def _refused(capsys, argv, victim: Path) -> str:
    err = _one_line_error(capsys, argv)
    assert victim.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert not [p for p in victim.parent.rglob(".*.tmp")]   # no temporary file left behind
    return err


@pytest.mark.parametrize("case", ["not-a-trace", "link", "fifo", "directory"])
def test_trace_out_replaces_only_a_trace_it_wrote(capsys, monkeypatch, tmp_path, case):
    def never(*args, **kwargs):
        raise AssertionError("traced before --out was checked: the work would be lost")
    monkeypatch.setattr(cli.tracer, "trace", never)
    victim, out = _victim(tmp_path), tmp_path / "t.csv"
    if case == "not-a-trace":
        out, victim = victim.rename(tmp_path / "passwd.csv"), tmp_path / "passwd.csv"
    elif case == "link":
        out.symlink_to(victim)
    elif case == "fifo":
        os.mkfifo(out)
    else:
        out.mkdir()
    err = _refused(capsys, TRACE_32 + ["--out", str(out)], victim)
    why = "that is a directory" if case == "directory" else "exists and is not a .csv trace written by this tool"
    assert err.startswith(f"error: --out {out}: {why}"), err


def test_trace_out_replaces_a_trace_it_wrote(capsys, tmp_path):
    for out in (tmp_path / "t.csv", tmp_path / "t.npz"):
        for _ in range(2):
            assert main(TRACE_32 + ["--out", str(out)]) == 0
        capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.npz"]


RECORDED_RUN = ROOT / "engine" / "bench" / "recorded" / "h200-2026-11-22.json"


def _bench(out) -> list[str]:
    return ["bench", "--from", str(RECORDED_RUN), "--out", str(out), "--formats", "csv,json"]


@pytest.mark.parametrize("out, message", [
    ("/proc/x", "error: --out /proc/x: cannot write in /proc ("),
    ("/etc/passwd", "error: --out /etc/passwd: exists and is not a directory"),
    ("{tmp}/missing/out", "error: --out {tmp}/missing/out: the directory {tmp}/missing does not exist"),
])
def test_bench_out_that_cannot_be_a_folder_is_one_line(capsys, tmp_path, out, message):
    """These were tracebacks (FileNotFoundError, FileExistsError): /etc/passwd is only looked at, and
    a folder is made only in one that exists (the same rule as trace's --out)."""
    before = Path("/etc/passwd").stat()
    assert _one_line_error(capsys, _bench(out.format(tmp=tmp_path))).startswith(message.format(tmp=tmp_path))
    assert not (tmp_path / "missing").exists()
    after = Path("/etc/passwd").stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (before.st_mtime_ns, before.st_size, before.st_ino)


@pytest.mark.parametrize("case", ["not-ours", "link"])
def test_bench_out_replaces_only_files_it_wrote(capsys, tmp_path, case):
    victim, out = _victim(tmp_path), tmp_path / "results"
    out.mkdir()
    if case == "not-ours":
        victim = victim.rename(out / "results.csv")
    else:
        (out / "results.csv").symlink_to(victim)   # written through before
    err = _refused(capsys, _bench(out), victim)
    assert err.startswith(f"error: --out {out / 'results.csv'}: exists and is not a results CSV written by this tool")


def test_bench_out_replaces_what_it_wrote_before(capsys, tmp_path):
    for _ in range(2):
        assert main(_bench(tmp_path / "results")) == 0
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["results.csv", "results.json"]


def test_formats_that_name_none_is_one_line(capsys, tmp_path):
    """--formats , had written nothing and exited 0 without a word."""
    assert _one_line_error(capsys, ["bench", "--from", str(RECORDED_RUN), "--out", str(tmp_path / "o"),
                                    "--formats", ","]).startswith("error: --formats names none of csv")
    assert not (tmp_path / "o").exists()


def test_bench_from_replaces_the_chart_pages_it_wrote_before(capsys, tmp_path):
    """plotly 7's pages begin with a doctype, and a second `bench --from` into the same folder had
    refused its own first page as not written by this tool."""
    source = ROOT / "tests" / "data" / "h200-2026-11-21-format1.json"
    for _ in range(2):
        assert main(["bench", "--from", str(source), "--out", str(tmp_path / "out"), "--formats", "html,json"]) == 0, \
            capsys.readouterr().err
    assert sorted(p.suffix for p in (tmp_path / "out").iterdir()) == [".html"] * 4 + [".json"]


def _bench_from(source, tmp_path) -> subprocess.CompletedProcess:
    """In a process of its own, its data segment capped at 2 GiB and its time at a minute: before,
    --from /dev/zero grew until the machine ran out of memory, and a FIFO waited for ever."""
    import resource  # noqa: PLC0415 - POSIX only, as these cases are

    def cap():
        resource.setrlimit(resource.RLIMIT_DATA, (2 * 2**30, 2 * 2**30))
    return subprocess.run([sys.executable, "-m", "engine", "bench", "--from", str(source), "--out",
                           str(tmp_path / "out"), "--formats", "csv"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, preexec_fn=cap)


@pytest.mark.parametrize("case", ["dev-zero", "fifo", "directory"])
def test_bench_from_reads_only_a_regular_file(tmp_path, case):
    source = {"dev-zero": Path("/dev/zero"), "fifo": tmp_path / "fifo.json", "directory": tmp_path}[case]
    if case == "fifo":
        os.mkfifo(source)
    done = _bench_from(source, tmp_path)
    assert done.returncode == 2 and done.stderr == f"error: cannot read {source}: not a regular file (an export is a .json file)\n", done.stderr


def test_bench_from_reads_no_more_than_the_limit(tmp_path, monkeypatch):
    """A file over the limit is refused having read at most the limit and one byte of it."""
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(2**30)   # sparse: a gigabyte on paper
    asked = []

    class Counted:
        """The file bench opens, counting the bytes it asks for."""
        def __init__(self, *args, **kwargs):
            self.f = open(*args, **kwargs)  # noqa: SIM115 - closed by __exit__

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def read(self, n=-1):
            asked.append(n)
            return self.f.read(n)
    monkeypatch.setattr(schema, "open", Counted, raising=False)   # where read_bounded opens it
    with pytest.raises(cli.EngineError, match=r"big.json: the file is 1,073.7 MB; the limit is 16 MB"):
        bench_cli.read_export(big)
    assert asked and all(0 <= n <= schema.MAX_BYTES + 1 for n in asked)


def test_a_traced_array_past_4_gib_is_refused_not_wrapped(monkeypatch, capsys):
    """A record's offset is 32 bits: A of 65,535 x 16,400 floats (4.0 GiB and more) had its offsets
    wrap round past 4 GiB in a trace a raised host limit let through."""
    monkeypatch.setenv("MATMUL_EXPLORER_HOST_MEMORY", "64GiB")
    rc = main(["trace", "naive_x_rows", "--m", "65535", "--n", "1", "--k", "16400", "--block", "32x1",
               "--blocks", "2047,0", "--source", "cpu"])
    assert rc == 2
    assert capsys.readouterr().err.strip() == ("error: 65535x1x16400: A is 4,299,096,000 bytes, over the 4,294,967,296 "
                                               "(4 GiB) a trace's byte offsets reach; trace a smaller size")


@pytest.mark.parametrize("given, said", [
    (["--reps", "0"], "repetitions must be a whole number of at least 1, got 0"),
    (["--reps", "-3"], "repetitions must be a whole number of at least 1, got -3"),
    (["--warmup", "-1"], "warm-up launches must be a whole number of at least 0, got -1"),
    (["--sizes", "0"], "M must be at least 1, got 0"),
    (["--sizes", "64x0x3"], "N must be at least 1, got 0"),
    (["--block", "64x64"], "a block of 64x64 = 4096 threads is over CUDA's limit of 1024"),
    (["--block", "0x4"], "block x must be at least 1, got 0"),
    (["--kernels", ""], "--kernels names no kernel (python -m engine kernels lists them)"),
    (["--kernels", ","], "--kernels names no kernel (python -m engine kernels lists them)")])
def test_bench_settings_it_cannot_time_are_refused_before_any_gpu_is_asked(monkeypatch, capsys, tmp_path, given, said):
    """--reps 0 timed nothing, and the median of no times failed as a traceback (on a GPU machine);
    --sizes 0 became an error row per point; --block 64x64 and --kernels "" went on to ask for the GPU.
    A refused command leaves no --out folder behind (it had made it first)."""
    monkeypatch.setenv("MATMUL_EXPLORER_GPU", "0")
    assert main(["bench", "--kernels", "naive_x_cols", *given, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {said}"
    assert not (tmp_path / "o").exists()


def test_bench_out_is_made_when_there_is_something_to_write(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_GPU", "0")
    assert main(["bench", "--kernels", "naive_x_cols", "--out", str(tmp_path / "o")]) == 2   # no GPU
    assert "no GPU to time on" in capsys.readouterr().err and not (tmp_path / "o").exists()
    assert main(_bench(tmp_path / "o" / "deeper")) == 2   # its folder does not exist: refused, not made
    assert main(_bench(tmp_path / "o")) == 0 and (tmp_path / "o" / "results.csv").is_file()


def test_a_block_named_twice_is_traced_once(capsys):
    """--blocks "0,0 0,0" traced block 0,0 twice: 128 outputs checked of an 8 x 8 C, every count doubled."""
    args = ["trace", "tiled_guarded", "--m", "8", "--n", "8", "--k", "8", "--source", "cpu"]
    assert main([*args, "--blocks", "0,0"]) == 0
    once = json.loads(capsys.readouterr().out)
    assert main([*args, "--blocks", "0,0 0,0"]) == 0
    twice = json.loads(capsys.readouterr().out)
    assert once.pop("seconds") and twice.pop("seconds")   # how long each took: all else the same
    assert twice == once


def test_a_trace_over_the_cap_says_its_bound_and_only_advice_that_helps(capsys):
    """One block of 256 threads at 1 x 1 x 65535 (one thread with work) was told to trace fewer blocks."""
    assert main(["trace", "naive_x_cols", "--m", "1", "--n", "1", "--k", "65535", "--source", "cpu"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: this trace would hold up to 33,554,176 records (256 threads of up to 131,071 each), over the cap "
        "of 30,000,000: trace a smaller size")


def test_a_cap_below_one_and_a_negative_warp_are_named(capsys):
    assert main(["trace", "tiled_guarded", "--m", "8", "--n", "8", "--k", "8", "--source", "cpu", "--cap", "-5"]) == 2
    assert capsys.readouterr().err.strip() == "error: --cap must be at least 1 record, got -5"
    from engine import animations
    for make in (animations.coalescing, animations.bank_conflicts):
        with pytest.raises(EngineError, match=r"^warp must be 0 or more, not -1$"):
            make(warp=-1, source="cpu")


def test_a_broken_pipe_that_is_not_stdouts_is_an_error_not_a_quiet_exit(monkeypatch, capsys):
    """Any BrokenPipeError had ended the CLI quietly with 141, stdout sent to /dev/null: a browser's pipe
    breaking in an export too."""
    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(cli, "cmd_cache", broken)
    assert main(["cache"]) == 2
    assert capsys.readouterr().err.strip() == "error: [Errno 32] Broken pipe"


def test_output_into_a_pipe_nobody_reads_ends_quietly():
    """`python -m engine kernels | head -c 0`: the write that failed had emptied the buffer, so flushing
    again passed, and a closed stdout was told as "error: [Errno 32] Broken pipe" with exit code 2."""
    proc = subprocess.Popen([sys.executable, "-m", "engine", "kernels"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()          # before it writes: the reader is gone from the start
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == "", err


@pytest.mark.parametrize("argv", [["kernels"], ["trace", "naive_x_cols", "--m", "4", "--n", "4", "--k", "4", "--source", "cpu"]])
def test_output_that_cannot_be_written_is_one_line(argv):
    """`> /dev/full` (a full disk) had ended in a traceback: OSError, No space left on device."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "engine", *argv], cwd=ROOT, stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300)
    assert done.returncode == 2 and done.stderr == "error: [Errno 28] No space left on device\n", done.stderr


def test_a_cap_of_0_is_refused_alike_from_the_variable_and_the_option(capsys, monkeypatch):
    assert _one_line_error(capsys, [*TRACE_32, "--cap", "0"]) == "error: --cap must be at least 1 record, got 0"
    monkeypatch.setenv("MATMUL_EXPLORER_RECORD_CAP", "0")
    assert _one_line_error(capsys, TRACE_32) == "error: MATMUL_EXPLORER_RECORD_CAP must be at least 1 record, got 0"


def test_a_cap_is_written_as_the_variable_is(capsys):
    """The README gives the cap as 3e7; --cap took digits only ("invalid int value: '3e7'")."""
    assert main([*TRACE_32, "--cap", "3e7"]) == 0
    capsys.readouterr()
    assert _one_line_error(capsys, [*TRACE_32, "--cap", "2.5e0"]) == (
        "error: --cap must be a whole number of records like 10000000 or 1e7, got '2.5e0'")
