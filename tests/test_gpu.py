"""GPU tests: run on the device (README: "GPU tests"). Skipped where there is no GPU."""
from pathlib import Path

import numpy as np
import pytest

from engine.devices import gpu_client
from engine.errors import EngineError, WorkerCrashed
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.tracing import tracer
from engine.tracing.plan import single_launch_plan
from tests.golden.cases import CASES, trace_case

pytestmark = pytest.mark.gpu
TEST_CUDA = Path(__file__).parent / "cuda"


def _bench(kernel, p, **kw):
    return gpu_client.call("bench", {"kernel": kernel, "problem": p, "warmup": 0, "reps": 1, **kw})


def test_worker_reports_the_device():
    st = gpu_client.status()
    assert st.available and st.name.startswith("NVIDIA")
    assert st.info["sm_count"] > 0 and st.info["compute_capability"] >= "7.0"


@pytest.mark.parametrize("spec", [k for k in registry.CATALOG if k.timed], ids=lambda s: s.name)
@pytest.mark.parametrize("size", [(37, 45, 29), (512, 384, 256)], ids=["odd", "mid"])
def test_every_kernel_result_matches_float64_numpy(spec, size):
    m, n, k = (64, 96, 32) if spec.rules and size[0] == 37 else size   # tiled_unguarded: multiples of TILE
    # Not the defaults: the last allowed choice of its parameters (the largest TILE, PAD 1, ...).
    p = make_problem(m, n, k, block=spec.default_block, params=spec.combinations()[-1] if spec.params else {})
    out = _bench_or_skip(spec, p)
    if spec.name == "wmma_as_written":   # the document's kernel reads B's 16 x 16 blocks transposed: wrong, as shown
        assert not out["correct"] and out["rel_error"] > 1e-2, out
        return
    assert out["correct"], out
    # FP32 well inside its tolerance; rounded inputs (TF32, FP16, BF16) within theirs
    assert out["rel_error"] < (1e-5 if spec.tolerance == registry.TOLERANCE[registry.Precision.FP32] else spec.tolerance)


def _bench_or_skip(spec, p, **kw):
    """_bench, skipped for a torch.mm entry where the GPU machine has no PyTorch (never a requirement)."""
    try:
        return _bench(spec.name, p, **kw)
    except EngineError as exc:
        if spec.kind is registry.Kind.TORCH and "PyTorch" in str(exc):
            pytest.skip(str(exc))
        raise


def test_torch_mm_and_pycuda_share_the_worker_context():
    """torch.mm runs in the worker's (primary) context: kernels, cuBLAS and traces after it stay right."""
    p = make_problem(512, 384, 256)
    out = _bench_or_skip(registry.get("torch_mm_fp16"), p, reps=3, warmup=1)
    assert out["correct"] and out["times_ms"] and out["rel_error"] < 5e-3, out
    for kernel in ("cublas_gemm_fp16", "tiled_guarded", "cublas_sgemm"):
        assert _bench(kernel, p)["correct"], kernel
    assert tracer.trace("naive_x_cols", make_problem(64, 64, 64), source="gpu").rel_error < 1e-5


@pytest.mark.parametrize("spec", registry.FP32_RUNGS, ids=lambda s: s.name)
@pytest.mark.parametrize("size", [(1024, 1024, 1024), (1000, 1000, 1000), (129, 517, 1031), (4096, 1024, 260),
                                  (3, 5, 7), (1, 4096, 64), (1, 1, 1), (17, 33, 9), (4095, 4097, 511)],
                         ids=["square", "odd", "odd-nonsquare", "nonsquare", "tiny", "one-row", "1x1x1", "17x33x9",
                              "4095x4097x511"])
def test_every_ladder_rung_with_its_tuned_parameters_matches_float64_numpy(spec, size):
    out = _bench(spec.name, make_problem(*size))
    assert out["correct"], out
    assert out["rel_error"] < 1e-5


@pytest.mark.parametrize("kernel", ["split_k", "split_k_padded"])
@pytest.mark.parametrize("splits", [1, 3, 8])
@pytest.mark.parametrize("size", [(1, 1, 1), (17, 33, 9), (4095, 4097, 511), (1000, 1000, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_split_k_matches_float64_numpy_at_every_split(kernel, splits, size):
    """Slices of K that end inside a BK tile, slices past K (empty, their partials zeros), one slice."""
    out = _bench(kernel, make_problem(*size, params={"SPLITK": splits}))
    assert out["correct"] and out["rel_error"] < 1e-5, out


def test_split_k_gives_the_same_bits_on_every_run():
    """The partials are added in slice order by a second launch, not by atomics: run to run, one result
    (its error against float64, to the last bit, stands for C: atomics' varying order moves it)."""
    p = make_problem(1000, 1000, 1000, params={"SPLITK": 8})
    errors = {_bench("split_k", p, warmup=w)["rel_error"] for w in (0, 1, 3)}
    assert len(errors) == 1, errors


TENSOR_ANY_SIZE = ("wmma_block", "mma_ldmatrix", "mma_swizzled", "mma_pipelined", "mma_tma", "wgmma_tma",
                   "wgmma_padded", "wgmma_persistent", "wgmma_cluster", "wgmma_epilogue", "wgmma_stream_k")


@pytest.mark.parametrize("kernel", TENSOR_ANY_SIZE)
@pytest.mark.parametrize("size", [(1, 1, 1), (17, 33, 9), (4095, 4097, 511), (129, 517, 1031), (3, 4096, 5),
                                  (1000, 1000, 1000), (4095, 4104, 520), (8, 24, 4104), (300, 2056, 72),
                                  (8, 4102, 520)],
                         ids=lambda s: "x".join(map(str, s)))
def test_tensor_rungs_match_float64_numpy_at_any_size(kernel, size):
    """Zero-filled edges, half-by-half copies where rows are not 16-byte aligned, a float at a time
    where N is odd; the TMA rungs (rows of 16-byte multiples) copy A and B into padded rows first
    where K or N is not a multiple of 8 (at 1 x 1 x 1 too), and wgmma_epilogue and wgmma_stream_k,
    whose C no tensor map describes where N is not a multiple of 4 (8 x 4102 x 520: even, not
    such a multiple), store C by warps from their staged pieces there. The persistent rungs loop
    over more tiles than SMs at 4095 x 4104 x 520; at 300 x 2056 x 72 wgmma_cluster's last cluster
    has a block below C."""
    spec, p = registry.get(kernel), make_problem(*size)
    out = _bench(kernel, p)
    assert out["correct"] and out["rel_error"] < spec.tolerance, out


@pytest.mark.parametrize("kernel", registry.TMA_RUNGS + ("wgmma_padded",))
def test_the_padding_pass_reads_nothing_past_a_and_b(kernel):
    """pad_ab copies A and B into rows padded to 64 halves, 16 bytes a thread; a chunk wholly in a row's
    padding read its 16 bytes anyway, past the row, and for B's last row past B: at 4095 x 4097 x 4095
    B is 2 bytes short of 32 MiB, and every rung that pads faulted there (an illegal address)."""
    out = _bench(kernel, make_problem(4095, 4097, 4095))
    assert out["correct"] and out["rel_error"] < registry.get(kernel).tolerance, out


@pytest.mark.parametrize("size", [(4096, 4096, 512), (256, 65280, 512), (4095, 4097, 511)], ids=lambda s: "x".join(map(str, s)))
def test_mma_tma_hands_a_slot_back_only_after_reading_it(size):
    """mma_tma's warps hand a ring slot back to the producer (an mbarrier arrive) once they have read
    their fragments of it. ptxas had moved the last step's ldmatrix down next to the mma.sync that
    use them, past the arrive, which does not wait for an ldmatrix in flight: the copy engine
    refilled the slot under the reads, and a few hundred of C's elements came out wrong in every
    launch at 4096 x 4096 x 512 (8 k-tiles a tile, 4 tiles a block: the ring turns over fast),
    each off by 1% or more while C's relative error stayed near 1e-4, under FP16's tolerance. The
    gate now also checks element by element; at 256 rows it checks every row."""
    for _ in range(3):
        out = _bench("mma_tma", make_problem(*size))
        assert out["correct"] and out["worst_error"] < 1e-3, out   # the wrong ones were 1e-2 and more


@pytest.mark.parametrize("params", [{"CLUSTER": 2, "SMS": 128, "STAGES": 3}, {"CLUSTER": 2, "SMS": 132, "GROUP": 8}],
                         ids=["cluster2-128", "cluster2-132"])
@pytest.mark.parametrize("size", [(300, 2056, 72), (4095, 4104, 520), (128, 256, 8)], ids=lambda s: "x".join(map(str, s)))
def test_mma_tma_in_clusters_of_2_matches_float64(params, size):
    """mma_tma's other launch: two blocks share B's tile by multicast, each warp hands every slot back
    to both; an odd number of tile rows leaves the second block of the last cluster below C, and
    4095 x 4104 x 520 gives each cluster more tiles than one."""
    out = _bench("mma_tma", make_problem(*size, params=params))
    assert out["correct"] and out["rel_error"] < registry.get("mma_tma").tolerance, out


@pytest.mark.parametrize("params", [{"CLUSTER": 4}, {"CLUSTER": 4, "SMS": 132, "GROUP": 4}, {"LAG": 2, "SUSPEND": 1, "STAGE_IN_RING": 0},
                                    {"DESC_STEP": 1, "STORE_ROWS": 16, "STAGE_IN_RING": 0}, {"DESC_STEP": 1, "STAGES": 3, "BN": 128},
                                    {"C_BY_TMA": 0}, {"STAGES": 3, "STORE_BUFS": 4},
                                    {"STAGES": 3, "STORE_BUFS": 4, "STORE_ROWS": 16, "STAGE_IN_RING": 0}, {"LAG": 1, "STAGE_IN_RING": 0},
                                    {"STAGE_IN_RING": 0}, {"BN": 128}, {"CLUSTER": 4, "SMS": 120}, {"STAGES": 3}],
                         ids=["cluster4", "cluster4-132", "lag-suspend", "desc-step-warp-stores", "desc-step-bn128",
                              "warps-store-c", "four-buffers", "four-buffers-a-warp", "lag1", "c-not-in-ring",
                              "c-in-ring-bn128", "cluster4-120", "c-in-ring-of-3"])
@pytest.mark.parametrize("size", [(300, 2056, 72), (4095, 4104, 520), (128, 256, 8), (520, 776, 136), (301, 2055, 73),
                                  (4095, 4104, 8)], ids=lambda s: "x".join(map(str, s)))
def test_wgmma_epilogue_choices_match_float64(params, size):
    """wgmma_epilogue's other choices: in clusters of 4 a block copies half of A's tile into its
    neighbour as well as half of B's (at 300 x 2056 the last clusters have blocks below and right of
    C; at 520 x 776 a cluster's second column of tiles is partly outside C); the second consumer
    held LAG k-tiles behind (more than there are at K = 8); descriptors stepped by adds (BN 128: the
    other B stride) and C stored a warp's 16 rows at a time; at 301 x 2055 x 73, A and B padded
    first and C's rows, not 16-byte multiples, stored by each warp from its staged pieces, as
    C_BY_TMA 0 stores them at every size; four staging buffers, taken in turn; C staged partly in the
    slot of the ring its last k-tile used, held until the stores have read it (at 4095 x 4104 x 520
    each block stores several tiles, so the next tile's copies wait on that slot; at 4095 x 4104 x 8
    it does so too, and a tile's one k-tile is both its first and its last)."""
    out = _bench("wgmma_epilogue", make_problem(*size, params=params))
    assert out["correct"] and out["rel_error"] < registry.get("wgmma_epilogue").tolerance, out


# Sizes at which wgmma_stream_k shares tiles out by k-tiles: the last wave a quarter full (3000³: 144
# pairs of tiles for 64 clusters), one pair of tiles for 4 clusters (256 x 256 x 4096: split-K), 16
# pairs with a long K, with partial tiles in M and N (4095 x 4104 x 4096), and a cluster's second
# block below C (300 x 2056 x 2048); and one where it does not (4095 x 4104 x 520: runs too short).
STREAM_K_SIZES = [(3000, 3000, 3000), (256, 256, 4096), (1000, 1000, 8192), (4095, 4104, 4096), (300, 2056, 2048),
                  (4095, 4104, 520)]


@pytest.mark.parametrize("params", [{}, {"CLUSTER": 1}, {"SPLITS": 2, "SMS": 132}, {"BN": 128, "STAGES": 5}],
                         ids=["default", "cluster1", "splits2-132", "bn128"])
@pytest.mark.parametrize("size", STREAM_K_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma_stream_k_matches_float64(params, size):
    """The tiles of a run that began inside them are handed over through WS and added by the cluster
    that began them: every element of C against float64, whichever clusters share a tile."""
    out = _bench("wgmma_stream_k", make_problem(*size, params=params))
    assert out["correct"] and out["rel_error"] < registry.get("wgmma_stream_k").tolerance, out


def _stream_k_chosen() -> list[dict]:
    """Every configuration of wgmma_stream_k the shipped size sweeps choose, at any size swept on any GPU."""
    from engine.bench import selection
    df = selection.load()
    rows = df[(df["kernel"] == "wgmma_stream_k") & (df["status"] == "ok")] if len(df) else df
    chosen = {tuple(sorted(selection.chosen("wgmma_stream_k", int(m), int(n), int(k), df, gpu).items()))
              for (gpu, m, n, k), _ in rows.groupby(["gpu", "m", "n", "k"])} if len(rows) else set()
    return [dict(c) for c in sorted(chosen)]


@pytest.mark.parametrize("params", _stream_k_chosen(), ids=lambda p: f"BN{p['BN']}-S{p['SPLITS']}-C{p['CLUSTER']}-{p['SMS']}")
@pytest.mark.parametrize("size", [(1, 1, 1), (17, 33, 9), (1000, 1000, 1000), (4095, 4097, 511)],
                         ids=lambda s: "x".join(map(str, s)))
def test_wgmma_stream_k_is_right_at_every_configuration_the_sweeps_choose(params, size):
    """A run that names none of its parameters takes the sweeps' choice for its size (selection.chosen):
    each such configuration against float64 at tiny, odd and small sizes (the list is not empty:
    test_selection.py checks that the tensor sweeps ship)."""
    out = _bench("wgmma_stream_k", make_problem(*size, params=params))
    assert out["correct"] and out["rel_error"] < registry.get("wgmma_stream_k").tolerance, out


def test_wgmma_stream_k_gives_the_same_bits_on_every_run():
    """The partial sums are added in a fixed order (the runs' order), not by atomics: one result run
    to run (its error against float64, to the last bit, stands for C)."""
    p = make_problem(3000, 3000, 3000)
    errors = {_bench("wgmma_stream_k", p, warmup=w)["rel_error"] for w in (0, 1, 3)}
    assert len(errors) == 1, errors


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gpu_trace_equals_cpu_trace(case):
    gpu = trace_case(case, "gpu")
    cpu = trace_case(case, "cpu")
    assert gpu.source == "gpu" and gpu.device.startswith("NVIDIA")
    spec = registry.get(case[1])   # FP16 inputs round A and B to 11 bits: FP32's bar of 1e-5 is not theirs
    assert gpu.rel_error < (1e-5 if spec.inputs is registry.Precision.FP32 else spec.tolerance)
    assert np.array_equal(gpu.records, cpu.records)


def test_correctness_gate_reports_a_wrong_kernel_as_wrong_not_fast():
    p = make_problem(256, 256, 256)
    out = _bench("naive_x_cols", p, source_override=str(TEST_CUDA / "wrong_result.cu"), reps=5)
    assert not out["correct"] and out["times_ms"] == [] and out["rel_error"] > 1e-3


def test_a_benchmark_row_times_the_build_its_params_name():
    from engine.bench import benchmark
    settings = benchmark.Settings(warmup=1, reps=3)
    rows = [benchmark.measure("shared_bank_conflicts", 256, 256, 256, settings, {"TILE": 32, "PAD": pad})
            for pad in (0, 1)]
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    assert [r["params"] for r in rows] == [{"TILE": 32, "PAD": 0}, {"TILE": 32, "PAD": 1}]
    assert all(r["rel_error"] < 1e-5 and r["reps"] == 3 for r in rows)


def test_a_timing_between_two_traces_in_one_worker_changes_neither():
    p = make_problem(64, 64, 64, params={"TILE": 16})
    t = tracer.trace("tiled_guarded", p, source="gpu")   # the instrumented build
    out = _bench("tiled_guarded", p)                     # the plain build, through the same launcher
    again = tracer.trace("tiled_guarded", p, source="gpu")
    assert out["correct"] and t.rel_error < 1e-5 and np.array_equal(t.records, again.records)


def test_a_faulting_kernel_replaces_the_worker_and_the_next_request_works():
    before = gpu_client.restarts
    plan = single_launch_plan(str(TEST_CUDA / "fault_out_of_bounds.cu"), make_problem(8, 8, 8), (1, 1), (32, 1))
    with pytest.raises(WorkerCrashed, match="restarted"):
        gpu_client.call("execute", plan)
    assert gpu_client.restarts == before + 1
    t = tracer.trace("naive_x_cols", make_problem(16, 16, 16), source="gpu")
    assert t.rel_error < 1e-6


def test_a_hanging_kernel_times_out_and_the_next_request_works():
    gpu_client.status()  # worker warm, so the timeout below is the kernel's
    plan = single_launch_plan(str(TEST_CUDA / "hang_forever.cu"), make_problem(8, 8, 8), (1, 1), (32, 1))
    with pytest.raises(WorkerCrashed, match="ran past"):
        gpu_client.call("execute", plan, timeout=10)
    assert _bench("tiled_guarded", make_problem(64, 64, 64))["correct"]


def test_engine_error_in_the_worker_is_not_fatal():
    before = gpu_client.restarts
    with pytest.raises(EngineError, match="cap"):
        tracer.trace("naive_x_cols", make_problem(64, 64, 64), source="gpu", cap=1000)
    with pytest.raises(EngineError, match="over the cap"):
        # Passes the estimate (cap check uses the bound), refused on the exact count in the worker.
        from engine.tracing.plan import make_plan
        plan = make_plan("tiled_guarded", make_problem(64, 64, 60, params={"TILE": 16}), None, cap=10**9)
        plan.cap = 1000
        gpu_client.call("execute", plan)
    assert gpu_client.restarts == before


def test_128_bit_accesses_trace_the_same_on_gpu_and_cpu():
    from tests.test_vector_access import vec4_trace
    gpu, graw = vec4_trace(5, 200, 7, "gpu")
    cpu, _ = vec4_trace(5, 200, 7, "cpu")
    assert graw.checked_outputs == 5 * 200 and graw.rel_error < 1e-5
    assert gpu.records.tobytes() == cpu.records.tobytes()
    # The plain build's 128-bit macros compile to 128-bit instructions, as the trace assumes.
    assert _bench("naive_x_cols", make_problem(5, 200, 7, block=(32, 1)),
                  source_override=str(TEST_CUDA / "vec4_rows.cu"))["correct"]


def test_asynchronous_copies_trace_the_same_on_gpu_and_cpu():
    from tests.test_vector_access import async_trace
    gpu, graw = async_trace(5, 200, 7, "gpu")
    cpu, _ = async_trace(5, 200, 7, "cpu")
    assert graw.checked_outputs == 5 * 200 and graw.rel_error < 1e-5
    assert gpu.records.tobytes() == cpu.records.tobytes()


def test_a_kernel_added_by_its_source_and_entry_traces_the_same_on_gpu_and_cpu():
    from tests.test_contract import _rows_1d
    with registry.registered(_rows_1d()):
        p = make_problem(37, 45, 29, params={"BS": 128})
        gpu, cpu = tracer.trace("rows_1d", p, source="gpu"), tracer.trace("rows_1d", p, source="cpu")
        assert gpu.rel_error < 1e-5 and gpu.checked_outputs == 37 * 45
        assert gpu.records.tobytes() == cpu.records.tobytes()


def test_moved_pointers_and_1d_shared_tiles_trace_the_same_on_gpu_and_cpu():
    from tests.test_contract import _moved_pointers
    with registry.registered(_moved_pointers()):
        p = make_problem(48, 64, 80, params={"TILE": 16})
        gpu, cpu = tracer.trace("moved_pointers", p, source="gpu"), tracer.trace("moved_pointers", p, source="cpu")
    assert gpu.rel_error < 1e-5 and gpu.checked_outputs == 48 * 64
    assert gpu.records.tobytes() == cpu.records.tobytes()


def test_a_half_precision_shared_array_traces_the_same_on_gpu_and_cpu():
    from tests.test_element_types import half_trace
    gpu, graw, _ = half_trace(5, 200, 37, "gpu")
    cpu, craw, _ = half_trace(5, 200, 37, "cpu")
    # The same half rounding of A (a different one would move the error by its own size); the
    # float32 sums differ in their last bits only (the GPU fuses multiply and add).
    assert graw.checked_outputs == 5 * 200 and abs(graw.rel_error - craw.rel_error) < 0.01 * craw.rel_error
    assert gpu.records.tobytes() == cpu.records.tobytes()


@pytest.mark.parametrize("inputs", ["fp16", "bf16"])
def test_half_and_bfloat16_inputs_trace_the_same_on_gpu_and_cpu(inputs):
    from tests.test_contract import BF16_CU, HALF_CU, _low_precision
    name, file = ("half_inputs", HALF_CU) if inputs == "fp16" else ("bf16_inputs", BF16_CU)
    with registry.registered(_low_precision(name, file, registry.Precision(inputs))) as spec:
        p = make_problem(37, 45, 29)
        gpu, cpu = tracer.trace(name, p, source="gpu"), tracer.trace(name, p, source="cpu")
    # The same rounding of the inputs on both (sums differ in their last bits: fused multiply-add).
    assert gpu.rel_error <= spec.tolerance and abs(gpu.rel_error - cpu.rel_error) < 0.01 * cpu.rel_error


def test_ldmatrix_traces_the_same_on_gpu_and_cpu():
    from tests.test_ldmatrix import rows_trace
    gpu, graw = rows_trace(5, 100, 37, "gpu")
    cpu, craw = rows_trace(5, 100, 37, "cpu")
    # ldmatrix_rows.cu's product is right only if every lane received what the PTX ISA's table
    # says (the CPU hands it out by that table); the error is B's rounding to half, as on the CPU
    # but for the GPU's fused multiply-adds.
    assert graw.checked_outputs == 5 * 100 and abs(graw.rel_error - craw.rel_error) < 0.01 * craw.rel_error
    assert gpu.records.tobytes() == cpu.records.tobytes()
    # The plain build (the bare instruction) computes the same.
    out = _bench("naive_x_cols", make_problem(5, 100, 37, block=(32, 1)),
                 source_override=str(TEST_CUDA / "ldmatrix_rows.cu"))
    assert out["rel_error"] < 2e-3


def test_warp_collective_loads_among_barriers_trace_the_same_on_gpu_and_cpu():
    plan = single_launch_plan(str(TEST_CUDA / "ldmatrix_warps.cu"), make_problem(96, 14, 4), (1, 1), (96, 1))
    gpu, cpu = (tracer.assemble(plan, tracer.run_plan(plan, source), source) for source in ("gpu", "cpu"))
    assert gpu.records.tobytes() == cpu.records.tobytes()


def _on_gpu_and_cpu(plan):
    """(raw run, trace) of a plan on the GPU, then on the CPU."""
    return [(raw := tracer.run_plan(plan, source), tracer.assemble(plan, raw, source)) for source in ("gpu", "cpu")]


def test_ldmatrix_trans_and_mma_trace_the_same_on_gpu_and_cpu():
    from tests.test_mma import tile_plan
    plan = tile_plan(37, 29, 45)
    (graw, gpu), (craw, cpu) = _on_gpu_and_cpu(plan)
    # The error is A's and B's rounding to half on both; the tensor core may order and round its
    # sums otherwise than the CPU (a double sum rounded once), in the last bits only.
    assert graw.checked_outputs == 37 * 29 and graw.rel_error < 1e-3
    assert abs(graw.rel_error - craw.rel_error) < 0.05 * craw.rel_error
    assert gpu.records.tobytes() == cpu.records.tobytes()


@pytest.mark.parametrize("file, size", [("ldmatrix_trans.cu", (32, 14, 1)), ("mma_fragments.cu", (32, 4, 16))])
def test_trans_and_mma_fragments_are_the_ptx_tables_on_the_gpu_as_on_the_cpu(file, size):
    """What each lane received from ldmatrix .trans, and d after one mma on fragments handed out by
    the PTX tables (tests/test_mma.py checks the CPU's against those tables)."""
    plan = single_launch_plan(str(TEST_CUDA / file), make_problem(*size), (1, 1), (32, 1))
    (graw, gpu), (craw, cpu) = _on_gpu_and_cpu(plan)
    assert gpu.records.tobytes() == cpu.records.tobytes()
    # C is no product of A and B here, but its distance from A B is a function of C: the same
    # distance, the same C (to the last bits, where mma may round otherwise); one element out of
    # place moves it by far more.
    assert graw.checked_outputs == size[0] * size[1]
    assert abs(graw.rel_error - craw.rel_error) <= 1e-5 * craw.rel_error


@pytest.mark.parametrize("file, size, grid, block", [("warp_shuffles.cu", (8, 8, 70), (8, 2), (32, 4)),
                                                     ("host_functions.cu", (37, 45, 29), (2, 6), (32, 8)),
                                                     ("sync_after_return.cu", (64, 64, 64), (1, 1), (64, 1))])
def test_shuffles_votes_host_functions_and_barriers_do_on_the_cpu_what_they_do_on_the_gpu(file, size, grid, block):
    """The CPU tracer's warp shuffles, votes, __syncwarp, math functions, __constant__ and __restrict__
    pointers, and its barrier that threads which returned do not hold up (cuda/cpu_shim.h), against the
    GPU's: the same records, and the same C (each of the first two checks its shuffles against the PTX
    ISA's shfl.sync, so a right result)."""
    plan = single_launch_plan(str(TEST_CUDA / file), make_problem(*size), grid, block)
    (graw, gpu), (craw, cpu) = _on_gpu_and_cpu(plan)
    assert graw.checked_outputs == craw.checked_outputs
    assert graw.rel_error == craw.rel_error or abs(graw.rel_error - craw.rel_error) < 1e-6
    if file != "sync_after_return.cu":   # (that one stores A, not a product)
        assert graw.checked_outputs == size[0] * size[1] and graw.rel_error < 1e-5
    assert gpu.records.tobytes() == cpu.records.tobytes()
