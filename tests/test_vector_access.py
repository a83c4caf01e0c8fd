"""128-bit accesses (LDG4, STG4, LDS4, STS4): one record per lane at its first element, the width
from the site, and sectors and wavefronts counted for 16 bytes per lane, as the hardware serves them."""
from pathlib import Path

import numpy as np
import pytest

from engine.kernels import sources
from engine.kernels.problem import make_problem
from engine.metrics import analysis
from engine.tracing import tracer
from engine.tracing.plan import single_launch_plan

VEC4 = str(Path(__file__).parent / "cuda" / "vec4_rows.cu")
ASYNC = str(Path(__file__).parent / "cuda" / "async_rows.cu")


def _rows_trace(file, m, n, k, source):
    """Trace of a test kernel whose blocks of 32 threads each own 128 columns of one row of C."""
    plan = single_launch_plan(file, make_problem(m, n, k), (-(-n // 128), m), (32, 1))
    raw = tracer.run_plan(plan, source)
    return tracer.assemble(plan, raw, source), raw


def vec4_trace(m, n, k, source="cpu"):
    return _rows_trace(VEC4, m, n, k, source)


def async_trace(m, n, k, source="cpu"):
    return _rows_trace(ASYNC, m, n, k, source)


def test_the_site_knows_its_width():
    widths = {(s.array, s.op): s.width for s in sources.load(VEC4).sites}
    assert widths == {("B", "load"): 4, ("Bs", "store"): 4, ("A", "load"): 1, ("Bs", "load"): 4, ("C", "store"): 4}


def test_every_element_a_128_bit_store_writes_is_checked():
    t, raw = vec4_trace(3, 200, 5)
    assert raw.checked_outputs == 3 * 200 and raw.rel_error < 1e-6


def test_sectors_and_wavefronts_are_those_of_16_bytes_per_lane():
    # N = 256: two full warps per row, every lane active.
    t, _ = vec4_trace(2, 256, 3)
    s = analysis.site_summary(t).set_index(["array", "op"])
    for key in [("B", "load"), ("C", "store")]:
        assert s.loc[key, "sectors_per_request"] == 16          # 32 lanes x 16 B = 512 B = 16 sectors
    assert s.loc[("A", "load"), "sectors_per_request"] == 1    # one float, broadcast to the warp
    for key in [("Bs", "store"), ("Bs", "load")]:
        assert s.loc[key, "wavefronts_per_request"] == 4        # 512 B at 128 B per wavefront
        assert s.loc[key, "bank_conflicts"] == 0


def test_a_partial_warp_needs_fewer_wavefronts_and_has_no_conflicts():
    t, _ = vec4_trace(1, 200, 2)     # the second block's warp: 18 lanes active
    inst = analysis.warp_instructions(t)
    s = analysis.site_summary(t, inst).set_index(["array", "op"])
    shared = inst[np.isin(inst["site"], [i for i, ts in enumerate(t.sites) if ts.site.space == "shared"])]
    assert sorted(set(shared["wavefronts"].tolist())) == [3, 4]   # 16 lanes: 2, then 2 lanes: 1
    assert s.loc[("Bs", "load"), "bank_conflicts"] == 0


def test_an_asynchronous_copy_is_a_global_read_and_a_shared_write_each_16_bytes():
    sites = [(s.array, s.space, s.op, s.width, s.copy) for s in sources.load(ASYNC).sites]
    assert sites[:2] == [("B", "global", "load", 4, True), ("Bs", "shared", "store", 4, True)]
    t, raw = async_trace(3, 200, 6)
    assert raw.checked_outputs == 3 * 200 and raw.rel_error < 1e-6
    # The two records of one copy, in order: the read, then the write, of the same thread.
    r = {**t.columns, "space": t.spaces()}
    first = int(np.flatnonzero(t.lines() == sources.load(ASYNC).sites[0].line)[0])
    assert (r["space"][first], r["op"][first], r["space"][first + 1], r["op"][first + 1]) == (0, 0, 1, 1)
    assert r["thread_x"][first] == r["thread_x"][first + 1]


def test_each_copy_carries_the_commit_group_it_belongs_to():
    """async_rows.cu commits row 0's copy as group 0, then in step k the copy of row k + 1 as group
    k + 1; the reads of row k come after the wait for group k."""
    t, _ = async_trace(2, 128, 5)
    r = t.records
    copies = r[np.array([ts.site.copy for ts in t.sites])[r["site"]] & (r["op"] == 1)]
    prologue = min(copies["line"])
    assert (copies["group"][copies["line"] == prologue] == 0).all()
    loop = copies[copies["line"] != prologue]
    assert np.array_equal(loop["group"], loop["ordinal"] + 1)
    reads = r[(r["array"] == t.arrays.index("Bs")) & (r["op"] == 0)]
    assert np.array_equal(reads["group"], reads["ordinal"] + 2)   # committed by then: groups 0 .. k + 1
    assert (r[r["array"] == t.arrays.index("C")]["group"] == 5 + 1).all()


def test_copies_are_counted_as_nsight_compute_counts_them():
    t, _ = async_trace(2, 256, 3)
    totals = analysis.ncu_totals(analysis.site_summary(t))
    copies = 2 * 2 * 3            # rows x warps per row x K rows of B
    assert totals["sm__sass_inst_executed_op_ldgsts.sum"] == copies
    assert totals["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"] == 0
    # The global reads of the copies are loads to ncu (measured on an H100), with A's own loads...
    assert totals["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == copies + 2 * 2 * 3
    assert totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 16 * copies + 2 * 2 * 3
    # ...and their shared writes are no shared stores.
    assert totals["smsp__inst_executed_op_shared_st.sum"] == 0
    assert totals["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"] == 0


def test_the_conflict_free_count_follows_which_lanes_are_active():
    # Lanes 0, 1, 16, 17: 2 lanes x 4 words in each half-warp, one wavefront each; no conflict.
    plan = single_launch_plan(str(Path(__file__).parent / "cuda" / "vec4_lanes.cu"), make_problem(1, 32, 1),
                              (1, 1), (32, 1))
    t = tracer.assemble(plan, tracer.run_plan(plan, "cpu"), "cpu")
    s = analysis.site_summary(t).set_index(["array", "op"])
    for key in [("Bs", "store"), ("Bs", "load")]:
        assert s.loc[key, "wavefronts"] == 2 and s.loc[key, "bank_conflicts"] == 0


def test_a_misaligned_128_bit_access_is_an_error_as_on_the_gpu():
    from engine.errors import EngineError
    plan = single_launch_plan(str(Path(__file__).parent / "cuda" / "vec4_misaligned.cu"), make_problem(8, 64, 8),
                              (1, 1), (8, 1))
    with pytest.raises(EngineError, match="vector access of B at an address that is not a multiple of its size"):
        tracer.run_plan(plan, "cpu")


def test_a_load_written_128_bits_wide_is_not_taken_for_one_nvcc_merged():
    t, _ = vec4_trace(2, 256, 3)
    sites = analysis.site_summary(t)
    line = next(s.line for s in sources.load(VEC4).sites if s.array == "Bs" and s.op == "load")
    hw, notes, per_site = analysis.as_compiled(t, sites, {"available": True, "by_line": {line: {"LDS.128": 3}}})
    assert not notes and not per_site and hw.equals(sites)


def test_a_lane_whose_guard_skips_an_access_takes_part_in_the_next_instruction_at_its_place():
    """guard_skips.cu: a guarded load and store in two passes, the odd lanes outside in pass 0. The
    warp executes each as one instruction a pass: 16 lanes, then 32. Paired by each lane's count of
    its own loads instead, the odd lanes' pass-1 load would join the even lanes' pass-0 one (32
    lanes, then 16)."""
    plan = single_launch_plan(str(Path(__file__).parent / "cuda" / "guard_skips.cu"), make_problem(2, 32, 32),
                              (1, 1), (32, 1))
    t = tracer.assemble(plan, tracer.run_plan(plan, "cpu"), "cpu")
    inst = analysis.warp_instructions(t)
    for array in ("A", "C"):
        site = next(i for i, ts in enumerate(t.sites) if ts.site.array == array)
        rows = inst[inst["site"] == site]
        assert rows["active"].tolist() == [16, 32], array
        assert rows["sectors"].tolist() == [4, 4], array      # 128 bytes a pass (paired by count: 8, then 4)


def test_a_skip_is_for_an_access_on_its_own_line(tmp_path):
    bad = tmp_path / "skip_elsewhere.cu"
    bad.write_text('#include "trace.cuh"\nextern "C" __global__ void skip_elsewhere(const float *A, const float *B, '
                   'float *C, int M, int N, int K) {\n    float x = LDG(A, threadIdx.x);\n    SKIP_LDG(A);\n'
                   '    STG(C, threadIdx.x, x);\n}\n')
    with pytest.raises(ValueError, match=r"skip_elsewhere.cu:4: SKIP_LDG\(A\) is for the lanes that skip this line's"):
        sources.load(bad)
