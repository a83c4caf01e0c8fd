"""tests/benchmarks/size_sweep.py without a GPU: the GPU worker and the compiler mocked, what each
mode times at each size and what its export says."""
import json
import sys

import pytest

from engine.bench import benchmark
from engine.devices import gpu_client
from engine.kernels import registry
from tests.benchmarks import size_sweep


@pytest.fixture
def timed(monkeypatch):
    """Every benchmark.measure call the sweep makes, each answered with a speed of its own."""
    calls = []

    def measure(kernel, m, n, k, settings, params=None):
        calls.append((kernel, (m, n, k), dict(params or {})))
        full = {**registry.get(kernel).default_params(), **(params or {})}
        return {"kernel": kernel, "m": m, "n": n, "k": k, "params": full, "status": "ok", "gflops": 1000.0 + len(calls)}

    info = {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0"}
    monkeypatch.setattr(size_sweep, "build_all", lambda work: None)
    monkeypatch.setattr(gpu_client, "status", lambda refresh=False: gpu_client.GpuStatus(True, "NVIDIA H200", info=info))
    monkeypatch.setattr(benchmark, "measure", measure)
    monkeypatch.setattr(benchmark, "provenance", lambda info, settings: {"gpu": info["name"], "sm_count": info["sm_count"],
                                                                          "settings": {}, "peaks": {}})
    return calls


def _run(monkeypatch, tmp_path, *args) -> dict:
    out = tmp_path / "sweep.json"
    monkeypatch.setattr(sys, "argv", ["size_sweep.py", str(out), "--sizes", "1024,4097", *args])
    assert size_sweep.main() == 0
    return json.loads(out.read_text())


def test_the_tensor_sweep_times_cublas_fp16_the_defaults_and_every_stream_k_configuration(monkeypatch, tmp_path, timed):
    doc = _run(monkeypatch, tmp_path, "--tensor")
    configs = size_sweep.tensor_configs()
    assert len(configs) == 24 and len({tuple(sorted(c.items())) for c in configs}) == 24
    for size in ((1024, 1024, 1024), (4097, 4097, 4097)):
        here = [c for c in timed if c[1] == size]
        assert here[0][0] == here[-1][0] == "cublas_gemm_fp16"   # before and after
        assert [c[0] for c in here[1:4]] == list(size_sweep.TENSOR_DEFAULTS)
        assert [c[2] for c in here[4:-1]] == configs and {c[0] for c in here[4:-1]} == {"wgmma_stream_k"}
    assert len(doc["results"]) == 2 * (2 + 3 + 24)
    assert "wgmma_stream_k" in doc["provenance"]["sweep"]


def test_the_fp32_sweep_splits_k_and_pads_only_where_n_or_k_is_not_a_multiple_of_4(monkeypatch, tmp_path, timed):
    _run(monkeypatch, tmp_path)
    at = {size: {c[0] for c in timed if c[1] == size} for size in ((1024, 1024, 1024), (4097, 4097, 4097))}
    assert at[(1024, 1024, 1024)] == {"cublas_sgemm", *size_sweep.DEFAULTS, "split_k"}
    assert at[(4097, 4097, 4097)] == {"cublas_sgemm", *size_sweep.DEFAULTS, "split_k", "split_k_padded"}
    timed.clear()
    _run(monkeypatch, tmp_path, "--defaults-only")
    assert {c[0] for c in timed} == {"cublas_sgemm", *size_sweep.DEFAULTS}
