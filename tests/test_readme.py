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


def test_ci_is_the_readme_in_a_fresh_virtual_environment():
    """CI passed while the README's own environment failed a test: it installed into a Python with
    packages the requirements do not name. It must make the README's virtual environment, without
    the system's packages, and install only what the README says."""
    ci = (ROOT / ".ci" / "run").read_text()
    install = "python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt"
    assert install in ci and "--system-site-packages" not in ci
    dev = "pip install -r requirements-dev.txt"
    assert dev in README and dev in ci
    assert [line for line in ci.splitlines() if "pip install" in line] == [install, dev]
    steps = [ci.index(install), ci.index(dev), ci.index("ruff check ."), ci.index("python3 -m pytest -q tests")]
    assert steps == sorted(steps)


def test_readme_points_at_nothing_outside_the_repository():
    assert "../" not in README and "/work/" not in README
