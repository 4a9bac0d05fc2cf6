"""What a simulation will cost before it starts: its calls, and its tokens and price estimated from the longest
answers its settings allow (4 characters a token), at the prices set for the models."""
from __future__ import annotations

from collections.abc import Mapping

from simulate import prompts
from simulate.plan import Plan

CHARS_PER_TOKEN = 4


def _tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)  # rounded up


def estimate(plan: Plan, prices: Mapping) -> dict:
    """{calls, prompt_tokens, completion_tokens, cost}: calls are the turns to ask (retries not counted); tokens as if
    every answer were as long as its max tokens allow (a user message at most MAX_USER_CHARS); cost in the prices'
    currency per million tokens, None when a price is not set."""
    user_bound = min(plan.simulator.max_tokens, _tokens("x" * prompts.MAX_USER_CHARS))
    calls = prompt = completion = 0
    for conversation in plan.conversations():
        system = _tokens(prompts.system_message(conversation.persona, plan.language)) + _tokens(
            prompts.START[plan.language])
        partner = plan.speaker(conversation.partner).max_tokens
        for k in range(1, plan.rounds + 1):
            if not (k == 1 and conversation.persona.opening):
                calls += 1
                prompt += system + (k - 1) * (user_bound + partner)
                completion += plan.simulator.max_tokens
            for name in conversation.methods:
                method = plan.speaker(name)
                calls += 1
                prompt += _tokens(method.system_prompt) + k * user_bound + (k - 1) * method.max_tokens
                completion += method.max_tokens
    cost = None
    if prices.get("prompt") is not None and prices.get("completion") is not None:
        cost = (prompt * prices["prompt"] + completion * prices["completion"]) / 1_000_000
    return {"calls": calls, "prompt_tokens": prompt, "completion_tokens": completion, "cost": cost}


