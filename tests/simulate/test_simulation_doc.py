"""docs/simulation.md says what the code does: its prompt is the code's, its examples pass the code's checks."""
from __future__ import annotations

import io
import json
import re

from kinds.personas.format import validate
from simulate import personas, prompts
from simulate.personas import Persona
from tests.doc_commands import DOCS, section

PAGE = DOCS / "simulation.md"


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def test_the_prompt_shown_is_the_codes_in_both_languages():
    english, chinese = blocks(section(PAGE, "The prompt"), "text")
    assert english == prompts.SYSTEM["en"] + "\n"
    assert chinese == prompts.SYSTEM["zh"] + "\n"


def test_the_messages_shown_for_round_three_are_those_the_simulator_is_sent():
    shown = json.loads(blocks(section(PAGE, "What the simulator sees at round k"), "json")[0])
    sent = prompts.simulator_messages(Persona("p", "A nurse.", "Terse."), [("u1", "r1"), ("u2", "r2")], "en")
    assert shown[0]["role"] == "system" and sent[0]["content"].startswith(shown[0]["content"].removesuffix("..."))
    assert shown[1:] == sent[1:]
    text = section(PAGE, "What the simulator sees at round k")
    assert prompts.START["en"] in text and prompts.START["zh"] in text


def test_the_checks_shown_are_the_codes():
    text = section(PAGE, "Checks and retries")
    flat = " ".join(text.split())
    assert re.findall(r"^\| `(\w+)` \|", text, flags=re.M) == ["empty", "too_long", "as_assistant"]
    assert f"longer than {prompts.MAX_USER_CHARS} characters" in text
    assert prompts.RETRY["en"].format(problem=prompts.PROBLEMS["en"]["as_assistant"]) in flat
    assert prompts.RETRY["zh"].format(problem=prompts.PROBLEMS["zh"]["as_assistant"]) in flat
    refused = re.search(r"`as_assistant` \| (.*)", text).group(1)
    for example in re.findall(r'"([^"]+)"', refused):
        assert prompts.check_user_message(example.replace("...", "I cannot.")) == "as_assistant", example
    passing = re.search(r"a user may talk about AI \((.*?) all pass\)", flat).group(1)
    examples = re.findall(r'"([^"]+)"', passing)
    assert len(examples) == 5
    for example in examples:
        assert prompts.check_user_message(example.replace("...", "think so.")) is None, example


def test_the_example_personas_file_is_valid():
    example = blocks(section(PAGE, "The personas file"), "json")[0]
    report = validate(io.BytesIO(example.encode()))
    assert report.ok and report.warnings == []
    assert report.summary["personas"] == 2 and report.summary["languages"] == {"latin": 1, "zh": 1}


def test_the_builtin_table_lists_every_builtin_persona():
    listed = re.findall(r"^\| `((?:en|zh)-\d\d)` \|", section(PAGE, "The built-in set"), flags=re.M)
    assert listed == [p.persona_id for p in personas.builtin()]
