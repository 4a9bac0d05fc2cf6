"""The built-in rubrics: `personasteer` asks exactly what the dashboard asked before rubrics (the prompts of
tests/kinds/dialogue/legacy_prompts.py, a copy of kinds/dialogue/prompts.py as it was) and parses answers
the same way; each built-in's content is pinned to its version, which is its judge cache's version."""
from __future__ import annotations

import random

import pytest

from kinds import rubrics
from tests.kinds.dialogue import legacy_prompts as legacy

# A built-in's SHA-256 changes with its text; its version must change with it (the cache keys its answers by it).
PINNED = {"personasteer": ("psb-judge-2026.11-1",
                           "1401b61926e160fe72ed3db466185c64f42ef587645f68e7c286be2c4d91814a")}


def texts(rng: random.Random) -> str:
    return rng.choice(["", "  ", "hello", "多行\n文本 <<<end reply #x>>>", "x" * rng.randint(0, 50), "{{ profile }}",
                       "{% raw %}", "\\boxed{99}"])


def test_personasteer_asks_what_the_dashboard_asked_before_rubrics():
    rubric, rng = rubrics.builtin("personasteer"), random.Random(7)
    checked = 0
    for _ in range(250):
        ctx = legacy.DialogueContext(texts(rng), texts(rng), [(texts(rng), texts(rng))
                                                               for _ in range(rng.randint(0, 4))],
                                     texts(rng), texts(rng))
        ours = rubrics.Context(ctx.profile, ctx.personality, ctx.history, ctx.user_message, ctx.reply)
        for question in ("fine", "binary"):
            for language in ("en", "zh"):
                assert rubrics.messages(rubric, question, ours, language) == \
                    legacy.build_messages(question, ctx, language)
                checked += 1
    assert checked == 1000


ANSWERS = ["Style: 15/20\nContent: 16/20\nNaturalness: 17/20\nPersonalization: 12/20\nConversation: 14/20\n"
           "Total: \\boxed{74}", "**Style:** 15\nContent: 16\nNaturalness: 17\nPersonalization: 12\nConversation: 14",
           "Style: 15/20\nContent: 16/20\nNaturalness: 17/20\nPersonalization: 12/20\nConversation: 14/20\n\\boxed{80}",
           "Style: 15/10\nContent: 16\nNaturalness: 17\nPersonalization: 12\nConversation: 14\n\\boxed{70}",
           "Style: 21\nContent: 16\nNaturalness: 17\nPersonalization: 12\nConversation: 14",
           "Style: 1.5\nContent: 16\nNaturalness: 17\nPersonalization: 12\nConversation: 14\n\\boxed{70}",
           "Content: 16\nNaturalness: 17\nPersonalization: 12\nConversation: 14\n\\boxed{70}", "\\boxed{101}",
           "\\boxed{7.5}", "nothing", "", "Style: 020/020\nContent: 1\nNaturalness: 1\nPersonalization: 1\n"
           "Conversation: 1", "\\boxed{1}", "\\boxed{ 0 }", "\\boxed{2}", "I say \\boxed{1} then \\boxed{0}"]


@pytest.mark.parametrize("answer", ANSWERS)
def test_personasteer_parses_answers_as_before(answer):
    rubric = rubrics.builtin("personasteer")
    fine, _why = rubrics.parser(rubric, "fine")(answer)
    verdict, _why = rubrics.parser(rubric, "binary")(answer)
    before_fine, why_fine = legacy._fine_fields(answer)
    before_verdict, why_verdict = legacy._binary_fields(answer)
    assert fine == before_fine and rubrics.parser(rubric, "fine")(answer)[1] == why_fine
    assert verdict == before_verdict and rubrics.parser(rubric, "binary")(answer)[1] == why_verdict


@pytest.mark.parametrize("rubric_id", sorted(PINNED))
def test_a_builtin_changes_its_version_with_its_text(rubric_id):
    rubric = rubrics.builtin(rubric_id)
    assert (rubric.version, rubric.sha256) == PINNED[rubric_id]
    assert rubric.cache_version == rubric.version and rubric.builtin
