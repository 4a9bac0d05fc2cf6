"""Text that cannot be kept as written is refused at the door, for every kind: a key twice in one JSON object, a
lone surrogate or NUL written as an escape, bytes that are not UTF-8. Each upload gets a 400 naming the line, the
JSON path and the key or character, with nothing stored; a surrogate pair (an emoji) is still read. And the reader
itself (kinds.readers.json_text.loads) against a plain reading of the same text, on hand-made and random JSON."""
from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kinds.readers import json_text
from kinds.readers.limits import LimitError, Limits
from tests.conftest import jsonl, session_line
from tests.kinds.dialogue.test_agreement_with_people import attach, panel_evaluation
from tests.kinds.test_limits import (
    CONV,
    RUN,
    conversation,
    dumps,
    mobility_doc,
    overall,
    post_upload,
    runs_line,
    stored,
    with_raw,
    zip_bytes,
)

ROOT = Path(__file__).resolve().parents[2]
DUPLICATE = '{"A": "x", "A": "y"}'  # the issue's two replies of one method
LONE = '"\\ud800 x"'  # the issue's user_message


def persona(persona_id: str = "p1", **extra) -> dict:
    return {"persona_id": persona_id, "user_profile": "A 34-year-old nurse.", "user_personality": "Terse.", **extra}


def line_of(text: str, needle: str) -> int:
    """The line of the last occurrence of `needle` in `text`."""
    return text[:text.rindex(needle)].count("\n") + 1


@pytest.fixture
def app(make_app):
    """An app without a judge (none is needed to upload)."""
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


# --- the corpus: one bad file per kind and problem ---------------------------------------------------

@dataclass
class Bad:
    """A refused upload: its bytes and name, and the problem expected (line, path, words of its message)."""

    data: bytes
    filename: str
    line: int | None
    path: str
    words: tuple[str, ...]
    form: dict = field(default_factory=dict)


def _dialogue() -> dict[str, Bad]:
    ok = json.dumps(session_line("s1"))
    replies = session_line("s2") | {"rounds": [{"round": 1, "user_message": "hi", "responses": "@RAW@"}]}
    message = session_line("s2") | {"rounds": [{"round": 1, "user_message": "@RAW@", "responses": {"A": "x"}}]}
    twice = json.dumps(session_line("s2")).replace('"session_id": "s2"', '"session_id": "s2", "session_id": "s3"')
    method = session_line("s2") | {"rounds": [{"round": 1, "user_message": "hi", "responses": {"B\udc00": "x"}}]}
    return {
        "dialogue: the issue's two replies of method A": Bad(
            f"{ok}\n{with_raw(replies, DUPLICATE)}\n".encode(), "log.jsonl", 2, "rounds[0].responses",
            ("Line 2", 'the key "A" appears twice', "'rounds[0].responses'", "keep one")),
        "dialogue: the issue's user_message": Bad(
            f"{ok}\n{with_raw(message, LONE)}\n".encode(), "log.jsonl", 2, "rounds[0].user_message",
            ("Line 2", "'rounds[0].user_message'", "lone surrogate \\ud800")),
        "dialogue: a session_id twice": Bad(
            f"{ok}\n\n{twice}\n".encode(), "log.jsonl", 3, "", ("Line 3", 'the key "session_id"', "'$'")),
        "dialogue: a method named with a lone low surrogate": Bad(
            f"{ok}\n{json.dumps(method)}\n".encode(), "log.jsonl", 2, 'rounds[0].responses["B\\udc00"]',
            ("lone surrogate \\udc00",)),
        "dialogue: NUL in session_id": Bad(
            jsonl(session_line("a\x00b")), "log.jsonl", 1, "session_id", ("Line 1", "NUL", "\\u0000")),
        "dialogue: a byte that is not UTF-8": Bad(
            f"{ok}\n".encode() + json.dumps(session_line("s2", user_profile="caf@")).encode().replace(b"@", b"\xe9")
            + b"\n", "log.jsonl", 2, "", ("Line 2", "not valid UTF-8", "0xE9")),
        "dialogue: a surrogate encoded as UTF-8 bytes (CESU-8)": Bad(
            f"{ok}\n".encode() + json.dumps(session_line("s2", user_profile="@")).encode().replace(
                b"@", b"\xed\xa0\x80") + b"\n", "log.jsonl", 2, "", ("Line 2", "not valid UTF-8", "0xED")),
    }


def _mobility() -> dict[str, Bad]:
    pretty = json.dumps(mobility_doc(), indent=1)
    twice = pretty.replace('\n "daily_location_numbers"', '\n "gyration_radius": [7.0, 8.0, 9.0],\n '
                                                            '"daily_location_numbers"')
    note = json.dumps(mobility_doc() | {"note": "@RAW@"}, indent=1)
    return {
        "mobility: gyration_radius twice": Bad(
            twice.encode(), "gen.json", line_of(twice, '"gyration_radius"'), "",
            (f"Line {line_of(twice, 'gyration_radius')}", 'the key "gyration_radius" appears twice')),
        "mobility: a lone surrogate in an unknown key's value": Bad(
            with_raw(mobility_doc() | {"note": "@RAW@"}, '"\\udfff"').encode(), "gen.json", 1, "note",
            ("'note'", "lone surrogate \\udfff")),
        "mobility: a lone surrogate in a key, pretty-printed": Bad(
            note.replace('"note"', '"n\\uD83D"').replace('"@RAW@"', '"x"').encode(), "gen.json",
            line_of(note, '"note"'), '["n\\ud83d"]', ("lone surrogate \\ud83d",)),
        "mobility: a byte that is not UTF-8": Bad(
            note.encode().replace(b"@RAW@", b"caf\xff"), "gen.json", line_of(note, "@RAW@"), "",
            ("not valid UTF-8", "0xFF")),
    }


def _conversation() -> dict[str, Bad]:
    member = f"{CONV}/1.json"
    replies = conversation() | {"history": [{"role": "user", "content": "hi"}, "@RAW@"]}
    two_contents = '{"role": "assistant", "content": "a", "content": "b"}'
    rating = json.dumps(conversation(), indent=2).replace('"Detail Level": 2', '"Detail Level": 2,\n'
                                                                                '    "Detail Level": 3')
    return {
        "conversation: a reply with two contents, one JSON file": Bad(
            with_raw(replies, two_contents).encode(), "one.json", 1, "history[1]",
            ("one.json line 1", 'the key "content" appears twice', "'history[1]'")),
        "conversation: a lone surrogate on line 2 of JSON Lines": Bad(
            dumps(conversation()) + b"\n" + with_raw(conversation() | {"history": [
                {"role": "user", "content": "@RAW@"}]}, '"ok \\udbff"').encode(), "all.jsonl", 2,
            "history[0].content", ("all.jsonl line 2", "lone surrogate \\udbff")),
        "conversation ZIP: a rating twice in a pretty-printed member": Bad(
            zip_bytes({f"{CONV}/0.json": dumps(conversation()), member: rating.encode()}), "data.zip",
            line_of(rating, '"Detail Level"'), "rating", (member, 'the key "Detail Level" appears twice')),
        "conversation ZIP: NUL in a member": Bad(
            zip_bytes({member: with_raw(conversation(profile="@RAW@"), '"a\\u0000"').encode()}), "data.zip", 1,
            "profile", (member, "NUL")),
        "conversation ZIP: a member that is not UTF-8": Bad(
            zip_bytes({member: dumps(conversation(profile="@")).replace(b"@", b"\xc0")}), "data.zip", 1, "",
            (member, "not valid UTF-8", "0xC0")),
    }


def _agentbench() -> dict[str, Bad]:
    names = {"agent": "m", "task": "os-std"}
    folder = f"{RUN}/m/os-std"
    runs = dumps(runs_line(0)) + b"\n" + with_raw(runs_line(1, [{"role": "agent", "content": "@RAW@"}]),
                                                  '"\\uDE00 done"').encode() + b"\n"
    twice = dumps(runs_line(0)).replace(b'"status": "completed"', b'"status": "completed", "status": "failed"')
    return {
        "agentbench: acc twice in a lone overall.json": Bad(
            with_raw(overall(custom="@RAW@"), '{"overall": {"acc": 0.5, "acc": 0.9}}').encode(), "overall.json", 1,
            "custom.overall", ("overall.json line 1", 'the key "acc" appears twice', "'custom.overall'"), names),
        "agentbench ZIP: a lone surrogate on line 2 of runs.jsonl": Bad(
            zip_bytes({f"{folder}/overall.json": dumps(overall()), f"{folder}/runs.jsonl": runs}), "outputs.zip", 2,
            "output.history[0].content", (f"{folder}/runs.jsonl line 2", "lone surrogate \\ude00")),
        "agentbench ZIP: a status twice in runs.jsonl": Bad(
            zip_bytes({f"{folder}/overall.json": dumps(overall()), f"{folder}/runs.jsonl": twice + b"\n"}),
            "outputs.zip", 1, "output", (f"{folder}/runs.jsonl line 1", 'the key "status"')),
        "agentbench ZIP: NUL in an error.jsonl info": Bad(
            zip_bytes({f"{folder}/overall.json": dumps(overall()), f"{folder}/error.jsonl": dumps(
                {"index": 3, "error": "AGENT_FAILED", "info": "bad\x00"}) + b"\n"}), "outputs.zip", 1, "info",
            (f"{folder}/error.jsonl line 1", "NUL")),
        "agentbench ZIP: an overall.json that is not UTF-8": Bad(
            zip_bytes({f"{folder}/overall.json": dumps(overall(note="@")).replace(b"@", b"\xfe")}), "outputs.zip",
            1, "", ("overall.json", "not valid UTF-8", "0xFE")),
    }


def _personas() -> dict[str, Bad]:
    twice = json.dumps(persona("p2")).replace('"persona_id": "p2"', '"persona_id": "p2", "persona_id": "p3"')
    return {
        "personas: a persona_id twice": Bad(
            jsonl(persona("p1")) + twice.encode() + b"\n", "people.jsonl", 2, "",
            ("Line 2", 'the key "persona_id" appears twice')),
        "personas: a lone surrogate in user_profile": Bad(
            with_raw(persona(user_profile="@RAW@"), '"\\ud800"').encode() + b"\n", "people.jsonl", 1,
            "user_profile", ("Line 1", "lone surrogate \\ud800")),
        "personas: a byte that is not UTF-8": Bad(
            jsonl(persona("p1")) + dumps(persona("p@")).replace(b"@", b"\x80") + b"\n", "people.jsonl", 2, "",
            ("Line 2", "not valid UTF-8", "0x80")),
    }


BAD = {**_dialogue(), **_mobility(), **_conversation(), **_agentbench(), **_personas()}


@pytest.mark.parametrize("name", BAD)
def test_the_upload_is_refused_with_the_place_and_nothing_is_stored(name, app, client):
    case = BAD[name]
    assert post_upload(client, jsonl(session_line("kept")), "kept.jsonl").status_code == 201  # stored before
    before = stored(app)
    resp = post_upload(client, case.data, case.filename, case.form)
    assert resp.status_code == 400, resp.get_json()
    problems = resp.get_json()["problems"]
    located = [p for p in problems if (p["line"], p["path"]) == (case.line, case.path)]
    assert located, problems
    assert any(all(word in p["message"] for word in case.words) for p in located), located
    assert stored(app) == before  # no file, no row


def test_the_corpus_covers_every_kind_and_problem():
    for kind in ("dialogue", "mobility", "conversation", "agentbench", "personas"):
        names = " ".join(name for name in BAD if name.startswith(kind))
        words = " ".join(" ".join(BAD[name].words) for name in BAD if name.startswith(kind))
        assert "appears twice" in words and "lone surrogate" in words and "not valid UTF-8" in words, kind
        assert "twice" in names, kind


def test_the_upload_page_names_the_problem_too(client, app):
    before = stored(app)
    case = BAD["dialogue: the issue's two replies of method A"]
    resp = client.post("/uploads", data={"file": (io.BytesIO(case.data), "log.jsonl")})
    assert resp.status_code == 400
    html = resp.get_data(as_text=True).replace("&#34;", '"').replace("&#39;", "'")
    assert 'the key "A" appears twice' in html and "rounds[0].responses" in html
    assert stored(app) == before


# --- reference sets and people's ratings -------------------------------------------------------------

TWICE = json.dumps(mobility_doc(), indent=1).replace('\n "intention_sequences"',
                                                  '\n "gyration_radius": [1, 2, 3],\n "intention_sequences"')
REFERENCES = {
    "a key twice": (TWICE, (f"Line {line_of(TWICE, 'gyration_radius')}", 'the key "gyration_radius" appears twice',
                            "'$'")),
    "a lone surrogate": (json.dumps(mobility_doc() | {"source": "@"}).replace('"@"', '"\\ud800!"'),
                         ("Line 1", "'source'", "lone surrogate \\ud800")),
    "NUL": (json.dumps(mobility_doc() | {"source": "\x00"}), ("'source'", "NUL")),
}


@pytest.mark.parametrize("page", [False, True], ids=["api", "page"])
@pytest.mark.parametrize("name", REFERENCES)
def test_a_reference_set_is_refused_with_the_place(name, page, app, client):
    text, words = REFERENCES[name]
    before = stored(app)
    resp = client.post("/references" if page else "/api/references",
                       data={"file": (io.BytesIO(text.encode()), "ref.json"), "name": "ref"})
    assert resp.status_code == 400
    message = resp.get_data(as_text=True) if page else resp.get_json()["error"]
    message = message.replace("&#34;", '"').replace("&#39;", "'")
    for word in words:
        assert word in message, message[:3000]
    assert stored(app) == before
    assert client.get("/api/references").get_json() == []


def test_a_ratings_file_is_refused_with_the_place(make_app, judge_env, judge_server):
    client = make_app(judge_env).test_client()
    evaluation_id = panel_evaluation(client, judge_server)
    before = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    rating = '{"session_id": "s1", "round": 1, "method": "A", "total": 50}\n'
    for text, line, path, words in [
            (rating + '{"session_id": "s1", "round": 2, "method": "A", "total": 50, "total": 60}\n', 2, "",
             ('the key "total" appears twice',)),
            (rating + '\n{"session_id": "s1", "round": 2, "method": "\\ud800", "total": 60}\n', 3, "method",
             ("lone surrogate \\ud800",)),
            ('{"session_id": "s1\\u0000", "round": 1, "method": "A", "total": 50}\n', 1, "session_id", ("NUL",)),
            (rating + '{"session_id": "s\xe9", "round": 1, "method": "B", "total": 50}\n', 2, "",
             ("not valid UTF-8",))]:
        data = text.encode("latin-1") if "\xe9" in text else text.encode()
        resp = attach(client, evaluation_id, data, "people.jsonl")
        assert resp.status_code == 400, resp.get_json()
        problems = resp.get_json()["problems"]
        assert [(p["line"], p["path"]) for p in problems] == [(line, path)], problems
        assert all(word in problems[0]["message"] for word in words), problems
    assert client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"] == before


# --- what is still read, and what no longer reaches an evaluation ---------------------------------

def test_surrogate_pairs_are_read_as_the_characters_they_write(client, app):
    session = session_line("s1", methods=("A",)) | {"rounds": [{"round": 1, "user_message": "@R@",
                                                                 "responses": {"A": "x", "@M@": "y"}}]}
    text = json.dumps(session).replace('"@M@"', '"\\ud83d\\ude00"').replace('"@R@"', '"hi \\uD83D\\uDE00"')
    resp = post_upload(client, text.encode() + b"\n", "emoji.jsonl")
    assert resp.status_code == 201, resp.get_json()
    body = resp.get_json()
    assert body["summary"]["methods"] == ["A", "\U0001F600"]
    page = client.get(f"/uploads/{body['id']}")
    assert page.status_code == 200 and "\U0001F600" in page.get_data(as_text=True)
    people = with_raw(persona(user_profile="@RAW@"), '"a nurse \\uD83D\\uDE00"').encode()
    assert post_upload(client, people + b"\n", "people.jsonl").status_code == 201
    reply = with_raw(conversation() | {"history": [{"role": "user", "content": "@RAW@"}]}, '"\\ud83d\\ude00"')
    assert post_upload(client, reply.encode(), "one.json").status_code == 201


def test_the_issue_file_never_reaches_an_evaluation(make_app, judge_env, judge_server, tmp_path):
    app = make_app(judge_env)
    client = app.test_client()
    message = session_line("s1") | {"rounds": [{"round": 1, "user_message": "@RAW@", "responses": {"A": "x"}}]}
    data = with_raw(message, LONE).encode() + b"\n"
    resp = post_upload(client, data, "issue.jsonl")
    assert resp.status_code == 400
    assert stored(app) == ([], (0, 0, 0, 0))
    # the command line refuses it the same way, before any judge call
    path = tmp_path / "issue.jsonl"
    path.write_bytes(data)
    result = app.test_cli_runner().invoke(args=["score", str(path)])
    assert result.exit_code != 0 and "lone surrogate \\ud800" in result.output, result.output
    assert judge_server.requests == 0
    assert client.get("/api/evaluations").get_json() == []


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_nul_is_refused_before_the_database_on_sqlite_and_postgresql(database, make_app, request):
    url = request.getfixturevalue("postgres_server").url() if database == "postgresql" else None
    app = make_app(DATABASE_URL=url)
    assert app.extensions["store"].dialect == database
    client = app.test_client()
    for data, path in [(jsonl(session_line("s\x001")), "session_id"),
                       (jsonl(session_line("s1", methods=("A\x00",))), 'rounds[0].responses["A\\u0000"]')]:
        resp = post_upload(client, data, "nul.jsonl")
        assert resp.status_code == 400, resp.get_json()
        assert [(p["line"], p["path"]) for p in resp.get_json()["problems"]] == [(1, path)]
    assert app.extensions["store"]._one("SELECT COUNT(*) AS n FROM uploads")["n"] == 0
    if database == "postgresql":  # why: PostgreSQL's text columns cannot hold it at all
        import psycopg

        with psycopg.connect(url) as con, pytest.raises(psycopg.DataError, match="NUL"):
            con.execute("SELECT %s::text", ("s\x001",))
    assert post_upload(client, jsonl(session_line("s1")), "fine.jsonl").status_code == 201


# --- the reader ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, line, path, words", [
    ('{"a": 1,\n "b": {"c": 1,\n "c": 2}}', 3, "b", ('Line 3: the key "c" appears twice in \'b\'',)),
    ('[{"x": 1}, {"y": [1, {"z": 2, "z": 3}]}]', 1, "[1].y[1]", ('"z"',)),
    ('{"e": 1, "\\u0065": 2}', 1, "", ('the key "e"',)),  # the same key, once written as an escape
    ('{"a" : 1, "a":2}', 1, "", ('"a"',)),  # a space before the colon
    ('{"x": "\\": y", "x": 1}', 1, "", ('"x"',)),  # a colon after an escaped quote in a string
    ('{"k\\ud800": 1}', 1, '["k\\ud800"]', ("lone surrogate \\ud800",)),
    ('["ok", "\\ud83d\\ude00\\ude00"]', 1, "[1]", ("lone surrogate \\ude00",)),
    ('"\\ud800"', 1, "", ("'$' holds a lone surrogate",)),
    ('{"a": "\\\\\\ud800"}', 1, "a", ("\\ud800",)),  # an escaped backslash, then the escape
    ('{"a": "\\\\ud800\\udc00"}', 1, "a", ("\\udc00",)),  # 'ud800' is text: the low half is alone
    ('{"a": "x\\u0000"}', 1, "a", ("NUL",)),
])
def test_the_reader_names_the_place(text, line, path, words):
    with pytest.raises(LimitError) as raised:
        json_text.loads(text, Limits(), first_line=1)
    error = raised.value
    assert (error.line, error.path) == (line, path) and all(word in error.message for word in words), error.message
    assert error.problem().to_dict() == {"line": line, "path": path, "message": error.message}
    json.dumps(error.message).encode("utf-8")  # the message itself can be stored and shown


@pytest.mark.parametrize("text", [
    '{"a": "\\ud83d\\ude00", "b": "\\uD83D\\uDE00\\udbff\\udfff"}', '{"a": "\\\\ud800"}', '{"a": "x\\\\u0000"}',
    '{"a": "b:c", "d": {"e": 1, "e\\u003a": 2}}', '{"a": "\\ud7a3\\uac00"}', '{"a": "\\\\\\ud83d\\ude00"}',
    '[{"a": 1}, {"a": 1}]', '{"a": {"a": {"a": 1}}}', '{"x": "\\" : \\"", "y": "a : b"}'])
def test_the_reader_reads_what_is_well_formed(text):
    assert json_text.loads(text, Limits()) == json.loads(text)


def _bad(value: object) -> bool:
    """Whether a value parsed by json.loads with object_pairs_hook=list (every key and value kept, also a key's
    earlier values) holds a lone surrogate or NUL in a key or a string."""
    if isinstance(value, str):
        return re.search("[\ud800-\udfff\x00]", value) is not None
    return isinstance(value, (list, tuple)) and any(map(_bad, value))


def _twice(pairs: list) -> list:
    if len({key for key, _value in pairs}) < len(pairs):
        raise KeyError("twice")
    return pairs


pieces = st.sampled_from(["\\ud800", "\\udc00", "\\ud83d\\ude00", "\\uD83D", "\\uDE00", "\\u0000", "\\\\", "\\\\u",
                          "\\u0041", "\\u003a", "\\\"", ":", " : ", "a", "é", "x"])
written = st.lists(pieces, max_size=5).map(lambda parts: '"' + "".join(parts) + '"')
keys = st.sampled_from(['"a"', '"b"', '"\\u0061"', '"a:"', '"a\\u003a"']) | written
json_texts = st.recursive(
    st.one_of(written, st.integers(-5, 5).map(str), st.just("null")),
    lambda inner: st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]")
    | st.lists(st.tuples(keys, inner, st.sampled_from([":", " : ", ":\n"])), max_size=4).map(
        lambda items: "{" + ", ".join(k + sep + v for k, v, sep in items) + "}"),
    max_leaves=10)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=json_texts)
def test_the_reader_refuses_exactly_what_a_plain_reading_finds(text):
    bad = _bad(json.loads(text, object_pairs_hook=list))
    try:
        json.loads(text, object_pairs_hook=_twice)
        twice = False
    except KeyError:
        twice = True
    try:
        read = json_text.loads(text, Limits())
    except LimitError as error:
        assert twice or bad, (text, error.message)
        assert ("appears twice" in error.message) == (not bad), (text, error.message)  # characters are named first
        return
    assert not twice and not bad, text
    assert read == json.loads(text)


def test_every_json_reading_of_an_upload_goes_through_the_reader():
    """json.load(s) in a kind is only for what the dashboard wrote itself (or a sniff); files read from a user go
    through kinds.readers.json_text.loads."""
    allowed = {
        "kinds/dialogue/format.py": 2,  # the stored file, read again after it was validated
        "kinds/dialogue/pairwise_mode.py": 1,  # a judgment key the dashboard wrote
        "kinds/mobility/reference_sets.py": 1,  # a summary the dashboard stored
        "kinds/personas/kind.py": 1,  # the sniff of a first line (validate reads it through the reader)
        "kinds/dialogue/rubric_store.py": 1,  # a rubric's canonical JSON the dashboard stored
        "kinds/dialogue/rating_store.py": 3,  # a rating's scores the dashboard stored, and the setting step 19 moves in
        "kinds/dialogue/rating_slice.py": 1,  # the replies of a slice the dashboard drew and stored
        "kinds/rubrics/model.py": 1,  # the canonical JSON the dashboard just wrote
        "kinds/rubrics/reading.py": 1,  # the rubric schema of the repository (a rubric file: json_text.loads)
        "kinds/rubrics/answers.py": 1,  # a judge's answer, not a file a user sends
        "kinds/conversation/people_labels.py": 1,  # a person's labels the dashboard stored (checked on the way in)
    }
    found = {}
    for path in sorted((ROOT / "kinds").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("kinds/readers/"):
            continue
        count = len(re.findall(r"\bjson\.loads?\(", path.read_text(encoding="utf-8")))
        if count:
            found[name] = count
    assert found == allowed


def test_the_core_parses_no_uploaded_file_itself():
    """The core (the pipeline, the simulations, the web app) reads an uploaded file only through its kind (the
    personas of a simulation: `Kind.personas`), never with json.load(s) of its own: a BOM, CRLF line ends or a blank
    line then read the same at the upload and everywhere after it."""
    allowed = {
        "pipeline/leases.py": 1,  # a Celery message the broker holds
        "web/judge_settings.py": 2,  # the settings the dashboard saved, and a file of keys an earlier version wrote
    }
    found = {}
    for path in [*(ROOT / "app.py",), *(p for folder in ("simulate", "pipeline", "web")
                                         for p in sorted((ROOT / folder).rglob("*.py")))]:
        name = path.relative_to(ROOT).as_posix()
        count = len(re.findall(r"\bjson\.loads?\(", path.read_text(encoding="utf-8")))
        if count:
            found[name] = count
    assert found == allowed
