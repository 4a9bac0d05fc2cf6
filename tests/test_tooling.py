"""The tools configured in pyproject.toml, run over the repository: ruff finds nothing, mypy reports no error.

Both come with requirements-dev.txt; what they check (the rule set, the per-file exceptions and their reasons, the
modules mypy reads) is in pyproject.toml, so that `python -m ruff check .` and `python -m mypy` run by hand give
the same answer as this test.
"""
from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, text=True, capture_output=True, timeout=600)


def test_ruff_finds_nothing():
    done = _run("ruff", "check", ".")
    assert done.returncode == 0, f"python -m ruff check .\n{done.stdout[-5000:]}\n{done.stderr[-2000:]}"


def test_mypy_checks_the_whole_product():
    """Every top-level module and package but tests/ (bench/ and vendor/ hold scripts, not packages)."""
    checked = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["files"])
    modules = {path.name for path in ROOT.glob("*.py")}
    packages = {f"{path.parent.name}/" for path in ROOT.glob("*/__init__.py")} - {"tests/"}
    assert checked == modules | packages


def test_mypy_finds_no_error():
    done = _run("mypy")
    assert done.returncode == 0, f"python -m mypy\n{done.stdout[-5000:]}\n{done.stderr[-2000:]}"


def _names(lines: list[str]) -> set[str]:
    return {line.split("==")[0].split("[")[0].lower() for line in lines if line.strip()}


def test_the_requirements_are_split_into_running_and_testing():
    run = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    dev = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    assert dev[0] == "-r requirements.txt"  # the test command installs what the dashboard needs, then the tools
    assert all("==" in line for line in [*run, *dev[1:]] if line.strip()), "every requirement is pinned"
    # (PyYAML is the dashboard's own since rubric files are YAML: requirements.txt has it)
    tools = {"pytest", "hypothesis", "playwright", "moto", "check-jsonschema", "requests", "ruff", "mypy"}
    assert "pyyaml" in _names(run)
    assert tools <= _names(dev[1:])
    assert not tools & _names(run), "test tools belong in requirements-dev.txt"
