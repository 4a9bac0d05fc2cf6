"""The simulated user's prompt (simulate/prompts.py): its system message in both languages, the roles turned round,
the retry note, the checks of what the simulator writes, and what a method is sent at round k."""
from __future__ import annotations

import hashlib
import json

import pytest

from simulate import prompts
from simulate.personas import Persona

NURSE = Persona("p1", "34, ICU nurse in Chicago; vegetarian; a 3-year-old son.", "Terse and tired.",
                "She wants meal ideas for night shifts.", "meal prep ideas?")
TEACHER = Persona("p2", "70岁，退休语文老师，住在杭州。", "文雅、客气。")


@pytest.mark.parametrize("language", prompts.LANGUAGES)
def test_the_system_message_holds_the_profile_personality_and_scenario(language):
    text = prompts.system_message(NURSE, language)
    assert NURSE.user_profile in text
    assert NURSE.user_personality in text
    assert NURSE.scenario in text
    assert text.index(NURSE.user_profile) < text.index(NURSE.user_personality) < text.index(NURSE.scenario)


def test_the_system_message_in_english_and_chinese_says_its_labels_and_rules_in_that_language():
    english, chinese = prompts.system_message(NURSE, "en"), prompts.system_message(NURSE, "zh")
    assert f"Profile: {NURSE.user_profile}\nPersonality: {NURSE.user_personality}\nScenario: {NURSE.scenario}\n" \
        in english
    assert f"人物资料：{NURSE.user_profile}\n性格：{NURSE.user_personality}\n场景：{NURSE.scenario}\n" in chinese
    assert "Never speak as the assistant" in english and "Reveal the profile gradually" in english
    assert "React to the assistant's last reply" in english and "回应助手的上一条回复" in chinese
    assert "绝不以助手的身份说话" in chinese and "逐步、自然地透露人物资料" in chinese


def test_without_a_scenario_or_personality_the_message_has_no_scenario_line_and_a_dash():
    text = prompts.system_message(Persona("p3", "A retired farmer.", ""), "en")
    assert "Scenario:" not in text
    assert "Profile: A retired farmer.\nPersonality: -\n\nRules:" in text
    chinese = prompts.system_message(TEACHER, "zh")
    assert "场景：" not in chinese and "性格：文雅、客气。\n\n规则：" in chinese


def test_round_one_sends_the_persona_and_the_request_for_a_first_message():
    assert prompts.simulator_messages(NURSE, [], "en") == [
        {"role": "system", "content": prompts.system_message(NURSE, "en")},
        {"role": "user", "content": "Write this person's first message to the assistant."}]
    assert prompts.simulator_messages(TEACHER, [], "zh")[1] == {"role": "user", "content": "写出这个人发给助手的第一条消息。"}


def test_the_simulator_sees_the_history_with_the_roles_turned_round():
    history = [("u1", "r1"), ("u2", "r2")]  # two rounds: the user's messages and the method's replies
    assert prompts.simulator_messages(NURSE, history, "en") == [
        {"role": "system", "content": prompts.system_message(NURSE, "en")},
        {"role": "user", "content": "Write this person's first message to the assistant."},
        {"role": "assistant", "content": "u1"},
        {"role": "user", "content": "r1"},
        {"role": "assistant", "content": "u2"},
        {"role": "user", "content": "r2"},
    ]


@pytest.mark.parametrize(("language", "problem", "note"), [
    ("en", "as_assistant", "That message cannot be used (it speaks as the assistant). Write the person's next "
                           "message again, following the rules."),
    ("en", "empty", "That message cannot be used (it is empty). Write the person's next message again, following "
                    "the rules."),
    ("en", "too_long", "That message cannot be used (it is longer than 1200 characters). Write the person's next "
                       "message again, following the rules."),
    ("zh", "as_assistant", "这条消息不能用（它以助手的身份说话）。请按规则重新写出这个人的下一条消息。"),
    ("zh", "too_long", "这条消息不能用（超过 1200 个字符）。请按规则重新写出这个人的下一条消息。"),
])
def test_a_retry_adds_why_the_last_answer_was_refused_after_the_history(language, problem, note):
    history = [("u1", "r1")]
    plain = prompts.simulator_messages(NURSE, history, language)
    retry = prompts.simulator_messages(NURSE, history, language, problem)
    assert retry == [*plain, {"role": "user", "content": note}]


@pytest.mark.parametrize(("text", "code"), [
    ("", "empty"),
    ("   \n\t ", "empty"),
    ("x" * 1201, "too_long"),
    ("Assistant: Sure, here is a plan for your week.", "as_assistant"),
    ("assistant：好的", "as_assistant"),
    ("As an AI, I don't have personal preferences.", "as_assistant"),
    ("How can I help you today?", "as_assistant"),
    ("I'm an AI language model and cannot cook.", "as_assistant"),
    ("Is there anything else I can help you with?", "as_assistant"),
    ("我是一个AI助手", "as_assistant"),
    ("作为一个AI助手，我建议你多休息。", "as_assistant"),
    ("有什么可以帮你的吗", "as_assistant"),
    ("您好，请问有什么可以帮您？", "as_assistant"),
])
def test_refused_messages_get_their_code(text, code):
    assert prompts.check_user_message(text) == code


@pytest.mark.parametrize("text", [
    "x" * 1200,
    "meal prep ideas for night shifts. vegetarian. no time.",
    "I work on AI safety, so I'm a bit sceptical of chatbots.",
    "As an AI researcher, I wonder how you would answer that.",
    "I'm an AI researcher at a small lab.",
    "Can you help me? My son says you know about video calls.",
    "我在学AI",
    "我是AI专业的学生，想转行。",
    "作为AI从业者，我觉得这个说法不太对。",
    "有什么可以帮我省钱的办法吗？",
    "请问孩子高考前不愿意跟家长沟通，家长该怎么做？",
])
def test_ordinary_user_messages_pass(text):
    assert prompts.check_user_message(text) is None


def test_every_refusal_code_has_a_note_in_both_languages():
    codes = {"empty", "too_long", "as_assistant"}
    assert set(prompts.PROBLEMS["en"]) == set(prompts.PROBLEMS["zh"]) == codes


@pytest.mark.parametrize("system_prompt", [None, "", "You are a kind tutor."])
def test_a_method_sees_its_system_prompt_the_users_messages_and_its_own_replies(system_prompt):
    head = [{"role": "system", "content": system_prompt}] if system_prompt else []
    assert prompts.method_messages(system_prompt, ["u1"], []) == [*head, {"role": "user", "content": "u1"}]
    assert prompts.method_messages(system_prompt, ["u1", "u2"], ["a1"]) == [
        *head, {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"}]
    assert prompts.method_messages(system_prompt, ["u1", "u2", "u3"], ["a1", "a2"]) == [
        *head, {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"}, {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "u3"}]


@pytest.mark.parametrize(("users", "replies"), [(["u1"], ["a1"]), (["u1", "u2"], []), (["u1", "u2", "u3"], ["a1"])])
def test_a_method_at_round_k_needs_exactly_k_minus_one_replies(users, replies):
    with pytest.raises(ValueError, match="rounds 1..k-1"):
        prompts.method_messages(None, users, replies)


def test_the_wording_cannot_change_without_a_new_prompt_version():
    # The version is part of every simulator call's cache key: a changed wording under the same version would be
    # answered from the cache with answers to the old one. Changing the wording: bump PROMPT_VERSION, then this hash.
    wording = json.dumps([prompts.SYSTEM, prompts.SCENARIO, prompts.START, prompts.RETRY, prompts.PROBLEMS],
                         ensure_ascii=False, sort_keys=True)
    assert (prompts.PROMPT_VERSION, hashlib.sha256(wording.encode()).hexdigest()) == (
        "psb-simulator-2026.11-2", "253d440cc33d0a1a8f377b38bbecdbb16acb569784ad362ee89cb8d1c6c275b0")
