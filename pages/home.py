"""Home: what the explorer shows and where to look, the device, the kernel catalog, the documents."""
import os

import pandas as pd
import streamlit as st

from engine.bench import benchmark
from engine.kernels import documents, registry
from pages.lib import claim_texts, ui


def home() -> None:
    ui.setup_page("home", "CUDA Matmul Explorer", has_view=False, intro=
                  claim_texts.tagline() + ", shown from what every thread of the real kernels reads and writes.")
    st.markdown(
        "**Where to look, in order**\n"
        "1. **Coalescing**: a warp's 32 reads collapse into 4 sectors, or spray over 32. The naive kernels, "
        "two thread mappings side by side, and the transposed B of "
        f"{documents.cite('001', '*{}*')}.\n"
        "2. **Tile phases**: what one block pulls into shared memory, phase by phase, and how many global "
        "reads that saves against the naive kernel.\n"
        "3. **Bank conflicts**: 32 lanes piling onto one bank of shared memory until one word of padding "
        f"spreads them out (the shared-memory kernel of {documents.cite('001', '*{}*')}).\n"
        "4. **Ladder**: from the tiled kernel towards cuBLAS, one fix at a time: what each rung changed in "
        "the source, what one block's trace counts, and the measured speed.\n"
        "5. **Tensor cores**: FP16 on the tensor cores: what the document's WMMA kernel gets wrong, how the "
        "faster rungs split the work, which lane holds which element, and their speed against cuBLAS FP16.\n"
        "6. **Benchmarks**: the same kernels timed against cuBLAS.\n"
        "7. **Playground**: your own kernel, edited in the browser, built and traced in a sandbox, with the same "
        "animations and counts (where the person running the server turned it on).")
    st.subheader("Device")
    device_card()
    st.subheader("Kernel catalog")
    rows = [{"kernel": k.name, "what": k.title, "source documents": k.source_titles, "kind": k.kind,
             "lesson": k.lesson} for k in registry.CATALOG]
    # A static table: each row as tall as its text, so no lesson is cut off (a grid's fixed row height
    # cut the longest, mma_tma's and wgmma_stream_k's, at 1280 px), and at presenter mode's size.
    st.table(pd.DataFrame(rows).set_index("kernel"))
    st.caption("Every kernel's source is in cuda/. Sizes, tiles and block shapes are chosen on each page.")
    st.subheader("Source documents")
    st.markdown("The five texts the kernels and the claims on each page come from:\n" + "\n".join(
        f"- *{d.title}*: {d.about}" for d in documents.DOCUMENTS))


def device_card() -> None:
    status = ui.device_status()
    if not status.available:
        # The sidebar banner already says CPU mode and why; here only what this machine does instead.
        cols = st.columns(3)
        cols[0].metric("Traces run on", "CPU")
        cols[1].metric("CPU cores", os.cpu_count())
        cols[2].metric("Recorded GPU benchmark runs", len(benchmark.recorded_runs()))
        st.caption("The CPU runs the same kernel sources as the GPU, thread by thread, and gives the same "
                   "traces. The Benchmarks page shows the recorded runs, each labelled with its GPU.")
        return
    info = status.info
    cols = st.columns(5)
    cols[0].metric("GPU", info["name"])
    cols[1].metric("SMs", info["sm_count"])
    cols[2].metric("Memory", f"{info['total_bytes'] / 2**30:.0f} GiB")
    cols[3].metric("Max SM clock", f"{info['sm_clock_mhz']} MHz")
    cols[4].metric("Compute capability", info["compute_capability"])
    st.caption(f"Memory clock {info['memory_clock_mhz']} MHz, {info['memory_bus_bits']}-bit bus, "
               f"L2 {info['l2_bytes'] / 2**20:.0f} MiB, CUDA {info['cuda']}, driver API {info['driver']}.")


home()
