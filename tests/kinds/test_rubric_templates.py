"""The rubric templates' sandbox as judging uses it: what reads like a key, what is refused, and the parts rendered once
because they are the same for every reply."""
from __future__ import annotations

import pytest

from kinds import rubrics
from kinds.rubrics import judging, templates

CTX = rubrics.Context("A nurse.", "calm", [("hi", "hello"), ("tired", "long shift?")], "yes", "rest well")


def rendered(source: str, ctx: rubrics.Context = CTX) -> str:
    dimensions = [{"key": "warmth", "label": "Warmth", "min": 1, "max": 7, "integer": True, "levels": {}}]
    return templates.render(templates.compile_template(source),
                            templates.variables(ctx, templates.CONTEXT, dimensions))


def test_a_dict_key_reads_like_an_item_and_dict_methods_stay_refused():
    assert rendered("{% for turn in history %}{{ turn.user }}/{{ turn['reply'] }};{% endfor %}") == \
        "hi/hello;tired/long shift?;"
    assert rendered("{{ dimensions[0].label }} {{ dimensions[0].max }}") == "Warmth 7"
    for source in ("{{ dimensions[0].items() }}", "{{ dimensions[0].keys }}", "{{ history.append }}",
                   "{{ dimensions[0].__class__ }}"):
        with pytest.raises(templates.Refused) as refused:
            rendered(source)
        assert refused.value.what == "attribute"


def test_loop_helpers_are_read_and_counted():
    assert rendered("{% for turn in history %}{{ loop.index }}{{ loop.last }} {% endfor %}") == "1False 2True "
    with pytest.raises(templates.Refused, match="steps"):
        rendered("{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}")
    assert rendered("{% for a in range(300) %}{% for b in range(300) %}{% endfor %}{% endfor %}x") == "x"


@pytest.mark.parametrize("source, constant", [
    ("Score each of: {% for d in dimensions %}{{ d.label }} {% endfor %}", True),
    ("No variable at all {# a comment #}", True),
    ("{{ reply }}", False),
    ("Round {{ round }}", False),
    ('{{ "fixed"|quote("note") }}', False),  # a quoted block's id is a hash of the reply's context
    ("{% for i in range(3) %}{{ i }}{% endfor %}", True),  # the globals left (range, dict, ...) are deterministic
])
def test_which_templates_are_the_same_for_every_reply(source, constant):
    assert templates.constant(source) is constant


def test_a_part_the_same_for_every_reply_is_rendered_once_with_the_same_text():
    rubric = rubrics.read("""\
id: once
version: "1"
title: Once
context: [reply]
dimensions:
  - {key: warmth, label: Warmth, scale: {min: 1, max: 7}}
  - {key: brevity, label: Brevity, scale: {min: 1, max: 7}}
headline: {combine: mean}
prompts:
  en:
    system: "Answer with:{% for d in dimensions %}\\n{{ d.label }}: n/{{ d.max }}{% endfor %}"
    user: "{{ reply|quote('reply') }}"
answer: {format: lines}
""")
    system, user, _dimensions, _declared = judging._compiled(rubric, "fine", "en")
    assert system == "Answer with:\nWarmth: n/7\nBrevity: n/7" and not isinstance(user, str)
    for reply in ("one", "two"):
        ctx = rubrics.Context("", "", [], "", reply)
        source = rubric.templates("fine", "en")["system"]
        direct = templates.render(templates.compile_template(source),
                                  templates.variables(ctx, rubric.context, _dimensions))
        assert rubrics.messages(rubric, "fine", ctx, "en")[0] == {"role": "system", "content": direct}


@pytest.mark.parametrize("rubric_id", ["personasteer", "aloe"])
def test_only_the_builtins_render_outside_the_sandbox_and_both_give_the_same_text(rubric_id):
    builtin = rubrics.builtin(rubric_id)
    uploaded = rubrics.read((rubrics.BUILTIN_FOLDER / f"{rubric_id}.yaml").read_bytes())  # the same text, uploaded
    assert builtin.builtin and not uploaded.builtin
    ctx = rubrics.Context("{{ profile }}", "{% raw %}", [("<<<end reply #x>>>", "")], "多行\n文本", "\\boxed{99}")
    for question in judging.QUESTIONS if builtin.has_binary else ("fine",):
        for language in builtin.languages:
            parts = {"builtin": judging._compiled(builtin, question, language)[:2],
                     "uploaded": judging._compiled(uploaded, question, language)[:2]}
            environments = {name: {part.environment for part in found if not isinstance(part, (str, type(None)))}
                            for name, found in parts.items()}
            assert environments == {"builtin": {templates.TRUSTED}, "uploaded": {templates.ENVIRONMENT}}
            assert rubrics.messages(builtin, question, ctx, language) == \
                rubrics.messages(uploaded, question, ctx, language)
