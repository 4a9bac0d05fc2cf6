"""A rubric's JSON answer both ways against the local judge server, through the real client: structured output (the
request carries the rubric's JSON Schema as `response_format`, the answer is the object alone) and text (an endpoint
that does not take it: no `response_format`, the object found in prose). Bad answers are unparsed, never clamped, and
asked again; the cache keys an answer by the rubric's content."""
from __future__ import annotations

import io
import json

import jsonschema
import pytest

from judge import Judge, JudgeConfig
from kinds import rubrics
from kinds.dialogue import rubric_store
from tests.batch_server import batch_server  # noqa: F401  (fixture)
from tests.conftest import jsonl, wait_for
from tests.judge.test_evaluator import DictCache, make_judge
from tests.judge.test_judge_batch import config as batch_config
from tests.judge.test_judge_batch import run_batch

RUBRIC = """\
id: warmth
version: "1"
title: Warmth, accuracy, brevity
context: [profile, message, reply]
dimensions:
  - {key: warmth, label: Warmth, scale: {min: 1, max: 7}}
  - {key: accuracy, label: Accuracy, scale: {min: 1, max: 7}}
  - {key: brevity, label: Brevity, scale: {min: 1, max: 7}}
headline: {combine: mean}
prompts:
  en:
    system: You judge one reply of an assistant to a user you know.
    user: |-
      Profile: {{ profile|quote("profile") }}
      Message: {{ message|quote("user_message") }}
      Reply: {{ reply|quote("reply") }}
      Answer with one JSON object: {"reasoning": "<why>"{% for d in dimensions %}, "{{ d.key }}": <{{ d.min }}-{{ d.max }}>{% endfor %}}
binary:
  label: Keep chatting?
  prompts:
    en:
      user: |-
        Reply: {{ reply|quote("reply") }}
        Would this user keep chatting? Answer in JSON: {"reasoning": "<why>", "answer": true or false}
  answer: {format: json}
answer: {format: json}
"""
WARMTH = rubrics.read(RUBRIC)


def ask(question: str, reply: str, rubric: rubrics.Rubric = WARMTH):
    """The judge request of one reply under a rubric."""
    return rubrics.prompt(rubric, question, rubrics.Context("A nurse who runs.", "calm", [], "Any tips?", reply), "en")


def headline(*scores: int) -> float:
    """The warmth rubric's 0-100 headline by hand: the mean of three 1-7 scores, rescaled."""
    return 100 * (sum(scores) / len(scores) - 1) / 6


# -- one judgment through judge.Judge ---------------------------------------------------------------------------


@pytest.mark.parametrize("structured", [True, False], ids=["structured", "text"])
def test_the_dimensions_are_asked_and_read_both_ways(judge_server, structured):
    request = ask("fine", "Pace yourself on the hills. [[dims=5,7,2]]")
    with make_judge(judge_server, structured_output=structured) as judge:
        verdict = judge.judge(request)
    body = judge_server.last_request
    assert verdict.status == "ok" and verdict.dims == {"warmth": 5, "accuracy": 7, "brevity": 2}
    assert verdict.total == pytest.approx(headline(5, 7, 2))
    if structured:
        assert body["response_format"] == request.response_format
        schema = body["response_format"]["json_schema"]["schema"]
        assert list(schema["properties"]) == ["reasoning", "warmth", "accuracy", "brevity"]
        assert schema["properties"]["warmth"] == {"type": "integer", "minimum": 1, "maximum": 7}
        jsonschema.validate(json.loads(verdict.answer), schema)  # the answer is the object alone, valid
    else:
        assert "response_format" not in body
        with pytest.raises(ValueError):
            json.loads(verdict.answer)  # the object is inside prose
        assert '"accuracy": 7' in verdict.answer


@pytest.mark.parametrize("structured", [True, False], ids=["structured", "text"])
@pytest.mark.parametrize("keep", [0, 1])
def test_the_yes_no_question_is_asked_and_read_both_ways(judge_server, structured, keep):
    request = ask("binary", f"Sure thing. [[keep={keep}]]")
    with make_judge(judge_server, structured_output=structured) as judge:
        verdict = judge.judge(request)
    assert verdict.status == "ok" and verdict.verdict == keep and verdict.total is None
    assert ("response_format" in judge_server.last_request) is structured
    assert judge_server.requests_by_mode["binary"] == 1


def test_without_markers_every_answer_is_valid_for_the_schema(judge_server):
    schema = ask("fine", "").response_format["json_schema"]["schema"]
    with make_judge(judge_server) as judge:
        verdicts = [judge.judge(ask("fine", f"plain reply {n}")) for n in range(12)]
    for verdict in verdicts:
        jsonschema.validate(json.loads(verdict.answer), schema)
        assert verdict.status == "ok" and all(1 <= score <= 7 for score in verdict.dims.values())
    assert len({tuple(v.dims.values()) for v in verdicts}) > 1  # derived from each reply, not one constant


@pytest.mark.parametrize("structured", [True, False], ids=["structured", "text"])
@pytest.mark.parametrize("fault, reason", [
    ("malformed", "no JSON object found in the answer"),
    ("truncated", "no JSON object found in the answer"),
    ("out_of_range", "Warmth score 8 is outside 1-7"),
    ("missing_property", "warmth score not found"),
])
def test_a_bad_json_answer_is_unparsed_never_clamped_and_asked_again(judge_server, structured, fault, reason):
    cache = DictCache()
    request = ask("fine", "Pace yourself. [[dims=6,6,6]]")
    judge_server.fail_next(1, fault)
    with make_judge(judge_server, cache=cache, structured_output=structured) as judge:
        bad = judge.judge(request)
        assert bad.status == "unparsed" and bad.error == reason and bad.attempts == 1
        assert bad.dims is None and bad.total is None and cache.puts == 0
        again = judge.judge(request)  # not cached: asked again, and this answer is good
    assert again.status == "ok" and again.dims == {"warmth": 6, "accuracy": 6, "brevity": 6} and not again.cached
    assert judge_server.requests == 2 and cache.puts == 1


@pytest.mark.parametrize("dims, reason", [("8,7,2", "Warmth score 8 is outside 1-7"),
                                          ("0,7,2", "Warmth score 0 is outside 1-7"),
                                          ("4.5,7,2", "Warmth score 4.5 is not an integer"),
                                          ("5,7,7.0", "Brevity score 7.0 is not an integer")])
def test_a_score_off_the_scale_is_unparsed_not_clamped_nor_rounded(judge_server, dims, reason):
    with make_judge(judge_server) as judge:
        verdict = judge.judge(ask("fine", f"Hello [[dims={dims}]]"))
    assert (verdict.status, verdict.error, verdict.dims) == ("unparsed", reason, None)


LINES = rubrics.read("""\
id: lines
version: "1"
title: Lines
context: [reply]
dimensions:
  - {key: tone, label: Tone, scale: {min: 1, max: 5}}
  - {key: depth, label: Depth, scale: {min: 0, max: 20}}
headline: {combine: sum}
prompts:
  en:
    user: "{{ reply|quote('reply') }}\\nEnd with these lines:{% for d in dimensions %}\\n{{ d.label }}: n/{{ d.max }}{% endfor %}"
answer: {format: lines}
""")


@pytest.mark.parametrize("fault, reason", [(None, None), ("missing_property", "Tone score not found"),
                                           ("out_of_range", "Tone score 6 is outside 1-5")])
def test_a_lines_rubric_is_answered_line_by_line(judge_server, fault, reason):
    if fault:
        judge_server.fail_next(1, fault)
    with make_judge(judge_server) as judge:
        marked = judge.judge(rubrics.prompt(LINES, "fine", rubrics.Context("", "", [], "", "Hi [[dims=4,17]]"), "en"))
        plain = [judge.judge(rubrics.prompt(LINES, "fine", rubrics.Context("", "", [], "", f"r{n}"), "en"))
                 for n in range(8)]
    if fault:
        assert (marked.status, marked.error, marked.dims) == ("unparsed", reason, None)
    else:
        assert marked.dims == {"tone": 4, "depth": 17} and marked.total == pytest.approx(100 * (21 - 1) / 24)
    assert all(v.status == "ok" and 1 <= v.dims["tone"] <= 5 and 1 <= v.dims["depth"] <= 20 for v in plain)
    assert judge_server.requests_by_mode["fine"] == 9


@pytest.mark.parametrize("fault, reason", [("missing_property", "Style score not found"),
                                           ("truncated", "no \\boxed{} total found and Content score not found")])
def test_the_new_bad_answers_reach_todays_prompts_too(judge_server, fault, reason):
    from kinds.dialogue.prompts import prompt
    from tests.judge.test_evaluator import ctx

    judge_server.fail_next(1, fault)
    with make_judge(judge_server) as judge:
        verdict = judge.judge(prompt("fine", ctx(), "en"))
    assert (verdict.status, verdict.error) == ("unparsed", reason)


def test_a_changed_rubric_is_judged_anew_and_the_same_one_reuses_its_answers(judge_server):
    reply = "Pace yourself. [[dims=3,4,5]]"
    new_words = rubrics.read(RUBRIC.replace('version: "1"', 'version: "2"').replace("You judge", "You score"))
    new_level = rubrics.read(RUBRIC.replace('version: "1"', 'version: "3"').replace(
        "{key: brevity, label: Brevity, scale: {min: 1, max: 7}}",
        "{key: brevity, label: Brevity, scale: {min: 1, max: 7}, levels: {'7': 'one line'}}"))
    assert ask("fine", reply, new_level).messages == ask("fine", reply).messages  # only its content differs
    cache = DictCache()
    with make_judge(judge_server, cache=cache) as judge:
        keys = {judge.cache_key(ask("fine", reply, r)) for r in (WARMTH, new_words, new_level)}
        assert len(keys) == 3
        first = judge.judge(ask("fine", reply))
        same = judge.judge(ask("fine", reply, rubrics.read(RUBRIC)))  # the same file read again
        assert first.status == same.status == "ok" and same.cached and judge_server.requests == 1
        for changed in (new_words, new_level):
            verdict = judge.judge(ask("fine", reply, changed))
            assert verdict.status == "ok" and not verdict.cached
    assert judge_server.requests == 3
    # The key does not depend on how the answer came: the text path reads the structured answer kept.
    with Judge(JudgeConfig(base_url=judge_server.url, structured_output=False), cache=cache) as text_judge:
        assert text_judge.judge(ask("fine", reply)).cached
    assert judge_server.requests == 3


def test_the_environment_variable_turns_structured_output_off():
    assert JudgeConfig.from_env({}).structured_output is True
    assert JudgeConfig.from_env({"JUDGE_STRUCTURED_OUTPUT": "0"}).structured_output is False
    assert JudgeConfig.from_env({"JUDGE_STRUCTURED_OUTPUT": "on"}).structured_output is True
    with pytest.raises(ValueError, match="JUDGE_STRUCTURED_OUTPUT must be true or false"):
        JudgeConfig.from_env({"JUDGE_STRUCTURED_OUTPUT": "maybe"})


# -- whole evaluations: the engine, an endpoint's setting ------------------------------------------------------

# One session, two rounds, two methods: each reply's scores and verdict in its markers.
MARKS = {("A", 1): (5, 7, 2, 1), ("A", 2): (4, 4, 4, 0), ("B", 1): (1, 2, 3, 1), ("B", 2): (7, 7, 7, 1)}


def session(tag: str = "") -> dict:
    rounds = [{"round": k, "user_message": f"message {k}",
               "responses": {m: f"reply {k} of {m}{tag} [[dims={w},{a},{b}]] [[keep={keep}]]"
                             for (m, kk), (w, a, b, keep) in MARKS.items() if kk == k}} for k in (1, 2)]
    return {"session_id": "s1", "user_profile": "A nurse who runs.", "user_personality": "calm", "rounds": rounds}


def evaluate(client, upload_id: str, **body) -> dict:
    created = client.post("/api/evaluations", json={"upload_id": upload_id, "rubric": "warmth", **body})
    assert created.status_code == 202, created.get_json()
    return wait_for(client, created.get_json()["id"])


def upload(client, *sessions: dict) -> str:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(*sessions)), "log.jsonl")},
                       content_type="multipart/form-data")
    return resp.get_json()["id"]


def recording(judge_server) -> list[dict]:
    """The bodies of the chat requests from now on."""
    bodies: list[dict] = []
    judge_server.hook = lambda request: bodies.append(request["body"])  # returns None: no fault
    return bodies


@pytest.mark.parametrize("setting", ["default", "JUDGE_STRUCTURED_OUTPUT=0", "endpoint structured_output false"])
def test_an_evaluation_sends_the_schema_only_to_an_endpoint_that_takes_it(make_app, judge_server, setting):
    env = {"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_CONCURRENCY": "4"}
    body: dict = {}
    if setting.startswith("JUDGE_STRUCTURED_OUTPUT"):
        env["JUDGE_STRUCTURED_OUTPUT"] = "0"
    elif setting.startswith("endpoint"):
        env["JUDGE_ENDPOINTS"] = json.dumps({"local": {"base_url": judge_server.url, "structured_output": False}})
        body = {"judge": {"endpoint": "local"}}
    app = make_app(env)
    rubric_store.add(app.extensions["store"], WARMTH)
    client = app.test_client()
    bodies = recording(judge_server)
    result = evaluate(client, upload(client, session()), **body)
    assert result["status"] == "done", result
    structured = setting == "default"
    assert len(bodies) == 8 and all(("response_format" in b) is structured for b in bodies)
    if structured:
        assert {b["response_format"]["json_schema"]["name"] for b in bodies} == {"fine_answer", "binary_answer"}
    methods = result["result"]["methods"]
    for method in ("A", "B"):
        marks = [MARKS[method, k] for k in (1, 2)]
        assert methods[method]["dimensions"] == pytest.approx(
            {key: sum(m[i] for m in marks) / 2 for i, key in enumerate(WARMTH.keys)})
        assert methods[method]["avg"] == pytest.approx(sum(headline(*m[:3]) for m in marks) / 2)
        assert methods[method]["binary_rate"] == pytest.approx(100 * sum(m[3] for m in marks) / 2)
    assert result["result"]["rubric"]["sha256"] == WARMTH.sha256


def test_bad_answers_in_an_evaluation_are_unparsed_then_asked_again(make_app, judge_env, judge_server):
    app = make_app(judge_env)
    rubric_store.add(app.extensions["store"], WARMTH)
    client = app.test_client()
    faults = {"reply 1 of A": "out_of_range", "reply 2 of B": "truncated"}

    def hook(request: dict) -> str | None:
        asked = request["body"].get("response_format", {}).get("json_schema", {}).get("name")
        return next((kind for mark, kind in faults.items() if mark in request["reply"] and asked == "fine_answer"),
                    None)

    judge_server.hook = hook
    first = evaluate(client, upload(client, session()))
    assert first["status"] == "done" and first["progress"]["unparsed"] == 2
    a = first["result"]["methods"]["A"]
    assert a["dimensions"] == {"warmth": 4, "accuracy": 4, "brevity": 4}  # the out-of-range answer left out
    assert a["unparsed"] == 1 and a["judged_fine"] == 1

    judge_server.hook = None
    before = judge_server.requests
    assert client.post(f"/api/evaluations/{first['id']}/rerun-failed").status_code == 202
    again = wait_for(client, first["id"])
    assert again["status"] == "done" and again["progress"]["unparsed"] == 0
    assert judge_server.requests - before == 2  # only the two unparsed judgments were asked again
    assert again["result"]["methods"]["A"]["dimensions"] == {"warmth": 4.5, "accuracy": 5.5, "brevity": 3}


def test_evaluations_reuse_answers_under_the_same_rubric_only(make_app, judge_env, judge_server):
    app = make_app(judge_env)
    changed = rubrics.read(RUBRIC.replace('version: "1"', 'version: "2"').replace("You judge", "You score"))
    for rubric in (WARMTH, changed):
        rubric_store.add(app.extensions["store"], rubric)
    client = app.test_client()
    upload_id = upload(client, session())
    first = evaluate(client, upload_id, rubric=WARMTH.sha256)
    assert first["result"]["judge"]["calls"] == 8
    same = evaluate(client, upload_id, rubric=WARMTH.sha256)
    assert same["result"]["judge"]["calls"] == 0 and same["result"]["judge"]["cache_hits"] == 8
    new = evaluate(client, upload_id, rubric=changed.sha256)
    assert new["result"]["judge"]["calls"] == 8 and new["result"]["rubric"]["version"] == "2"
    assert judge_server.requests == 16
    assert new["result"]["methods"]["A"]["dimensions"] == first["result"]["methods"]["A"]["dimensions"]


# -- batch mode: the same requests in a batch file -------------------------------------------------------------


@pytest.mark.parametrize("structured", [True, False], ids=["structured", "text"])
def test_batch_mode_sends_and_reads_the_same_requests(batch_server, structured):  # noqa: F811 (fixture)
    items = [(f"fine-{n}", ask("fine", f"reply {n} [[dims={n + 1},{7 - n},4]]")) for n in range(3)]
    items += [(f"binary-{n}", ask("binary", f"reply {n} [[keep={n % 2}]]")) for n in range(2)]
    cfg = batch_config(batch_server, structured_output=structured)
    batch_server.line_fault = lambda index, line: "out_of_range" if index == 1 else None
    verdicts, _run = run_batch(cfg, items)
    assert all(("response_format" in line["body"]) is structured for line in batch_server.batch_log)
    assert batch_server.batch_lines_by_mode == {"fine": 3, "binary": 2, "annotate": 0, "other": 0}
    assert verdicts["fine-0"].dims == {"warmth": 1, "accuracy": 7, "brevity": 4}
    assert (verdicts["fine-1"].status, verdicts["fine-1"].error) == ("unparsed", "Warmth score 8 is outside 1-7")
    assert verdicts["fine-2"].dims == {"warmth": 3, "accuracy": 5, "brevity": 4}
    assert [verdicts[f"binary-{n}"].verdict for n in range(2)] == [0, 1]
