"""Personas (simulate/personas.py) and the built-in set, checked by the personas kind's own validation."""
from __future__ import annotations

import io
import json

import pytest

from kinds import registry
from kinds.personas.format import validate
from simulate import personas, prompts
from simulate.personas import Persona


def test_the_builtin_set_is_a_valid_personas_file_with_no_warnings():
    raw = personas.BUILTIN.read_bytes()
    assert registry.detect(raw[:4096], personas.BUILTIN.name, personas.BUILTIN) == "personas"
    report = validate(io.BytesIO(raw))
    assert report.ok, report.problems
    assert report.warnings == []
    assert report.summary["personas"] == 24
    assert report.summary["languages"] == {"latin": 12, "zh": 12}
    assert report.summary["fields"] == {"user_personality": 24, "scenario": 24, "opening": 8}


def test_the_builtin_set_has_24_unique_ids_12_english_and_12_chinese():
    ids = [p.persona_id for p in personas.builtin()]
    assert ids == [f"en-{n:02d}" for n in range(1, 13)] + [f"zh-{n:02d}" for n in range(1, 13)]
    assert len(set(ids)) == 24


def test_every_builtin_persona_has_a_profile_personality_and_scenario_in_its_language():
    for persona in personas.builtin():
        for text in (persona.user_profile, persona.user_personality, persona.scenario):
            assert text.strip() == text and len(text) >= 20, (persona.persona_id, text)
            chinese = any("\u4e00" <= char <= "\u9fff" for char in text)
            assert chinese == persona.persona_id.startswith("zh-"), (persona.persona_id, text)


def test_the_builtin_openings_are_messages_the_simulated_user_could_have_written():
    openings = {p.persona_id: p.opening for p in personas.builtin() if p.opening}
    assert sorted(openings) == ["en-01", "en-03", "en-07", "en-10", "zh-01", "zh-04", "zh-07", "zh-12"]
    assert {pid: prompts.check_user_message(text) for pid, text in openings.items()} == dict.fromkeys(openings)


@pytest.mark.parametrize("bom, newline", [(b"", b"\n"), (b"\xef\xbb\xbf", b"\r\n")])
def test_a_personas_file_reads_through_its_kind_blank_lines_skipped_missing_fields_empty(bom, newline):
    lines = [b'{"persona_id": "a", "user_profile": "A farmer."}', b"", b"  ",
             json.dumps({"persona_id": "b", "user_profile": "A nurse.", "user_personality": "Terse.",
                         "scenario": "Night shifts.", "opening": "hi"}).encode(), b""]
    read = personas.read(registry.get("personas"), io.BytesIO(bom + newline.join(lines)))
    assert read == [Persona("a", "A farmer.", ""), Persona("b", "A nurse.", "Terse.", "Night shifts.", "hi")]


def test_a_line_that_does_not_read_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="Line 2: 'persona_id' must be a string, found a number"):
        personas.read(registry.get("personas"), io.BytesIO(b'{"persona_id": "a", "user_profile": "P"}\n'
                                                             b'{"persona_id": 7, "user_profile": "Q"}\n'))
    with pytest.raises(ValueError, match="Line 1 is not valid JSON"):
        personas.read(registry.get("dialogue"), io.BytesIO(b"{not json\n"))


def test_a_persona_as_a_line_keeps_the_required_fields_and_the_optional_ones_it_has():
    assert Persona("a", "A farmer.", "").to_dict() == {"persona_id": "a", "user_profile": "A farmer.",
                                                       "user_personality": ""}
    assert Persona("b", "P", "Q", "S", "O").to_dict() == {"persona_id": "b", "user_profile": "P",
                                                          "user_personality": "Q", "scenario": "S", "opening": "O"}


def test_a_dialogue_files_sessions_give_their_personas():
    lines = [json.dumps({"session_id": "s1", "user_profile": "A teacher.", "user_personality": "Warm.",
                         "rounds": [{"round": 1, "user_message": "hi", "responses": {"A": "hello"}}]}),
             "", json.dumps({"session_id": "s2", "user_profile": "A student.",
                             "rounds": [{"round": 1, "user_message": "yo", "responses": {"A": "hey"}}]}), ""]
    read = personas.read(registry.get("dialogue"), io.BytesIO("\r\n".join(lines).encode()))
    assert read == [Persona("s1", "A teacher.", "Warm."), Persona("s2", "A student.", "")]
