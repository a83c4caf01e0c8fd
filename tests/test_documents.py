"""Users meet the source documents by their titles, never as "seed 000", and nothing in the
repository points at files outside it."""
import os
import re
import subprocess
import sys
from pathlib import Path

from engine.cli import catalog_markdown
from engine.kernels import documents, registry

ROOT = Path(__file__).resolve().parent.parent
SEED = re.compile(r"\bseeds?\b", re.I)


def test_five_documents_with_titles_and_descriptions():
    assert [d.id for d in documents.DOCUMENTS] == ["000", "001", "002", "003", "004"]
    assert {s for k in registry.CATALOG for s in k.seeds} == {d.id for d in documents.DOCUMENTS}
    for d in documents.DOCUMENTS:
        assert d.title and d.about and "\n" not in d.about and not SEED.search(d.title + d.about)
    assert len({d.title for d in documents.DOCUMENTS}) == 5


def test_cite_lists_titles_in_words():
    assert documents.cite("002") == "“Matrix Multiplication in CUDA”"
    assert documents.cite(("000", "002"), "*{}*") == "*Matrix Multiplication* and *Matrix Multiplication in CUDA*"
    assert documents.cite(("002", "003", "004"), "{}").count(", ") == 1


def test_catalog_texts_name_documents_by_title():
    for k in registry.CATALOG:
        assert not SEED.search(k.title + k.lesson), k.name
    table = catalog_markdown()
    assert not SEED.search(table)
    for d in documents.DOCUMENTS:
        assert f"*{d.title}*" in table


def test_kernels_listing_names_documents_by_title():
    out = subprocess.run([sys.executable, "-m", "engine", "kernels"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "MATMUL_EXPLORER_GPU": "0"}, check=True).stdout
    assert not SEED.search(out)
    assert "“CUDA Kernel for Non-Square Matrix Multiplication”" in out


def test_kernel_label_shows_titles():
    from pages.lib import ui
    label = ui.kernel_label("naive_transposed_b")
    assert "CUDA Kernel for Non-Square Matrix Multiplication" in label and not SEED.search(label)


def test_claims_start_with_the_documents_title():
    from pages.lib import claim_texts
    titles = [f"**{d.title}**" for d in documents.DOCUMENTS]
    for page in claim_texts.CLAIMS:
        items = claim_texts.claims(page)
        for claim, verdict in items:
            assert not SEED.search(claim + verdict), claim
            cited = claim.split(":", 1)[0] if claim.startswith("**") else ""
            # The Nsight claim is the explorer's own, not a document's.
            if "Nsight" not in claim:
                assert cited and all(part.strip() in titles for part in re.split(r",| and ", cited)), claim


def test_pages_say_no_seed_numbers():
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py"))]:
        assert not re.search(r"seeds? ?0\d\d", path.read_text(), re.I), path.name


def test_nothing_points_outside_the_repository():
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    outside = re.compile(r"\.\./shared|/work/shared")
    here = Path(__file__).name
    for name in files:
        path = ROOT / name
        if name.endswith(here) or not path.is_file() or path.suffix in (".npz", ".png"):
            continue
        assert not outside.search(path.read_text(errors="replace")), name
