"""CUDA Matmul Explorer: `streamlit run app.py`. It routes to the pages in pages/ (Home is pages/home.py)."""
import streamlit as st

from pages.lib import query, routing, server, slots, view_state

# An emoji, not a :material/...: icon: the browser draws an emoji tab icon itself, while a material
# one is fetched from fonts.gstatic.com, which fails offline.
st.set_page_config(page_title="CUDA Matmul Explorer", page_icon="🧮", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/coalescing.py", title="Coalescing", icon=":material/view_week:"),
    st.Page("pages/tile_phases.py", title="Tile phases", icon=":material/grid_view:"),
    st.Page("pages/bank_conflicts.py", title="Bank conflicts", icon=":material/view_column:"),
    st.Page("pages/ladder.py", title="Ladder", icon=":material/stairs:"),
    st.Page("pages/tensor_cores.py", title="Tensor cores", icon=":material/apps:"),
    st.Page("pages/benchmarks.py", title="Benchmarks", icon=":material/speed:"),
    st.Page("pages/playground.py", title="Playground", icon=":material/code:"),
]
page = st.navigation(PAGES)
routing.ROUTED.by_app = True   # this run is routed by app.py (see routing.routed_by_app)
with slots.page_slot(page.url_path):
    # The engine's worker processes start now, while the page's own imports run (each takes a few
    # tenths of a second to import what it runs), and the background compiles are queued: in the page's
    # slot, so that they wait for this first view to be drawn.
    server.start_once()
    view_state.frame_channel()   # drawn for every page: a move to another page carries it
    with query.written_once(page.url_path):   # the settings the page writes into its link: one write, no history entry of its own
        page.run()
