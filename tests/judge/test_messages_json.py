"""judge.prompt.messages_json: the canonical JSON of a prompt's messages, in UTF-8, is json's to the byte whether
orjson or json writes it (cache keys made before orjson stay the same)."""
from __future__ import annotations

import pytest

from judge.prompt import Prompt, canonical_json, messages_json

EVERY_CHARACTER = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


@pytest.mark.parametrize("messages", [
    [{"role": "system", "content": EVERY_CHARACTER}, {"role": "user", "content": "\u2028 </script> \\ \" \x00\x1f\x7f"}],
    [{"role": "user", "content": "x", "name": "n"}],
    [{"content": "keys out of order", "role": "user"}],
    [],
])
def test_texts_are_written_as_json_writes_them(messages):
    assert messages_json(messages) == canonical_json(messages).encode("utf-8")


@pytest.mark.parametrize("value", [1e-07, 1e22, 2**64, 0.5, None, True, [{"type": "text", "text": "a"}]])
def test_other_values_are_written_as_json_writes_them(value):
    # orjson writes 1e-7 for json's 1e-07 and refuses integers past 64 bits: such messages are json's to write
    messages = [{"role": "user", "content": value}]
    assert messages_json(messages) == canonical_json(messages).encode("utf-8")


def test_a_lone_surrogate_fails_as_it_did_with_json():
    with pytest.raises(UnicodeEncodeError):
        messages_json([{"role": "user", "content": "\ud800"}])


def test_a_prompt_encodes_its_messages_once():
    prompt = Prompt([{"role": "user", "content": "é"}], lambda a: (None, "-"), "v")
    assert prompt.messages_json is prompt.messages_json
    assert prompt.messages_json == '[{"content":"é","role":"user"}]'.encode("utf-8")
