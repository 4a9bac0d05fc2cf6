"""The test session's own plugin (tests/suite.py): a skip fails while CI is set, a changed file of the work tree is
named, and only missing npm packages are installed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.suite import (
    NODE_FOLDERS,
    changed_files,
    keep_bytecode,
    missing_node_folders,
    worktree_state,
)


def _inner_run(folder: Path, ci: str | None) -> subprocess.CompletedProcess:
    """pytest with only this plugin, in one process, on a module of one skipped test."""
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "test_inner.py").write_text("import pytest\n\n\ndef test_needs_a_tool():\n"
                                          "    pytest.skip('the tool is not installed')\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"PYTHONPATH": str(ROOT)} | ({"CI": ci} if ci else {})
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.suite", "-p", "no:cacheprovider", "-rA",
                           "test_inner.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ci, fails", [(None, False), ("false", False), ("true", True)])
def test_a_skip_fails_only_while_ci_is_set(tmp_path, ci, fails):
    done = _inner_run(tmp_path, ci)
    if fails:
        assert done.returncode == 1, done.stdout
        assert "1 failed" in done.stdout
        assert ("FAILED test_inner.py::test_needs_a_tool - skipped while CI is set (CI installs everything the tests "
                "need): Skipped: the tool is not installed") in done.stdout
    else:
        assert done.returncode == 0, done.stdout
        assert "1 skipped" in done.stdout


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=folder, check=True,
                   capture_output=True)


def test_the_work_tree_check_names_changed_new_and_deleted_files_but_not_ignored_ones(tmp_path):
    _git(tmp_path, "init", "-q")
    for name, text in (("kept.txt", "a"), ("changed.txt", "a"), ("deleted.txt", "a"), (".gitignore", "out/\n")):
        (tmp_path / name).write_text(text)
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "files")
    (tmp_path / "already-new.txt").write_text("there before the run")
    before = worktree_state(tmp_path)
    assert before == {"already-new.txt": before["already-new.txt"]}

    (tmp_path / "changed.txt").write_text("b")
    (tmp_path / "deleted.txt").unlink()
    (tmp_path / "new.txt").write_text("c")
    (tmp_path / "already-new.txt").write_text("rewritten by the run")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "ignored.txt").write_text("d")
    assert changed_files(before, worktree_state(tmp_path)) == ["already-new.txt", "changed.txt", "deleted.txt",
                                                               "new.txt"]
    assert worktree_state(Path("/")) is None  # not a git work tree


def test_npm_ci_runs_only_where_the_packages_are_missing(tmp_path):
    (tmp_path / "here" / "node_modules" / "pkg").mkdir(parents=True)
    (tmp_path / "here" / "node_modules" / "pkg" / "index.js").write_text("")
    (tmp_path / "there").mkdir()
    folders = {tmp_path / "here": Path("node_modules/pkg/index.js"), tmp_path / "there": Path("node_modules/x/y.js")}
    assert missing_node_folders(folders) == [tmp_path / "there"]
    assert set(NODE_FOLDERS) == {ROOT, ROOT / "vendor" / "plotly-bundle"}
    assert all((folder / "package-lock.json").is_file() for folder in NODE_FOLDERS)  # what `npm ci` installs from


def test_processes_started_keep_compiled_modules_in_the_temporary_folder(tmp_path):
    source, folder = tmp_path / "code", tmp_path / "bytecode"
    source.mkdir()
    (source / "some_module.py").write_text("VALUE = 1\n")
    environ = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    keep_bytecode(environ, folder)
    assert "PYTHONDONTWRITEBYTECODE" not in environ
    subprocess.run([sys.executable, "-c", "import some_module"], cwd=source, env=environ, check=True)
    assert [p.name for p in folder.rglob("some_module*.pyc")] == [f"some_module.{sys.implementation.cache_tag}.pyc"]
    assert not (source / "__pycache__").exists()  # nothing beside the source


def test_the_longest_modules_are_handed_out_first_and_each_exists():
    from tests.suite import LONGEST_FIRST

    assert [path for path in LONGEST_FIRST if not (ROOT / path).is_file()] == []
    given = ["tests/test_suite_plugin.py", "tests/test_docs_team.py", "tests/test_client.py"]  # the first not listed
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *given],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    modules = list(dict.fromkeys(line.split("::", 1)[0] for line in done.stdout.splitlines() if "::" in line))
    assert modules == ["tests/test_client.py", "tests/test_docs_team.py", "tests/test_suite_plugin.py"], done.stdout
