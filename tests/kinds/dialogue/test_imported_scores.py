"""Scores from another judge (kinds/dialogue/imported.py): a scores file attached to a dialogue upload, checked
line by line, and an evaluation of it analysed as a judged one without a single judge call; through the API, the
pages and `flask --app app score --scores`. Every expected number is computed here from the imported numbers."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from pathlib import Path
from statistics import mean

import pytest
from scipy import stats

from tests.conftest import jsonl, session_line, wait_for, wait_rescored
from tests.doc_commands import DOCS, commands, section

SESSIONS = ("u1", "u2", "u3")
ROUNDS = (1, 2, 3)
METHODS = ("Base", "Ours")
DIMENSIONS = ("style", "content", "naturalness", "personalization", "conversation")


def dialogue(keep: int = 1, score: int = 60, sessions: tuple[str, ...] = SESSIONS) -> bytes:
    """Sessions of three rounds, Base and Ours, every reply judged `score` and `keep` by the local judge; a blank
    line after the first session, so that the second is on line 3."""
    lines = [session_line(s, len(ROUNDS), METHODS) for s in sessions]
    for session in lines:
        for rnd in session["rounds"]:
            rnd["responses"] = {m: f"{text} to {session['session_id']} [[score={score}]] [[keep={keep}]]"
                                for m, text in rnd["responses"].items()}
    first, *rest = (jsonl(s) for s in lines)
    return first + b"\n" + b"".join(rest)


def dims(i: int, k: int, method: str) -> dict:
    """The personasteer scores another judge gave session i's round k of `method`: some of them fractions."""
    ours = method == "Ours"
    return {"style": 10 + 0.5 * i + k, "content": 12, "naturalness": 8 + 4 * ours, "personalization": 9.25 + ours,
            "conversation": 14 - i}


def keep(i: int, k: int, method: str) -> int:
    """Its keep-chatting verdict."""
    return int((i + k + (method == "Ours")) % 2 == 0)


def replies(sessions: tuple[str, ...] = SESSIONS):
    """(session index, session id, round, method) of every reply."""
    return [(i, s, k, m) for i, s in enumerate(sessions) for k in ROUNDS for m in METHODS]


def scores_jsonl(skip: tuple | None = None, **change) -> bytes:
    """The scores file as JSON Lines (dimensions and a verdict per reply); `skip` leaves one reply out."""
    lines = []
    for i, s, k, m in replies():
        if (s, k, m) == skip:
            continue
        lines.append({"session_id": s, "round": k, "method": m, "scores": {**dims(i, k, m), "verdict": keep(i, k, m)}})
    return jsonl(*lines)


def upload(client, data: bytes = None, name: str = "log.jsonl") -> dict:
    answer = client.post("/api/uploads", data={"file": (io.BytesIO(data or dialogue()), name)},
                         content_type="multipart/form-data")
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()


def attach(client, upload_id: str, data: bytes, name: str, **fields):
    return client.post(f"/api/uploads/{upload_id}/scores", data={"file": (io.BytesIO(data), name), **fields},
                       content_type="multipart/form-data")


def evaluate(client, upload_id: str, **body) -> dict:
    answer = client.post("/api/evaluations", json={"upload_id": upload_id, **body})
    assert answer.status_code == 202, answer.get_json()
    done = wait_for(client, answer.get_json()["id"])
    assert done["status"] == "done", done
    return done


def curve(values: dict) -> dict[int, float]:
    """AL(k) of one method from each reply's value: the mean over sessions at each round."""
    return {k: mean(values[(s, k)] for s in SESSIONS) for k in ROUNDS}


def test_a_jsonl_scores_file_is_analysed_as_judged_without_a_judge_call(client, app, judge_server):
    record = upload(client)
    data = scores_jsonl()
    attached = attach(client, record["id"], data, "other-judge.jsonl")
    assert attached.status_code == 201, attached.get_json()
    attachment = attached.get_json()
    assert attachment["summary"]["rubric"]["id"] == "personasteer"  # the default: the file gives its dimensions
    assert attachment["summary"]["replies"] == len(replies()) and attachment["summary"]["verdict"] is True
    assert attachment["sha256"] == hashlib.sha256(data).hexdigest()
    fractions = sum(not float(v).is_integer() for i, s, k, m in replies() for v in dims(i, k, m).values())
    assert [w["message"] for w in attachment["warnings"]] == [
        f"{fractions} scores are not whole numbers though their dimensions' scales are (the first on line 1); they "
        "are kept as given."]
    # kept by content hash, never by the name it came with
    stored = Path(app.config["UPLOAD_FOLDER"]) / "scores" / f"{attachment['sha256']}.jsonl"
    assert stored.read_bytes() == data and not list(Path(app.config["UPLOAD_FOLDER"]).rglob("other-judge*"))

    done = evaluate(client, record["id"], scores=attachment["id"])
    assert judge_server.requests == 0
    result = done["result"]
    for method in METHODS:
        totals = {(s, k): sum(dims(i, k, m).values()) for i, s, k, m in replies() if m == method}
        expected = curve(totals)
        got = result["methods"][method]
        assert [(p["round"], p["value"]) for p in got["al_curve"]] == [(k, pytest.approx(v)) for k, v in expected.items()]
        assert got["avg"] == pytest.approx(mean(expected.values()))
        verdicts = [keep(i, k, m) for i, s, k, m in replies() if m == method]
        assert got["binary_rate"] == pytest.approx(100 * mean(verdicts))
        for d in DIMENSIONS:
            assert got["dimensions"][d] == pytest.approx(mean(dims(i, k, m)[d] for i, s, k, m in replies()
                                                              if m == method))
    assert result["judge"]["imported"] == {"filename": "other-judge.jsonl", "sha256": attachment["sha256"]}
    assert result["judge"]["calls"] == 0 and result["judge"]["prompt_tokens"] == 0
    provenance = result["provenance"]
    assert provenance["scores"] == {"imported": True, "filename": "other-judge.jsonl",
                                    "sha256": hashlib.sha256(data).hexdigest()}
    assert provenance["judges"] == [] and provenance["rubric"]["id"] == "personasteer"

    # the judgments are stored as a judge's would be: at the precision given
    rows = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{done['id']}/judgments.csv")
                                           .get_data(as_text=True).lstrip("\ufeff"))))
    assert len(rows) == 2 * len(replies()) and {r["status"] for r in rows} == {"ok"}
    u2_base = next(r for r in rows if (r["session_id"], r["round"], r["method"], r["mode"]) == ("u2", "1", "Base",
                                                                                                   "fine"))
    assert float(u2_base["style"]) == 11.5 and float(u2_base["total"]) == pytest.approx(sum(dims(1, 1, "Base").values()))
    for page in (f"/evaluations/{done['id']}", f"/evaluations/{done['id']}/report.html",
                 f"/evaluations/{done['id']}/view/grid", f"/evaluations/{done['id']}/view/session?index=1",
                 f"/evaluations/{done['id']}/view/prompt?index=1&round=1&method=Base&mode=fine"):
        answer = client.get(page)
        assert answer.status_code == 200, page
    page = client.get(f"/evaluations/{done['id']}").get_data(as_text=True)
    assert "imported from other-judge.jsonl (SHA-256 " in page and "Judge usage by method" not in page
    assert judge_server.requests == 0


def test_a_csv_of_bare_totals_gives_the_headline_alone(client, judge_server):
    record = upload(client)
    totals = {(s, k, m): 40 + 7.125 * i + 2.5 * k + 10 * (m == "Ours") for i, s, k, m in replies()}
    rows = ["session_id,round,method,total", *(f"{s},{k},{m},{v}" for (s, k, m), v in totals.items())]
    data = ("\ufeff" + "\r\n".join(rows) + "\r\n").encode()  # as a spreadsheet saves it: a BOM, CRLF
    attached = attach(client, record["id"], data, "totals.csv")
    assert attached.status_code == 201, attached.get_json()
    summary = attached.get_json()["summary"]
    assert summary["rubric"] is None and summary["dimensions"] == [] and summary["format"] == "csv"

    done = evaluate(client, record["id"], scores=attached.get_json()["id"])
    result = done["result"]
    assert result["rubric"]["id"] == "total" and result["rubric"]["dimensions"] == []
    for method in METHODS:
        expected = curve({(s, k): v for (s, k, m), v in totals.items() if m == method})
        got = result["methods"][method]
        assert [p["value"] for p in got["al_curve"]] == pytest.approx(list(expected.values()))
        assert got["avg"] == pytest.approx(mean(expected.values()))
        assert got["binary_rate"] is None and got["dimensions"] == {}
    assert client.get(f"/evaluations/{done['id']}").status_code == 200
    assert judge_server.requests == 0


def test_the_same_scores_as_csv_and_as_jsonl_give_the_same_result(client):
    record = upload(client)
    header = ["session_id", "round", "method", *DIMENSIONS, "verdict"]
    rows = [",".join(header)] + [",".join(str(v) for v in (s, k, m, *dims(i, k, m).values(), keep(i, k, m)))
                                 for i, s, k, m in replies()]
    results = []
    for data, name in ((scores_jsonl(), "s.jsonl"), ("\n".join(rows).encode(), "s.csv")):
        attached = attach(client, record["id"], data, name)
        assert attached.status_code == 201, attached.get_json()
        results.append(evaluate(client, record["id"], scores=attached.get_json()["id"])["result"])
    assert results[0]["methods"] == results[1]["methods"]


def test_a_bad_scores_file_is_refused_line_by_line_and_nothing_is_kept(client, app):
    record = upload(client)
    lines = scores_jsonl(skip=("u2", 2, "Ours")).decode().splitlines()
    lines[0] = lines[0].replace('"style": 11.0', '"style": 25')  # u1 round 1 Base: out of scale
    lines[3] = lines[3].replace('"method": "Ours"', '"method": "Theirs"')  # unknown method
    lines[4] = lines[4].replace('"content": 12', '"content": "twelve"')  # not a number
    lines[6] = lines[6].replace('"round": 1', '"round": 7')  # a round the session does not have
    lines[8] = lines[8].replace('"naturalness": 8, ', "")  # a dimension missing
    lines.append(lines[1])  # the same reply twice
    answer = attach(client, record["id"], "\n".join(lines).encode(), "bad.jsonl")
    assert answer.status_code == 400
    problems = [(p["line"], p["path"], p["message"]) for p in answer.get_json()["problems"]]
    assert problems == [
        (1, "scores.style", "Line 1: 'scores.style' is 25, outside the scale 0-20 of the rubric personasteer."),
        (4, "method", "Line 4: method \"Theirs\" is not one of the upload's: Base, Ours."),
        (5, "scores.content", "Line 5: 'scores.content' must be a number, found \"twelve\"."),
        (7, "round", "Line 7: session \"u2\" of the upload has no round 7 (its rounds: 1-3)."),
        (9, "scores.naturalness", "Line 9: 'scores.naturalness' is missing: every reply needs each dimension of the "
                                  "rubric personasteer (style, content, naturalness, personalization, conversation); "
                                  "to import totals alone, name no rubric."),
        (18, "", "Line 18 scores the same reply as line 2 (session \"u1\", round 1, \"Ours\"); keep one of them."),
        # the replies no line scores, by the upload's line: u1 round 2 of Ours (line 4 named Theirs), u2 (on the
        # upload's line 3, after a blank line) round 1 of Base (line 7 named round 7) and round 2 of Ours (left out)
        (None, "", "The upload's line 1 (session \"u1\"), round 2: the reply of \"Ours\" has no scores; give every "
                   "reply of the methods the file scores."),
        (None, "", "The upload's line 3 (session \"u2\"), round 1: the reply of \"Base\" has no scores; give every "
                   "reply of the methods the file scores."),
        (None, "", "The upload's line 3 (session \"u2\"), round 2: the reply of \"Ours\" has no scores; give every "
                   "reply of the methods the file scores."),
    ]
    assert client.get(f"/api/uploads/{record['id']}/scores").get_json() == []
    assert not (Path(app.config["UPLOAD_FOLDER"]) / "scores").exists()


@pytest.mark.parametrize(("text", "name", "problem"), [
    ("session_id,method,total\nu1,Base,50\n", "s.csv",
     (1, "", "The header must name the columns session_id, round and method, then a column per score (a dimension "
             "of the rubric, total, verdict); it has: session_id, method, total.")),
    ("session_id,round,method,total\nu1,1,Base,50,7\n", "s.csv",
     (2, "", "Line 2 has 5 values; the header has 4 columns.")),
    ("session_id,round,method,total\nu1,1,Base,101\n", "s.csv",
     (2, "total", "Line 2: 'total' must be a number from 0 to 100, found \"101\".")),
    ("session_id,round,method,total,verdict\nu1,1,Base,50,1\n", "s.csv",
     (2, "verdict", "Line 2: 'verdict' answers a rubric's yes/no question, and there is none here (bare totals): "
                    "leave it out, or name a rubric that asks one.")),
    ('{"session_id": "u1", "round": 1, "method": "Base", "total": 50}\n', "s.jsonl",
     (1, "scores", "Line 1: 'scores' must be an object of the reply's scores, e.g. {\"style\": 15, \"content\": 12} or "
                   "{\"total\": 72}, found nothing.")),
    ('{"session_id": "u1", "round": 1, "method": "Base", "scores": {"total": 50}, "verdict": 1}\n', "s.jsonl",
     (1, "verdict", "Line 1: 'verdict' is a score: put it in 'scores', beside the reply's other scores.")),
    ('{"session_id": "u1", "round": "first", "method": "Base", "scores": {"total": 50}}\n', "s.jsonl",
     (1, "round", "Line 1: 'round' must be a whole number from 1, found \"first\".")),
    ('{"session_id": "u9", "round": 1, "method": "Base", "scores": {"total": 50}}\n', "s.jsonl",
     (1, "session_id", "Line 1: the upload has no session \"u9\".")),
    ('{"session_id": "u1", "round": 1, "method": "Base", "scores": {"total": 50, "warmth": 3}}\n', "s.jsonl",
     (1, "scores.warmth", "Line 1: 'scores.warmth' is not a score of bare totals, which scores total; name the "
                          "rubric the scores are on if it is another.")),
    ('{"session_id": "u1", "round": 1, "method": "Base", "scores": {"total": 50, "style": 3}}\n', "s.jsonl",
     (1, "scores.content", "Line 1: 'scores.content' is missing: every reply needs each dimension of the rubric "
                           "personasteer (style, content, naturalness, personalization, conversation); to import "
                           "totals alone, name no rubric.")),
    ('{"session_id": "u1", "round": 1, "method": "Base", "scores": {"total": 50}}\n{"session_id": "u1", "round": 1\n',
     "s.jsonl", (2, "", None)),  # not JSON: the reader's own message
])
def test_each_problem_names_its_line_and_field(client, text, name, problem):
    record = upload(client)
    answer = attach(client, record["id"], text.encode(), name)
    assert answer.status_code == 400
    first = answer.get_json()["problems"][0]
    assert (first["line"], first["path"]) == problem[:2]
    if problem[2] is not None:
        assert first["message"] == problem[2]


def test_a_total_or_verdict_is_given_for_every_reply_or_none(client):
    record = upload(client)
    lines = scores_jsonl().decode().splitlines()
    lines[5] = lines[5].replace(', "verdict": 0', "").replace(', "verdict": 1', "")
    answer = attach(client, record["id"], "\n".join(lines).encode(), "s.jsonl")
    assert answer.status_code == 400
    assert answer.get_json()["problems"][0]["message"] == (
        "Line 6 gives no verdict, which line 1 gives: give it for every reply or for none.")


def test_scores_on_another_rubric_are_checked_against_its_scale(client):
    record = upload(client)
    lines = [{"session_id": s, "round": k, "method": m, "scores": {"alignment": 1 + (i + k) % 5}}
             for i, s, k, m in replies()]
    lines[2]["scores"]["alignment"] = 0  # below ALOE's 1-5
    answer = attach(client, record["id"], jsonl(*lines), "aloe.jsonl", rubric="aloe")
    assert answer.status_code == 400
    assert [(p["line"], p["message"]) for p in answer.get_json()["problems"]] == [
        (3, "Line 3: 'scores.alignment' is 0, outside the scale 1-5 of the rubric aloe.")]
    lines[2]["scores"]["alignment"] = 4.5
    attached = attach(client, record["id"], jsonl(*lines), "aloe.jsonl", rubric="aloe")
    assert attached.status_code == 201
    result = evaluate(client, record["id"], scores=attached.get_json()["id"])["result"]
    assert result["rubric"]["id"] == "aloe" and result["rubric"]["binary"] is None
    headline = {(line["session_id"], line["round"]): 100 * (line["scores"]["alignment"] - 1) / 4
                for line in lines if line["method"] == "Base"}
    assert [p["value"] for p in result["methods"]["Base"]["al_curve"]] == pytest.approx(list(curve(headline).values()))
    assert result["methods"]["Base"]["binary_rate"] is None  # no yes/no question: no verdicts either
    assert result["methods"]["Base"]["dimensions"]["alignment"] == pytest.approx(
        mean(line["scores"]["alignment"] for line in lines if line["method"] == "Base"))


def test_starting_is_refused_with_reasons(client):
    record = upload(client)
    attached = attach(client, record["id"], scores_jsonl(), "s.jsonl").get_json()
    other = upload(client, jsonl(session_line("x1", 1, METHODS)), "other.jsonl")
    cases = [
        ({"scores": "nope"}, "No scores file 'nope' is attached to this upload"),
        ({"scores": attached["id"], "samples": 3}, "Imported scores are one judgment per reply"),
        ({"scores": attached["id"], "pairwise": True}, "Imported scores are one judgment per reply"),
        ({"scores": attached["id"], "rubric": "aloe"}, "The scores file s.jsonl was checked against personasteer"),
        ({"scores": attached["id"], "methods": ["Base", "Nope"]}, "The scores file s.jsonl scores no reply of Nope"),
    ]
    for body, message in cases:
        answer = client.post("/api/evaluations", json={"upload_id": record["id"], **body})
        assert answer.status_code == 400 and message in answer.get_json()["error"], (body, answer.get_json())
    answer = client.post("/api/evaluations", json={"upload_id": other["id"], "scores": attached["id"]})
    assert answer.status_code == 400 and "is attached to this upload" in answer.get_json()["error"]
    assert client.post(f"/api/uploads/{record['id']}/ratings", data={}).status_code == 404


def test_a_dialogue_file_may_carry_its_scores(client, judge_server):
    sessions = [session_line(s, len(ROUNDS), METHODS) for s in SESSIONS]
    for i, session in enumerate(sessions):
        for rnd in session["rounds"]:
            rnd["scores"] = {m: {"total": 30 + 10 * i + rnd["round"] + 0.5 * (m == "Ours")} for m in METHODS}
    record = upload(client, jsonl(*sessions), "scored.jsonl")
    assert record["summary"]["scored_rounds"] == len(SESSIONS) * len(ROUNDS)
    page = client.get(f"/uploads/{record['id']}").get_data(as_text=True)
    assert "Use the scores this file carries" in page
    answer = client.post(f"/uploads/{record['id']}/attach/scores", data={"source": "upload"})
    assert answer.status_code == 302
    [attached] = client.get(f"/api/uploads/{record['id']}/scores").get_json()
    assert attached["sha256"] == hashlib.sha256(jsonl(*sessions)).hexdigest() and attached["filename"] == "scored.jsonl"
    started = client.post(f"/uploads/{record['id']}/evaluate", data={"scores": attached["id"]})
    assert started.status_code == 302
    evaluation_id = started.headers["Location"].rsplit("/", 1)[1]
    result = wait_for(client, evaluation_id)["result"]
    for method in METHODS:
        expected = curve({(s, k): 30 + 10 * i + k + 0.5 * (method == "Ours") for i, s, k, m in replies()})
        assert [p["value"] for p in result["methods"][method]["al_curve"]] == pytest.approx(list(expected.values()))
    assert result["provenance"]["scores"]["filename"] == "scored.jsonl"
    assert judge_server.requests == 0


def test_the_upload_page_attaches_a_file_or_shows_its_problems(client):
    record = upload(client)
    page = client.get(f"/uploads/{record['id']}").get_data(as_text=True)
    assert "Scores from another judge" in page and 'name="rubric"' in page
    bad = scores_jsonl(skip=("u3", 3, "Base"))
    answer = client.post(f"/uploads/{record['id']}/attach/scores", data={"file": (io.BytesIO(bad), "s.jsonl")},
                         content_type="multipart/form-data")
    assert answer.status_code == 400
    text = answer.get_data(as_text=True)
    assert "The scores file has 1 problem; nothing was attached." in text
    assert "The upload&#39;s line 4 (session &#34;u3&#34;), round 3" in text
    answer = client.post(f"/uploads/{record['id']}/attach/scores",
                         data={"file": (io.BytesIO(scores_jsonl()), "s.jsonl"), "rubric": "personasteer"},
                         content_type="multipart/form-data")
    assert answer.status_code == 302
    page = client.get(f"/uploads/{record['id']}").get_data(as_text=True)
    assert "Evaluate these scores" in page and "<code>s.jsonl</code>" in page


def test_flask_score_imports_scores_as_a_user_types_it_with_no_judge_configured(make_app, tmp_path, judge_server):
    log, scores = tmp_path / "log.jsonl", tmp_path / "scores.jsonl"
    log.write_bytes(dialogue())
    scores.write_bytes(scores_jsonl())
    runner = make_app({}).test_cli_runner()  # no judge at all
    done = runner.invoke(args=["score", str(log), "--scores", str(scores), "--rubric", "personasteer"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    totals = {(s, k): sum(dims(i, k, m).values()) for i, s, k, m in replies() if m == "Ours"}
    assert result["methods"]["Ours"]["avg"] == pytest.approx(mean(curve(totals).values()))
    assert result["provenance"]["scores"]["sha256"] == hashlib.sha256(scores.read_bytes()).hexdigest()
    assert re.search(r"^evaluation \w+$", done.stderr, flags=re.M)
    assert "warning: " in done.stderr and "kept as given" in done.stderr
    assert judge_server.requests == 0

    scores.write_bytes(scores_jsonl(skip=("u1", 3, "Base")))
    refused = runner.invoke(args=["score", str(log), "--scores", str(scores)])
    assert refused.exit_code == 1 and refused.stdout == ""
    assert f"{scores}: file: The upload's line 1 (session \"u1\"), round 3: the reply of \"Base\" has no scores" \
           in refused.stderr


def test_an_imported_run_compares_and_gates_against_a_judged_run_of_the_same_file(client, runner, tmp_path,
                                                                                judge_server):
    eight = tuple(f"u{n}" for n in range(1, 9))  # enough sessions for a drop on each to be significant
    log = tmp_path / "log.jsonl"
    log.write_bytes(dialogue(keep=1, score=60, sessions=eight))  # the local judge gives every reply 60, keep chatting
    judged = runner.invoke(args=["score", str(log)])
    assert judged.exit_code == 0, judged.output
    baseline = re.search(r"^evaluation (\w+)$", judged.stderr, flags=re.M).group(1)
    asked = judge_server.requests
    assert asked == 2 * len(replies(eight))

    # another judge: Base 60 as ours did, Ours 12 points lower on every reply (its conversation 0); the same verdicts
    def as_judged(i, k, m):
        return {**{d: 12 for d in DIMENSIONS}, **({"conversation": 0} if m == "Ours" else {}), "verdict": 1}

    scores = tmp_path / "scores.jsonl"
    scores.write_bytes(jsonl(*({"session_id": s, "round": k, "method": m, "scores": as_judged(i, k, m)}
                               for i, s, k, m in replies(eight))))
    gate = runner.invoke(args=["score", str(log), "--scores", str(scores), "--rubric", "personasteer",
                               "--baseline", baseline, "--fail-on-regression", "--metric", "avg", "--max-drop", "5"])
    assert gate.exit_code == 1, gate.output
    assert re.search(r"^regression: Ours avg -12\b", gate.stderr, flags=re.M) and "regression: Base" not in gate.stderr
    assert judge_server.requests == asked  # the imported run asked nothing
    imported = re.search(r"^evaluation (\w+)$", gate.stderr, flags=re.M).group(1)

    paired = client.get(f"/api/compare?ids={baseline}&ids={imported}&baseline={baseline}").get_json()
    rows = {(r["method"], r["metric"]): r for r in paired["paired"]}
    assert rows[("Ours", "avg")]["diff"] == pytest.approx(-12) and rows[("Base", "avg")]["diff"] == pytest.approx(0)
    assert rows[("Ours", "avg")]["n_pairs"] == len(eight) * len(ROUNDS)
    assert rows[("Ours", "conversation")]["diff"] == pytest.approx(-12) and rows[("Ours", "style")]["diff"] == 0
    assert rows[("Ours", "binary_rate")]["diff"] == pytest.approx(0)
    compare = client.get(f"/compare?ids={baseline}&ids={imported}")
    assert compare.status_code == 200 and "scores imported from scores.jsonl" in compare.get_data(as_text=True)


def test_agreement_with_people_is_figured_for_imported_scores(client):
    record = upload(client)
    attached = attach(client, record["id"], scores_jsonl(), "s.jsonl").get_json()
    done = evaluate(client, record["id"], scores=attached["id"])
    people = {(s, k, m): 50 + ((3 * i + 2 * k + 7 * (m == "Ours")) % 11) for i, s, k, m in replies()}
    ratings = "session_id,round,method,total\n" + "".join(f"{s},{k},{m},{v}\n" for (s, k, m), v in people.items())
    answer = client.post(f"/api/evaluations/{done['id']}/human-ratings",
                         data={"file": (io.BytesIO(ratings.encode()), "people.csv")}, content_type="multipart/form-data")
    assert answer.status_code == 202, answer.get_json()
    assert wait_rescored(client, done["id"])["status"] == "done"
    result = client.get(f"/api/evaluations/{done['id']}").get_json()["result"]
    figures = result["agreement"]["human"]["by_rater"]["imported"]
    keys = [(s, k, m) for i, s, k, m in replies()]
    ours = [sum(dims(i, k, m).values()) for i, s, k, m in replies()]
    assert figures["total"]["spearman"]["value"] == pytest.approx(
        stats.spearmanr([people[key] for key in keys], ours).statistic)


def test_the_same_file_attached_again_is_kept_once_and_lists_name_it(client):
    record = upload(client)
    first = attach(client, record["id"], scores_jsonl(), "scores.jsonl").get_json()
    again = attach(client, record["id"], scores_jsonl(), "copy.jsonl").get_json()
    assert again["id"] == first["id"] and again["filename"] == "scores.jsonl"
    assert [a["id"] for a in client.get(f"/api/uploads/{record['id']}/scores").get_json()] == [first["id"]]
    done = evaluate(client, record["id"], scores=first["id"])
    listed = client.get("/api/evaluations").get_json()
    assert next(e for e in listed if e["id"] == done["id"])["measured_with"] == "scores.jsonl"


def test_deleting_the_upload_deletes_its_scores(client, app):
    record = upload(client)
    attached = attach(client, record["id"], scores_jsonl(), "s.jsonl").get_json()
    stored = Path(app.config["UPLOAD_FOLDER"]) / "scores" / f"{attached['sha256']}.jsonl"
    assert stored.exists()
    assert client.delete(f"/api/uploads/{record['id']}").status_code == 200
    assert not stored.exists()
    assert client.get(f"/api/uploads/{record['id']}/scores").status_code == 404


# -- the documentation's worked example ---------------------------------------------------------------------------

FORMATS = DOCS / "formats.md"


def _blocks(language: str) -> list[str]:
    text = section(FORMATS, "Scores from another judge")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def test_the_worked_example_of_the_formats_page_gives_what_it_says(tmp_path):
    from tests.test_docs_commands import _environment, _run

    [dialogue_file, scores_file] = _blocks("json")
    [scores_csv] = _blocks("csv")
    (tmp_path / "dialogue.jsonl").write_text(dialogue_file, encoding="utf-8")
    (tmp_path / "scores.jsonl").write_text(scores_file, encoding="utf-8")
    (tmp_path / "scores.csv").write_text(scores_csv, encoding="utf-8")
    env = _environment(tmp_path)  # no judge configured: none is needed
    results = [json.loads(_run(command, tmp_path, env).stdout) for command in commands(FORMATS, "Scores from another "
                                                                                                "judge")]
    assert len(results) == 2 and results[0]["methods"] == results[1]["methods"]
    said = section(FORMATS, "Scores from another judge")
    for name, method in results[0]["methods"].items():
        curve_text = ", ".join(f"{p['value']:g}" for p in method["al_curve"])
        assert (f"{name}: AL(k) {curve_text}, AVG {method['avg']:g}, mean alignment "
                f"{method['dimensions']['alignment']:g};") in said
        assert method["binary_rate"] is None
    assert results[0]["provenance"]["judges"] == [] and results[0]["judge"]["calls"] == 0
