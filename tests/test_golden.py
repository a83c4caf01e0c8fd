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
    # Each record's memory space, no longer stored but derived from its site (Trace.spaces), against the
    # space the GPU recorded where the file has it.
    if f"{case[0]}/space" in golden.files:
        assert np.array_equal(cpu.spaces(), golden[f"{case[0]}/space"]), "space"
    issued = json.loads(str(golden["meta"]))[case[0]].get("issued")   # recorded since the SKIP_ counts
    if issued is not None:
        assert {str(site): n for site, n in cpu.issued.items()} == issued


def test_re_recording_some_cases_keeps_the_others_as_they_were_recorded(golden, tmp_path):
    """record_golden.py --only ... --onto golden_traces.npz re-records the cases a change touches
    (on the device); every other case, its meta too, comes over unchanged."""
    import subprocess
    import sys
    out = tmp_path / "merged.npz"
    subprocess.run([sys.executable, str(GOLDEN.parent / "record_golden.py"), str(out), "--only", "no case is named so",
                    "--onto", str(GOLDEN)], check=True, capture_output=True, timeout=300)
    merged = np.load(out)
    assert json.loads(str(merged["meta"])) == json.loads(str(golden["meta"]))
    assert sorted(merged.files) == sorted(golden.files)
    assert all(np.array_equal(merged[f], golden[f]) for f in golden.files if f != "meta")


def test_cases_recorded_apart_are_put_onto_the_file_without_a_gpu(golden, tmp_path):
    """record_golden.py --from PART --onto golden_traces.npz: the whole file is more than the GPU
    machine hands back at once, so the cases a change touches come back on their own; theirs (meta and
    columns) replace the file's, every other case stays as it was recorded."""
    import subprocess
    import sys
    meta = json.loads(str(golden["meta"]))
    case = "mma_pipelined_odd"
    part_meta = {case: {**meta[case], "device": "NVIDIA H100 80GB HBM3", "records": 1}}
    part = {f: golden[f][:1] for f in golden.files if f.startswith(f"{case}/")}
    np.savez_compressed(tmp_path / "part.npz", meta=np.array(json.dumps(part_meta)), **part)
    out = tmp_path / "merged.npz"
    subprocess.run([sys.executable, str(GOLDEN.parent / "record_golden.py"), str(out), "--from", str(tmp_path / "part.npz"),
                    "--onto", str(GOLDEN)], check=True, capture_output=True, timeout=300)
    merged = np.load(out)
    assert json.loads(str(merged["meta"])) == {**meta, **part_meta}
    assert list(json.loads(str(merged["meta"]))) == list(meta)   # in the cases' order
    assert sorted(merged.files) == sorted(golden.files)
    assert all(np.array_equal(merged[f], part[f] if f in part else golden[f]) for f in golden.files if f != "meta")


def test_the_cpu_mode_banner_names_the_gpu_the_golden_traces_were_recorded_on(golden):
    """The CPU-mode banner (pages/lib/ui.py) tells a student what the CPU traces are checked against:
    a case re-recorded on another GPU must change what it says."""
    import inspect

    from pages.lib import ui
    said = inspect.getsource(ui.mode_banner)
    devices = {v["device"] for v in json.loads(str(golden["meta"])).values()}
    # The GPUs by the names the banner gives them (nvidia-smi's "NVIDIA H100 80GB HBM3": an H100).
    named = {" ".join(d.split()[:2]).removeprefix("NVIDIA ") for d in devices}
    assert named == {"H200", "H100"} and "recorded on an H200 and an H100" in said, devices
