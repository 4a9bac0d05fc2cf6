"""The CI gate on calibrated figures (issue 40, item 4): `flask --app app score FILE --ratings RATINGS [--rater NAME]
--calibrated --fail-below METRIC=VALUE`, run as a user types it (click's runner on the app). --ratings attaches people's
ratings once the evaluation is judged and scores it again; --calibrated makes --fail-below read each method's
calibrated figure (its value, its interval printed) from the result's `calibration` block; what cannot work is
refused before anything is judged.

The figures are the dialogue result's `calibration` block (kinds/dialogue/calibrated.py). docs/cli.md's calibrated
gate example runs here as written, in a process of its own."""
from __future__ import annotations

import json
import re

import pytest

from kinds.dialogue import rating_store
from kinds.dialogue.kind import DialogueKind
from tests.conftest import jsonl
from tests.doc_commands import DOCS, commands
from tests.kinds.agentbench.test_agentbench import custom_for, dumps, overall
from translations import number

CLI_PAGE, CALIBRATED = DOCS / "cli.md", "Gating on figures calibrated to people"
SESSIONS, ROUNDS = 6, 2


def judged(i: int, k: int) -> dict[str, int]:
    """The total the local judge gives each method's reply in session i, round k (its reply's marker)."""
    return {"Base": 62 + 3 * i - 2 * k, "Ours": 74 + 2 * i + k}


def log_file() -> bytes:
    return jsonl(*({"session_id": f"s{i}", "user_profile": "A nurse who runs marathons.", "user_personality": "Calm.",
                    "rounds": [{"round": k, "user_message": f"question {k}",
                                "responses": {m: f"{m} answers {i}.{k} [[score={total}]]"
                                              for m, total in judged(i, k).items()}}
                               for k in range(1, ROUNDS + 1)]} for i in range(SESSIONS)))


def people_file(shift: dict[str, int], methods=("Base", "Ours"), sessions=range(4), header: bool = True) -> str:
    """People's totals of sessions' replies: the judge's plus `shift` per method, and a little of their own."""
    rows = ["rater,session_id,round,method,total"] if header else []
    rows += [f"{'ann' if i % 2 else 'bo'},s{i},{k},{m},{judged(i, k)[m] + shift[m] + (i + k) % 3}"
             for i in sessions for k in range(1, ROUNDS + 1) for m in methods]
    return "\n".join(rows) + "\n"


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "log.jsonl").write_bytes(log_file())
    return tmp_path


def score(runner, *args: str):
    return runner.invoke(args=["score", "log.jsonl", *args])


def shown(estimate: dict) -> str:
    """An estimate as the gate prints it: value, 95% CI [low, high]."""
    return f"{number(estimate['value'], 3)}, 95% CI [{number(estimate['low'], 3)}, {number(estimate['high'], 3)}]"


def test_the_gate_reads_the_calibrated_figure_not_the_judges(runner, judge_server, work):
    # people rate Ours 25 points below the judge, Base 4 above: the judge's Ours passes 60, the calibrated one does not
    (work / "people.csv").write_text(people_file({"Base": 4, "Ours": -25}), encoding="utf-8")
    plain = score(runner, "--fail-below", "avg=70")
    document = json.loads(plain.stdout)
    assert plain.exit_code == 1 and document["methods"]["Ours"]["avg"] > 70  # Base's judge AVG is below 70
    assert "below threshold: Base avg" in plain.stderr and "Ours" not in plain.stderr

    gated = score(runner, "--ratings", "people.csv", "--calibrated", "--fail-below", "avg=60")
    document = json.loads(gated.stdout)
    assert "People's ratings of people.csv attached; the evaluation was scored again." in gated.stderr
    assert document["agreement"]["human"]["ratings"] == 16  # the result printed is the one scored again
    avg = {m: document["calibration"]["methods"][m]["avg"] for m in ("Base", "Ours")}
    assert avg["Ours"]["calibrated"]["value"] < 60 < avg["Ours"]["judge"]["value"]
    assert avg["Base"]["calibrated"]["value"] > 60
    for method in ("Base", "Ours"):
        calibrated = avg[method]["calibrated"]
        assert f"calibrated: {method} avg {shown(calibrated)} (8 replies rated of 12 judged)" in gated.stderr
    assert f"below threshold: Ours avg (calibrated) {number(avg['Ours']['calibrated']['value'], 3)} < 60.0" \
        in gated.stderr
    assert "below threshold: Base" not in gated.stderr and gated.exit_code == 1
    passed = score(runner, "--ratings", "people.csv", "--calibrated", "--fail-below", "avg=40")
    assert passed.exit_code == 0, passed.output


def test_a_method_without_a_calibrated_figure_fails_saying_why(runner, judge_server, work):
    # Ours: one rated reply per round, too few for an estimate (each round needs three)
    text = people_file({"Base": 0, "Ours": 0}, methods=("Base",)) + people_file(
        {"Base": 0, "Ours": 0}, methods=("Ours",), sessions=range(1), header=False)
    (work / "people.csv").write_text(text, encoding="utf-8")
    gated = score(runner, "--ratings", "people.csv", "--calibrated", "--fail-below", "avg=10")
    assert gated.exit_code == 1
    assert "no calibrated figure: Ours avg: too few of its replies were rated: 2 in all, and each round needs at " \
           "least 3" in gated.stderr
    assert "calibrated: Base avg" in gated.stderr and "below threshold" not in gated.stderr
    unknown = score(runner, "--ratings", "people.csv", "--calibrated", "--fail-below", "style=10")
    assert unknown.exit_code == 2 and "No calibrated figure style in the result; it has: avg." in unknown.stderr


def test_a_result_without_calibrated_figures_is_said_so(runner, judge_server, work, monkeypatch):
    original = DialogueKind.score
    monkeypatch.setattr(DialogueKind, "score", lambda self, job: {
        k: v for k, v in original(self, job).items() if k != "calibration"})
    (work / "people.csv").write_text(people_file({"Base": 0, "Ours": 0}), encoding="utf-8")
    gated = score(runner, "--ratings", "people.csv", "--calibrated", "--fail-below", "avg=10")
    assert gated.exit_code == 2 and "The result has no calibrated figures" in gated.stderr


def test_ratings_with_a_rater_and_ratings_with_problems(runner, judge_server, work, app):
    (work / "mine.csv").write_text("session_id,round,method,total\ns0,1,Base,50\ns1,2,Ours,70\n", encoding="utf-8")
    rated = score(runner, "--ratings", "mine.csv", "--rater", "dana")
    assert rated.exit_code == 0, rated.output
    evaluation_id = re.search(r"^evaluation (\w+)$", rated.stderr, flags=re.M).group(1)
    store = app.extensions["store"]
    assert [(r["rater"], r["session_id"], r["total"]) for r in rating_store.people_ratings(store, evaluation_id)] == [
        ("dana", "s0", 50.0), ("dana", "s1", 70.0)]
    assert json.loads(rated.stdout)["agreement"]["human"]["ratings"] == 2
    (work / "bad.csv").write_text("session_id,round,method,total\ns0,1,Base,500\ns9,1,Base,50\n", encoding="utf-8")
    refused = score(runner, "--ratings", "bad.csv")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr.splitlines()[-3:] == [
        "bad.csv: line 2 total: Line 2: 'total' must be a number from 0 to 100, found 500.",
        "bad.csv: line 3 round: Line 3: the evaluation has no round 1 in session s9.",
        "The ratings file has problems; nothing was attached."]


@pytest.mark.parametrize("args, message", [
    (("--calibrated", "--fail-below", "avg=60"),
     "--calibrated gates on figures calibrated to people's ratings: give them with --ratings FILE."),
    (("--ratings", "people.csv", "--calibrated", "--fail-below", "avg=60", "--baseline", "e1"),
     "--calibrated cannot be used with --baseline or --fail-on-regression: a calibrated figure rests on people's "
     "ratings of this run's own replies"),
    (("--ratings", "people.csv", "--calibrated", "--fail-on-regression", "--fail-below", "avg=60"),
     "calibrated figures compare the methods within one run"),
    (("--ratings", "people.csv", "--calibrated"), "--calibrated gates with --fail-below METRIC=VALUE"),
    (("--rater", "dana",), "--rater needs --ratings."),
])
def test_what_cannot_work_is_refused_before_anything_is_judged(runner, judge_server, work, args, message):
    (work / "people.csv").write_text(people_file({"Base": 0, "Ours": 0}), encoding="utf-8")
    refused = score(runner, *args)
    assert refused.exit_code == 2 and message in refused.stderr, refused.stderr
    assert judge_server.requests == 0 and "evaluation " not in refused.stderr


def test_ratings_for_a_kind_that_takes_none_are_refused_before_scoring(runner, work):
    (work / "overall.json").write_bytes(dumps(overall(custom_for("os-std", 0.42))))
    (work / "people.csv").write_text("session_id,round,method,total\n", encoding="utf-8")
    refused = runner.invoke(args=["score", "overall.json", "--agent", "gpt-4", "--task", "os-std", "--ratings",
                                  "people.csv"])
    assert refused.exit_code == 2 and "evaluation " not in refused.stderr
    assert "--ratings: evaluations of kind agentbench take no people's ratings (those of dialogue do)." \
        in refused.stderr


def test_the_documented_calibrated_gate_runs_as_written(judge_server, work):
    # docs/cli.md's example, typed in a shell in a folder with a log.jsonl and a people.csv of the test's own (people a
    # little above the judge), with a store of its own and the local judge
    from tests.test_docs_commands import _environment, _run

    (work / "people.csv").write_text(people_file({"Base": 2, "Ours": 1}), encoding="utf-8")
    env = _environment(work, JUDGE_BASE_URL=judge_server.url, JUDGE_API_KEY="sk-test", JUDGE_MODEL="judge-test",
                       JUDGE_MAX_RETRIES="0")
    steps = commands(CLI_PAGE, CALIBRATED)
    assert steps and all(step.startswith("flask --app app score ") for step in steps)
    for step in steps:
        done = _run(step, work, env)  # exit 0: every method's calibrated AVG is above 60
        assert re.search(r"^calibrated: Ours avg [\d.]+, 95% CI \[[\d.]+, [\d.]+\] \(8 replies rated of 12 judged\)$",
                         done.stderr, flags=re.M), done.stderr
        assert json.loads(done.stdout)["calibration"]["methods"].keys() == {"Base", "Ours"}
