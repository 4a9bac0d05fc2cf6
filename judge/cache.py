"""How the judge uses its cache: the key an answer is kept under, a cached verdict, keeping answers. Judge and batch
mode share it, so that both answer the same request from the same entry."""
from __future__ import annotations

import hashlib
from typing import Any, Literal

from judge.config import DEFAULT_BASE_URL, JudgeConfig
from judge.prompt import Prompt, Verdict, scalar_json, verdict_from_answer


def endpoint_url(config: JudgeConfig) -> str:
    """The endpoint's base URL (OpenAI's when none is set), without a trailing slash: part of every cache key."""
    return (config.base_url or DEFAULT_BASE_URL).rstrip("/")


class CachedAnswers:
    """The answers of one endpoint and model in `cache`: any object with get(key) -> dict | None and put(key, value)
    (and, to read and write many keys in one query, get_many(keys) and put_many({key: value}))."""

    def __init__(self, config: JudgeConfig, cache: Any = None) -> None:
        self.config = config
        self.cache = cache
        self.endpoint = endpoint_url(config)

    def cache_key(self, prompt: Prompt) -> str:
        """sha256 over the canonical JSON of [endpoint, model, messages, temperature, max_tokens, prompt version]
        (the list's encoding made from its items', so that the messages' is the one the request body uses)."""
        c = self.config
        head = ",".join(scalar_json(item) for item in (self.endpoint, c.model))
        tail = ",".join(scalar_json(item) for item in (c.temperature, c.max_tokens, prompt.version))
        return hashlib.sha256(b"".join((f"[{head},".encode("utf-8"), prompt.messages_json,
                                        f",{tail}]".encode("utf-8")))).hexdigest()

    def lookup(self, prompt: Prompt, key: str, hit: dict | None | Literal[False] = False) -> Verdict | None:
        """A cached verdict, or None; token counts and attempts are 0 because no call was made. `hit` is the cache
        entry when it was already read (None: read and not found), else it is read now."""
        if self.cache is None or not self.config.use_cache:
            return None
        if hit is False:
            hit = self.cache.get(key)
        if not hit:
            return None
        verdict = verdict_from_answer(prompt.parse, hit.get("answer") or "", 0, 0)
        if verdict.status != "ok":
            return None  # stored under an older parser: judge again
        verdict.cached = True
        verdict.attempts = 0
        return verdict

    def store(self, answers: list[tuple[str, Verdict]]) -> None:
        """Cache the parsed answers (also when reading is off), in one write with a cache that has put_many;
        unparsed answers and failures never."""
        entries = {key: {"answer": v.answer, "prompt_tokens": v.prompt_tokens, "completion_tokens": v.completion_tokens}
                   for key, v in answers if v.status == "ok" and not v.cached}
        if self.cache is None or not entries:
            return
        if hasattr(self.cache, "put_many"):
            self.cache.put_many(entries)
            return
        for key, entry in entries.items():
            self.cache.put(key, entry)
