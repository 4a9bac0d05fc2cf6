"""What a judgment asks and what it gives: Prompt (chat messages, the answer's parser, a version) and Verdict, and
how a chat completion's JSON becomes a Verdict."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

import orjson

from translations import _

if TYPE_CHECKING:
    from judge.config import JudgeConfig

# The Verdict fields a prompt's parser may set.
PROMPT_FIELDS = frozenset({"total", "dims", "verdict"})
# An answer's parser: answer -> (Verdict fields, None), or (None, why the answer does not parse).
Parser = Callable[[str], tuple[dict | None, str | None]]
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def canonical_json(value: Any) -> str:
    """A value as canonical JSON: keys sorted, no spaces, text as it is (not escaped to ASCII)."""
    return _CANONICAL.encode(value)


def messages_json(messages: list[dict]) -> bytes:
    """Chat messages as `canonical_json` in UTF-8. orjson writes the same bytes for texts (every character, control
    characters escaped alike: tests/judge/test_messages_json.py) about five times as fast as json on a judge prompt's
    few kB, which each judgment encodes once for its cache key and request body; messages holding anything else (a
    number, whose exponent orjson writes differently) are encoded by json."""
    if all(type(value) is str for message in messages for value in message.values()):
        try:
            return orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # a lone surrogate, which UTF-8 cannot hold: fails below as it always did
            pass
    return canonical_json(messages).encode("utf-8")


@lru_cache(maxsize=256, typed=True)  # typed: 1, 1.0 and True are equal keys, and three different texts
def scalar_json(value: str | float | None) -> str:
    """`canonical_json` of a text or number, remembered (a judge's settings are encoded for every request)."""
    return _CANONICAL.encode(value)


@dataclass(frozen=True)
class Prompt:
    """One judgment to ask: the chat messages, how to read the answer, and the prompt version (in the cache key).

    `parse(answer)` returns (fields, None) when the answer parses, where `fields` sets some of the
    Verdict fields in PROMPT_FIELDS, else (None, why it does not parse). Each benchmark kind builds its
    own (kinds/dialogue/prompts.py, kinds/conversation/prompts.py); the engine only sends the
    messages and reads the answer with `parse`. Change `version` when the same messages should no longer
    be answered from the cache.
    """

    messages: list[dict]
    parse: Parser
    version: str
    # a JSON answer's structured-output request ({"type": "json_schema", ...}), sent when the endpoint takes it
    response_format: Mapping | None = None

    @cached_property
    def messages_json(self) -> bytes:
        """The messages as canonical JSON in UTF-8, encoded once for both the cache key and the request body."""
        return messages_json(self.messages)


def request_body(config: JudgeConfig, prompt: Prompt) -> bytes:
    """The JSON body (UTF-8) of a prompt's chat completion request under a judge's settings: model, messages,
    temperature, max_tokens and, when the endpoint takes one, the structured-output format."""
    tail = f',"temperature":{scalar_json(config.temperature)},"max_tokens":{scalar_json(config.max_tokens)}'
    if prompt.response_format and config.structured_output:  # in its own order: a model writes the fields in it
        tail += ',"response_format":' + json.dumps(prompt.response_format, ensure_ascii=False, separators=(",", ":"))
    return b"".join((f'{{"model":{scalar_json(config.model)},"messages":'.encode("utf-8"), prompt.messages_json,
                     f"{tail}}}".encode("utf-8")))


@dataclass
class Verdict:
    """The outcome of one judgment."""

    status: str  # "ok" | "unparsed" | "failed"
    total: float | None = None
    dims: dict[str, int] | None = None
    verdict: int | None = None
    answer: str = ""
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    attempts: int = 1  # HTTP calls made for this judgment (0 when it came from the cache)
    latency_ms: int | None = None  # how long the judge took to answer (the last call); None without a call
    retryable: bool = False  # a failure worth asking again later (an outage: timeouts, 429, 5xx), not a refusal


def verdict_from_answer(parse: Parser, answer: str, prompt_tokens: int, completion_tokens: int) -> Verdict:
    """A parsed ("ok") or "unparsed" verdict for an answer text, read by its prompt's parser."""
    tokens: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    if not answer or not answer.strip():
        return Verdict("unparsed", answer=answer or "", error=_("the judge returned an empty answer"), **tokens)
    fields, problem = parse(answer)
    if fields is None:
        return Verdict("unparsed", answer=answer, error=problem, **tokens)
    unknown = set(fields) - PROMPT_FIELDS
    if unknown:
        raise ValueError(f"a prompt's parser may only set {', '.join(sorted(PROMPT_FIELDS))}, "
                         f"not {', '.join(sorted(unknown))}")
    return Verdict("ok", answer=answer, **fields, **tokens)




def answer_text(response: Any) -> str:
    """The message text of a chat completion's JSON ("" when there is none)."""
    choices = response.get("choices") if isinstance(response, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else {}
    message = first.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, str) else ""


def _tokens(usage: object, name: str) -> int:
    """A token count of a chat completion's `usage` (0 when missing or not a number)."""
    value = usage.get(name) if isinstance(usage, Mapping) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def verdict_from_response(parse: Parser, response: Mapping, attempts: int) -> Verdict:
    """The verdict for a chat completion's JSON, with its token usage and the attempts it took."""
    usage = response.get("usage")
    verdict = verdict_from_answer(parse, answer_text(response), _tokens(usage, "prompt_tokens"),
                                   _tokens(usage, "completion_tokens"))
    verdict.attempts = attempts
    return verdict


def duplicate_verdict(verdict: Verdict) -> Verdict:
    """The verdict for an identical request answered by the same call: no tokens or attempts of its own."""
    return replace(verdict, dims=dict(verdict.dims) if verdict.dims else verdict.dims, prompt_tokens=0,
                   completion_tokens=0, attempts=0, latency_ms=None, cached=verdict.status == "ok")
