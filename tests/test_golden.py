"""CPU traces must equal the traces recorded on a real GPU (tests/golden/golden_traces.npz)."""
import json
from pathlib import Path

import numpy as np
import pytest

from tests.golden.cases import CASES, trace_case

GOLDEN = Path(__file__).parent / "golden" / "golden_traces.npz"


@pytest.fixture(scope="module")
def golden():
    assert GOLDEN.exists(), "golden traces missing: record them on the device (tests/golden/record_golden.py)"
    return np.load(GOLDEN)


def test_golden_traces_were_recorded_on_a_gpu(golden):
    meta = json.loads(str(golden["meta"]))
    assert {c[0] for c in CASES} <= set(meta)
    assert all(m["device"].startswith("NVIDIA") for m in meta.values())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cpu_trace_equals_gpu_trace(golden, case):
    cpu = trace_case(case, "cpu")
    recorded_arrays = json.loads(str(golden["meta"]))[case[0]]["arrays"]
    for field, column in cpu.columns.items():
        if f"{case[0]}/{field}" not in golden.files:   # a field newer than the file: cp.async's group,
            assert field == "group" and not column.any()   # 0 in kernels without cp.async
            continue
        gpu = golden[f"{case[0]}/{field}"]
        assert len(column) == len(gpu), field
        if field == "array":   # each file numbers arrays its own way (meta "arrays"): compare names
            column, gpu = np.array(cpu.arrays)[column], np.array(recorded_arrays)[gpu]
        assert np.array_equal(column, gpu), field
