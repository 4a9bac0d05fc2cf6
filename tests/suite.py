"""What a test session does around the tests, as a pytest plugin (tests/conftest.py loads it): installs the browser
audits' npm packages when they are missing, keeps the product's compiled modules for every process the tests start,
hands the longest modules out first, turns a skip into a failure when the CI variable is set, and fails the run when
it changed a file that git sees in the work tree.

Under pytest-xdist (pyproject.toml's addopts: four workers, each module on one worker) the installing and the work
tree check happen once, in the controller process; the workers only run tests.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each folder whose package-lock.json pins what a test needs, and the file that test looks for once `npm ci` ran there:
# axe-core for the accessibility audits (tests/browser_support.py), esbuild to rebuild the Plotly bundle
# (tests/web/test_plotly_bundle.py).
NODE_FOLDERS = {ROOT: Path("node_modules/axe-core/axe.min.js"),
                ROOT / "vendor" / "plotly-bundle": Path("node_modules/esbuild/package.json")}
NPM_CI = ("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
NPM_TIMEOUT_S = 600
# Where every process of the run keeps the bytecode of what it imports (Python's PYTHONPYCACHEPREFIX), in the temporary
# folder: the hundreds of `flask`, worker and server processes the tests start compile the product once, not each.
BYTECODE = Path(tempfile.gettempdir()) / f"psb-test-bytecode-{os.getuid()}"
# The modules that take longest (25 s or more of one worker's wall time on a whole run on 2 cores), longest first:
# handed out before the others, so that the run does not end with one of them alone on a worker while the others
# idle. pytest-xdist's own order (by number of tests, turned off in pyproject.toml) put the one-test multi-machine
# module last; the rest keep the order of collection and fill the gaps.
LONGEST_FIRST = (
    "tests/web/test_accessibility.py", "tests/test_bench_scripts.py", "tests/pipeline/test_celery.py",
    "tests/web/test_openapi.py", "tests/pipeline/test_job_backends.py", "tests/web/test_browser.py",
    "tests/test_client.py", "tests/pipeline/test_multi_machine.py", "tests/test_docs_commands.py",
    "tests/judge/test_judge_budget.py", "tests/web/test_chart_layout.py", "tests/simulate/test_celery_simulation.py",
    "tests/storage/test_storage.py", "tests/pipeline/test_evaluation_faults.py", "tests/web/test_simulation_browser.py",
    "tests/pipeline/test_dead_judge.py", "tests/kinds/conversation/test_people_labels.py", "tests/test_docs_team.py",
    "tests/web/test_rubric_browser.py")


def in_ci() -> bool:
    """Whether the CI variable is set (to anything but empty, 0 or false), as CI services set it."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def missing_node_folders(folders: dict[Path, Path] = NODE_FOLDERS) -> list[Path]:
    """The folders whose npm packages are not installed."""
    return [folder for folder, marker in folders.items() if not (folder / marker).exists()]


class NodeInstall:
    """`npm ci` in each folder, started at once and side by side (the downloads overlap the workers' start-up)."""

    def __init__(self, folders: list[Path], npm: str):
        self.runs = []
        for folder in folders:
            log = tempfile.TemporaryFile()
            process = subprocess.Popen([npm, *NPM_CI[1:]], cwd=folder, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT)
            self.runs.append((folder, process, log))

    def wait(self) -> list[str]:
        """Wait for every run; one line per folder saying what was installed or why not."""
        said = []
        for folder, process, log in self.runs:
            try:
                code = process.wait(NPM_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            log.seek(0)
            output = log.read().decode("utf-8", "replace").strip()
            log.close()
            where = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
            said.append(f"npm ci in {where}: " + ("installed" if code == 0 else f"failed (exit {code}): {output[-800:]}"))
        return said


def install_node_tools(config: pytest.Config, folders: dict[Path, Path] = NODE_FOLDERS) -> NodeInstall | None:
    """Start `npm ci` where the pinned npm packages are missing (None when nothing is missing or npm is not there:
    the tests that need them then skip, naming what to install, or fail in CI)."""
    missing, npm = missing_node_folders(folders), shutil.which("npm")
    if not missing or npm is None or config.getoption("collectonly"):
        return None
    return NodeInstall(missing, npm)


def keep_bytecode(environ, folder: Path = BYTECODE) -> None:
    """Have the processes started with `environ` write and read compiled modules under `folder`, even where
    PYTHONDONTWRITEBYTECODE is set (as on some CI images): nothing is written into the work tree."""
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    environ["PYTHONPYCACHEPREFIX"] = str(folder)


def worktree_state(root: Path = ROOT) -> dict[str, str] | None:
    """Each file git sees as changed or new in the work tree (tracked and modified or deleted, or untracked and not
    ignored), with a digest of its content; None when `root` is not a git work tree."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard"],
                                cwd=root, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    state = {}
    for name in {name for name in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if name}:
        path = root / name
        state[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"
    return state


def changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The files whose state differs between two `worktree_state`s."""
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


# -- the hooks ----------------------------------------------------------------------------------------------------

def _controller(config: pytest.Config) -> bool:
    """Whether this is the process that runs the session (not one of pytest-xdist's workers)."""
    return not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if _controller(config):  # before pytest-xdist starts its workers, which inherit the environment
        keep_bytecode(os.environ)
        sys.dont_write_bytecode, sys.pycache_prefix = False, str(BYTECODE)  # this process too
        config.stash[_install] = install_node_tools(config)
        config.stash[_before] = worktree_state()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of LONGEST_FIRST before the others, each module's tests in their own order."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Wait for `npm ci` here: after pytest-xdist started its workers (they collect meanwhile), before any test."""
    install = session.config.stash.get(_install, None)
    if install is not None:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in install.wait():
            if reporter is not None:
                reporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        _fail_skip(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    report = yield
    if in_ci() and report.skipped:
        _fail_skip(report)
    return report


def _fail_skip(report) -> None:
    """CI installs everything the tests need (.ci/run): a skip there means something is missing, so it fails."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped while CI is set (CI installs everything the tests need): {reason}"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_before, None)
    if before is None or not _controller(session.config):
        return
    changed = changed_files(before, worktree_state() or {})
    session.config.stash[_changed] = changed
    if changed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    changed = config.stash.get(_changed, [])
    if changed:
        terminalreporter.section("files changed by the test run", sep="=", red=True, bold=True)
        terminalreporter.write_line("The tests must write only to temporary folders; these files of the work tree "
                                    "changed (git ls-files --modified --deleted --others --exclude-standard):")
        for name in changed:
            terminalreporter.write_line(f"  {name}")


_install = pytest.StashKey[NodeInstall | None]()
_before = pytest.StashKey[dict[str, str] | None]()
_changed = pytest.StashKey[list[str]]()
