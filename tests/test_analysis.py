"""Nsight Compute's quantities on traces whose answers can be worked out by hand."""
import numpy as np
import pytest

from engine.kernels.problem import make_problem
from engine.kernels.sources import Site
from engine.metrics import analysis
from engine.tracing import tracer
from engine.tracing.records import STORED_FIELDS, TRACE_DTYPE, Trace, TraceSite


def _sites(kernel, block=(16, 16), **params):
    """params: TILE, PAD as the kernel names them (lower case here)."""
    t = tracer.trace(kernel, make_problem(64, 64, 64, block=block, params={k.upper(): v for k, v in params.items()}),
                     source="cpu")
    s = analysis.site_summary(t)
    return {(r.array, r.op): r for r in s.itertuples()}, t


def test_coalesced_naive_reads_b_in_4_sectors_and_a_by_broadcast():
    s, _ = _sites("naive_x_cols", block=(32, 8))
    assert s[("B", "load")].sectors_per_request == 4 and s[("B", "load")].lines_per_request == 1
    assert s[("A", "load")].sectors_per_request == 1
    assert s[("C", "store")].sectors_per_request == 4
    assert s[("A", "load")].requests == 64 * 64 // 32 * 64  # warps x K


def test_seed000_mapping_puts_every_lane_of_a_warp_in_its_own_sector_of_a():
    s, _ = _sites("naive_x_rows", block=(32, 8))
    assert s[("A", "load")].sectors_per_request == 32
    assert s[("B", "load")].sectors_per_request == 1


def test_transposed_b_is_not_coalesced_across_lanes():
    s, _ = _sites("naive_transposed_b", block=(32, 32))
    assert s[("BT", "load")].sectors_per_request == 32


@pytest.mark.parametrize("tile, pad, ways", [(32, 0, 32), (32, 1, 1), (16, 0, 8), (16, 1, 1), (8, 0, 2), (8, 1, 1)])
def test_seed001_tile_a_bank_conflicts_vanish_with_padding(tile, pad, ways):
    s, _ = _sites("shared_bank_conflicts", tile=tile, pad=pad)
    a = s[("tile_A", "load")]
    assert a.wavefronts_per_request == ways
    assert a.bank_conflicts == a.wavefronts - a.requests
    assert s[("tile_B", "load")].wavefronts_per_request == 1  # broadcast


def test_guarded_tiled_kernel_is_conflict_free_and_reads_tile_times_less():
    s, t = _sites("tiled_guarded", tile=16)
    assert all(r.bank_conflicts == 0 for k, r in s.items() if r.space == "shared")
    naive = tracer.trace("naive_x_cols", make_problem(64, 64, 64), source="cpu")
    assert analysis.global_reads(naive) == 16 * analysis.global_reads(t)


def test_wavefronts_of_crafted_addresses():
    rows = np.full((5, 32), -1, dtype=np.int64)
    rows[0] = 7                                  # one word for all: broadcast
    rows[1] = np.arange(32) * 32                  # one bank, 32 words
    rows[2] = np.arange(32) * 2                   # two words per even bank
    rows[3, :4] = [0, 32, 32, 64]                 # 3 distinct words in bank 0, inactive lanes
    rows[4] = np.arange(32) * 33                  # padded pitch: all banks
    assert list(analysis._wavefronts(rows)) == [1, 32, 2, 3, 1]


def test_ncu_totals_use_the_metric_names():
    _, t = _sites("tiled_guarded", tile=16)
    totals = analysis.summarize(t)["ncu"]["tiled_guarded"]
    assert totals["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 2 * (64 * 64 // 32) * 4
    assert totals["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 0
    assert totals["smsp__inst_executed_op_shared_ld.sum"] == 2 * (64 * 64 // 32) * 64


def test_block_phases_show_the_tiles_each_phase_loads():
    t = tracer.trace("tiled_guarded", make_problem(40, 40, 40, params={"TILE": 16}), source="cpu")
    ph = analysis.block_phases(t, 1, 2)
    a1 = ph[(ph["phase"] == 1) & (ph["array"] == "A")]
    assert set(a1["row"]) == set(range(32, 40)) and set(a1["col"]) == set(range(16, 32))
    b2 = ph[(ph["phase"] == 2) & (ph["array"] == "B")]
    assert set(b2["row"]) == set(range(32, 40)) and set(b2["col"]) == set(range(16, 32))


def _each_word_wavefronts(words: np.ndarray, width: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """The definition: every word each lane reads, in its bank of 32, group of lanes by group; and
    how many distinct words a group reads."""
    wavefronts, distinct = [], []
    for group in words.reshape(-1, lanes):
        read = {w + i for w in group if w >= 0 for i in range(width)}
        wavefronts.append(max((sum(1 for w in read if w % 32 == b) for b in range(32)), default=0))
        distinct.append(len(read))
    return np.array(wavefronts), np.array(distinct)


@pytest.mark.parametrize("width, lanes", [(2, 16), (4, 16), (4, 8)])
def test_wide_accesses_count_the_wavefronts_of_every_word_they_read(width, lanes):
    rng = np.random.default_rng(width * lanes)
    aligned = rng.integers(0, 96, (300, 32)) * width           # crowded: conflicts and broadcasts
    aligned[rng.random(aligned.shape) < 0.2] = -1              # inactive lanes
    misaligned = aligned + (aligned >= 0) * (np.arange(32) % width)
    for words in (aligned, misaligned):
        got, want = analysis._vector_wavefronts(words, width, lanes), _each_word_wavefronts(words, width, lanes)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def _one_site_trace(offsets_per_thread: list[list[int]]) -> Trace:
    """A trace of one shared load site, a warp of 32 threads, each with the given byte offsets in turn."""
    counts = np.array([len(o) for o in offsets_per_thread], dtype=np.uint32)
    columns = {name: np.zeros(int(counts.sum()), dtype=TRACE_DTYPE.fields[name][0]) for name in STORED_FIELDS}
    columns["lane"] = np.repeat(np.arange(32), counts).astype(np.uint8)
    columns["ordinal"] = np.concatenate([np.arange(len(o)) for o in offsets_per_thread]).astype(np.uint32)
    columns["offset"] = np.concatenate([np.array(o, dtype=np.int64) for o in offsets_per_thread]).astype(np.uint32)
    site = TraceSite(0, "k", Site(1, "As", "shared", "load", "LDS(As, i)"))
    return Trace("k", make_problem(4, 4, 4), "cpu", "test", columns, [site], ("As",), {"As": (1, 4096)}, [],
                 0.0, 0, counts, np.zeros(32, dtype=np.uint32))


def _merged_by_table(trace: Trace, width: int):
    """_merged_site_totals' shape check and wavefronts by their definition: a (row, lane, part) table."""
    r = trace.columns
    o = r["ordinal"].astype(np.int64)
    group, part = np.divmod(o, width)
    table = np.full((int(group.max()) + 1, 32, width), -1, dtype=np.int64)
    table[group, r["lane"], part] = r["offset"] // 4
    lanes = table.reshape(-1, width)
    active = lanes[:, 0] >= 0
    if not ((lanes[active, 0] % width == 0) & (lanes[active] == lanes[active, :1] + np.arange(width)).all(axis=1)).all():
        return None
    return analysis._wide_wavefronts(table[:, :, 0], width)[0].tolist()


def test_merged_loads_are_counted_only_where_each_thread_reads_whole_aligned_runs_of_words():
    rng = np.random.default_rng(5)
    runs = [[16 * int(base) + 4 * j for base in rng.integers(0, 64, 6) for j in range(4)] for _ in range(32)]
    cases = {
        "aligned runs": runs,
        "some lanes idle": [o if lane % 3 else [] for lane, o in enumerate(runs)],
        "a run not aligned": [[o + 4 for o in runs[0]], *runs[1:]],
        "a run cut short": [runs[0][:-1], *runs[1:]],
        "a gap in a run": [[*runs[0][:5], runs[0][5] + 4, *runs[0][6:]], *runs[1:]],
    }
    for what, offsets in cases.items():
        trace = _one_site_trace(offsets)
        got = analysis._merged_site_totals(trace, 0, 4)
        want = _merged_by_table(trace, 4)
        assert (got is None) == (want is None), what
        if want is not None:
            assert got["per_instruction"].tolist() == want and got["requests"] == len(want), what
    assert analysis._merged_site_totals(_one_site_trace(runs), 0, 4) is not None
