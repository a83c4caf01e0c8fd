"""The home page (AppTest): one statement of the mode, the full catalog, the source documents."""
import re

from streamlit.testing.v1 import AppTest

from engine.kernels import documents, registry

APP = __import__("pathlib").Path(__file__).resolve().parent.parent / "app.py"


def open_home() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> list[str]:
    return [str(e.value) for kind in ("markdown", "caption", "info", "success", "warning", "subheader", "title")
            for e in at.get(kind)]


def test_mode_is_stated_once_in_the_sidebar():
    """Explained once, in the sidebar; beside the title only its badge (ui.mode_badge)."""
    at = open_home()
    titles = [str(t.value) for t in at.title]
    assert titles == ["CUDA Matmul Explorer :gray-badge[CPU mode]"], titles
    notices = [t for t in texts(at) if re.search(r"no nvidia gpu|cpu mode|gpu mode", t, re.I) and t not in titles]
    assert len(notices) == 1, notices
    assert [str(i.value) for i in list(at.sidebar.info) + list(at.sidebar.success)] == notices


def test_catalog_shows_the_whole_lesson():
    """A static table, every row as tall as its text: the grid before it had fixed rows that cut the
    longest lessons (mma_tma's, wgmma_stream_k's) and naive_x_cols's three source documents."""
    at = open_home()
    assert not at.dataframe
    df = at.table[0].value
    assert list(df.index) == [k.name for k in registry.CATALOG]
    assert list(df["lesson"]) == [k.lesson for k in registry.CATALOG]


def test_catalog_and_page_name_source_documents_by_title():
    at = open_home()
    df = at.table[0].value
    assert "source documents" in df.columns
    assert df["source documents"].iloc[0] == documents.cite(registry.CATALOG[0].seeds)
    joined = " ".join(texts(at)) + " ".join(df.astype(str).to_numpy().ravel())
    assert not re.search(r"\bseeds?\b", joined, re.I)
    assert "Source documents" in [str(s.value) for s in at.subheader]
    for d in documents.DOCUMENTS:
        assert any(d.title in t and d.about in t for t in texts(at)), d.title


def test_where_to_look_lists_every_page_of_the_navigation_in_its_order():
    """The list omitted the Tensor cores page: it names every page app.py routes to (but Home, where
    it stands), in the navigation's order, read from app.py's page list itself."""
    import ast
    pages = [kw.value.value for node in ast.walk(ast.parse(APP.read_text())) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", "") == "Page" for kw in node.keywords if kw.arg == "title"]
    assert pages[0] == "Home" and len(pages) == 8, pages
    where = next(t for t in texts(open_home()) if t.startswith("**Where to look"))
    items = re.findall(r"^\d+\. \*\*(.+?)\*\*", where, re.M)
    assert items == pages[1:], items
    assert [int(n) for n in re.findall(r"^(\d+)\. ", where, re.M)] == list(range(1, len(pages)))
