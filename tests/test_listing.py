"""The source listing beside the trace figures (engine/plots/listing.py): wrapped inside its column,
and in presenter mode, where its letters are a projector's, compact enough that a kernel's lines
mostly fit one row each."""
import pytest

from engine.plots import listing, style

KERNELS = ["tiled_guarded.cu", "shared_bank_conflicts.cu", "naive_x_rows.cu", "naive_x_cols.cu", "pad_rows.cu"]


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("file", KERNELS)
@pytest.mark.parametrize("chars", [33, 41, 60])   # (under ~30 a deep line keeps 12 characters of its own)
def test_every_row_fits_its_column_and_every_line_is_shown_in_order(file, chars, compact):
    """A wrapped line's further rows are indented 2 more: they too stay within `chars` (they had run
    2 characters past it)."""
    lines = listing.source_lines(file)
    view = listing.code_view(lines, chars, compact=compact)
    assert max(map(len, view.texts)) <= chars
    spans = [view.rows_of[n] for n in range(view.first, view.last + 1)]
    assert spans[0][0] == 0 and spans[-1][1] == view.n_rows - 1
    assert all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:]))
    for n, (r0, r1) in view.rows_of.items():
        code = lines[n - 1].split("//")[0] if compact and lines[n - 1].strip()[:2] != "//" else lines[n - 1]
        shown = "".join(view.texts[r][len(str(view.last)) + 1 if compact else 5:] for r in range(r0, r1 + 1))
        assert "".join(shown.split()) == "".join(code.split())   # a long word may be cut across rows


def test_presenter_listings_wrap_few_lines():
    """Presenter mode's column (listing.PRESENTER_CODE_FROM, at the figure's narrowest) and compact rows:
    Tile phases' guarded load, 4 rows of 20 characters before, takes 3 at most, and most lines 1."""
    st = style.PRESENTER
    chars = listing.chars_fitting((1 - listing.PRESENTER_CODE_FROM) * st.narrowest, st.code)
    assert chars >= 40
    view = listing.code_view(listing.source_lines("tiled_guarded.cu"), chars, compact=True)
    r0, r1 = view.rows_of[25]
    assert "STS(As" in view.texts[r0] and r1 - r0 + 1 <= 3
    wrapped = [n for n, (a, b) in view.rows_of.items() if b > a]
    assert len(wrapped) <= len(view.rows_of) // 4, wrapped


def _access_lines(file: str) -> list[int]:
    """The lines of a kernel's source that make a global or shared access, top to bottom: the lines
    an animation of it lights up."""
    lines = listing.source_lines(file)
    return [n for n, line in enumerate(lines, 1) if any(m in line for m in ("LDG", "STG", "LDS", "STS", "CP_ASYNC4"))
            and not line.lstrip().startswith(("//", "#"))]


@pytest.mark.parametrize("presenter", [False, True])
@pytest.mark.parametrize("body_px", [175, 330])   # Coalescing's two panels, and its one
@pytest.mark.parametrize("file", sorted(p.name for p in listing.sources.CUDA_DIR.glob("*.cu")))
def test_every_frames_line_is_shown_in_a_window_whose_rows_fit(file, body_px, presenter):
    """Coalescing's warptile lit 64 lines of global accesses, and one window of them all got the
    height of 23 rows: its lines printed on top of each other. Each window now fits the column, and
    each frame's window holds its line."""
    st = style.PRESENTER if presenter else style.SCREEN
    frame_lines = _access_lines(file)
    if not frame_lines:
        pytest.skip("no access in its source")
    width = (1 - listing.PRESENTER_CODE_FROM if presenter else .375) * st.narrowest
    frames = frame_lines + frame_lines[:3]   # and back to the top, as a loop's second pass does
    windows, at, font = listing.fit_windows(listing.source_lines(file), frames, width, body_px, st)
    rows = int(body_px / (font * 1.45))
    assert len(at) == len(frames)
    for line, i in zip(frames, at):
        assert line in windows[i].rows_of, (line, windows[i].first, windows[i].last)
    for w in windows:
        one_line = len(w.rows_of) == 1   # a single line wrapped past the column's rows: all it can do
        assert w.n_rows <= rows or one_line, (w.first, w.last, w.n_rows, rows)


def test_a_lit_line_in_a_helper_opens_the_listing_at_the_helpers_signature():
    """A line lit in a helper above the kernel's `__global__` had been left out of the listing; shown
    from the line itself, the listing began inside the helper's body."""
    lines = listing.source_lines("double_buffered.cu")
    lit = next(n for n, line in enumerate(lines, 1) if "LDG4(A" in line or "LDG(A" in line)
    view = listing.code_view(lines, 200, listing._start(lines, {lit}))
    assert lit in view.rows_of and view.first < lit
    assert lines[view.first - 1].startswith(("__device__", "template")), lines[view.first - 1]
    assert listing._start(lines, set()) == next(n for n, line in enumerate(lines, 1) if "__global__" in line)
