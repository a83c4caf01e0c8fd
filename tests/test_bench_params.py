"""Benchmark rows carry every compile-time parameter of their kernel by name, and `python -m engine
bench` sets them by name: each kernel's own defaults unless asked, and what no kernel of the sweep
takes is refused. The GPU worker is stood in for (its timing is tests/test_gpu_worker.py's)."""
import json
from dataclasses import replace

import pytest

from engine.bench import benchmark
from engine.cli import main
from engine.devices import gpu_client
from engine.kernels import registry


@pytest.fixture
def asked(monkeypatch) -> list[dict]:
    """A GPU that times every point at 1 ms at 1,980 MHz and gets it right, with cuBLAS 13.0.1; what each
    bench request asked for."""
    requests = []

    def call(op, payload=None, timeout=None):
        if op == "cublas_version":   # asked once, for the provenance
            return 130001
        assert op == "bench"
        requests.append(payload)
        return {"times_ms": [1.0] * 5, "correct": True, "rel_error": 0.0, "tolerance": 1e-4,
                "telemetry": {"sm_clock_mhz": 1980}}
    monkeypatch.setattr(gpu_client, "status", lambda refresh=False: gpu_client.GpuStatus(
        True, "Stand-in GPU", free_bytes=1 << 40, info={"name": "Stand-in GPU", "sm_count": 1, "sm_clock_mhz": 1,
                                                         "memory_clock_mhz": 1, "memory_bus_bits": 8}))
    monkeypatch.setattr(gpu_client, "call", call)
    return requests


def test_a_row_carries_every_parameter_of_its_kernel_and_times_that_build(asked):
    settings = benchmark.Settings()
    row = benchmark.measure("shared_bank_conflicts", 64, 64, 64, settings, {"TILE": 32})
    assert row["status"] == "ok" and row["params"] == {"TILE": 32, "PAD": 0}
    assert dict(asked[-1]["problem"].params) == row["params"]
    assert "tile" not in row and "pad" not in row
    assert benchmark.measure("tiled_guarded", 64, 64, 64, settings, {"TILE": 8, "PAD": 1})["params"] == {"TILE": 8}
    assert benchmark.measure("cublas_sgemm", 64, 64, 64, settings, {"TILE": 8})["params"] == {}
    # Bandwidth over the bytes of A, B and C (float32): 3 * 64 * 64 * 4 in 1 ms.
    assert row["bandwidth_gbs"] == pytest.approx(3 * 64 * 64 * 4 / 1e-3 / 1e9)


def _bench(tmp_path, *args) -> list[dict]:
    assert main(["bench", "--sizes", "64", "--out", str(tmp_path), "--formats", "json", *args]) == 0
    return json.loads((tmp_path / "results.json").read_text())["results"]


def test_a_sweeps_provenance_names_the_cublas_and_the_toolkit_beside_its_percentages(asked, tmp_path, monkeypatch):
    from engine.kernels import build
    monkeypatch.setattr(build, "nvcc", lambda: "/opt/cuda/bin/nvcc")
    monkeypatch.setattr(build, "compiler_version", lambda compiler: "nvcc: NVIDIA (R) Cuda compiler driver\n"
                        "Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n")
    _bench(tmp_path, "--kernels", "naive_x_cols,cublas_sgemm")
    prov = json.loads((tmp_path / "results.json").read_text())["provenance"]
    assert prov["cublas_version"] == 130001 and prov["toolkit"] == "Cuda compilation tools, release 13.0, V13.0.88"
    df, again = benchmark.load_document((tmp_path / "results.json").read_text())
    assert again["cublas_version"] == 130001 and set(df["cublas"]) == {"13.0.1"} and set(df["toolkit"]) == {"nvcc 13.0.88"}
    table = benchmark.table(df)
    columns = list(table.columns)
    assert columns[columns.index("% of cuBLAS"):][:4] == ["% of cuBLAS", "SM clock (MHz)", "cuBLAS", "toolkit"]
    # ... in every row of the CSV export, and in every exported chart, under the run's own line
    from engine.bench import export
    csv = export.results_csv(benchmark.schema.read((tmp_path / "results.json").read_text()).rows, prov)
    header, first = csv.splitlines()[:2]
    assert {"cublas_version", "toolkit"} <= set(header.split(",")) and "130001" in first and "V13.0.88" in first
    for name, fig in export.figures(benchmark.schema.read((tmp_path / "results.json").read_text()).rows, prov).items():
        note = " ".join(a.text for a in fig.layout.annotations)
        # "100% =" only where the chart has percentages
        said = "100% = cuBLAS" if name == "percent_of_cublas" else "cuBLAS"
        assert f"{said} 13.0.1 · nvcc 13.0.88 · SM clock 1,980 MHz" in note, name
        assert name == "percent_of_cublas" or "100% =" not in note, name


def test_bench_sets_parameters_by_name_and_otherwise_each_kernels_own(asked, tmp_path):
    rows = _bench(tmp_path, "--kernels", "tiled_guarded,shared_bank_conflicts", "--param", "PAD=1",
                  "--param", "TILE=32")
    assert [r["params"] for r in rows] == [{"TILE": 32}, {"TILE": 32, "PAD": 1}]
    assert _bench(tmp_path, "--kernels", "shared_bank_conflicts", "--tile", "8")[0]["params"] == {"TILE": 8, "PAD": 0}
    # Not a TILE of 16 for every kernel: a kernel whose own default is 32 runs with 32.
    with registry.registered(replace(registry.get("tiled_guarded"), name="tiled_t32", defaults={"TILE": 32})):
        rows = _bench(tmp_path, "--kernels", "tiled_t32,naive_x_cols")
    assert [r["params"] for r in rows] == [{"TILE": 32}, {}]
    assert dict(asked[-2]["problem"].params) == {"TILE": 32}


@pytest.mark.parametrize("args, message", [
    (["--kernels", "naive_x_cols,cublas_sgemm", "--param", "TILE=32"],
     "no kernel of this sweep has a parameter TILE (they take no compile-time parameters)"),
    (["--kernels", "naive_x_cols,shared_bank_conflicts", "--param", "BS=128"],
     "no kernel of this sweep has a parameter BS (they take PAD, TILE)"),
    (["--kernels", "naive_x_cols", "--pad", "1"], "no kernel of this sweep has a parameter PAD"),
    (["--kernels", "tiled_guarded,shared_bank_conflicts", "--tile", "12"],
     "tiled_guarded, shared_bank_conflicts take TILE 8, 16, 32, not 12"),
    (["--kernels", "tiled_guarded", "--param", "TILE"], "a parameter is given as NAME=VALUE"),
])
def test_bench_refuses_what_no_kernel_of_the_sweep_takes_in_one_line(asked, tmp_path, capsys, args, message):
    assert main(["bench", "--sizes", "64", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert asked == [] and not list(tmp_path.iterdir())   # nothing timed, nothing written
