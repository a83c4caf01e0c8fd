"""Speed and memory of tracing + analysis, against issue 2's targets. Prints its figures.

    python tests/benchmarks/bench_engine.py            # CPU figures; GPU figures too where a GPU is
"""
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.devices import gpu_client, host_memory  # noqa: E402
from engine.kernels import registry, sass  # noqa: E402
from engine.kernels.problem import make_problem  # noqa: E402
from engine.metrics import analysis, rung_counts  # noqa: E402
from engine.tracing import tracer  # noqa: E402
from engine.tracing.records import STORED_BYTES  # noqa: E402


def timed(fn, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def trace_and_analyse(kernel, p, source, blocks=None):
    t = tracer.trace(kernel, p, blocks, source)
    analysis.summarize(t)
    return t


def peak_rss_mib(pid="self", reset=False):
    """The process's peak resident memory (VmHWM) in MiB; reset: start counting it afresh (Linux)."""
    try:
        if reset:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            return None
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) // 1024


def cpu_seconds(pids):
    """CPU time (user + system) the processes have used so far, threads included (Linux; else None)."""
    try:
        ticks = sum(sum(int(v) for v in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13])
                    for pid in pids)
    except OSError:
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def ladder_blocks(repeat=3, target=2.0):
    """One block of each FP32 ladder rung at 4096^3 with its default parameters, traced on the CPU and
    analysed as the pages do (warp instructions, the Ladder page's counts with the SASS listing where
    nvdisasm is, the site table's Nsight Compute totals); the best of
    `repeat` by total. CPU time of this process (the app's side) and the CPU workers together (on a
    machine others share, the time the work itself took), and peak memory of this process and of
    the busiest worker."""
    print(f"--- one ladder block at 4096^3, CPU (trace + analysis, best of {repeat}; target {target} s)")
    for spec in registry.LADDER:
        p = make_problem(4096, 4096, 4096, block=spec.default_block)
        sass.memory_instructions(spec.launches[-1].file, registry.bind(spec, p).params)   # listed once, kept on disk
        best = None
        for _ in range(repeat):
            for pid in ["self", *tracer.CPU_WORKERS.pids()]:
                peak_rss_mib(pid, reset=True)
            pids = [os.getpid(), *tracer.CPU_WORKERS.pids()]
            cpu_start, start = cpu_seconds(pids), time.perf_counter()
            t = tracer.trace(spec.name, p, [(3, 5)], "cpu")
            traced = time.perf_counter()
            inst = analysis.warp_instructions(t)
            rung_counts.rung_counts(t, inst, (3, 5), sass.memory_instructions(t.launches[-1].file, t.problem.params))
            analysis.ncu_totals(analysis.site_summary(t, inst))
            end, cpu_end = time.perf_counter(), cpu_seconds(pids)
            figures = {**t.timings, "analysis": end - traced, "total": end - start, "records": len(t),
                       "cpu": None if cpu_start is None else cpu_end - cpu_start,
                       "app": peak_rss_mib(), "worker": max((peak_rss_mib(pid) or 0 for pid in tracer.CPU_WORKERS.pids()),
                                                           default=None)}
            if best is None or figures["total"] < best["total"]:
                best = figures
            del t, inst
        verdict = "PASS" if best["total"] <= target else "FAIL"
        cpu = "" if best["cpu"] is None else f"  (CPU {best['cpu']:.2f} s)"
        print(f"{spec.name:16} {best['records']:>11,} records  kernel {best['kernel']:.2f} s  run {best['run']:.2f} s  "
              f"assemble {best['assemble']:.2f} s  analysis {best['analysis']:.2f} s  total {best['total']:.2f} s  "
              f"{verdict}{cpu}  peak RSS app {best['app']} MiB, worker {best['worker']} MiB")


def row(label, seconds, records, target=None):
    rate = records / seconds / 1e6
    verdict = "" if target is None else ("  PASS" if seconds <= target else f"  FAIL (target {target} s)")
    print(f"{label:58} {seconds * 1e3:9.1f} ms  {records:>11,} records  {rate:6.1f} M rec/s{verdict}")


def main():
    host_memory.keep_large_blocks_separate()   # as the app server does: large arrays come from the system and go back to it
    print(f"bytes per trace record in memory: {STORED_BYTES} (target <= 32)")
    for source in ("cpu", "gpu"):
        if source == "gpu" and not gpu_client.status().available:
            print("gpu: no GPU here, GPU figures skipped")
            continue
        print(f"--- {source} (trace + analysis, median of 5, warm caches)")
        p = make_problem(64, 64, 64)
        trace_and_analyse("naive_x_cols", p, source)  # builds cached
        s, t = timed(lambda: trace_and_analyse("naive_x_cols", p, source))
        row("naive_x_cols 64x64x64", s, len(t), 0.2 if source == "cpu" else None)
        s, t = timed(lambda: trace_and_analyse("naive_x_rows", p, source))
        row("naive_x_rows 64x64x64", s, len(t), 0.2 if source == "cpu" else None)
        p = make_problem(128, 128, 128, params={"TILE": 16})
        trace_and_analyse("tiled_guarded", p, source)
        s, t = timed(lambda: trace_and_analyse("tiled_guarded", p, source), 3)
        row("tiled_guarded TILE 16 128x128x128", s, len(t), 1.0 if source == "cpu" else None)
        s, t = timed(lambda: trace_and_analyse("naive_x_cols", make_problem(4096, 4096, 4096), source, [(7, 9)]), 3)
        row("naive_x_cols one block of 4096^3", s, len(t))
        if source == "cpu":
            ladder_blocks()
        if source == "gpu":
            p = make_problem(256, 256, 64)
            trace_and_analyse("naive_x_cols", p, source)
            s, t = timed(lambda: trace_and_analyse("naive_x_cols", p, source), 3)
            row("naive_x_cols 256x256x64 (target >= 10 M rec/s)", s, len(t))
            print(f"    of which GPU kernels {t.timings['kernel'] * 1e3:.1f} ms, run {t.timings['run'] * 1e3:.1f} ms, "
                  f"assemble {t.timings['assemble'] * 1e3:.1f} ms")
            p = make_problem(128, 128, 128, params={"TILE": 16})
            s, t = timed(lambda: trace_and_analyse("tiled_guarded", p, source), 3)
            row("tiled_guarded TILE 16 128^3 (target >= 10 M rec/s)", s, len(t))
            gpu_client.call("ping")
            s, _ = timed(lambda: gpu_client.call("ping"), 50)
            print(f"{'warm worker round trip (ping)':58} {s * 1e3:9.2f} ms")
            tiny = make_problem(4, 4, 4)
            s, _ = timed(lambda: tracer.trace("naive_x_cols", tiny, None, "gpu"), 20)
            print(f"{'warm worker tiny trace request (4x4x4), target < 50 ms':58} {s * 1e3:9.2f} ms"
                  f"  {'PASS' if s < 0.05 else 'FAIL'}")
    gpu_client.shutdown()


if __name__ == "__main__":
    main()
