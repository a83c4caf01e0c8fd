"""The tensor-core rungs against what the H200 measured: ldmatrix's shared wavefronts and bank
conflicts from the CPU trace against Nsight Compute's counters (engine/bench/recorded/ncu/ncu_tensor_h200.json,
recorded by tests/benchmarks/ncu_tensor.py), and the registry's rules for the sizes they accept."""
import json
import re

import numpy as np
import pytest

from engine.errors import EngineError
from engine.kernels import registry, sources
from engine.kernels.problem import make_problem
from engine.metrics import analysis, tensor_evidence
from engine.tracing import records, tracer
from engine.tracing.plan import global_shapes

GOLDEN = json.loads(tensor_evidence.NCU.read_text())
LDSM = ("smsp__inst_executed_op_ldsm.sum", "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
        "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum")


# The parameters Nsight Compute ran each with (the defaults then). mma_pipelined's measurement here
# was of an earlier build: the shipped references (engine/metrics/ncu/, test_ncu_reference.py) hold
# the kernel as it is now to Nsight Compute at every size and parameter choice they measured.
NCU_PARAMS = {"mma_ldmatrix": {}, "mma_swizzled": {}}


@pytest.mark.parametrize("kernel", list(NCU_PARAMS))
def test_ldmatrix_wavefronts_from_the_cpu_trace_are_what_ncu_counted(kernel):
    p = registry.bind(registry.get(kernel), make_problem(128, 128, 128, params=NCU_PARAMS[kernel]))
    trace = tracer.trace(kernel, p, None, "cpu")
    ours = analysis.summarize(trace)["ncu"][kernel]
    theirs = GOLDEN["cases"][f"{kernel} 128x128x128"]
    assert {m: ours[m] for m in LDSM} == {m: int(theirs[m]) for m in LDSM}


def test_the_swizzle_removes_every_ldmatrix_conflict_on_the_gpu_too():
    plain, swizzled = (GOLDEN["cases"][f"{k} 128x128x128"] for k in ("mma_ldmatrix", "mma_swizzled"))
    wavefronts = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"
    assert plain["smsp__inst_executed_op_ldsm.sum"] == swizzled["smsp__inst_executed_op_ldsm.sum"] == 256
    assert (plain[wavefronts], swizzled[wavefronts]) == (6144, 1024)   # 4-way (A) and 8-way (B) vs 1 per matrix


def test_the_documents_wmma_kernel_issues_32_times_the_tensor_instructions_it_needs():
    hmma = "sm__inst_executed_pipe_tensor_op_hmma.sum"
    seed, warp = (GOLDEN["cases"][f"{k} 128x128x128"][hmma] for k in ("wmma_as_written", "wmma_warp"))
    # 8 x 8 tiles x 8 k steps of one 16x16x16 mma_sync, each two HMMA.16816 on sm_90
    assert warp == 8 * 8 * 8 * 2 and seed == 32 * warp


ANY_SIZE = ("wmma_block", "mma_ldmatrix", "mma_swizzled", "mma_pipelined", "wgmma_padded")
ODD_SIZES = [(1, 1, 1), (17, 33, 9), (4095, 4097, 511), (1000, 1000, 1000), (3, 4096, 5), (129, 517, 1031)]


@pytest.mark.parametrize("kernel", ["wmma_as_written", "wmma_warp"])
def test_the_rungs_that_load_fragments_from_global_memory_refuse_sizes_that_are_not_whole_fragments(kernel):
    with pytest.raises(EngineError, match="multiples of 16"):
        registry.bind(registry.get(kernel), make_problem(1000, 512, 512))
    registry.bind(registry.get(kernel), make_problem(1040, 528, 272))


@pytest.mark.parametrize("kernel", ANY_SIZE)
@pytest.mark.parametrize("size", ODD_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_the_rungs_that_copy_through_shared_memory_take_any_size(kernel, size):
    registry.bind(registry.get(kernel), make_problem(*size))


TMA_RUNGS = ("mma_tma", "wgmma_tma", "wgmma_persistent", "wgmma_cluster", "wgmma_epilogue", "wgmma_stream_k")


def test_the_catalog_names_its_tma_rungs_by_how_they_are_built():
    assert registry.TMA_RUNGS == TMA_RUNGS


@pytest.mark.parametrize("kernel", TMA_RUNGS)
@pytest.mark.parametrize("size", ODD_SIZES + [(4095, 4104, 520), (4096, 4095, 4096), (4096, 4096, 4095), (8, 4100, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_tma_rungs_take_any_size_padding_a_and_b_first_where_tma_cannot_copy_their_rows(kernel, size):
    """TMA copies rows whose byte stride is a multiple of 16: FP16 rows of K or N halves need K and N
    multiples of 8. Elsewhere a run launches pad_ab first and the rung's maps of A and B read AP and
    BP; where K and N are multiples of 8 (any M) the rung runs alone on A and B."""
    spec = registry.get(kernel)
    p = registry.bind(spec, make_problem(*size))
    pads = size[1] % 8 != 0 or size[2] % 8 != 0
    launches = spec.launches_for(p)
    assert [launch.kernel for launch in launches] == ["pad_ab"] * pads + [kernel]
    assert launches[-1].maps_read(p) == ({"A": "AP", "B": "BP"} if pads else {})
    # The rungs that store C by TMA describe C by a map only where its rows are 16-byte multiples.
    if "C" in launches[-1].tensor_maps(p):
        assert (launches[-1].tensor_maps(p)["C"][0] == 0) == (size[1] % 4 != 0)


@pytest.mark.parametrize("size", [(4096, 4096, 4096), (8192, 8192, 8192), (300, 2056, 72), (128, 256, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_persistent_wgmma_rungs_launch_one_block_per_sm_at_most(size):
    """wgmma_persistent: as many blocks as tiles, up to the 132 SMs of an H100 or H200 (each block
    loops over the tiles); wgmma_cluster and wgmma_epilogue: whole clusters of 2, one per pair of
    tiles one above the other, up to 64 of them by default (128 SMs: 4,096^3 and 8,192^3 then
    give each cluster the same number of tiles)."""
    m, n, k = size
    tiles = -(-m // 128) * -(-n // 256)
    pairs = -(-m // 256) * -(-n // 256)
    for kernel, blocks in (("wgmma_persistent", min(tiles, 132)), ("wgmma_cluster", 2 * min(pairs, 64)),
                           ("wgmma_epilogue", 2 * min(pairs, 64))):
        spec = registry.get(kernel)
        p = registry.bind(spec, make_problem(m, n, k))
        assert spec.launches[-1].grid(p) == (blocks, 1) and spec.launches[-1].block(p) == (384, 1)


@pytest.mark.parametrize("size", [(4096, 4096, 4096), (8192, 8192, 8192), (3000, 3000, 3000), (300, 2056, 72),
                                  (256, 256, 4096), (128, 256, 64)], ids=lambda s: "x".join(map(str, s)))
def test_wgmma_stream_k_launches_up_to_splits_clusters_per_pair_of_tiles(size):
    """wgmma_stream_k: whole clusters of 2 up to SMS / 2, and where C has few pairs of tiles up to
    SPLITS clusters per pair (256 x 256 x 4096, one pair: 4 clusters, each a quarter of K); its WS
    has a row per block of SMS, BM x BN partial sums and 32 floats of flags."""
    m, n, k = size
    pairs = -(-m // 256) * -(-n // 256)
    spec = registry.get("wgmma_stream_k")
    for params, blocks in (({}, 2 * min(4 * pairs, 64)), ({"SPLITS": 2, "SMS": 132}, 2 * min(2 * pairs, 66)),
                           ({"CLUSTER": 1, "SPLITS": 1}, min(-(-m // 128) * -(-n // 256), 128))):
        p = registry.bind(spec, make_problem(m, n, k, params=params))
        assert spec.launches[-1].grid(p) == (blocks, 1) and spec.launches[-1].block(p) == (384, 1)
        assert global_shapes(p)["WS"] == (p.params["SMS"], 128 * 256 + 32)
    assert "WS" in {name for _, name in sources.load("wgmma_stream_k.cu").params}


@pytest.mark.parametrize("size", [(4096, 4096, 4096), (8192, 8192, 8192), (300, 2056, 72), (128, 256, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_wgmma_epilogue_in_clusters_of_4_takes_squares_of_tiles_and_copies_half_of_a(size):
    """CLUSTER 4: a cluster per 2 x 2 square of 128 x 256 tiles, up to SMS / 4 of them; each block
    copies half of A's tile (64 rows, multicast to the block beside it) as it copies half of B's."""
    m, n, k = size
    squares = -(-m // 256) * -(-n // 512)
    spec = registry.get("wgmma_epilogue")
    for sms in (128, 132):
        p = registry.bind(spec, make_problem(m, n, k, params={"CLUSTER": 4, "SMS": sms}))
        assert spec.launches[-1].grid(p) == (4 * min(squares, sms // 4), 1)
        assert spec.launches[-1].tensor_maps(p)["A"] == (64, 64)
    assert spec.launches[-1].tensor_maps(registry.bind(spec, make_problem(m, n, k)))["A"] == (64, 128)


@pytest.mark.parametrize("size", [(4096, 4096, 4096), (8192, 8192, 8192), (300, 2056, 72), (128, 256, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_mma_tma_launches_one_block_per_sm_at_most_in_whole_clusters(size):
    """mma_tma: by default (CLUSTER 1, SMS 128, its sweep's winner at 4,096^3 and 8,192^3 on an H100)
    a block per tile up to 128 (4 tiles each at 4,096^3); SMS 132 takes every SM of an H100 or H200;
    with CLUSTER 2, as wgmma_cluster, a cluster per pair of tiles one above the other, up to SMS / 2."""
    m, n, k = size
    tiles, pairs = -(-m // 128) * -(-n // 256), -(-m // 256) * -(-n // 256)
    spec = registry.get("mma_tma")
    for params, blocks in (({}, min(tiles, 128)), ({"SMS": 132}, min(tiles, 132)), ({"CLUSTER": 2, "SMS": 128}, 2 * min(pairs, 64)),
                           ({"CLUSTER": 2, "SMS": 132}, 2 * min(pairs, 66))):
        p = registry.bind(spec, make_problem(m, n, k, params=params))
        assert spec.launches[-1].grid(p) == (blocks, 1) and spec.launches[-1].block(p) == (384, 1)
        # The ring of STAGES slots (128 x 64 of A, 64 x 256 of B: 48 KB each), its mbarriers, 1 KB to align.
        assert spec.launches[-1].shared_bytes(p) == p.params["STAGES"] * (48 * 1024 + 16) + 1024


@pytest.mark.parametrize("kernel", ["mma_ldmatrix", "mma_swizzled", "mma_pipelined"])
@pytest.mark.parametrize("size", [(1, 1, 1), (17, 33, 9), (150, 135, 37), (37, 264, 40)],
                         ids=lambda s: "x".join(map(str, s)))
def test_traced_tensor_rungs_are_right_at_odd_sizes_on_the_cpu(kernel, size):
    """Rows of A (K) or B (N) that are not a multiple of 8 halves start off 16-byte boundaries: the
    copies go half by half there, with zeros past the edge, and C's pairs go as two floats where N
    is odd. Every element of C is stored once and equals float64's product of the rounded inputs."""
    spec = registry.get(kernel)
    m, n, k = size
    trace = tracer.trace(kernel, registry.bind(spec, make_problem(m, n, k)), None, "cpu")
    assert trace.rel_error < spec.tolerance and trace.checked_outputs == m * n
    r = trace.records
    stores = r[(r["array"] == trace.arrays.index("C")) & (r["op"] == 1)]
    width = 1 if n % 2 else 2   # floats per store
    assert len(stores) * width == m * n and len(np.unique(stores["offset"])) == len(stores)
    a_loads = r[(r["array"] == trace.arrays.index("A")) & (r["op"] == 0)]
    # Every element of A read, none past K: half by half where K is not a multiple of 8, else 8 at a time.
    assert (a_loads["col"] < k).all() and len(np.unique(a_loads["offset"])) * (1 if k % 8 else 8) == m * k


def test_the_documents_wmma_kernel_is_refused_where_its_32_fold_work_would_hold_the_gpu():
    with pytest.raises(EngineError, match="32 times"):
        registry.bind(registry.get("wmma_as_written"), make_problem(4096, 4096, 4096))


def test_the_ring_in_dynamic_shared_memory_is_sized_by_the_sources_views():
    """mma_pipelined's STAGES x (BM x BK + BK x BN) halves, launched as dynamic shared memory: the
    registry's launch size is the sum of the source's views, and a ring over 227 KB is refused."""
    spec = registry.get("mma_pipelined")
    p = registry.bind(spec, make_problem(256, 256, 256, params={"BN": 256, "STAGES": 4, "BK": 64}))
    assert spec.launches[0].shared_bytes(p) == 4 * (128 * 64 + 64 * 256) * 2 == 196608
    with pytest.raises(EngineError, match=re.escape("needs at most 227 KB of shared memory, a block's most (it would take 240 KB)")):
        registry.bind(spec, make_problem(256, 256, 256, params={"BN": 256, "STAGES": 5, "BK": 64}))


def test_grouped_blocks_store_every_tile_of_c_once_and_right():
    """mma_pipelined hands tiles out in groups of 8 block rows: with 10 block rows (a group of 8 and
    a partial one of 2, the last block row itself partial) every element of C is stored by exactly
    one block, the block the grouping names, and the product is float64's."""
    params = {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "STAGES": 2, "BK": 32}
    spec = registry.get("mma_pipelined")
    trace = tracer.trace("mma_pipelined", registry.bind(spec, make_problem(592, 80, 48, params=params)), None, "cpu")
    assert trace.rel_error < spec.tolerance and trace.checked_outputs == 592 * 80
    r = trace.records
    c = r[(r["array"] == trace.arrays.index("C")) & (r["op"] == 1)]
    elements = c["offset"] // 4   # float2 stores: each record names its first element
    assert len(np.unique(elements)) == len(elements) == 592 * 80 // 2
    gx, per_group = 2, 8 * 2
    block = c["block_y"].astype(int) * gx + c["block_x"]
    rows = np.minimum(10 - block // per_group * 8, 8)
    tile_row = block // per_group * 8 + block % per_group % rows
    tile_col = block % per_group // rows
    assert np.array_equal(c["row"] // 64, tile_row) and np.array_equal(c["col"] // 64, tile_col)
    assert set(zip(tile_row.tolist(), tile_col.tolist())) == {(y, x) for y in range(10) for x in range(2)}


def test_a_zero_filling_copy_records_its_shared_write_and_no_read():
    """CP_ASYNC4_ZFILL: a lane outside A or B writes 16 zero bytes and reads nothing (PTX's zero fill);
    Nsight Compute counts no request or sector for it but counts the LDGSTS, even where every lane of
    the warp zero-fills (measured on an H100). So at an edge the shared side has more records than
    the global side, and the trace's LDGSTS count is every issue, all-zero-fill ones too."""
    t = tracer.trace("mma_pipelined", make_problem(144, 80, 48), source="cpu")
    rec = t.columns
    sides = {}
    for s, ts in enumerate(t.sites):
        if ts.site.copy:
            sides[ts.site.line, ts.site.space] = (int((rec["site"] == s).sum()), t.issued.get(s, 0), ts.site.zfill)
    lines = {line for line, _ in sides}
    assert lines and all(sides[line, "shared"][2] and sides[line, "global"][2] for line in lines)
    assert all(sides[line, "shared"][0] > sides[line, "global"][0] for line in lines)   # the zero fills
    summary = analysis.site_summary(t)
    copies = summary[summary["copy"].astype(bool) & (summary["space"] == "shared")]
    assert analysis.ncu_totals(summary)[analysis.NCU_COPY_METRICS["global", "load", "requests"]] == int(copies["requests"].sum())
    assert int(copies["requests"].sum()) > int(summary[summary["copy"].astype(bool) & (summary["space"] == "global")]["requests"].sum())


@pytest.mark.parametrize("params", [{}, {"BK": 32, "STAGES": 4}])
def test_mma_pipelined_reads_the_next_fragments_before_it_copies(params):
    """mma_pipelined's barrier sits before a tile's last k step, and each step reads the next step's
    fragments before its multiplies: so after every barrier that a later tile's copies follow, a
    warp's first shared access is an ldmatrix of the tile that just landed, and the copies come after
    it. (The kernel that read a step's fragments just before multiplying them began each tile with
    its copies: on an H200 it ran 402 TFLOP/s at 4096^3, this one 441.)"""
    t = tracer.trace("mma_pipelined", make_problem(128, 128, 512, params=params), source="cpu")
    rec = {**t.columns, "space": t.spaces()}
    one = (rec["block_x"] == 0) & (rec["block_y"] == 0) & (rec["warp"] == 0) & (rec["lane"] == 0)
    copy = np.array([ts.site.copy for ts in t.sites])[rec["site"][one]]
    ldmatrix = (rec["space"][one] == records.SPACES.index("shared")) & (rec["op"][one] == records.OPS.index("load")) & ~copy
    epoch = rec["epoch"][one]
    starts = [i for i in range(1, len(epoch)) if epoch[i] != epoch[i - 1]]   # the first access after each barrier
    followed = [i for i in starts if copy[i:][epoch[i:] == epoch[i]].any()]
    assert len(followed) >= 3
    assert all(ldmatrix[i] for i in followed)
