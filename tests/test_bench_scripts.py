"""Every benchmark command of docs/benchmarks.md runs to its report, at small sizes.

The documented commands measure for minutes each and are judged by hand; here each one runs as written plus the
size options below, so that a script that no longer starts, or crashes half way, fails the suite. At these sizes
fixed costs dominate and a ratio may miss its target: the test asks for the whole report (a last line PASS or FAIL,
exit status 0 or 1 to match), not for the verdict.
"""
from __future__ import annotations

import shlex
import subprocess

import pytest

from tests.conftest import ROOT
from tests.doc_commands import DOCS, commands

# Each documented command, as typed, with the options that make it small.
SMALL_RUNS = (
    "python bench/bench_judge.py --sessions 5 --repeat 1",
    "python bench/bench_judge_faults.py --repeat 1",
    "python bench/bench_rubric.py --sessions 10 --repeat 1",
    "python bench/bench_cache.py --sessions 10 --repeat 1",
    "python bench/bench_evaluation_memory.py --sessions 5",
    "python bench/bench_result_page.py --sessions 50",
    "python bench/bench_mobility.py --users 2000 --repeat 1 --validate-users 2000",
    "python bench/bench_mobility_npz.py --users 2000",
    "python bench/bench_agentbench.py --agents 2 --samples 5",
    "python bench/bench_validate.py --mb 1 --small-mb 0.5 --repeat 1",
    "python bench/bench_conversation.py --files 50 --mb 1",
    "python bench/bench_behaviour.py --files 60",
    "python bench/bench_judge_budget.py --processes 2 --items 50 --repeat 1",
    "python bench/bench_celery.py --judgments 100 --storage s3",
    "python bench/bench_lighthouse.py --sessions 20 --pages agentbench --runs 1",
    "python bench/bench_run_cost.py --sizes 40,80 --repeat 1 --startup-runs 1 --celery-judgments 40",
)
DOCUMENTED = commands(DOCS / "benchmarks.md", "Benchmarks")


def test_every_documented_benchmark_has_its_small_run_here():
    assert sorted(_program(command) for command in DOCUMENTED) == sorted(_program(run) for run in SMALL_RUNS)


def _program(command: str) -> str:
    """`python bench/<script>.py`: a command's first two words."""
    return " ".join(shlex.split(command)[:2])


@pytest.mark.parametrize("command", SMALL_RUNS, ids=lambda command: shlex.split(command)[1])
def test_the_benchmark_runs_to_its_report(command):
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-3000:]
    lines = done.stdout.strip().splitlines()
    verdict = lines[-1] if lines else ""
    if verdict.startswith("SKIP"):  # a bench on the real data of ../shared, when it is absent
        pytest.skip(verdict)
    assert (verdict, done.returncode) in (("PASS", 0), ("FAIL", 1)), output[-3000:]
