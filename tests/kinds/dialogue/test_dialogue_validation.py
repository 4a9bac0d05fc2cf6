"""Validation and loading of dialogue JSONL uploads (kinds.dialogue, kinds.readers.jsonl)."""
from __future__ import annotations

import io
import json
import tracemalloc

import pytest

from kinds.dialogue.format import Round, Session, iter_sessions, parse_session, validate
from kinds.problems import MAX_PROBLEMS, Problem, Report
from kinds.readers.jsonl import iter_lines

METHODS = ("Base", "CoT", "Ours")
DROP = object()  # marks a key to leave out


# --- helpers -----------------------------------------------------------------------------------

def rnd(number=1, message="Hi there!", methods=METHODS, **changes) -> dict:
    """A PersonaSteer round; keyword changes replace keys, DROP removes them."""
    data = {"round": number, "user_message": message,
            "responses": {m: f"{m} reply to round {number}" for m in methods}}
    return _apply(data, changes)


def aloe(number=None, user="Hello!", assistant="Hi, how are you?", **changes) -> dict:
    """An ALOE round (`user` + `assistant`), with `round` only when given."""
    data = {"user": user, "assistant": assistant}
    if number is not None:
        data["round"] = number
    return _apply(data, changes)


def session(sid="s1", rounds=3, methods=METHODS, **changes) -> dict:
    """A session with `rounds` good rounds (or the given list of rounds)."""
    if isinstance(rounds, int):
        rounds = [rnd(k, methods=methods) for k in range(1, rounds + 1)]
    data = {"session_id": sid, "user_profile": "A 30-year-old nurse who loves hiking.",
            "user_personality": "Warm, curious and direct.", "rounds": rounds}
    return _apply(data, changes)


def _apply(data: dict, changes: dict) -> dict:
    data.update(changes)
    return {key: value for key, value in data.items() if value is not DROP}


def jsonl(*items, newline="\n") -> bytes:
    """One line per item: dicts and lists are JSON-encoded, strings are written as they are."""
    lines = [item if isinstance(item, str) else json.dumps(item, ensure_ascii=False) for item in items]
    return (newline.join(lines) + newline).encode("utf-8")


def check(data: bytes, **kwargs) -> Report:
    return validate(io.BytesIO(data), **kwargs)


def the_problem(report: Report) -> Problem:
    """The single error of a report (fails when there are none or several)."""
    assert len(report.problems) == 1, [p.message for p in report.problems]
    return report.problems[0]


def assert_problem(problem: Problem, line, path, fragment) -> None:
    assert (problem.line, problem.path) == (line, path), problem
    assert fragment in problem.message, problem.message


# --- one bad thing per file --------------------------------------------------------------------

GOOD = session("s0")

BAD_LINES = {
    "bad JSON": ('{"session_id": "s2", "rounds": [}', "", "Line 2 is not valid JSON at character 33"),
    "two objects on a line": (json.dumps(session("s2")) + json.dumps(session("s3")), "",
                              "more text after the first JSON value"),
    "JSON array": ([session("s2")], "", "Line 2 is a JSON array"),
    "number": ("42", "", "Line 2 is a number (42), not a session object"),
    "string": ('"s2"', "", "is a string (\"s2\"), not a session object"),
    "null": ("null", "", "Line 2 is null, not a session object"),
    "missing session_id": (session(session_id=DROP), "session_id",
                           "'session_id' is missing; add it as a non-empty string"),
    "empty session_id": (session(""), "session_id", "'session_id' is empty"),
    "blank session_id": (session("   "), "session_id", "'session_id' is empty"),
    "session_id a number": (session(17), "session_id",
                            "'session_id' must be a string, found a number (17); put the id in quotes"),
    "session_id null": (session(None), "session_id", "'session_id' must be a non-empty string, found null"),
    "user_profile a list": (session("s2", user_profile=["nurse"]), "user_profile",
                            "'user_profile' must be a string, found a list"),
    "missing user_profile": (session("s2", user_profile=DROP), "user_profile", "'user_profile' is missing"),
    "user_personality null": (session("s2", user_personality=None), "user_personality",
                              "'user_personality' must be a string, found null"),
    "rounds an object": (session("s2", rounds={"1": rnd()}), "rounds",
                         "'rounds' must be a non-empty list of rounds, found an object"),
    "missing rounds": (session("s2", rounds=DROP), "rounds", "'rounds' is missing"),
    "empty rounds": (session("s2", rounds=[]), "rounds", "'rounds' is an empty list"),
    "round not an object": (session("s2", rounds=[rnd(1), "hello"]), "rounds[1]",
                            "'rounds[1]' must be an object (one round), found a string (\"hello\")"),
    "round 0": (session("s2", rounds=[rnd(0), rnd(1)]), "rounds[0].round",
                "'rounds[0].round' is 0; round numbers start at 1"),
    "round negative": (session("s2", rounds=[rnd(-3)]), "rounds[0].round", "is -3; round numbers start at 1"),
    "round as a string": (session("s2", rounds=[rnd("1"), rnd(2)]), "rounds[0].round",
                          "found a string (\"1\"); write the number without quotes"),
    "round True": (session("s2", rounds=[rnd(True), rnd(2)]), "rounds[0].round",
                   "must be a whole number of 1 or more, found a boolean (true)"),
    "round 1.5": (session("s2", rounds=[rnd(1.5), rnd(2)]), "rounds[0].round", "found a number (1.5)"),
    "round missing": (session("s2", rounds=[rnd(1), rnd(2, round=DROP)]), "rounds[1].round",
                      "'rounds[1].round' is missing; add it as a whole number of 1 or more"),
    "rounds decreasing": (session("s2", rounds=[rnd(1), rnd(3), rnd(2)]), "rounds[2].round",
                          "'rounds[2].round' is 2 but the round before it is 3; round numbers must increase"),
    "round repeated": (session("s2", rounds=[rnd(1), rnd(1)]), "rounds[1].round",
                       "is 1 but the round before it is 1"),
    "missing user_message": (session("s2", rounds=[rnd(1), rnd(2, user_message=DROP)]),
                             "rounds[1].user_message", "'rounds[1].user_message' is missing"),
    "empty user_message": (session("s2", rounds=[rnd(1, message="")]), "rounds[0].user_message",
                           "'rounds[0].user_message' is empty"),
    "blank user_message": (session("s2", rounds=[rnd(1), rnd(2, message=" \t ")]), "rounds[1].user_message",
                           "'rounds[1].user_message' is empty"),
    "user_message a number": (session("s2", rounds=[rnd(1, message=5)]), "rounds[0].user_message",
                              "must be a non-empty string, found a number (5)"),
    "responses missing": (session("s2", rounds=[rnd(1, responses=DROP)]), "rounds[0].responses",
                          "'rounds[0].responses' is missing"),
    "responses a list": (session("s2", rounds=[rnd(1, responses=["a", "b", "c"])]), "rounds[0].responses",
                         "must be an object mapping each method name to its response, found a list"),
    "responses empty": (session("s2", rounds=[rnd(1, responses={})]), "rounds[0].responses",
                        "'rounds[0].responses' is empty; give at least one method's response"),
    "a response empty": (session("s2", rounds=[rnd(1, responses={"Base": "x", "CoT": "", "Ours": "y"})]),
                         "rounds[0].responses.CoT", "'rounds[0].responses.CoT' is empty"),
    "a response blank": (session("s2", rounds=[rnd(1, responses={"Base": "x", "CoT": "y", "Ours": " \n"})]),
                         "rounds[0].responses.Ours", "is empty"),
    "a response a number": (session("s2", rounds=[rnd(1, responses={"Base": "x", "CoT": "y", "Ours": 3})]),
                            "rounds[0].responses.Ours", "must be a non-empty string, found a number (3)"),
    "a response an object": (session("s2", rounds=[rnd(1, responses={"Base": {"text": "x"}, "CoT": "y",
                                                                       "Ours": "z"})]),
                             "rounds[0].responses.Base", "found an object"),
    "round with neither shape": (session("s2", rounds=[{"round": 1, "text": "hello"}]), "rounds[0]",
                                 "has neither 'user_message' and 'responses' nor ALOE-style 'user' and 'assistant'"),
}


@pytest.mark.parametrize("bad_line, path, fragment", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_one_bad_line_is_reported_with_line_path_and_reason(bad_line, path, fragment):
    report = check(jsonl(GOOD, bad_line, session("s9")))
    assert not report.ok
    assert_problem(the_problem(report), 2, path, fragment)


ALOE_GOOD = session("a0", rounds=[aloe(), aloe()])

BAD_ALOE = {
    "assistant a number": (aloe(assistant=3), "rounds[0].assistant",
                           "must be a string or an object with 'preferred' and 'rejected', found a number (3)"),
    "assistant missing rejected": (aloe(assistant={"preferred": "Great!"}), "rounds[0].assistant.rejected",
                                   "'rounds[0].assistant.rejected' is missing"),
    "assistant preferred empty": (aloe(assistant={"preferred": "", "rejected": "No."}),
                                  "rounds[0].assistant.preferred", "is empty"),
    "assistant missing": (aloe(assistant=DROP), "rounds[0].assistant", "'rounds[0].assistant' is missing"),
    "user empty": (aloe(user=""), "rounds[0].user", "'rounds[0].user' is empty"),
    "user missing": (aloe(user=DROP), "rounds[0].user", "'rounds[0].user' is missing"),
    "round zero": (aloe(0), "rounds[0].round", "round numbers start at 1"),
}


@pytest.mark.parametrize("bad_round, path, fragment", BAD_ALOE.values(), ids=BAD_ALOE.keys())
def test_bad_aloe_round(bad_round, path, fragment):
    report = check(jsonl(session("a1", rounds=[bad_round, aloe()])))
    assert_problem(the_problem(report), 1, path, fragment)


def test_empty_responses_in_the_first_round_of_the_file():
    report = check(jsonl(session("s1", rounds=[rnd(1, responses={}), rnd(2, responses={})])))
    assert [(p.line, p.path) for p in report.problems] == [(1, "rounds[0].responses"), (1, "rounds[1].responses")]
    assert "is empty; give at least one method's response" in report.problems[0].message


def test_duplicate_session_id_names_both_lines():
    report = check(jsonl(session("u1"), session("u2"), session("u1")))
    problem = the_problem(report)
    assert_problem(problem, 3, "session_id", "'session_id' \"u1\" is used again")
    assert "first appeared on line 1" in problem.message


def test_methods_differing_from_the_first_session_name_missing_and_extra():
    report = check(jsonl(session("s1"), session("s2", rounds=2, methods=("Base", "Ours", "New"))))
    assert [(p.line, p.path) for p in report.problems] == [(2, "rounds[0].responses"), (2, "rounds[1].responses")]
    message = report.problems[1].message
    assert "round 2" in message
    assert 'missing "CoT"' in message and 'extra "New"' in message
    assert "first round (line 1)" in message


def test_methods_only_missing_or_only_extra():
    missing = check(jsonl(session("s1"), session("s2", rounds=1, methods=("Base",))))
    extra = check(jsonl(session("s1", rounds=1, methods=("Base",)), session("s2", rounds=1)))
    assert 'missing "CoT", "Ours"' in the_problem(missing).message
    assert 'extra "CoT", "Ours"' in the_problem(extra).message


def test_methods_differing_between_rounds_of_one_session():
    rounds = [rnd(1), rnd(2, methods=("Base", "CoT"))]
    problem = the_problem(check(jsonl(session("s1", rounds=rounds))))
    assert_problem(problem, 1, "rounds[1].responses", 'round 2: missing "Ours"')


def test_method_names_that_are_not_identifiers_get_bracketed_paths():
    rounds = [rnd(1, responses={"GPT-4o": "ok", "my method": ""})]
    problem = the_problem(check(jsonl(session("s1", rounds=rounds))))
    assert problem.path == 'rounds[0].responses["my method"]'


def test_all_problems_are_reported_not_just_the_first():
    report = check(jsonl(session("s1"), "{oops", session("s3", user_profile=1),
                         session("s4", rounds=[rnd(2), rnd(1)])))
    assert [(p.line, p.path) for p in report.problems] == [
        (2, ""), (3, "user_profile"), (4, "rounds[1].round")]


def test_several_problems_in_one_session_are_all_reported():
    bad = session(5, user_profile=DROP, rounds=[rnd("1", message=""), 7])
    paths = [p.path for p in check(jsonl(bad)).problems]
    assert paths == ["session_id", "user_profile", "rounds[0].round", "rounds[0].user_message", "rounds[1]"]


# --- encodings and line handling ---------------------------------------------------------------

def test_latin1_bytes_are_rejected_with_the_byte_offset():
    line2 = '{"session_id": "café", "user_profile": "x", "rounds": []}\n'.encode("latin-1")
    problem = the_problem(check(jsonl(session("s1")) + line2))
    assert_problem(problem, 2, "", "Line 2 is not valid UTF-8")
    offset = line2.index(b"\xe9")
    assert f"byte 0xE9 at byte offset {offset}" in problem.message
    assert "must be UTF-8" in problem.message


def test_utf16_file_is_rejected_once_for_the_whole_file():
    text = jsonl(session("s1"), session("s2")).decode("utf-8")
    for data in (text.encode("utf-16"), text.encode("utf-16-le"), text.encode("utf-16-be")):
        assert_problem(the_problem(check(data)), None, "", "UTF-16")
        assert "save it as UTF-8" in the_problem(check(data)).message


def test_utf8_bom_is_accepted():
    report = check(b"\xef\xbb\xbf" + jsonl(session("s1"), session("s2")))
    assert report.ok and report.summary["sessions"] == 2


def test_crlf_line_endings_and_a_last_line_without_newline_are_accepted():
    data = jsonl(session("s1"), session("s2"), newline="\r\n") + json.dumps(session("s3")).encode()
    report = check(data)
    assert report.ok, report.problems
    assert report.summary["sessions"] == 3


def test_blank_lines_are_skipped_and_line_numbers_stay_right():
    data = jsonl(session("s1"), "", "   \t", session("s2"), "", session(session_id=DROP), "")
    report = check(data)
    assert_problem(the_problem(report), 6, "session_id", "is missing")
    assert report.summary["sessions"] == 3


def test_line_longer_than_the_limit_is_skipped_and_later_lines_still_read():
    huge = session("big", user_profile="x" * 300_000)
    data = jsonl(session("s1"), huge, session(session_id=DROP), session("s4"))
    report = check(data, max_line_bytes=64 * 1024)
    assert [(p.line, p.path) for p in report.problems] == [(2, ""), (3, "session_id")]
    size = len(json.dumps(huge)) / 1024
    expected = f"Line 2 is {size:.1f} KB, longer than the limit of 64.0 KB per session"
    assert expected in report.problems[0].message
    assert report.summary["sessions"] == 3  # s1, the line without id, s4


def test_size_in_the_too_long_message_is_in_mb():
    data = jsonl(session("s1", user_profile="y" * (3 * 1024 * 1024)))
    problem = the_problem(check(data, max_line_bytes=1024 * 1024))
    assert "Line 1 is 3.0 MB, longer than the limit of 1.0 MB per session" in problem.message


def test_line_of_exactly_the_limit_is_accepted_with_either_line_ending():
    first, second = json.dumps(session("s1")).encode(), json.dumps(session("s2")).encode()
    assert len(first) == len(second)
    for ending in (b"\n", b"\r\n"):
        data = first + ending + second + ending
        assert check(data, max_line_bytes=len(first)).ok
        too_long = check(data, max_line_bytes=len(first) - 1)
        assert [p.line for p in too_long.problems] == [1, 2]
    assert check(first + b"\n" + second, max_line_bytes=len(first)).ok


def test_huge_line_is_never_held_in_memory():
    data = jsonl(session("s1"), session("big", user_profile="z" * (16 * 1024 * 1024)), session("s3"))
    stream = io.BytesIO(data)
    tracemalloc.start()
    try:
        report = validate(stream, max_line_bytes=64 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert the_problem(report).line == 2
    assert peak < 4 * 1024 * 1024


def test_empty_file_and_blank_only_file_have_no_sessions():
    for data in (b"", b"\n\n  \n\t\r\n", b"\xef\xbb\xbf"):
        report = check(data)
        assert_problem(the_problem(report), None, "", "The file contains no sessions")
        assert report.summary["sessions"] == 0


def test_pretty_printed_json_gets_one_specific_problem():
    data = json.dumps(session("s1"), indent=2).encode()
    assert_problem(the_problem(check(data)), 1, "", "looks like formatted JSON spread over several lines")


def test_iter_lines_yields_values_and_problems_with_line_numbers():
    data = b'\xef\xbb\xbf{"a": 1}\r\n\n[2]\nnope\n3'
    items = list(iter_lines(io.BytesIO(data), max_line_bytes=100))
    assert [(n, v) for n, v in items if not isinstance(v, Problem)] == [(1, {"a": 1}), (3, [2]), (5, 3)]
    assert [(n, v.line) for n, v in items if isinstance(v, Problem)] == [(4, 4)]


# --- caps --------------------------------------------------------------------------------------

def test_problem_cap_truncates_the_report():
    report = check(jsonl(*["{bad json"] * 150))
    assert len(report.problems) == MAX_PROBLEMS
    assert report.truncated and not report.ok
    assert report.problems[-1].line == MAX_PROBLEMS


def test_exactly_the_cap_is_not_truncated():
    report = check(jsonl(*["{bad json"] * MAX_PROBLEMS))
    assert len(report.problems) == MAX_PROBLEMS and not report.truncated


# --- good files --------------------------------------------------------------------------------

def persona_steer_original() -> bytes:
    """A file shaped like the original PersonaSteer tool's output (with an extra unknown key)."""
    sessions = []
    for s in range(1, 4):
        rounds = [rnd(k, message=f"Message {k} of user {s}") for k in range(1, 6)]
        rounds[0]["timestamp"] = "2025-01-01T10:00:00"
        sessions.append(session(f"user_{s:03d}_session_001", rounds=rounds, source="generate_dialogues.py"))
    return jsonl(*sessions, "")


def test_original_persona_steer_file_validates_with_the_right_summary():
    report = check(persona_steer_original())
    assert report.ok and not report.warnings and not report.truncated
    assert report.summary == {"sessions": 3, "rounds": 15, "min_rounds": 5, "max_rounds": 5,
                              "methods": ["Base", "CoT", "Ours"], "format": "personasteer"}


def test_missing_user_personality_is_a_warning_not_an_error():
    report = check(jsonl(session("s1"), session("s2", user_personality=DROP)))
    assert report.ok
    assert len(report.warnings) == 1
    assert_problem(report.warnings[0], 2, "user_personality", "no 'user_personality'")
    assert [s.user_personality for s in iter_sessions(io.BytesIO(jsonl(session("s2", user_personality=DROP))))] == [""]


def test_missing_user_personality_warning_is_counted_once_per_file():
    report = check(jsonl(*[session(f"s{i}", user_personality=DROP) for i in range(4)]))
    assert len(report.warnings) == 1
    assert "4 sessions have no 'user_personality' (the first on line 1)" in report.warnings[0].message


def test_single_round_sessions_give_one_warning_per_file():
    report = check(jsonl(session("s1", rounds=1), session("s2", rounds=3), session("s3", rounds=1)))
    assert report.ok
    assert len(report.warnings) == 1
    assert_problem(report.warnings[0], None, "rounds", "2 sessions have a single round (the first on line 1)")
    assert (report.summary["min_rounds"], report.summary["max_rounds"]) == (1, 3)


def test_sessions_whose_rounds_skip_numbers_are_accepted_with_one_warning():
    # AL(k) needs k = 1, 2, ...: rounds 2 and 5 leave k = 1, 3 and 4 to the other sessions
    report = check(jsonl(session("s1"), session("s2", rounds=[rnd(2), rnd(5)])))
    assert report.ok
    assert len(report.warnings) == 1
    assert_problem(report.warnings[0], 2, "rounds", "1 session does not number its rounds 1, 2, 3, ... (line 2 has "
                                                    "rounds 2, 5)")
    report = check(jsonl(session("s1", rounds=[rnd(1), rnd(3)]), session("s2", rounds=[rnd(2)]), session("s3")))
    assert [(w.line, w.path) for w in report.warnings if "number" in w.message] == [(None, "rounds")]
    assert "2 sessions do not number their rounds 1, 2, 3, ... (the first, line 1, has rounds 1, 3)" in \
        report.warnings[-1].message
    assert not check(jsonl(session("s1"), session("s2", rounds=2))).warnings


def test_aloe_rounds_map_to_preferred_and_rejected():
    pair = {"preferred": "Sounds fun, where to?", "rejected": "OK."}
    data = jsonl(session("a1", rounds=[aloe(assistant=pair), aloe(assistant=pair)], user_personality=DROP))
    report = check(data)
    assert report.ok
    assert report.summary["methods"] == ["preferred", "rejected"] and report.summary["format"] == "aloe"
    [loaded] = iter_sessions(io.BytesIO(data))
    assert loaded.rounds[1] == Round(2, "Hello!", {"preferred": "Sounds fun, where to?", "rejected": "OK."})


def test_aloe_string_assistant_maps_to_method_assistant():
    data = jsonl(session("a1", rounds=[aloe(1, assistant="Hey!"), aloe(3, assistant="Sure.")]))
    [loaded] = iter_sessions(io.BytesIO(data))
    assert [(r.number, r.responses) for r in loaded.rounds] == [(1, {"assistant": "Hey!"}), (3, {"assistant": "Sure."})]


def test_aloe_mixing_string_and_pair_assistants_is_inconsistent():
    data = jsonl(session("a1", rounds=[aloe(), aloe(assistant={"preferred": "A", "rejected": "B"})]))
    problem = the_problem(check(data))
    assert_problem(problem, 1, "rounds[1].assistant", 'missing "assistant"; extra "preferred", "rejected"')


def test_personasteer_and_aloe_rounds_in_one_file_are_mixed():
    data = jsonl(session("s1", rounds=[rnd(1, methods=("assistant",))]), session("a1", rounds=[aloe(), aloe()]))
    report = check(data)
    assert report.ok, report.problems
    assert report.summary["format"] == "mixed"


def test_iter_sessions_returns_normalised_sessions():
    data = jsonl(session("s1", rounds=2, extra="ignored"), "", session("s2", rounds=[rnd(4)]))
    sessions = list(iter_sessions(io.BytesIO(data)))
    assert sessions == [
        Session("s1", "A 30-year-old nurse who loves hiking.", "Warm, curious and direct.", [
            Round(1, "Hi there!", {m: f"{m} reply to round 1" for m in METHODS}),
            Round(2, "Hi there!", {m: f"{m} reply to round 2" for m in METHODS})]),
        Session("s2", "A 30-year-old nurse who loves hiking.", "Warm, curious and direct.", [
            Round(4, "Hi there!", {m: f"{m} reply to round 4" for m in METHODS})]),
    ]


def test_iter_sessions_raises_on_a_problem():
    with pytest.raises(ValueError, match="Line 2: 'rounds' is an empty list"):
        list(iter_sessions(io.BytesIO(jsonl(session("s1"), session("s2", rounds=[])))))
    with pytest.raises(ValueError, match="no sessions"):
        list(iter_sessions(io.BytesIO(b"\n\n")))
    with pytest.raises(ValueError, match="not valid JSON"):
        list(iter_sessions(io.BytesIO(b"{\"a\"\n")))


def test_parse_session_normalises_one_line_or_raises():
    loaded = parse_session(session("a1", rounds=[aloe(assistant={"preferred": "P", "rejected": "R"})]))
    assert loaded.rounds == [Round(1, "Hello!", {"preferred": "P", "rejected": "R"})]
    with pytest.raises(ValueError, match="Line 7: 'rounds\\[0\\].round' is 0"):
        parse_session(session("s1", rounds=[rnd(0)]), line=7)


def test_validate_reads_any_binary_file_object(tmp_path):
    data = persona_steer_original()
    path = tmp_path / "upload.jsonl"
    path.write_bytes(data)
    with path.open("rb") as buffered:
        from_file = validate(buffered)
    with path.open("rb", buffering=0) as raw:
        from_raw = validate(raw)
    from_memory = validate(io.BytesIO(data))
    assert from_file.ok and from_raw.ok and from_memory.ok
    assert from_file.summary == from_raw.summary == from_memory.summary
    assert from_file.summary["sessions"] == 3


def test_problem_and_report_serialise():
    report = check(jsonl(session("")))
    assert report.problems[0].to_dict() == {
        "line": 1, "path": "session_id",
        "message": "Line 1: 'session_id' is empty; it must be a non-empty string."}
    assert report.to_dict()["ok"] is False


def test_messages_work_inside_a_flask_babel_request():
    flask = pytest.importorskip("flask")
    from flask_babel import Babel

    app = flask.Flask(__name__)
    Babel(app)
    with app.test_request_context(headers={"Accept-Language": "en"}):
        problem = the_problem(check(jsonl(session("s1", rounds=[]))))
    assert problem.message == "Line 1: 'rounds' is an empty list; a session needs at least one round."


def test_a_line_cut_off_says_so_rather_than_blaming_its_characters():
    from tests.conftest import jsonl, session_line

    whole = jsonl(session_line("a"), session_line("b"))
    first = len(jsonl(session_line("a")))
    for cut in (whole[:-40],  # the last line stops inside a string
                whole[:first + 30] + b"\n" + jsonl(session_line("c")),  # a line stops, the next one is whole
                whole[:-3]):  # the last line stops after its last string
        problems = validate(io.BytesIO(cut)).problems
        assert len(problems) == 1 and problems[0].line == 2, problems
        assert "it looks cut off" in problems[0].message and "control character" not in problems[0].message
    tab = whole.replace(b'"a"', b'"a\tb"', 1)  # a real control character is still named as one
    assert "raw control character" in validate(io.BytesIO(tab)).problems[0].message
