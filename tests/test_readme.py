"""The README's catalog and commands stay true."""
from pathlib import Path

from engine.cli import catalog_markdown

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_catalog_table_is_the_registry():
    table = README.split("<!-- catalog:start -->")[1].split("<!-- catalog:end -->")[0].strip()
    assert table == catalog_markdown()


def test_ci_runs_the_readme_test_command():
    command = "python3 -m pytest -q tests"
    assert command in README
    assert command in (ROOT / ".ci" / "run").read_text()


def test_ci_runs_the_readme_lint_command():
    command = "ruff check ."
    assert command in README
    assert command in (ROOT / ".ci" / "run").read_text()


def test_readme_setup_commands():
    # Debian's system Python refuses `pip install` outside a virtual environment (PEP 668), so the
    # install command makes one first; the run command uses it.
    install = "python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt"
    assert install in README and "streamlit run app.py" in README
    assert "apt install python3-venv" in README


def test_readme_points_at_nothing_outside_the_repository():
    assert "../" not in README and "/work/" not in README
