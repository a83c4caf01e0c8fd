"""What a rung of the FP32 ladder (registry.LADDER_RUNGS) changed from the rung before: a diff of
the two kernels' files, line by line, and the opening comment that says what the rung fixes. Plain
data for the Ladder page (drawn by engine/plots/ladder_figures.py); nothing here draws or imports
Streamlit.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from engine.kernels import registry, sources


@dataclass(frozen=True)
class RungSource:
    """A rung's source with the lines that differ from the rung before it (difflib, line by line)."""
    name: str
    previous: str | None
    file: str
    previous_file: str | None
    lines: tuple[str, ...]
    header_lines: int              # the opening comment: lines 1 .. header_lines (what the rung fixes)
    changed: frozenset[int]        # 1-based lines of this source that the previous one does not have
    removed: dict[int, int]        # line -> how many lines of the previous source were removed just before it

    @property
    def header(self) -> str:
        """The opening comment as prose (the file's own words: what it fixes)."""
        return " ".join(line.lstrip("/").strip() for line in self.lines[:self.header_lines]).strip()

    def changed_ranges(self, start: int = 1) -> list[tuple[int, int]]:
        """The changed lines from `start` on, as (first, last) runs."""
        runs: list[tuple[int, int]] = []
        for line in sorted(n for n in self.changed if n >= start):
            if runs and runs[-1][1] == line - 1:
                runs[-1] = (runs[-1][0], line)
            else:
                runs.append((line, line))
        return runs


def _file(name: str) -> str:
    return registry.get(name).launches[-1].file


def rung_source(name: str) -> RungSource:
    previous = registry.previous_rung(name)
    new = sources.load(_file(name)).text.splitlines()
    header = next((i for i, line in enumerate(new) if not line.lstrip().startswith("//")), len(new))
    changed, removed = set(), {}
    if previous is not None:
        old = sources.load(_file(previous)).text.splitlines()
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
            if tag in ("replace", "insert"):
                changed.update(range(j1 + 1, j2 + 1))
            if tag in ("replace", "delete"):
                removed[j1 + 1] = removed.get(j1 + 1, 0) + i2 - i1
    return RungSource(name, previous, _file(name), previous and _file(previous), tuple(new), header,
                      frozenset(changed), removed)
