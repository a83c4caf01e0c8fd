"""tests/benchmarks/tune_fp32.py's bookkeeping, without a GPU (its timings are the device's)."""
import json

from tests.benchmarks import tune_fp32


class _NoGpu:
    """A bench whose cuBLAS takes 1 ms and which launches nothing else."""

    def cublas_launcher(self, m, n, k):
        return lambda: None

    def time(self, launch, reps):
        return 1.0


def test_a_stage_writes_each_row_once_at_every_size(tmp_path):
    """Stage two times every configuration at 4096^3 and 8192^3: its log held the 4096^3 rows twice
    (every row so far written again after each size)."""
    config = {**tune_fp32.DEFAULT, "RUNG": 1}
    built = {tune_fp32.key(config): "nvcc failed"}   # a configuration that did not build is a row too
    log = tmp_path / "stage2.jsonl"
    with open(log, "w") as out:
        rows = tune_fp32.run_stage(_NoGpu(), built, [config], [(64, 64, 64), (128, 128, 128)], 1, out)
    written = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["size"] for r in written] == ["64x64x64", "128x128x128"]
    assert written == rows and all(r["status"] == "build: nvcc failed" for r in rows)
