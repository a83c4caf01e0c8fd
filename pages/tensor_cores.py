"""Tensor cores: the document's WMMA kernel diagnosed from recorded evidence, the tile hierarchy of the
tensor rungs, which lane holds which element of a fragment (recorded on the GPU, against the PTX ISA),
ldmatrix's banks without and with the swizzle, the rungs' speed against cuBLAS and where mma_pipelined's
time goes (recorded), and cuBLAS's cliff at sizes that are not multiples of 8 beside rungs that have
none (recorded)."""
import streamlit as st

from engine import animations
from engine.bench import benchmark, schema, speeds, tuning
from engine.errors import EngineError
from engine.kernels import documents, registry
from engine.kernels.problem import make_problem
from engine.metrics import ldmatrix_banks, recorded_fragments, stalls, tensor_evidence, tensor_tiles
from engine.plots import charts, listing, style, tensor_figures
from pages.lib import cached, choice, query, settings, speed_runs, ui, view_state

ui.setup_page("tensor_cores", "Tensor cores", "FP16 inputs, FP32 sums, 16 × 8 × 16 per instruction: what the "
              "document's WMMA kernel gets wrong, how the faster rungs split the work, and who holds which element.")
CHART = {"displaylogo": False, "displayModeBar": False}
rungs = list(registry.TENSOR_RUNGS)
operands = list(recorded_fragments.OPERANDS)
# Every figure at a projector's sizes in both modes (each fits 1280x720 with the sidebar open): one
# figure for either mode, so that switching presenter mode redraws none of the page's seven (~1.4 s).
PROJECTOR = True
with ui.controls():
    c0, c1, c2, c3 = st.columns([2.6, 2.6, 0.9, 1.1])
    rung = c0.selectbox("Rung (hierarchy)", rungs, key=view_state.state("rung", "mma_swizzled", rungs),
                        format_func=lambda r: f"{rungs.index(r) + 1}. {r}")   # its title would not fit at 1280 px
    operand = c1.selectbox("Fragment", operands, key=view_state.state("operand", "mma_a", operands),
                           format_func=lambda o: recorded_fragments.OPERANDS[o].label)
    lane_key = view_state.state("lane", 0, lo=0, hi=31)
    view_state.control_follows_frame("lane", lane_key, range(32))
    lane = c2.number_input("Lane", 0, 31, key=lane_key,
                           help="The lane the map opens on. Play, Step and the slider move on from it; once the "
                                "map stands still, the page's link follows it, so a reload or a copied link opens "
                                "on the lane shown, and so does this box the next time the page is drawn.")
    speed = view_state.speed_control(c3, animations.SPEEDS["tensor_cores"])
    view_state.remember(rung=rung, operand=operand, lane=lane)
    # The rung's tiles (section 2) and what a live run times (section 5): its parameters and sizes.
    shape = settings.size_inputs((4096, 4096, 4096), hi=16384)   # (M, N, K); the page's loops use k
    chosen, _ = settings.parameter_inputs([rung])
    params = chosen[rung]
    # Said here, not stopping the page: sections 1, 3, 4 and 6 do not read the rung's settings. The
    # document's kernel is never timed live (section 5 leaves it out), so the sizes are not its: only
    # its parameters are checked, at a size it takes (at the page's 4096³ its refusal above 2048 had
    # greeted anyone who picked rung 1).
    checked = shape if rung != rungs[0] else (128, 128, 128)
    wrong = settings.reason(rung, *checked, params)
    if wrong:
        st.error(wrong, icon=":material/error:")

# ------------------------------------------------------------------ 1. the document's WMMA kernel
doc = documents.cite("002")
ev = tensor_evidence.seed_evidence()
errors = tensor_evidence.seed_errors()
faults = tensor_evidence.seed_faults()
st.subheader(f"1. The WMMA kernel of {doc}, as written")
st.markdown(f"On the recorded run's inputs, {tensor_evidence.RECORDED_INPUTS}, its results are off by "
            f"**{ev.table['error vs A·B'].min():.0%} to {ev.table['error vs A·B'].max():.0%}** against A·B. That "
            "looks nearly right only because every sum of A·B is then K positive products, and the wrong product "
            f"has nearly the same sums. On zero-mean inputs, {tensor_evidence.ZERO_MEAN_INPUTS}, the same kernel "
            f"is off by **{errors['zero-mean'].min():.0%} to {errors['zero-mean'].max():.0%}**: what it computes is "
            f"A·B' (B with each 16 × 16 block transposed), which keeps only the blocks' diagonals in place, so it is "
            f"about as far from A·B as an unrelated matrix (√(2 − 2·16/256) = {tensor_evidence.diagonal_error():.0%}). "
            f"Its launch starts **{int(ev.table['warps per tile'].iloc[0])} warps per tile of C**, and Nsight Compute "
            f"counts **{ev.hmma_seed:,} HMMA** instructions at 128³ where {ev.hmma_needed:,} do the product "
            f"(wmma_warp: {ev.hmma_warp:,}).")
st.table(tensor_figures.seed_error_table(ev, errors))
st.caption(f"Recorded: the {ev.device} run of tests/benchmarks/tensor_device.py (inputs from the engine's "
           f"make_inputs, {tensor_evidence.RECORDED_INPUTS}), not measured now. Computed here: the kernel worked "
           "out on the CPU from its source, as below: each warp's tile from its warp index, its fragments with the "
           "layouts it declares, FP16 values summed in FP32; on the recorded inputs it gives the GPU's figures. Up to "
           f"{tensor_evidence.COMPUTED_MAX:,}³: a larger size would keep this page busy for seconds.")
st.markdown("**Why, in its source:** the two highlighted lines below.  \n" + "  \n".join(
    f"{tensor_figures.FAULT_MARKS[i]} **Line {f.line}, {f.name}.** {f.why}" for i, f in enumerate(faults)))
st.plotly_chart(cached.page_part(("tc-seed-source",), lambda: tensor_figures.source_figure(
    listing.source_lines(tensor_evidence.SEED_FILE), faults, PROJECTOR)), width="stretch", config=CHART,
    key="tc-seed-source")
st.table(tensor_figures.seed_table(ev))
st.caption(f"Recorded {ev.device} run, not measured now. Warps launched: from the launch the document writes "
           "(blocks of 32 × 4 threads, 8 × M/16 blocks in y), which the recorded count equals. wmma_warp: the same "
           "instructions, one warp per 16 × 16 tile.")
st.markdown("**One operation, how many instructions?** The document's words beside what Nsight Compute counted on "
            "the tensor pipe for kernels whose number of operations follows from their shape.")
st.table(tensor_figures.instruction_table(tensor_evidence.tensor_instructions()))
st.caption("Tensor instructions: sm__inst_executed_pipe_tensor_op_hmma, warp-level (a wgmma counts once per warp of "
           "its warpgroup), recorded on the H200. One WMMA 16×16×16 mma_sync is two HMMA.16816: the hardware's "
           "instruction is 16×8×16, and on Hopper wgmma does 64×256×16 per warpgroup instruction.")

# ------------------------------------------------------------------ 2. hierarchy
try:   # the tiles follow from the parameters alone (the sizes above are what a live run times)
    h = tensor_tiles.hierarchy(rung, params)
except EngineError as exc:
    h, why = None, str(exc)
st.subheader(f"2. Block → {h.unit if h else 'warp'} → instruction: {rung}")
if h is None:   # the reason once: where the controls already said it, pointed to, not repeated
    st.info("No hierarchy drawn: these parameters are refused (the message under the controls)." if wrong and
            why.rstrip(".") in wrong else f"No hierarchy drawn: {why}.", icon=":material/error:")
else:
    defaults = params == registry.get(rung).default_params()
    st.plotly_chart(cached.page_part(("tc-hierarchy", rung, *sorted(params.items())),
                                     lambda: tensor_figures.hierarchy_figure(h, PROJECTOR)),
                    width="stretch", config=CHART, key="tc-hierarchy")
    st.caption(f"{registry.get(rung).lesson} Tiles of " + (
        "the rung's defaults (" + ("the winners of a recorded 4096³ sweep, on the Benchmarks page"
                                   if tensor_tiles.swept(rung) else "chosen by hand: this rung was not swept") + ")"
        if defaults else f"the parameters chosen above ({', '.join(f'{a} {b}' for a, b in params.items())})")
        + "; above them, the grid: " + ("one block per SM (up to SMS), each looping over C's tiles."
                                         if "SMS" in registry.get(rung).params else "one block per tile of C."))

# ------------------------------------------------------------------ 3. fragment map
op = recorded_fragments.OPERANDS[operand]
st.subheader(f"3. Who holds what: {op.label}")
same = recorded_fragments.matches_ptx(operand)
if same is None:
    st.markdown("WMMA's fragment layout is **not documented** (CUDA calls it opaque): this is the layout the H200 "
                "recorded, which a kernel must not rely on.")
else:
    st.markdown(f"The recorded GPU map **{'equals' if same else 'differs from'}** the PTX ISA's documented layout "
                "for mma.m16n8k16, element for element.")
recorded = recorded_fragments.recorded_map(operand)


# on the lane typed in the box, or the one the player was left on when another control reran the page
shown_lane = view_state.frame_or_control("lane", lane, [str(n) for n in range(32)])
fragment_map = cached.figure(lambda: tensor_figures.fragment_figure(operand, recorded, recorded_fragments.owners(operand),
                                                                  shown_lane, PROJECTOR, speed, "lane"), by_mode=False)
st.plotly_chart(fragment_map.on_page(view_state.page_name()), width="stretch", config=CHART, key="tc-fragment")
st.caption("Recorded on an H200 by cuda/fragment_probe.cu (each element loaded as its own index). Each cell: the "
           "lane(s) holding it; the lane's own cells in blue, in its register order x0, x1, ... (two names in a "
           "cell where WMMA's fragment holds the element twice)")
# opening where the map stands, as the page's figure does (the box's lane only where the user typed it)
ui.animation_exports(lambda: tensor_figures.fragment_figure(operand, recorded, recorded_fragments.owners(operand),
                                                            shown_lane, True, speed, "lane"),
                     f"Tensor cores: who holds what, {op.label}")

# ------------------------------------------------------------------ 4. ldmatrix banks
st.subheader("4. ldmatrix's rows on the banks, without and with the swizzle")
cols = st.columns([1.2, 1])
cols[0].plotly_chart(cached.page_part(("tc-banks",), lambda: tensor_figures.banks_figure(
    [(k, ldmatrix_banks.ldmatrix_rows(k)) for k in ("mma_ldmatrix", "mma_swizzled")], PROJECTOR)),
                     width="stretch", config=CHART, key="tc-banks")
rows = []
for k in ("mma_ldmatrix", "mma_swizzled"):
    waves, conflicts, inst = ldmatrix_banks.ncu_wavefronts(k)
    rows.append({"kernel": k, "LDSM": f"{inst:,}", "wavefronts counted": f"{ldmatrix_banks.ldmatrix_wavefronts_at(k):,}",
                 "ncu": f"{waves:,}", "conflicts (ncu)": f"{conflicts:,}"})
cols[1].table(rows)
b_waves = {k: ldmatrix_banks.ldmatrix_rows(k, "B").wavefronts()[0] for k in ("mma_ldmatrix", "mma_swizzled")}
cols[1].caption("At 128³, one block, defaults; LDSM: ldmatrix instructions. Counted: every ldmatrix of A and B from "
                "the kernels' index arithmetic (As rows 64 bytes, Bs rows BN × 2 bytes; the swizzle XORs the 16-byte "
                "chunk with the row). The chart shows A's; B's ldmatrix.x4.trans takes "
                f"{b_waves['mma_ldmatrix']} wavefronts per matrix without the swizzle and {b_waves['mma_swizzled']} "
                "with it. ncu: Nsight Compute on the H200, recorded.")

# ------------------------------------------------------------------ 5. speed
st.subheader("5. TFLOP/s per rung against cuBLAS FP16")
# The document's kernel is left out of a live run: it is refused at 4,096 (see its rule).
timed_size = max(shape)   # the speed chart compares square products: M = N = K, the largest asked for
run = speed_runs.speed_run(rungs[1:], ["cublas_gemm_fp16"], timed_size, "every rung and cuBLAS FP16", "tc_live",
                           {} if wrong else {rung: params})
df, prov, label, live = run or (None, None, "", False)
sizes = speeds.square_sizes(df, rungs) if df is not None else []
if df is not None and not sizes:
    st.warning(f"This run ({label}) has no row for any tensor rung.", icon=":material/warning:")
elif sizes:
    at = st.select_slider("Timed at M = N = K", sizes, key=view_state.state("timed", 4096 if 4096 in sizes else sizes[-1], sizes))
    view_state.remember(timed=at)
    shown = speeds.tensor_speeds(df, at, label)
    st.plotly_chart(tensor_figures.speed_figure(shown, rung, charts.notes([prov], df)), width="stretch",
                    config={"displaylogo": False}, key="tc-speed")
    for k, why in shown.failed.items():
        st.warning(f"{k} at {at:,}³ was not timed: {schema.plain(why)}", icon=":material/warning:")
    # A recorded run timed each rung with the tiles it ran: the orange bar is those, whatever is chosen above.
    timed_with = dict(zip(shown.bars["kernel"], shown.bars["params"]))
    chosen = "" if wrong else speeds.params_text(
        registry.bind(registry.get(rung), make_problem(*checked, params=params)).params, " ", ", ")
    if not live and chosen and timed_with.get(rung) and set(timed_with[rung].split(", ")) != set(chosen.split(", ")):
        st.caption(f"The orange bar is {rung} as the run timed it ({timed_with[rung]}), not with the parameters set "
                   "above: this run did not time those.")
    if (pc := speeds.per_sm_cycle(shown, prov)) is not None:
        st.markdown(f"**Per SM and clock cycle.** {doc} says a single Ampere SM can do '256 tensor core ops per "
                    f"cycle'. That is NVIDIA's A100 figure per tensor core ({speeds.A100_FMA_PER_TENSOR_CORE} dense FP16 "
                    f"FMA); an SM has {speeds.A100_TENSOR_CORES_PER_SM}, so {speeds.A100_FMA_PER_SM:,} per cycle. "
                    f"Measured: cuBLAS FP16 at {at:,}³, {pc.tflops:,.0f} TFLOP/s on {pc.sm_count} SMs at up to "
                    f"{pc.clock_mhz:,.0f} MHz, is **{pc.flop:,.0f} FLOP = {pc.fma:,.0f} FMA per cycle per SM**, "
                    f"{pc.vs_a100:.2f}× the A100's.")
    missing = [k for k in shown.missing if k != "wmma_as_written"]
    st.caption(f"Speeds: {label}" + ("" if live else ", not measured now") + ". Orange: the rung chosen above; "
               "blue: the other rungs, with their share of cuBLAS FP16 under the figure; red: cuBLAS FP16 itself "
               f"(the same product: FP16 in, FP32 sums; it ran {tensor_evidence.cublas_fp16_kernel()}, wgmma on Hopper's "
               "tensor cores). Grey: cuBLAS BF16, PyTorch's torch.mm in FP16, and FP32 cuBLAS with and without "
               "TF32. The document's WMMA kernel is not timed: it launches 32 warps per tile of C (section 1), so "
               "it does 32 times the work." + (f" This run did not time {', '.join(missing)} at {at:,}³." if missing else "")
               + (f" At {at:,}³ the times of {', '.join(padded)} include a first launch that copies A and B into padded "
                  "rows (section 6)." if (padded := speeds.padded_at(shown, at)) else ""))
    same = speeds.same_tiles(df, tuning.SIZE, f"the {label}")
    if len(same.tflops) == len(speeds.SAME_TILE_RUNGS):
        t, q, wb = same.tflops, same.params, tensor_tiles.hierarchy("wmma_block")
        hand = [k for k in ("mma_ldmatrix", "mma_swizzled") if not tensor_tiles.swept(k)]
        (waves, conflicts, inst), (swz_waves, _, _) = (ldmatrix_banks.ncu_wavefronts(k) for k in ("mma_ldmatrix", "mma_swizzled"))
        st.markdown(
            "**Why mma_ldmatrix and mma_swizzled can run below wmma_block.** The bars compare different tiles: "
            f"wmma_block's are its sweep's winner, {wb.block[0]} × {wb.block[1]} with {wb.threads // 32} warps"
            + (f", while {' and '.join(hand)} {'were' if len(hand) > 1 else 'was'} not swept and run{'' if len(hand) > 1 else 's'} "
               f"{q['BM']} × {q['BN']} with {(q['BM'] // q['WM']) * (q['BN'] // q['WN'])} warps, chosen by hand" if hand else "")
            + f". At those {q['BM']} × {q['BN']} tiles (warps {q['WM']} × {q['WN']}), at {same.size:,}³: wmma_block "
            f"{t['wmma_block']:,.0f} TFLOP/s ({same.source['wmma_block']}), mma_swizzled {t['mma_swizzled']:,.0f} and "
            f"mma_ldmatrix {t['mma_ldmatrix']:,.0f} ({same.source['mma_swizzled']}): mma_swizzled is "
            + style.faster_or_slower(t['mma_swizzled'], t['wmma_block'], "wmma_block")
            + f" there. mma_ldmatrix loses to its bank conflicts: at 128³ Nsight Compute counted {waves:,} "
            f"ldmatrix wavefronts ({conflicts:,} of them conflicts) for its {inst:,} ldmatrix, against {swz_waves:,} for "
            f"mma_swizzled, whose one change is the swizzle and which runs {t['mma_swizzled'] / t['mma_ldmatrix']:.1f}× "
            "as fast at the same tiles. Not shown, because no measurement ships: wmma_block's own shared-memory "
            "wavefronts (it pads its rows by 8 halves instead; no Nsight Compute profile of it is recorded), and "
            f"mma_swizzled at wmma_block's {wb.block[0]} × {wb.block[1]} tiles (never timed).")

# What three things cost mma_pipelined, each taken out of its source (recorded: tests/benchmarks/mma_costs.py).
if (costs_run := benchmark.costs_run()) is not None and (
        part := cached.recorded_part("tc-costs", costs_run, speeds.costs_from_file, tensor_figures.costs_figure)):
    costs, costs_fig = part
    sizes_timed = sorted(set(costs.table["size"]))
    st.markdown(speeds.costs_story(costs, 4096 if 4096 in sizes_timed else sizes_timed[0]))
    st.plotly_chart(costs_fig, width="stretch", config=CHART, key="tc-costs")
    st.caption("Each bar: mma_pipelined's own source with one thing left out, timed in short bursts with CUDA "
               "events, the GPU idle between points, beside cuBLAS FP16 timed in the same run. Section 5's bars "
               "come from other runs, timed a little differently: the same kernel can differ by a few percent. "
               "As written the k-loop copies the next tiles, waits at a barrier once per k-tile, and at the end "
               "each block stores its C and leaves. The instruction's own ceiling, measured apart: "
               + " ".join(registry.get("mma_pipelined").notes))

# Why, as Nsight Compute sees it: where the warps of mma_pipelined wait (recorded: tests/benchmarks/mma_stalls.py).
if (stalls_file := benchmark.stalls_run()) is not None and (
        part := cached.recorded_part("tc-stalls", stalls_file, stalls.load, tensor_figures.stalls_figure)):
    waits, waits_fig = part
    st.markdown(stalls.story(waits))
    st.plotly_chart(waits_fig, width="stretch", config=CHART, key="tc-stalls")
    st.caption(f"Nsight Compute {waits.ncu}'s warp-state sampling (WarpStateStats and SourceCounters, the GPU's own "
               f"clocks), {waits.date}: each bar is the cycles between two instructions a warp issues, split "
               "by why it was not issuing (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio); "
               "hover for each reason's share. The same tiles as the costs above.")

# One tile shape cannot serve every size: the recorded size sweeps' fastest tensor rung per size (engine/bench/selection.py).
st.markdown("**Which configuration at which size.**")
choice.size_choice("tensor", "choice", prov["gpu"] if prov else None)

# ------------------------------------------------------------------ 6. sizes that are not multiples of 8
st.subheader("6. Sizes that are not multiples of 8: cuBLAS's cliff, and rungs without one")
if (cliff_run := benchmark.any_size_run()) is None:
    st.info("No recorded run of the tensor rungs at sizes that are not multiples of 8 ships with this copy.",
            icon=":material/history:")
    query.stop()
cliff_df, cliff_prov = cached.recorded(cliff_run)
cliff, cliff_fig = cached.page_part(("tc-cliff", *cached.file_version(cliff_run)), lambda: (
    (c := speeds.cliff(cliff_df)), tensor_figures.cliff_figure(c, charts.notes([cliff_prov], cliff_df, percent=False))))
st.markdown(speeds.cliff_story(cliff))
st.plotly_chart(cliff_fig, width="stretch", config=CHART, key="tc-cliff")
st.caption(f"A {speeds.run_label(cliff_prov, False)} ({cliff_run.parent.name}/{cliff_run.name}), not measured now; each kernel with its "
           "default tiles. It is a run of its own, not section 5's: a kernel at the same size can differ between "
           "the two by the runs' spread, and by its tiles where section 5's ran others (hover there). "
           "TMA, the copy engine of wgmma_tma (and of cuBLAS's Hopper kernel, section 5), copies rows whose byte stride "
           "is a multiple of 16: FP16 rows of K or N halves need K and N multiples of 8. At the other sizes every TMA "
           "rung here first copies A and B into rows padded with zeros to 64 halves (cuda/pad_ab.cu), TMA zero-fills "
           "the tiles that overhang, and C is stored inside M × N only; its times include that copy. wgmma_padded "
           "copies at every size, which shows what the copy costs where none is needed."
           + (" This run is of an earlier build, whose wgmma_tma refused those sizes (\"refused\")."
              if cliff["wgmma_tma"][~cliff["multiple of 8"]].isna().any() else ""))

view_state.leave_out_unknown()   # what the link named and the page did not read: said in one line, left out
