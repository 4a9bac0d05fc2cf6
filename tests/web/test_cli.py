"""The `flask --app app score` command."""
from __future__ import annotations

import json
import re

import pytest

from kinds import registry
from kinds.kind import StartError
from tests.conftest import ROOT, jsonl, session_line
from tests.kinds.agentbench.test_agentbench import dumps, overall
from web import get_store
from web.cli import gate


def test_score_prints_result_document(runner, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line("c1", 2)))
    result = runner.invoke(args=["score", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "dialogue" and set(doc["methods"]) == {"A", "B"}
    assert "8/8 judged" in result.stderr


def test_score_sample_file_with_methods_and_out(runner, tmp_path):
    out = tmp_path / "result.json"
    result = runner.invoke(args=["score", str(ROOT / "sample_data.jsonl"), "--methods", "Base,PersonaSteer",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text("utf-8"))
    assert list(doc["methods"]) == ["Base", "PersonaSteer"]
    assert doc["input"]["sessions"] >= 6


def test_score_invalid_file_exits_1_with_problems(runner, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(session_line("x")) + b"[1, 2]\n")
    result = runner.invoke(args=["score", str(path)])
    assert result.exit_code == 1
    assert "line 2" in result.stderr
    assert result.stdout == ""


def test_score_unknown_method_exits_2(runner, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line()))
    result = runner.invoke(args=["score", str(path), "--methods", "Nope"])
    assert result.exit_code == 2
    assert "Unknown methods: Nope" in result.stderr


def test_score_without_judge_says_what_to_set(make_app, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line()))
    result = make_app({}).test_cli_runner().invoke(args=["score", str(path)])
    assert result.exit_code == 2
    assert "JUDGE_API_KEY" in result.stderr


def test_score_reference_is_refused_for_dialogue(runner, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line()))
    result = runner.invoke(args=["score", str(path), "--reference", "beijing"])
    assert result.exit_code == 2
    assert "mobility" in result.output


def scored_id(result) -> str:
    """The evaluation id `flask score` prints on stderr."""
    return re.search(r"evaluation (\w+)", result.stderr).group(1)


@pytest.fixture
def gate_file(tmp_path, judge_server):
    from tests.web.test_paired import OTHER_JUDGE, dialogue_file, shifted_judge
    judge_server.models[OTHER_JUDGE] = (shifted_judge, None)
    path = tmp_path / "log.jsonl"
    path.write_bytes(dialogue_file())
    return path


def test_score_against_a_baseline_fails_on_a_regression_and_passes_a_rerun(runner, gate_file):
    first = runner.invoke(args=["score", str(gate_file)])
    assert first.exit_code == 0, first.output
    baseline = scored_id(first)
    rerun = runner.invoke(args=["score", str(gate_file), "--baseline", baseline, "--fail-on-regression"])
    assert rerun.exit_code == 0, rerun.output
    assert f"Paired differences against {baseline}:" in rerun.stderr and "regression:" not in rerun.stderr
    json.loads(rerun.stdout)  # the result document, as without --baseline
    worse = runner.invoke(args=["score", str(gate_file), "--judge-model", "judge-b", "--baseline", baseline,
                                "--fail-on-regression", "--metric", "avg"])
    assert worse.exit_code == 1, worse.output
    table = worse.stderr.split(f"Paired differences against {baseline}:\n")[1].splitlines()
    assert table[0].split() == ["method", "metric", "baseline", "value", "diff", "95%", "CI", "p", "p_holm", "p_bh",
                                "n_pairs", "test", "mdd"]
    a_avg = next(line.split() for line in table if line.startswith("A ") and line.split()[1] == "avg")
    assert a_avg[4] == "-5.000" and a_avg[5:7] == ["[-5.000,", "-5.000]"] and a_avg[10] == "20"
    assert "regression: A avg -5.000, 95% CI [-5.000, -5.000]" in worse.stderr
    assert "regression: B" not in worse.stderr  # B's CI reaches 0
    # the same drop is no regression with --max-drop 6, nor without --fail-on-regression
    for extra in (["--fail-on-regression", "--max-drop", "6"], []):
        again = runner.invoke(args=["score", str(gate_file), "--judge-model", "judge-b", "--baseline", baseline,
                                    *extra])
        assert again.exit_code == 0, again.output


def test_fail_below_gates_a_single_run(runner, gate_file):
    # A's AVG is the mean of 40..49 and ten 50s: 47.25; B's 30..39 and 60..69: 49.5
    ok = runner.invoke(args=["score", str(gate_file), "--fail-below", "avg=47"])
    assert ok.exit_code == 0, ok.output
    low = runner.invoke(args=["score", str(gate_file), "--fail-below", "avg=48", "--fail-below", "binary_rate=10"])
    assert low.exit_code == 1
    assert "below threshold: A avg 47.250 < 48.0" in low.stderr and "below threshold: B avg" not in low.stderr
    assert "below threshold: B binary_rate 0.000 < 10.0" in low.stderr


@pytest.mark.parametrize("args, message", [
    (["--baseline", "nope"], "No evaluation has the id nope."),
    (["--fail-below", "avg"], "--fail-below takes METRIC=VALUE"),
    (["--fail-below", "nothing=3"], "No headline value nothing in the result; it has: avg, binary_avg"),
    (["--fail-on-regression"], "--fail-on-regression needs --baseline."),
    (["--max-drop", "2"], "--max-drop needs --baseline."),
])
def test_gate_errors_are_clear(runner, gate_file, args, message):
    result = runner.invoke(args=["score", str(gate_file), *args])
    assert result.exit_code in (1, 2) and message in result.stderr, result.output


def test_gate_refuses_an_unknown_metric_and_a_baseline_of_another_kind(runner, gate_file, app, tmp_path):
    baseline = scored_id(runner.invoke(args=["score", str(gate_file)]))
    bad = runner.invoke(args=["score", str(gate_file), "--baseline", baseline, "--metric", "nope"])
    assert bad.exit_code == 2
    assert "Unknown metric nope; the metrics of dialogue are: avg, binary_rate, style, content, naturalness, " \
           "personalization, conversation." in bad.stderr
    lone = tmp_path / "gpt-x" / "dbbench-std" / "overall.json"
    lone.parent.mkdir(parents=True)
    lone.write_bytes(dumps(overall({"overall_cat_accuracy": 0.4})))
    agentbench = runner.invoke(args=["score", str(lone)])
    other_kind = runner.invoke(args=["score", str(gate_file), "--baseline", scored_id(agentbench)])
    assert other_kind.exit_code == 2
    assert f"The baseline {scored_id(agentbench)} is of kind agentbench; this file is of kind dialogue." \
        in other_kind.stderr
    # --fail-below reads AgentBench's task scores (and OA) per agent from its result document
    assert runner.invoke(args=["score", str(lone), "--fail-below", "db=39"]).exit_code == 0
    below = runner.invoke(args=["score", str(lone), "--fail-below", "db=41"])
    assert below.exit_code == 1 and "below threshold: gpt-x db 40.000 < 41.0" in below.stderr


def test_score_names_an_evaluation_gone_when_its_run_returns(runner, tmp_path, monkeypatch):
    """Gone from the store when `flask score` reads it back (deleted by another process once it stopped): exit 1
    naming it, not a traceback."""
    class DeletingRunner:
        def run(self, evaluation_id: str, on_progress=None) -> None:
            get_store().delete_evaluations([evaluation_id])

    monkeypatch.setattr("web.cli.score.get_runner", DeletingRunner)
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(session_line("c1", 2)))
    result = runner.invoke(args=["score", str(path)])
    assert result.exit_code == 1
    assert f"error: No evaluation has the id {scored_id(result)}." in result.stderr
    assert isinstance(result.exception, SystemExit) and result.stdout == ""  # its own exit, no traceback


def test_the_gate_names_a_baseline_deleted_after_it_was_checked(app):
    """`score --baseline` checks the baseline first (check_baseline) and reads it again to check its kind: one
    deleted in between is named as unknown."""
    with app.app_context(), pytest.raises(StartError, match="^No evaluation has the id gone.$"):
        gate.check_kind(registry.get("dialogue"), "gone", None, {})
