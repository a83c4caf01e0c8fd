"""The trace's metrics, as compiled, against Nsight Compute's counters measured on an H200.

tests/golden/ncu_h200.json holds what `ncu --clock-control none` read for one launch of each
kernel's timing build (tests/benchmarks/ncu_compare.py, run on the device). Every global metric
must match the source-level trace; shared loads that nvcc merged into LDS.128 match once the
trace is read as the hardware executes it (engine.metrics.analysis.as_compiled).
"""
import json
import re
from pathlib import Path

import pytest

from engine.kernels import registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import analysis
from engine.metrics.analysis import NCU_METRICS
from engine.tracing import tracer

REFERENCE = json.loads((Path(__file__).parent / "golden" / "ncu_h200.json").read_text())
pytestmark = pytest.mark.skipif(sass.nvdisasm() is None, reason="nvdisasm needed to read the SASS")


def _parse(key):
    m = re.fullmatch(r"(\w+) (\d+)x(\d+)x(\d+) tile (\d+) pad (\d+) block (\d+)x(\d+)", key)
    kernel, *nums = m.groups()
    mm, n, k, tile, pad, bx, by = map(int, nums)
    params = registry.get(kernel).takes({"TILE": tile, "PAD": pad})   # the key names both for every kernel
    return kernel, make_problem(mm, n, k, block=(bx, by), params=params)


@pytest.mark.parametrize("key", sorted(REFERENCE["cases"]))
def test_trace_metrics_equal_ncu_counters(key):
    kernel, p = _parse(key)
    t = tracer.trace(kernel, p, source="cpu")
    summary = analysis.summarize(t, sass.memory_instructions(registry.get(kernel).launches[-1].file, t.problem.params))
    for launch, measured in REFERENCE["cases"][key].items():
        ours = summary["as_compiled"]["ncu"][launch]
        for metric in set(NCU_METRICS.values()):
            assert ours[metric] == measured.get(metric, 0), (launch, metric)
