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


def test_readme_setup_commands():
    assert "python3 -m pip install -r requirements.txt" in README and "streamlit run app.py" in README
