"""Evaluations under a rubric people added, end to end through POST /api/evaluations against the local judge server:
the manual's three-dimension 1-7 rubric with JSON answers (structured output), a panel of judges under it, pairwise
mode beside it, and a judge whose language the rubric has no prompts in refused when the evaluation starts; and
`flask --app app score FILE --rubric ID` and `flask --app app rubrics ...` as a user types them."""
from __future__ import annotations

import csv
import io
import json

import pytest

from kinds import rubrics
from tests.conftest import jsonl, marked, session_line, wait_for
from tests.judge_server import detect_mode
from tests.kinds.dialogue.test_rubric_pages import LAB, lab

SCHEMA_KEYS = ["reasoning", "profile_fit", "tone_fit", "coherence"]
SIX = {"profile_fit": 6.0, "tone_fit": 6.0, "coherence": 6.0}  # what the local judge answers a reply marked SIXES
SIXES = "[[dims=6,6,6]]"


@pytest.fixture
def added(client):
    """The manual's example rubric, added through the API; and an upload of 3 sessions x 2 rounds x methods A, B."""
    assert client.post("/api/rubrics", data=lab(), content_type="application/yaml").status_code == 201
    sessions = [marked(session_line(f"s{i}", 2, ("A", "B"), user_profile=f"Profile {i}."), SIXES) for i in range(3)]
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(*sessions)), "log.jsonl")}).get_json()
    return rubrics.read(lab()), upload["id"]


def start(client, upload_id: str, **body) -> dict:
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, **body})
    assert resp.status_code == 202, resp.get_json()
    return wait_for(client, resp.get_json()["id"])


def test_a_custom_rubric_with_json_answers_is_judged_end_to_end(client, judge_server, added):
    rubric, upload_id = added
    asked: list[dict] = []
    judge_server.hook = lambda request: asked.append(request["body"])
    done = start(client, upload_id, rubric=LAB)
    assert done["status"] == "done" and done["progress"]["unparsed"] == 0
    # one question per reply (the rubric has no yes/no question): 3 sessions x 2 rounds x 2 methods
    assert done["progress"]["total"] == 12 and len(asked) == 12
    for body in asked:
        assert body["response_format"]["json_schema"]["schema"]["required"] == SCHEMA_KEYS
        system = body["messages"][0]["content"]
        assert body["messages"][0]["role"] == "system" and "- profile_fit (Fits the profile); 1-2:" in system
    result = done["result"]
    assert result["rubric"]["sha256"] == rubric.sha256 and result["provenance"]["rubric"] == rubric.reference()
    assert [d["key"] for d in result["rubric"]["dimensions"]] == ["profile_fit", "tone_fit", "coherence"]
    for method in ("A", "B"):
        figures = result["methods"][method]
        assert figures["dimensions"] == SIX
        # weighted mean (2 x 6 + 6 + 6) / 4 = 6 on 1-7, as 0-100: 100 x (6 - 1) / 6
        assert figures["avg"] == pytest.approx(500 / 6) and figures["judged"] == 6


def test_a_panel_of_judges_all_judge_under_the_evaluations_rubric(client, judge_server, added):
    rubric, upload_id = added
    asked: list[dict] = []
    judge_server.hook = lambda request: asked.append(request["body"])
    done = start(client, upload_id, rubric=rubric.sha256, judges=[{"model": "judge-a"}, {"model": "judge-b"}])
    assert done["status"] == "done"
    assert sorted({body["model"] for body in asked}) == ["judge-a", "judge-b"] and len(asked) == 24
    assert all(body["response_format"]["json_schema"]["schema"]["required"] == SCHEMA_KEYS for body in asked)
    result = done["result"]
    assert result["rubric"]["sha256"] == rubric.sha256 and result["judges"] == ["judge-a", "judge-b"]
    for figures in result["by_judge"].values():
        assert figures["methods"]["A"]["dimensions"] == SIX


def test_pairwise_mode_keeps_its_own_prompt_beside_the_rubrics_judgments(client, judge_server, added):
    rubric, upload_id = added
    asked: list[dict] = []
    judge_server.hook = lambda request: asked.append(request["body"])
    done = start(client, upload_id, rubric=LAB, pairwise=True)
    assert done["status"] == "done"
    pairwise = [body for body in asked if detect_mode(body["messages"]) == "pairwise"]
    rubric_asked = [body for body in asked if "response_format" in body]
    # each round of each session: A and B under the rubric, and the pair in both orders with pairwise mode's prompt
    assert len(rubric_asked) == 12 and len(pairwise) == 12 and len(asked) == 24
    assert all("response_format" not in body for body in pairwise)
    assert done["result"]["methods"]["A"]["dimensions"] == SIX
    assert done["result"]["pairwise"]["judges"]


def test_a_judge_whose_language_the_rubric_has_no_prompts_in_is_refused_at_start(client, judge_server, added):
    _rubric, upload_id = added
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, "rubric": LAB, "judge": {"language": "zh"}})
    assert resp.status_code == 400
    assert resp.get_json()["error"] == ("The rubric lab-consistency has prompts in en only; set the judge's language "
                                        "to one of them.")
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, "rubric": LAB,
                                                 "judges": [{"model": "judge-a"},
                                                            {"model": "judge-b", "language": "zh"}]})
    assert resp.status_code == 400 and "has prompts in en only" in resp.get_json()["error"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, "rubric": "no-such-rubric"})
    assert resp.status_code == 400
    assert resp.get_json()["error"] == ("Unknown rubric 'no-such-rubric'; the rubrics are: personasteer, aloe, "
                                        "lab-consistency.")
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, "rubric": 7})
    assert resp.status_code == 400 and resp.get_json()["problems"][0]["path"] == "rubric"
    assert judge_server.requests == 0  # refused before any call


def test_the_rubrics_commands_and_score_rubric_as_typed(app, runner, judge_server, tmp_path):
    (tmp_path / "lab.yaml").write_bytes(lab())
    broken = tmp_path / "broken.yaml"
    broken.write_bytes(lab(**{"format: json": "format: xml"}))
    checked = runner.invoke(args=["rubrics", "check", str(broken)])
    assert checked.exit_code == 1
    assert f'{broken}: line 49, answer.format: Must be one of lines, number, json, not a string ("xml").\n' in \
        checked.stderr
    rubric = rubrics.read(lab())
    assert runner.invoke(args=["rubrics", "add", str(tmp_path / "lab.yaml")]).exit_code == 0
    clash = tmp_path / "clash.yaml"
    clash.write_bytes(lab(**{"Persona consistency (lab)": "Another title"}))
    refused = runner.invoke(args=["rubrics", "add", str(clash)])
    assert refused.exit_code == 1 and "is kept already, with other content" in refused.stderr
    shown = runner.invoke(args=["rubrics", "show", rubric.sha256, "--format", "json"])
    assert shown.exit_code == 0 and shown.stdout.strip() == rubrics.canonical(rubric.document)
    unknown = runner.invoke(args=["rubrics", "show", "nope"])
    assert unknown.exit_code == 1 and "Unknown rubric 'nope'" in unknown.stderr

    log = tmp_path / "log.jsonl"
    log.write_bytes(jsonl(marked(session_line("s1", 2, ("A", "B")), SIXES)))
    scored = runner.invoke(args=["score", str(log), "--rubric", LAB, "--out", str(tmp_path / "result.json")])
    assert scored.exit_code == 0, scored.stderr
    result = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert result["rubric"]["sha256"] == rubric.sha256 and result["methods"]["B"]["dimensions"] == SIX
    wrong = runner.invoke(args=["score", str(log), "--rubric", "nope"])
    assert wrong.exit_code == 2 and "Unknown rubric 'nope'" in wrong.stderr


def test_a_panels_agreement_csv_under_a_rubric_without_a_yes_no_question(client, judge_server, added):
    """No verdicts, so no kappa between the judges: agreement.csv has no cohen_kappa row (as it has no alpha of
    verdicts), and every other figure."""
    rubric, upload_id = added
    done = start(client, upload_id, rubric=rubric.sha256, judges=[{"model": "judge-a"}, {"model": "judge-b"}])
    resp = client.get(f"/evaluations/{done['id']}/agreement.csv")
    assert resp.status_code == 200
    rows = list(csv.reader(io.StringIO(resp.get_data().decode("utf-8-sig"))))
    assert rows[0] == ["statistic", "score", "raters", "value", "ci95_low", "ci95_high", "n"]
    assert [row[:3] for row in rows[1:]] == [
        ["krippendorff_alpha", "total", "all judges"], ["krippendorff_alpha", "profile_fit", "all judges"],
        ["krippendorff_alpha", "tone_fit", "all judges"], ["krippendorff_alpha", "coherence", "all judges"],
        ["spearman", "total", "judge-a | judge-b"], ["kendall_tau_method_avg", "avg", "judge-a | judge-b"]]
    pair = done["result"]["agreement"]["pairs"][0]
    assert pair["kappa"] is None and rows[5][3:] == [str(pair["spearman"][k]) if pair["spearman"][k] is not None
                                                     else "" for k in ("value", "low", "high", "n")]
