"""Two rubrics of a lab's own for the tests of everything downstream of the judge: THREE (three dimensions scored
1-7, their mean as the headline, and a yes/no question of its own) and ONE (one dimension 0-10, no yes/no question).
Both answer in JSON, so the local judge server (tests/judge_server.py) answers them from a reply's [[dims=...]] and
[[keep=0|1]] markers."""
from __future__ import annotations

from kinds import rubrics
from kinds.dialogue import rubric_store
from tests.conftest import session_line

THREE = """\
id: lab-three
version: "1"
title:
  en: Lab three
  zh: 实验室三维
  ko: 연구실 3차원
context: [profile, personality, history, message, reply]
dimensions:
  - key: consistency
    label: {en: Consistency, zh: 一致性, ko: 일관성}
    scale: {min: 1, max: 7}
  - key: warmth
    label: {en: Warmth, zh: 温暖, ko: 따뜻함}
    scale: {min: 1, max: 7}
  - key: helpfulness
    label: {en: Helpfulness, zh: 有用性, ko: 유용성}
    scale: {min: 1, max: 7}
headline:
  combine: mean
binary:
  label: {en: "Would recommend?", zh: "会推荐吗？", ko: "추천하겠는가?"}
  prompts:
    en:
      user: |-
        Profile: {{ profile }}
        {{ reply|quote("reply") }}
        Would this user recommend the assistant? Answer in JSON.
  answer: {format: json}
prompts:
  en:
    system: Score the reply 1-7 on each dimension.
    user: |-
      Profile: {{ profile }}
      {% for d in dimensions %}{{ d.key }} ({{ d.min }}-{{ d.max }}){% if not loop.last %}, {% endif %}{% endfor %}
      {{ message|quote("message") }}
      {{ reply|quote("reply") }}
answer:
  format: json
"""

ONE = """\
id: lab-one
version: "1"
title: Lab one
context: [message, reply]
dimensions:
  - key: fit
    label: {en: Fit, zh: 契合, ko: 적합}
    scale: {min: 0, max: 10}
headline:
  combine: sum
prompts:
  en:
    user: |-
      {{ message|quote("message") }}
      {{ reply|quote("reply") }}
      Score the fit 0-10 in JSON.
answer:
  format: json
"""


def add(app, text: str) -> rubrics.Rubric:
    """Keep a rubric in the app's store (as the rubric pages and API will), for evaluations to name it."""
    with app.app_context():
        from web import get_store

        return rubric_store.add(get_store(), rubrics.read(text))


def marked(session_id: str, replies: dict[str, list[str]], rounds: int) -> dict:
    """A session whose replies carry the judge's markers: replies[method][k] is round k+1's marker text."""
    session = session_line(session_id, rounds=rounds, methods=tuple(replies))
    for k, rnd in enumerate(session["rounds"]):
        rnd["responses"] = {m: f"{m} at {k + 1} {texts[k]}" for m, texts in replies.items()}
    return session
