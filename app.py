"""CUDA Matmul Explorer: `streamlit run app.py`. It routes to the pages in pages/ (Home is pages/home.py)."""
from pathlib import Path

import streamlit as st

# An emoji, not a :material/...: icon: the browser draws an emoji tab icon itself, while a material
# one is fetched from fonts.gstatic.com, which fails offline.
st.set_page_config(page_title="CUDA Matmul Explorer", page_icon="🧮", layout="wide")
# Streamlit fetches its Plotly module (4.7 MB of JavaScript) only once a chart arrives, after the
# page's script has traced and drawn: on a first visit that is a second or two of loading and
# parsing left until last. Asked for here, before the page's own imports, it loads meanwhile.
plotly_js = next((Path(st.__file__).parent / "static" / "static" / "js").glob("PlotlyChart.*.js"), None)
if plotly_js:
    st.html("<script>(() => { const app = document.querySelector('script[src*=\"/static/js/index\"]');"
            f"if (app) import(new URL({plotly_js.name!r}, app.src).href).catch(() => {{}}); }})();</script>",
            unsafe_allow_javascript=True)
# Imported after the Plotly request above is on its way: these pull the engine in (half a second).
from pages.lib import routing, server, slots  # noqa: E402

# The engine's worker processes start now, while the page's own imports run (each takes a few tenths
# of a second to import what it runs), and the background compiles are queued.
server.start_once()
PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/coalescing.py", title="Coalescing", icon=":material/view_week:"),
    st.Page("pages/tile_phases.py", title="Tile phases", icon=":material/grid_view:"),
    st.Page("pages/bank_conflicts.py", title="Bank conflicts", icon=":material/view_column:"),
    st.Page("pages/ladder.py", title="Ladder", icon=":material/stairs:"),
    st.Page("pages/tensor_cores.py", title="Tensor cores", icon=":material/apps:"),
    st.Page("pages/benchmarks.py", title="Benchmarks", icon=":material/speed:"),
]
page = st.navigation(PAGES)
routing.ROUTED.by_app = True   # this run is routed by app.py (see routing.routed_by_app)
with slots.page_slot():
    page.run()
