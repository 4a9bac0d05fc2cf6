"""The personas kind's detection and validation (kinds/personas/): line-level problems, warnings, summary."""
from __future__ import annotations

import io
import json

import pytest

from kinds import registry
from kinds.personas.format import script, validate
from kinds.personas.kind import PersonasKind
from tests.conftest import jsonl, session_line


def persona(persona_id: str = "p1", **extra) -> dict:
    return {"persona_id": persona_id, "user_profile": "A 34-year-old nurse.", "user_personality": "Terse.", **extra}


def check(data: bytes):
    return validate(io.BytesIO(data))


def problems(data: bytes) -> list[tuple]:
    return [(p.line, p.path) for p in check(data).problems]


# -- detection --------------------------------------------------------------------------------------------------

def test_a_personas_file_is_detected_as_personas():
    data = jsonl(persona("a"), persona("b"))
    assert registry.detect(data, "people.jsonl") == "personas"


def test_a_dialogue_file_that_names_its_personas_stays_a_dialogue_file():
    data = jsonl(session_line("s1", persona_id="p1"), session_line("s2", persona_id="p2"))
    assert registry.detect(data, "log.jsonl") == "dialogue"


def test_a_dialogue_first_line_longer_than_the_head_is_read_whole_from_the_file(tmp_path):
    line = {"persona_id": "p1", "session_id": "s1", "user_profile": "x" * 5000, "user_personality": "Calm.",
            "rounds": session_line("s1")["rounds"]}  # "rounds" only after the first 4096 bytes
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(line))
    head = path.read_bytes()[:4096]
    assert b'"rounds"' not in head
    assert registry.detect(head, "log.jsonl", path) == "dialogue"


def test_a_personas_file_with_a_broken_first_line_is_still_personas_so_its_problems_name_personas_fields():
    data = b'{"persona_id": "a", "user_profile": "A nurse.",\n' + jsonl(persona("b"))
    assert registry.detect(data, "people.jsonl") == "personas"
    assert problems(data) == [(1, "")]


@pytest.mark.parametrize("data", [
    jsonl(session_line()),  # dialogue
    b'{"history": [{"role": "user", "content": "hi"}], "rating": {}}\n',  # a conversation
    b'{"gyration_radius": [1.0], "daily_location_numbers": [2]}',  # mobility
    b'{"user_profile": "A nurse.", "user_personality": "Terse."}\n',  # no persona_id
])
def test_other_kinds_files_are_not_personas(data):
    assert PersonasKind().sniff(data, "x.jsonl", None) is False


# -- validation ---------------------------------------------------------------------------------------------------

def test_a_valid_file_gives_a_summary():
    data = jsonl(persona("a", scenario="Night shifts.", opening="hi"),
                 {"persona_id": "b", "user_profile": "70岁，退休语文老师，住在杭州。", "user_personality": "文雅。"},
                 persona("c", scenario="Exams."))
    report = check(data)
    assert report.ok and report.warnings == []
    assert report.summary == {
        "personas": 3, "languages": {"latin": 2, "zh": 1},
        "fields": {"user_personality": 3, "scenario": 2, "opening": 1},
        "first": [{"line": 1, "persona_id": "a", "user_profile": "A 34-year-old nurse.", "user_personality": "Terse.",
                   "scenario": "Night shifts.", "opening": "hi"},
                  {"line": 2, "persona_id": "b", "user_profile": "70岁，退休语文老师，住在杭州。",
                   "user_personality": "文雅。"},
                  {"line": 3, "persona_id": "c", "user_profile": "A 34-year-old nurse.", "user_personality": "Terse.",
                   "scenario": "Exams."}]}


def test_the_summary_keeps_the_first_ten_personas_with_long_fields_cut():
    data = jsonl(*(persona(f"p{n}", user_profile="y" * 500) for n in range(12)))
    first = check(data).summary["first"]
    assert [p["persona_id"] for p in first] == [f"p{n}" for n in range(10)]
    assert first[0]["user_profile"] == "y" * 159 + "…"


@pytest.mark.parametrize(("line", "path", "words"), [
    ({"user_profile": "A nurse."}, "persona_id", "'persona_id' is missing"),
    ({"persona_id": "", "user_profile": "A nurse."}, "persona_id", "'persona_id' is empty"),
    ({"persona_id": 12, "user_profile": "A nurse."}, "persona_id", "put the id in quotes, e.g. \"12\""),
    ({"persona_id": ["a"], "user_profile": "A nurse."}, "persona_id", "must be a string, found a list"),
    ({"persona_id": "a"}, "user_profile", "'user_profile' is missing"),
    ({"persona_id": "a", "user_profile": "  "}, "user_profile", "'user_profile' is empty"),
    ({"persona_id": "a", "user_profile": {"age": 3}}, "user_profile", "must be a string, found an object"),
    ({"persona_id": "a", "user_profile": "A nurse.", "user_personality": 3}, "user_personality",
     "must be a string, found a number (3)"),
    ({"persona_id": "a", "user_profile": "A nurse.", "scenario": None}, "scenario", "must be a string, found null"),
    ({"persona_id": "a", "user_profile": "A nurse.", "opening": True}, "opening",
     "must be a string, found a boolean (true)"),
])
def test_each_bad_field_is_named_with_its_line(line, path, words):
    report = check(jsonl(persona("first"), line))
    assert [(p.line, p.path) for p in report.problems] == [(2, path)]
    assert words in report.problems[0].message and report.problems[0].message.startswith("Line 2: ")


def test_a_line_that_is_not_an_object_or_not_json_is_named():
    data = jsonl(persona("a")) + b"[1, 2]\n\"text\"\n{bad json\n"
    report = check(data)
    assert [(p.line, p.path) for p in report.problems] == [(2, ""), (3, ""), (4, "")]
    assert "is a list, not a persona" in report.problems[0].message
    assert "not valid JSON" in report.problems[2].message


def test_a_repeated_id_names_both_lines():
    report = check(jsonl(persona("a"), persona("b"), persona("a")))
    assert [(p.line, p.path) for p in report.problems] == [(3, "persona_id")]
    assert report.problems[0].message == ("Line 3: 'persona_id' \"a\" is used again; it first appeared on line 1. "
                                          "Each persona needs its own id.")


def test_blank_lines_are_skipped_and_lines_keep_their_numbers():
    data = b"\n" + jsonl(persona("a")) + b"\n   \n" + jsonl({"persona_id": "b"})
    assert problems(data) == [(5, "user_profile")]
    assert check(b"\n" + jsonl(persona("a")) + b"\n\n").summary["first"][0]["line"] == 2


def test_a_bom_is_accepted():
    report = check(b"\xef\xbb\xbf" + jsonl(persona("a"), persona("b")))
    assert report.ok and report.summary["personas"] == 2


def test_an_empty_file_has_no_personas():
    report = check(b"\n  \n")
    assert [(p.line, p.path) for p in report.problems] == [(None, "")]
    assert "contains no personas" in report.problems[0].message


def test_a_missing_personality_is_a_warning_counted_once():
    data = jsonl(persona("a"), {"persona_id": "b", "user_profile": "A farmer."},
                 {"persona_id": "c", "user_profile": "A student."})
    report = check(data)
    assert report.ok
    assert [(w.line, w.path) for w in report.warnings] == [(None, "user_personality")]
    assert report.warnings[0].message.startswith("2 personas have no 'user_personality' (the first on line 2)")
    assert report.summary["fields"]["user_personality"] == 1


def test_more_personas_than_the_limit_is_refused_at_the_line_past_it(monkeypatch):
    monkeypatch.setenv("LIMIT_SESSIONS", "2")
    report = check(jsonl(persona("a"), persona("b"), persona("c"), persona("d")))
    assert [(p.line, p.path) for p in report.problems] == [(3, "")]
    assert "more than 2 personas" in report.problems[0].message and "LIMIT_SESSIONS" in report.problems[0].message


def test_a_string_past_the_limit_is_refused_with_its_field(monkeypatch):
    monkeypatch.setenv("LIMIT_STRING_CHARS", "50")
    report = check(jsonl(persona("a"), persona("b", user_profile="z" * 51)))
    assert [(p.line, p.path) for p in report.problems] == [(2, "user_profile")]
    assert "LIMIT_STRING_CHARS" in report.problems[0].message


def test_a_line_longer_than_a_megabyte_is_refused():
    line = json.dumps(persona("a", user_profile="w" * (1024 * 1024))).encode()
    report = check(line + b"\n" + jsonl(persona("b")))
    assert [(p.line, p.path) for p in report.problems] == [(1, "")]


@pytest.mark.parametrize(("text", "name"), [
    ("A retired railway engineer from Shropshire.", "latin"),
    ("70岁，退休语文老师，在学Python。", "zh"),
    ("서울에 사는 대학생", "ko"),
    ("東京に住む学生です", "ja"),
    ("12345 !!!", "other"),
])
def test_the_writing_of_a_profile_is_recognised(text, name):
    assert script(text) == name
