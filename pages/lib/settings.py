"""The kernel settings a page offers for the kernel(s) it draws: M, N and K, each compile-time
parameter the kernel declares (its allowed values and default from the registry), and the launch
block shape of the kernels that take one. Every one is in the URL (?kernel=warptile&BM=128&m=1024&
n=512&k=256), kept per page across navigation (pages/lib/view_state.py), and checked against the
kernel's contract (registry.bind) as it changes: a combination the kernel cannot take is said in one
line next to the controls, and the page draws nothing from it."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem
from pages.lib import query, view_state

# A compile-time parameter's name (contract.py's rule for them): how a link's ?BM=7 is told from ?m=7.
_PARAM = view_state.PARAMETER
# Parameters side by side in one row of the parameter group: eight (warptile's) in two rows at 1280 px.
PER_ROW = 4


@dataclass(frozen=True)
class Settings:
    """What the controls show: the sizes, each kernel's parameters (every one it declares, as shown)
    and the block shape of its launch."""

    m: int
    n: int
    k: int
    params: dict[str, dict[str, int]]   # kernel -> name -> value
    block: tuple[int, int]

    def of(self, kernel: str) -> dict[str, int]:
        return self.params[kernel]

    def words(self, kernel: str) -> str:
        """The kernel's parameters in words ("BM 128, BN 128, BK 8"), as the controls show them."""
        return ", ".join(f"{name} {value}" for name, value in self.params[kernel].items())


def size_inputs(defaults: tuple[int, int, int], hi: int, lo: int = 1, step: int = 1) -> tuple[int, int, int]:
    """M, N and K, each its own number input (sizes need not be square), in one row."""
    helps = ("rows of A and C", "columns of B and C", "columns of A, rows of B")
    cols = st.columns(3)
    # The range in the help as well: a number typed outside it is refused by the field itself, which
    # only turns red and names the range in the tooltip of a small icon
    m, n, k = (int(col.number_input(name.upper(), lo, hi, step=step, help=f"{why}: {lo:,} to {hi:,} on this page",
                                    key=view_state.state(name, d, lo=lo, hi=hi, what="size")))
               for col, name, d, why in zip(cols, "mnk", defaults, helps))
    view_state.remember(m=m, n=n, k=k)
    return m, n, k


def _block_text(block: tuple[int, int]) -> str:
    return f"{block[0]}x{block[1]}"


def parameter_inputs(kernels: list[str], block_default: tuple[int, int] | None = None,
                     label: str = "Kernel parameters", opening: dict[str, int] | None = None) -> tuple[dict[str, dict[str, int]], tuple[int, int]]:
    """A select per compile-time parameter of the kernels shown (one for a name they share), and the
    block shape where one of them takes a choice of it; in an expander whose title lists the values,
    so a folded group still says what runs. opening: a page's own first values where they are not the
    kernel's defaults (the lesson it opens on). Returns each kernel's parameters and the block."""
    specs = [registry.get(k) for k in kernels]
    names: dict[str, tuple[int, ...]] = {}
    defaults: dict[str, int] = {}
    owner: dict[str, str] = {}   # the first kernel shown that declares the name
    for spec in specs:
        for name, allowed in spec.params.items():
            names.setdefault(name, tuple(allowed))
            defaults.setdefault(name, spec.default_params()[name])
            owner.setdefault(name, spec.name)
    defaults.update({name: v for name, v in (opening or {}).items() if name in names and v in names[name]})
    shapes = next((s.block_shapes for s in specs if s.block_shapes), ())
    from_link = _link_names(kernels, names)
    chosen: dict[str, int] = {}
    block = block_default or specs[0].default_block
    fields = len(names) + bool(shapes)
    if not fields:
        return {k: {} for k in kernels}, block
    # Each kernel keeps its own values (ladder.warptile.BM): another kernel's BM 64 carried over to
    # double_buffered broke its rules. Kernels shown together share the first one's (coalescing's TILE).
    # Only the page's first run reads the link; later, the URL holds what the page wrote for the
    # kernel shown before. The keys first, outside the folded group: a message about the link's
    # value must be seen.
    texts = [_block_text(s) for s in shapes]
    block_key = view_state.state("block", _block_text(block if block in shapes else shapes[0]), texts) if shapes else None
    keys = {name: view_state.state(name, defaults[name], list(allowed), scope=owner[name], url=from_link)
            for name, allowed in names.items()}
    words = ", ".join(([f"block {st.session_state[block_key]}"] if shapes else [])
                      + [f"{name} {st.session_state[key]}" for name, key in keys.items()])
    with st.expander(f"{label}: {words}", expanded=False, key=view_state.page_key("parameters")):
        cols = [c for _ in range(-(-fields // PER_ROW)) for c in st.columns(PER_ROW)]
        if shapes:
            text = cols.pop(0).selectbox("Block", texts, key=block_key,
                                         help="threads per block, x by y, of the naive kernels' launch")
            block = tuple(int(v) for v in text.split("x"))
            view_state.remember(block=text)
        for (name, key), col in zip(keys.items(), cols):
            chosen[name] = int(col.selectbox(name, names[name], key=key))
        view_state.remember(**chosen)
        view_state.keep(**{f"{owner[name]}.{name}": value for name, value in chosen.items()})
    return {k: {n: v for n, v in chosen.items() if n in registry.get(k).params} for k in kernels}, block


def _link_names(kernels: list[str], names: dict) -> bool:
    """Parameter names in the URL that none of the kernels shown declares: those the page's link came
    with are named in a one-line message (while the link's kernels are shown); those the page wrote
    for a kernel shown before are dropped from the URL. True on the page's first run (its link's)."""
    seen = st.session_state.setdefault(view_state.page_key("_link_names"), None)
    first = seen is None
    url = [k for k in query.params() if _PARAM.fullmatch(k)]
    if seen is None:   # the page's first run: what the link asked for
        asked = url if st.session_state.get("_url_seeds") else []
        seen = (tuple(kernels), {k: query.params()[k] for k in asked if k not in names})
        st.session_state[view_state.page_key("_link_names")] = seen
    shown, unknown = seen
    if tuple(kernels) == shown:
        for name, raw in unknown.items():
            takes = ", ".join(names) or "no compile-time parameters"
            view_state.ignored_note(name, raw, f"{' and '.join(kernels)} {'has' if len(kernels) == 1 else 'have'} "
                                    f"no parameter {view_state.quoted(name)} (takes {takes}); ignored")
    for name in url:
        if name not in names and not (tuple(kernels) == shown and name in unknown):
            del query.params()[name]
    return first


def reason(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int] | None = None) -> str | None:
    """Why the kernel cannot take these sizes and parameters (registry.bind's one line), or None."""
    spec = registry.get(kernel)
    try:
        registry.bind(spec, make_problem(m, n, k, block=block or spec.default_block, params=params))
    except EngineError as exc:
        return str(exc)
    return None


def check(kernel: str, m: int, n: int, k: int, params: dict[str, dict[str, int]], block: tuple[int, int],
          shown: list[str]) -> None:
    """Nothing when the kernel takes them; else its one-line reason under the title, and nothing
    drawn after it. params: each kernel's of those shown together (shared_hint)."""
    why = reason(kernel, m, n, k, params[kernel], block)
    if why:
        hint = shared_hint(kernel, shown, m, n, k, params, block)
        view_state.refuse(why + ("" if why.endswith(".") or not hint else ".") + hint)


def kernel_settings(kernels: list[str], sizes: tuple[int, int, int], hi: int, lo: int = 1,
                    block_default: tuple[int, int] | None = None, opening: dict[str, int] | None = None) -> Settings:
    """The whole group for the kernel(s) a page draws: sizes, parameters, block; each kernel checked."""
    m, n, k = size_inputs(sizes, hi, lo)
    params, block = parameter_inputs(kernels, block_default, opening=opening)
    for kernel in kernels:
        check(kernel, m, n, k, params, block, kernels)
    return Settings(m, n, k, params, block)


def shared_hint(refused: str, kernels: list[str], m: int, n: int, k: int, params: dict[str, dict[str, int]],
                block: tuple[int, int]) -> str:
    """Where kernels shown together share parameters (one select for a name both declare) and one is
    refused for the values it took from them: so, and the single change that runs both, the shared
    values it would choose itself tried first. Coalescing's warptile beside prefetched said only
    "prefetched needs at most 48 KB of shared memory (it would take 64 KB)": the BK it took was
    warptile's 32, and nothing said so. Nothing where its own values are refused too (the sizes are
    the cause, as tiled_unguarded's at M = 17)."""
    own = registry.get(refused).default_params()
    shared = [name for name in params[refused] if len(kernels) > 1 and all(name in params[other] for other in kernels)]
    if not shared or reason(refused, m, n, k, own, block) is not None:
        return ""
    said = f" The kernels shown take {', '.join(shared)} from the same selects"
    # first a shared value set back to the refused kernel's own, then any other
    changes = [(name, own[name]) for name in shared] + [(name, v) for name in shared for v in registry.get(refused).params[name]]
    for name, value in changes:
        if value != params[refused][name] and all(
                value in registry.get(kernel).params[name]
                and reason(kernel, m, n, k, {**params[kernel], name: value}, block) is None for kernel in kernels):
            return f"{said}: with {name} {value} both run."
    return f"{said}, and no other value of one of them runs both: compare with another kernel."
