"""Personas (simulate/personas.py) and the built-in set, checked by the personas kind's own validation."""
from __future__ import annotations

import io
import json

from benchmarks import registry
from benchmarks.personas.format import validate
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


def test_from_lines_skips_blank_lines_and_fills_missing_optional_fields():
    lines = ['{"persona_id": 7, "user_profile": "A farmer."}', "", "  ",
             json.dumps({"persona_id": "b", "user_profile": "A nurse.", "user_personality": "Terse.",
                         "scenario": "Night shifts.", "opening": "hi"})]
    assert list(personas.from_lines(lines)) == [Persona("7", "A farmer.", ""),
                                                Persona("b", "A nurse.", "Terse.", "Night shifts.", "hi")]


def test_a_persona_as_a_line_keeps_the_required_fields_and_the_optional_ones_it_has():
    assert Persona("a", "A farmer.", "").to_dict() == {"persona_id": "a", "user_profile": "A farmer.",
                                                       "user_personality": ""}
    assert Persona("b", "P", "Q", "S", "O").to_dict() == {"persona_id": "b", "user_profile": "P",
                                                          "user_personality": "Q", "scenario": "S", "opening": "O"}


def test_a_dialogue_files_sessions_give_their_personas():
    lines = [json.dumps({"session_id": "s1", "user_profile": "A teacher.", "user_personality": "Warm.",
                         "rounds": [{"round": 1, "user_message": "hi", "responses": {"A": "hello"}}]}),
             "", json.dumps({"session_id": 2, "user_profile": "A student.", "rounds": []})]
    assert list(personas.from_dialogue_lines(lines)) == [Persona("s1", "A teacher.", "Warm."),
                                                         Persona("2", "A student.", "")]
