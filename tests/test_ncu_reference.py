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


# Where the trace, read as compiled, still differs from the counters: (case, launch, metric) ->
# (trace, ncu), each with the reason found in the SASS. Asserted as they are, so that a model that
# learns one (or a kernel that changes) shows up here, and no other difference can appear.
KNOWN_DIFFERENCES = {
    # The scalar register-tiling rungs: nvcc unrolls the k loop and merges a thread's reads of
    # consecutive k (As[row + m][k], k = 0, 1, ...) into LDS.64/LDS.128. Those reads are not
    # consecutive executions of one site (m varies fastest), which as_compiled() does not model.
    ("blocktile_1d 128x128x128 tile 16 pad 0 block 16x16", "blocktile_1d",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"): (69632, 36864),
    ("blocktile_1d 128x128x128 tile 16 pad 0 block 16x16", "blocktile_1d",
     "smsp__inst_executed_op_shared_ld.sum"): (69632, 36864),
    ("blocktile_2d 128x128x128 tile 16 pad 0 block 16x16", "blocktile_2d",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"): (40960, 16384),
    ("blocktile_2d 128x128x128 tile 16 pad 0 block 16x16", "blocktile_2d",
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"): (16384, 0),
    ("blocktile_2d 128x128x128 tile 16 pad 0 block 16x16", "blocktile_2d",
     "smsp__inst_executed_op_shared_ld.sum"): (18432, 6144),
    # ptxas emits three predicated-off `@!PT LDS RZ, [RZ]` with every LDGSTS on sm_90; ncu counts
    # them as executed shared loads (3 x 128 warp-level copies here), with no wavefronts.
    ("double_buffered 128x128x128 tile 16 pad 0 block 16x16", "double_buffered",
     "smsp__inst_executed_op_shared_ld.sum"): (3072, 3456),
    ("prefetched 128x128x128 tile 16 pad 0 block 16x16", "prefetched",
     "smsp__inst_executed_op_shared_ld.sum"): (6144, 6528),
    # Not explained yet: warptile's 128-bit loads take 3 wavefronts each on average where the
    # half-warp model (which matches vectorized and double_buffered exactly) gives 2.
    ("warptile 128x128x128 tile 16 pad 0 block 16x16", "warptile",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"): (8192, 12288),
}


@pytest.mark.parametrize("key", sorted(REFERENCE["cases"]))
def test_trace_metrics_equal_ncu_counters(key):
    kernel, p = _parse(key)
    t = tracer.trace(kernel, p, source="cpu")
    summary = analysis.summarize(t, sass.memory_instructions(registry.get(kernel).launches[-1].file, t.problem.params))
    differences = {}
    for launch, measured in REFERENCE["cases"][key].items():
        ours = summary["as_compiled"]["ncu"][launch]
        for metric in set(NCU_METRICS.values()):
            if ours[metric] != measured.get(metric, 0):
                differences[(key, launch, metric)] = (ours[metric], measured.get(metric, 0))
    assert differences == {k: v for k, v in KNOWN_DIFFERENCES.items() if k[0] == key}
