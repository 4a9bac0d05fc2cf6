"""Paired differences are the result's own figures (issue: "numbers that agree with each other"): over the samples
both runs have, a paired row's baseline value and value are the two result documents' figures of the same name, its
difference their difference, and its interval recomputes that definition in each resample; one name per figure; one
baseline rule on the compare page. Through the compare page, /api/compare and `flask --app app score`."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT, jsonl
from tests.web.test_api import upload
from tests.web.test_paired import evaluate_with

OTHER = "judge-other"
SOME = "judge-some"
DIMENSIONS = ("style", "content", "naturalness", "personalization", "conversation")
# The other judge's change by round: round 1 much worse, round 4 better, so that the mean over rounds of each
# round's difference is far from the mean over all replies when rounds are uneven.
ROUND_SHIFT = {1: -12, 2: -4, 3: 3, 4: 9}


def other_judge(reply: str) -> tuple[int, bool]:
    """The other judge: a shift by the reply's round, and "stop" where the default judge says "keep chatting" to A's
    round-2 replies."""
    k = int(re.search(r" r(\d) ", reply).group(1))
    return ROUND_SHIFT[k], reply.startswith("A ") and k == 2 and "[[keep=1]]" in reply


def base_score(i: int, k: int, method: str) -> int:
    return 30 + (7 * i + 11 * k) % 40 + (5 if method == "B" else 0)


def uneven_file(sessions: int = 24) -> bytes:
    """Sessions of 1 to 4 rounds (more of the early rounds), two methods, known scores and verdicts."""
    lines = []
    for i in range(sessions):
        rounds = 1 + i % 4
        lines.append({"session_id": f"s{i:02d}", "user_profile": "A nurse.", "user_personality": "Direct.",
                      "rounds": [{"round": k, "user_message": f"message {k}",
                                  "responses": {m: f"{m} s{i} r{k} [[score={base_score(i, k, m)}]] "
                                                   f"[[keep={(i + k) % 2}]]" for m in ("A", "B")}}
                                 for k in range(1, rounds + 1)]})
    return jsonl(*lines)


def result_of(client, evaluation_id: str) -> dict:
    return client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]


def figures(method: dict) -> dict[str, float]:
    """A method's figures by the names the paired rows use: the result document's keys."""
    return {"avg": method["avg"], "binary_rate": method["binary_rate"], **method["dimensions"]}


def some_replies_judge(reply: str) -> tuple[int, bool]:
    """Another judge for files without markers: lower on some replies, higher on others, some verdicts flipped."""
    return (-7 if len(reply) % 3 == 0 else 4), len(reply) % 5 == 0


@pytest.fixture
def two_judges(judge_server):
    judge_server.models[OTHER] = (other_judge, None)
    judge_server.models[SOME] = (some_replies_judge, None)
    return judge_server


def test_paired_figures_are_the_results_figures_on_uneven_rounds(client, two_judges):
    upload_id = upload(client, uneven_file()).get_json()["id"]
    old, new = evaluate_with(client, upload_id), evaluate_with(client, upload_id, OTHER)
    # ticked newest first, as the picker lists them: the baseline is still the earlier run
    body = client.get(f"/api/compare?ids={new}&ids={old}").get_json()
    assert body["baseline"] == old
    rows = {(r["method"], r["metric"]): r for r in body["paired"]}
    before, after = result_of(client, old)["methods"], result_of(client, new)["methods"]
    for method in ("A", "B"):
        for name, value in figures(before[method]).items():
            row = rows[(method, name)]
            assert row["baseline_value"] == pytest.approx(value, abs=1e-9), (method, name)
            assert row["value"] == pytest.approx(figures(after[method])[name], abs=1e-9), (method, name)
            assert row["diff"] == pytest.approx(row["value"] - row["baseline_value"], abs=1e-9), (method, name)

    # AVG by hand: per round, the mean over the sessions that have it; then the mean over rounds
    sessions = [(i, 1 + i % 4) for i in range(24)]
    per_round = {k: [base_score(i, k, "A") for i, n in sessions if k <= n] for k in range(1, 5)}
    assert before["A"]["avg"] == pytest.approx(np.mean([np.mean(v) for v in per_round.values()]))
    a = rows[("A", "avg")]
    assert a["diff"] == pytest.approx(np.mean(list(ROUND_SHIFT.values())))  # every round's mean moves by its shift
    pooled = np.mean([ROUND_SHIFT[k] for i, n in sessions for k in range(1, n + 1)])
    assert abs(a["diff"] - pooled) > 2  # the mean over replies, which the row used to show, is another number

    # the interval: sessions drawn with replacement, each resample's difference by the same definition
    draws = np.random.default_rng(0).integers(0, 24, size=(1000, 24))
    resampled = []
    for row in draws:
        drawn = [sessions[j] for j in row]
        resampled.append(np.mean([ROUND_SHIFT[k] for k in range(1, 5) if any(k <= n for _i, n in drawn)]))
    assert a["ci95"] == pytest.approx(list(np.percentile(resampled, [2.5, 97.5])))

    # the keep-chatting rate in %, as the result gives it: A's round-2 "keep" verdicts (odd sessions) become "stop"
    lost = sum(1 for i, n in sessions if n >= 2 and i % 2 == 1)
    replies = sum(n for _i, n in sessions)
    assert rows[("A", "binary_rate")]["diff"] == pytest.approx(-100 * lost / replies)


def test_sample_data_compare_page_shows_one_avg_and_one_baseline(client, two_judges):
    upload_id = upload(client, (ROOT / "sample_data.jsonl").read_bytes(), "sample_data.jsonl").get_json()["id"]
    old, new = evaluate_with(client, upload_id), evaluate_with(client, upload_id, SOME)
    before, after = result_of(client, old)["methods"], result_of(client, new)["methods"]
    body = client.get(f"/api/compare?ids={new}&ids={old}").get_json()
    for row in body["paired"]:
        method = row["method"]
        assert row["baseline_value"] == pytest.approx(figures(before[method])[row["metric"]], abs=1e-9)
        assert row["value"] == pytest.approx(figures(after[method])[row["metric"]], abs=1e-9)

    html = client.get(f"/compare?ids={new}&ids={old}").get_data(as_text=True)
    labels = {r["id"]: r["label"] for r in body["runs"]}
    # the runs' list marks the earlier run, and both tables of differences name it
    marked = re.findall(r"<li>.*?<strong>(.*?)</strong>.*?</li>", html, flags=re.S)
    assert len(marked) == 2
    listed = re.findall(r"<li>(.*?)</li>", html.split('class="compare-runs"')[1].split("</ol>")[0], flags=re.S)
    assert ["baseline of the differences" in item for item in listed] == [False, True]  # new, old: old is it
    assert html.count(f"minus the baseline, {labels[old]}") == 2
    selected = re.search(r'<option value="(\w+)" selected>', html).group(1)
    assert selected == old
    # the differences table measures from the same run: new minus old
    base_avg = before["Base"]["avg"]
    diff = after["Base"]["avg"] - base_avg
    cells = re.search(r'id="differences".*?</table>', html, flags=re.S).group(0)
    assert f"{diff:+.1f}" in cells
    # an explicit baseline wins on the whole page
    html = client.get(f"/compare?ids={new}&ids={old}&baseline={new}").get_data(as_text=True)
    assert html.count(f"minus the baseline, {labels[new]}") == 2 and f"{-diff:+.1f}" in html


def flask(args: list[str], env: dict) -> subprocess.CompletedProcess:
    """`flask --app app ...` as a user types it, in the project folder."""
    return subprocess.run([sys.executable, "-m", "flask", "--app", "app", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=300)


def test_the_ci_gate_reads_the_results_names(tmp_path, two_judges):
    path = tmp_path / "replies.jsonl"
    path.write_bytes(uneven_file(40))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "DATABASE", "CELERY_"))},
           "INSTANCE_PATH": str(tmp_path / "instance"), "DATABASE": str(tmp_path / "db.sqlite"),
           "UPLOAD_FOLDER": str(tmp_path / "uploads"), "RESULTS_FOLDER": str(tmp_path / "results"),
           "JUDGE_BASE_URL": two_judges.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test"}
    first = flask(["score", str(path), "--out", str(tmp_path / "old.json")], env)
    assert first.returncode == 0, first.stderr
    baseline = re.search(r"^evaluation (\w+)$", first.stderr, flags=re.M).group(1)
    gate = ["score", str(path), "--out", str(tmp_path / "new.json"), "--baseline", baseline, "--fail-on-regression"]
    # 20 of A's round-2 verdicts turn from "keep chatting" to "stop": a drop of the keep-chatting rate
    done = flask([*gate, "--metric", "binary_rate"], {**env, "JUDGE_MODEL": OTHER})
    assert done.returncode == 1, done.stderr
    new = json.loads((tmp_path / "new.json").read_text())["methods"]["A"]["binary_rate"]
    old = json.loads((tmp_path / "old.json").read_text())["methods"]["A"]["binary_rate"]
    [line] = [x for x in done.stderr.splitlines() if x.startswith("regression:")]
    assert line.startswith(f"regression: A binary_rate {new - old:.3f}, 95% CI [")
    # the old name is no name: refused before anything is judged, with the valid ones
    refused = flask([*gate, "--metric", "keep"], {**env, "JUDGE_MODEL": OTHER})
    assert refused.returncode == 2
    assert "Unknown metric keep; the metrics of dialogue are: avg, binary_rate, style, content" in refused.stderr
