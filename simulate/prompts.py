"""The simulated user's prompt (versioned, in English and Chinese) and the checks of what it writes.

The simulator is a chat model asked to be the user: its system message holds the persona and the rules; the
conversation so far is given with the roles turned round (the user's earlier messages as its own "assistant"
turns, the method's replies as "user" turns), so that its next answer is the user's next message.
"""
from __future__ import annotations

import re

from simulate.personas import Persona

PROMPT_VERSION = "psb-simulator-2026.11-2"  # part of the cache key: change it when the wording changes
LANGUAGES = ("en", "zh")
MAX_USER_CHARS = 1200  # a message longer than this is not one a person types in a chat

SYSTEM = {
    "en": (
        "You are role-playing a person who is chatting with an AI assistant. Stay in this persona for the whole "
        "conversation.\n\n"
        "Profile: {profile}\nPersonality: {personality}\n{scenario}"
        "\nRules:\n"
        "- Write only this person's next message to the assistant, as they would type it: short (one to three "
        "sentences), natural, in English.\n"
        "- Reveal the profile gradually and naturally, a little at a time, as the conversation gives occasion; "
        "never list it all at once.\n"
        "- React to the assistant's last reply as this person would: follow up, push back, or move on to what they "
        "need next.\n"
        "- Never speak as the assistant: do not offer help, answers or advice, and never say that you are an AI "
        "or simulated.\n"
        "- No role label, name or quotation marks around the message."
    ),
    "zh": (
        "你正在扮演一个正在和 AI 助手聊天的人。在整段对话中始终保持这个人设。\n\n"
        "人物资料：{profile}\n性格：{personality}\n{scenario}"
        "\n规则：\n"
        "- 只写这个人发给助手的下一条消息，就像他本人会打出来的那样：简短（一到三句）、自然，用中文。\n"
        "- 随着对话的进行，逐步、自然地透露人物资料，每次一点；不要一次全部列出。\n"
        "- 像这个人那样回应助手的上一条回复：追问、反驳，或者转到他接下来需要的事。\n"
        "- 绝不以助手的身份说话：不要提供帮助、答案或建议，也不要说自己是 AI 或模拟的。\n"
        "- 不要加角色标签、名字或引号。"
    ),
}
SCENARIO = {"en": "Scenario: {scenario}\n", "zh": "场景：{scenario}\n"}
START = {"en": "Write this person's first message to the assistant.", "zh": "写出这个人发给助手的第一条消息。"}
RETRY = {"en": "That message cannot be used ({problem}). Write the person's next message again, following the rules.",
         "zh": "这条消息不能用（{problem}）。请按规则重新写出这个人的下一条消息。"}
# Why a simulator's answer was refused (check_user_message's codes), as the retry note tells the simulator.
PROBLEMS = {"en": {"empty": "it is empty", "too_long": f"it is longer than {MAX_USER_CHARS} characters",
                   "as_assistant": "it speaks as the assistant"},
            "zh": {"empty": "内容为空", "too_long": f"超过 {MAX_USER_CHARS} 个字符",
                   "as_assistant": "它以助手的身份说话"}}

# What marks a message written as the assistant rather than as the user: a role label, a model speaking of itself,
# an offer of help. Each is narrow enough to let a user say "I work on AI safety", "As an AI researcher, I ..." or
# "有什么可以帮我省钱的办法吗".
AS_ASSISTANT_PATTERNS = (
    r"^\s*(assistant|ai|system|助手|助理|系统)\s*[:：]",  # a role label
    r"\bas an ai( language model| assistant| model)?\s*,",  # "As an AI, ..."
    r"\bi(?:'m| am) (an ai( language model| assistant| model)|an ai\b(?!\s+[a-z])|a (large )?language model)",
    r"\bhow (can|may) i (help|assist) you\b|\banything else i can (help you with|do for you)\b",
    r"作为(一个)?\s*(ai|人工智能)\s*(助手|语言模型|模型|[，,])",
    r"我是(你的)?(一个)?\s*(ai|人工智能)\s*(助手|语言模型|模型)|我是(一个)?\s*(ai|人工智能)(?=[，。！,.!\s]|$)",
    r"我是一个(大)?语言模型",
    r"有什么(我)?(可以|能|需要)(我)?(帮|为)(你|您)|(我)?(能|可以)为(你|您)做(些)?什么",
)
AS_ASSISTANT = re.compile("|".join(f"(?:{pattern})" for pattern in AS_ASSISTANT_PATTERNS), re.IGNORECASE)


def system_message(persona: Persona, language: str) -> str:
    """The simulator's system message for a persona, in `language` ("en" or "zh")."""
    scenario = SCENARIO[language].format(scenario=persona.scenario) if persona.scenario else ""
    return SYSTEM[language].format(profile=persona.user_profile, personality=persona.user_personality or "-",
                                   scenario=scenario)


def simulator_messages(persona: Persona, exchanges: list[tuple[str, str]], language: str,
                       problem: str | None = None) -> list[dict]:
    """What the simulator is sent to write the user's next message: the persona, then the exchanges so far
    ((user message, reply) per round, roles turned round), and, when its last answer was refused, why (a
    check_user_message code)."""
    messages = [{"role": "system", "content": system_message(persona, language)},
                {"role": "user", "content": START[language]}]
    for user_message, reply in exchanges:
        messages += [{"role": "assistant", "content": user_message}, {"role": "user", "content": reply}]
    if problem:
        messages.append({"role": "user", "content": RETRY[language].format(problem=PROBLEMS[language][problem])})
    return messages


def check_user_message(text: str) -> str | None:
    """Why a simulator's answer cannot be the user's message, as a code of PROBLEMS ("empty", "too_long",
    "as_assistant"), or None when it can."""
    if not text.strip():
        return "empty"
    if len(text) > MAX_USER_CHARS:
        return "too_long"
    if AS_ASSISTANT.search(text):
        return "as_assistant"
    return None


def method_messages(system_prompt: str | None, user_messages: list[str], own_replies: list[str]) -> list[dict]:
    """What a method is sent at round k = len(user_messages): its system prompt, the user's messages 1..k and its
    own replies 1..k-1, in turn."""
    if len(own_replies) != len(user_messages) - 1:
        raise ValueError("a method at round k has its own replies to rounds 1..k-1")
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for k, user_message in enumerate(user_messages):
        messages.append({"role": "user", "content": user_message})
        if k < len(own_replies):
            messages.append({"role": "assistant", "content": own_replies[k]})
    return messages
