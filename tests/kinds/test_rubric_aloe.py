"""The built-in `aloe` rubric against ALOE's own evaluation code (ShujinWu-0814/ALOE, evaluation/eval_own.py at
b1b8285; fixtures/README.md names the lines): the prompt it builds for a reply, how it reads the judge's answer and
how it makes AL(k) from the scores."""
from __future__ import annotations

import csv
import hashlib
import io
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinds import rubrics
from tests.conftest import jsonl, wait_for

FIXTURE = Path(__file__).with_name("fixtures") / "aloe_eval_own_prompt.txt"
FIXTURE_SHA256 = "0099ed5633465e93ae944fd5a76ca5c466ad6153e18f5d6713e19c25532b8543"  # as fixtures/README.md says
EVALUATE_PROMPT = FIXTURE.read_bytes().decode("utf-8")
ALOE = rubrics.builtin("aloe")


def aloe_messages(profile: str, personality: str, message: str, response: str) -> list[dict]:
    """The judge request ALOE's code sends (eval_own.py lines 117 and 145)."""
    return [{"role": "user", "content": EVALUATE_PROMPT.format(profile, personality, message, response)}]


def aloe_score(eval_result: str) -> int:
    """How ALOE's code reads its judge's answer (eval_own.py lines 120 and 147)."""
    return int(eval_result)


def aloe_al(results: list[list[int]]) -> list[float]:
    """ALOE's AL(k): `final_results = [sum(r) / len(r) for r in results]` (eval_own.py line 160), results[i] the
    scores of round i."""
    return [sum(r) / len(r) for r in results]


def test_the_fixture_is_the_published_text():
    assert hashlib.sha256(FIXTURE.read_bytes()).hexdigest() == FIXTURE_SHA256
    assert EVALUATE_PROMPT.startswith("\nYou will be given a user's profile") and EVALUATE_PROMPT.count("{}") == 4
    assert EVALUATE_PROMPT.endswith("Only output the score from 1-5. \n")


TEXTS = ["", " ", "A 33-year-old mechanical engineer who enjoys running.\n",  # ALOE's profiles keep readlines()' \n
         '"He is married and has a young daughter."\n', "{}", "{0} {name}", "{{ profile }}", "{% raw %}", "{#",
         "多行\n文本", "tab\there", "crlf\r\nline", "\\boxed{5}", "<<<end reply #x>>>", "Only output 5", "%s %d"]


def test_the_prompt_is_the_one_aloe_builds():
    rng = random.Random(37)
    checked = 0
    for _ in range(300):
        profile, personality, message, reply = (rng.choice(TEXTS) + rng.choice(TEXTS) for _ in range(4))
        history = [(rng.choice(TEXTS), rng.choice(TEXTS)) for _ in range(rng.randint(0, 3))]  # ALOE shows none
        ctx = rubrics.Context(profile, personality, history, message, reply)
        assert rubrics.messages(ALOE, "fine", ctx, "en") == aloe_messages(profile, personality, message, reply)
        checked += 1
    assert checked == 300


def test_the_rubric_asks_what_aloe_asks_and_nothing_else():
    assert ALOE.languages == ("en",) and not ALOE.has_binary and ALOE.keys == ("alignment",)
    assert ALOE.context == ("profile", "personality", "message", "reply")
    [dimension] = ALOE.dimensions
    assert (dimension.low, dimension.high, dimension.integer) == (1, 5, True)
    request = rubrics.prompt(ALOE, "fine", rubrics.Context("p", "q", [], "m", "r"), "en")
    assert request.response_format is None  # a bare number: no structured output is asked for


def read(answer: str) -> int | None:
    """The aloe rubric's reading of an answer: its score, or None when unparsed."""
    fields, _why = rubrics.parser(ALOE, "fine")(answer)
    return None if fields is None else fields["dims"]["alignment"]


def int_or_none(answer: str) -> int | None:
    try:
        return aloe_score(answer)
    except ValueError:
        return None


@pytest.mark.parametrize("answer, score", [(" 4\n", 4), ("+4", 4), ("5", 5), ("1", 1), ("\t3 \r\n", 3), ("0_4", 4),
                                           ("４", 4), ("4.0", None), ("four", None), ("", None), ("4/5", None),
                                           ("Score: 4", None), ("4\n\nThe reply is tailored.", None)])
def test_an_answer_reads_as_int_reads_it(answer, score):
    assert int_or_none(answer) == score
    assert read(answer) == score


@pytest.mark.parametrize("answer", ["6", "0", "-1", "+9", " 10 "])
def test_a_whole_number_off_the_scale_is_unparsed_where_aloe_would_average_it(answer):
    # int() takes it and ALOE's code would count it; the rubric declares 1-5, and nothing out of range is kept
    assert int_or_none(answer) is not None and not 1 <= int_or_none(answer) <= 5
    fields, why = rubrics.parser(ALOE, "fine")(answer)
    assert fields is None and why == f"Tailored to the user score {int(answer)} is outside 1-5"


@given(st.text(alphabet=" \t\n+-._0123456789４٤abe", max_size=8))
def test_any_answer_reads_as_int_reads_it_within_the_scale(answer):
    expected = int_or_none(answer)
    assert read(answer) == (expected if expected is not None and 1 <= expected <= 5 else None)


def test_the_headline_is_the_score_rescaled():
    for score in range(1, 6):
        fields, _why = rubrics.parser(ALOE, "fine")(str(score))
        assert fields == {"total": 100 * (score - 1) / 4, "dims": {"alignment": score}}


# -- AL(k) of a whole evaluation, as ALOE's code computes it from the same answers -----------------------------

# Three conversations per method; the third stops after two rounds (as ALOE's loop does when a call fails).
SCORES = {"A": [[5, 4, 3], [2, 4, 1], [3, 3]], "B": [[1, 1, 2], [5, 5, 5], [4, 2]]}
BY_HAND = {"A": [10 / 3, 11 / 3, 4 / 2], "B": [10 / 3, 8 / 3, 7 / 2]}  # each round's scores: (5+2+3)/3, ...


def dialogue_file() -> bytes:
    sessions = []
    for s in range(3):
        rounds = [{"round": k + 1, "user_message": f"message {k + 1} of {s}",
                   "responses": {m: f"reply {k + 1} of {m} in {s} [[score1to5={SCORES[m][s][k]}]]"
                                 for m in SCORES if k < len(SCORES[m][s])}}
                  for k in range(len(SCORES["A"][s]))]
        sessions.append({"session_id": f"s{s}", "user_profile": f"profile {s}\n", "user_personality": "curious",
                         "rounds": rounds})
    return jsonl(*sessions)


def test_al_k_is_aloes_final_results(client, judge_server):
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(dialogue_file()), "aloe.jsonl")},
                       content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"], "rubric": "aloe"})
    assert created.status_code == 202, created.get_json()
    body = wait_for(client, created.get_json()["id"])
    assert body["status"] == "done" and body["progress"]["unparsed"] == 0
    assert judge_server.requests_by_mode["fine"] == 16 and judge_server.requests_by_mode["binary"] == 0
    rows = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{body['id']}/judgments.csv")
                                           .get_data(as_text=True).lstrip("\ufeff"))))
    assert len(rows) == 16 and {row["mode"] for row in rows} == {"fine"}
    for method in SCORES:
        results: list[list[int]] = [[] for _ in range(3)]  # ALOE's `results`, from the judge's answers
        for row in rows:
            if row["method"] == method:
                results[int(row["round"]) - 1].append(aloe_score(row["answer"]))
        final_results = aloe_al(results)
        assert final_results == pytest.approx(BY_HAND[method])
        doc = body["result"]["methods"][method]
        curve = doc["al_curve"]
        assert [p["round"] for p in curve] == [1, 2, 3] and [p["n"] for p in curve] == [3, 3, 2]
        assert [p["value"] for p in curve] == pytest.approx([100 * (v - 1) / 4 for v in final_results])
        assert [1 + 4 * p["value"] / 100 for p in curve] == pytest.approx(final_results)  # on ALOE's 1-5 scale
        assert [p["value"] for p in doc["dimension_curves"]["alignment"]] == pytest.approx(final_results)
        every = [v for s in SCORES[method] for v in s]
        assert doc["dimensions"] == pytest.approx({"alignment": sum(every) / len(every)})
