"""Malformed rubric files, each refused by kinds.rubrics.read with a specific message naming the line and the
field: the text (YAML, JSON, UTF-8, size), the schema, the rules beside it and the templates (which read no file nor
attribute, and cannot make the server build huge values or loop without end)."""
from __future__ import annotations

import json
import time

import pytest
import yaml

from kinds import rubrics
from kinds.rubrics import RubricError, reading

GOOD = """\
id: warmth
version: "1"
title: Warmth
context: [profile, message, reply]
dimensions:
  - key: warmth
    label: Warmth
    scale: {min: 1, max: 7}
  - key: accuracy
    label: Accuracy
    scale: {min: 1, max: 7}
  - key: brevity
    label: Brevity
    scale: {min: 1, max: 7}
headline:
  combine: mean
prompts:
  en:
    user: |-
      Profile: {{ profile }}
      Message: {{ message }}
      Reply: {{ reply }}
      Answer with a JSON object.
answer:
  format: json
"""
GOOD_JSON = json.dumps(yaml.safe_load(GOOD), indent=2)  # "format": "json" on line 45, the closing } on 46
BRIEF = "total, verdict, reasoning, answer, session, session_idx, session_id, round, method, mode, status, scores, avg, " \
        "slope, intercept, r2, n_ir, n_r2, binary_rate, binary_avg, binary_slope, binary_intercept, binary_r2, " \
        "binary_n_ir, binary_n_r2, sessions, judged, judged_fine, judged_binary, unparsed, failed, pending, " \
        "dimensions, ci95, al_curve, binary_curve, n_al_curve, line"
ATTRIBUTE = ("The template reads the attribute %s of a value: a template reads its variables and their items and keys "
             "(turn.user, dimensions[0].label), never an attribute or a method.")
TOO_LONG = "The template makes a text or a list longer than %s: a template may not build huge values."
STEPS = ("The template takes more than 100000 loop turns and calls to render: loop over the rubric's values, not over "
         "huge ranges or macros that call themselves.")


def edit(old: str, new: str, text: str = GOOD) -> str:
    """The good rubric with one change (the text to change must be there)."""
    assert old in text, old
    return text.replace(old, new, 1)


def template(expression: str) -> str:
    """The good rubric whose user template's third line (line 22 of the file) is `expression`."""
    return edit("Reply: {{ reply }}", expression)


CASES = {
    "bad YAML": (edit("  - key: accuracy\n", "  - key: accuracy\n   note: [\n"), [(
        10, "", "The rubric file is not valid YAML or JSON at column 4: while parsing a block collection expected "
                "<block end>, but found '<block mapping start>'. Indent with spaces, never tabs, and put a text that "
                "holds ': ' or starts with { or [ in quotes.")]),
    "a tab in YAML's indentation": (edit("version:", "\tversion:"), [(
        2, "", "The rubric file is not valid YAML or JSON at column 1: while scanning for the next token found "
               "character '\\t' that cannot start any token. Indent with spaces, never tabs, and put a text that "
               "holds ': ' or starts with { or [ in quotes.")]),
    "JSON with a trailing comma": (edit('"format": "json"\n', '"format": "json",\n', GOOD_JSON), [(
        45, "", "The rubric file is not valid JSON: a comma before the closing }; JSON allows none after the last "
                "item: remove it.")]),
    "a key twice in YAML": (edit("title: Warmth\n", "title: Warmth\ntitle: Kindness\n"), [(
        4, "", 'The key "title" is given twice in one mapping; keep one (a YAML reader would silently keep the last).')]),
    "a key twice in JSON": (edit('"title": "Warmth",', '"title": "Warmth",\n  "title": "Kindness",', GOOD_JSON), [(
        5, "", 'Line 5: the key "title" appears twice in \'$\'; keep one (a JSON reader would silently keep only the '
                'last).')]),
    "an unknown top-level key": (edit("title: Warmth\n", "title: Warmth\nauthor: me\n"), [(
        4, "author", "Unknown field author; the fields here are: answer, binary, context, description, dimensions, "
                     "headline, id, prompts, title, version.")]),
    "an unknown dimension key": (edit("    label: Accuracy\n", "    label: Accuracy\n    weight: 2\n"), [(
        11, "dimensions[1].weight", "Unknown field weight; the fields here are: answer_label, key, label, levels, "
                                    "scale.")]),
    "no dimensions": (GOOD.split("dimensions:")[0] + "headline:" + GOOD.split("headline:")[1], [(
        1, "", "The field dimensions is missing.")]),
    "an empty list of dimensions": (GOOD.split("dimensions:")[0] + "dimensions: []\nheadline:" + GOOD.split(
        "headline:")[1], [(5, "dimensions", "The list is empty; it must hold at least 1.")]),
    "an empty scale": (edit("    scale: {min: 1, max: 7}\n  - key: brevity", "    scale: {}\n  - key: brevity"), [
        (11, "dimensions[1].scale", "The field min is missing."),
        (11, "dimensions[1].scale", "The field max is missing.")]),
    "min not below max": (edit("    scale: {min: 1, max: 7}\n  - key: brevity",
                               "    scale: {min: 7, max: 7}\n  - key: brevity"), [(
        11, "dimensions[1].scale", "The scale's min (7) must be below its max (7).")]),
    "fractional ends on a whole-number scale": (edit("    scale: {min: 1, max: 7}\n  - key: brevity",
                                                     "    scale: {min: 0.5, max: 7}\n  - key: brevity"), [(
        11, "dimensions[1].scale", "A whole-number scale needs whole-number ends; set integer: false for a scale of "
                                   "fractions.")]),
    "a reserved dimension key": (edit("key: brevity", "key: total"), [(
        12, "dimensions[2].key", f"total is a name the judgments use themselves; choose another (not {BRIEF}).")]),
    "two dimensions with one key": (edit("key: brevity", "key: warmth"), [(
        12, "dimensions[2].key", "Two dimensions have the key warmth; each needs its own.")]),
    "weights that miss a key": (edit("  combine: mean\n", "  combine: weighted\n  weights: {warmth: 1, accuracy: 2}\n"), [(
        17, "headline.weights", "The weights must name each dimension key once: accuracy, brevity, warmth.")]),
    "weights without weighted": (edit("  combine: mean\n",
                                      "  combine: mean\n  weights: {warmth: 1, accuracy: 2, brevity: 1}\n"), [(
        17, "headline.weights", "Weights go with combine: weighted.")]),
    "a number answer for three dimensions": (edit("format: json", "format: number"), [(
        25, "answer.format", "The answer format 'number' is one number: it fits a rubric of one dimension, not 3.")]),
    "total: boxed with json": (edit("format: json", "format: json\n  total: boxed"), [(
        26, "answer.total", "total: boxed goes with the answer format 'lines'.")]),
    "a level outside the scale": (edit("    scale: {min: 1, max: 7}\n  - key: accuracy",
                                       "    scale: {min: 1, max: 7}\n    levels: {\"9\": great}\n  - key: accuracy"), [(
        9, "dimensions[0].levels.9", "The level 9 is not a score (or a range such as 0-4) on the scale 1-7.")]),
    "a template syntax error": (template("Reply: {{ reply }"), [(
        22, "prompts.en.user", "The template does not compile: unexpected '}' (line 3 of the template).")]),
    "a template syntax error in a JSON file": (json.dumps(yaml.safe_load(template("Reply: {{ reply }"))), [(
        1, "prompts.en.user", "The template does not compile: unexpected '}' (line 3 of the template).")]),
    "a variable the context does not declare": (template("Reply: {{ reply }} {{ personality }}"), [(
        22, "prompts.en.user", "The template uses personality, which the rubric's context does not list: add "
                               "personality to context, or take it out of the template.")]),
    "a variable templates do not have": (template("Reply: {{ replly }}"), [(
        22, "prompts.en.user", "The template uses replly, which is no variable of a template; it may use profile, "
                               "message, reply, round, dimensions.")]),
    "a key a dimension does not have": (template("{{ dimensions[0].weight }}"), [(
        22, "prompts.en.user", "The template reads weight of a value (a dict) that has no such key: a dimension has "
                               "key, label, min, max, integer and levels, a round of history has user and reply.")]),
    "a template including a file": (template('{% include "/etc/passwd" %}'), [(
        22, "prompts.en.user", "The template reads another file ({% include %}): a template may not include, import "
                               "or extend anything.")]),
    "a template importing a file": (template('{% from "/etc/passwd" import x %}'), [(
        22, "prompts.en.user", "The template reads another file ({% from ... import %}): a template may not include, "
                               "import or extend anything.")]),
    "a template reaching __class__": (template("{{ profile.__class__ }}"), [
        (22, "prompts.en.user", ATTRIBUTE % "__class__")]),
    "a template reaching __class__ as an item": (template("{{ profile['__class__'] }}"), [
        (22, "prompts.en.user", ATTRIBUTE % "__class__")]),
    "a template calling a method": (template("{{ profile.upper() }}"), [
        (22, "prompts.en.user", ATTRIBUTE % "upper")]),
    "a huge repetition": (template('{{ "x" * 10**8 }}'), [(22, "prompts.en.user", TOO_LONG % 100000)]),
    "a text doubled forty times": (template(
        '{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}'), [
        (22, "prompts.en.user", TOO_LONG % 10000000)]),
    "a replace that multiplies a text": (template('{{ ("x" * 100000)|replace("", "y" * 100000) }}'), [
        (22, "prompts.en.user", TOO_LONG % 10000000)]),
    "a huge power": (template("{{ 10 ** 100 }}"), [(
        22, "prompts.en.user", "The template raises a number to a power above 64.")]),
    "a huge width": (template('{{ "%0999999999d" % 1 }}'), [(
        22, "prompts.en.user", "The template formats a value with a width or precision above 1000, or given by *.")]),
    "nested loops of a billion turns": (template(
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"), [
        (22, "prompts.en.user", STEPS)]),
    "a macro calling itself twice, forty deep": (template(
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"), [
        (22, "prompts.en.user", STEPS)]),
    "a macro calling itself without end": (template("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), [
        (22, "prompts.en.user", "The template calls a macro that calls itself without end.")]),
    "a filter templates do not have": (template("{{ reply|center(10**9) }}"), [(
        22, "prompts.en.user", "The template uses the filter center, which templates do not have; the filters are: "
                               "abs, attr, capitalize, count, d, default, dictsort, e, escape, filesizeformat, first, "
                               "float, forceescape, format, groupby, int, items, join, last, length, list, lower, map, "
                               "max, min, pprint, quote, reject, rejectattr, replace, reverse, round, safe, select, "
                               "selectattr, sort, string, striptags, sum, title, tojson, trim, truncate, unique, "
                               "upper, urlencode, urlize, wordcount, xmlattr.")]),
    "a yes/no question in other languages than the dimensions'": (edit("answer:\n  format: json", (
        "binary:\n  label: Keep?\n  prompts:\n    zh:\n      user: \"{{ reply }}\"\n  answer: {format: boxed}\n"
        "answer:\n  format: json")), [(
            26, "binary.prompts", "The yes/no question needs prompts in the same languages as the dimensions' (en).")]),
    "a file that is not UTF-8": (GOOD.encode("utf-8").replace(b"title: Warmth", b"title: W\xe4rmth"), [(
        3, "", "The rubric file is not UTF-8 text: save it as UTF-8.")]),
    "an over-size file": (GOOD + "#" + "x" * (300 * 1024 - len(GOOD) - 2) + "\n", [(  # 300 KB exactly
        None, "", "The rubric file is 300.0 KB; a rubric may be at most 256.0 KB.")]),
}


def test_the_good_rubric_reads():
    assert rubrics.read(GOOD).keys == ("warmth", "accuracy", "brevity")
    assert rubrics.read(GOOD_JSON).sha256 == rubrics.read(GOOD).sha256


@pytest.mark.parametrize("name", CASES)
def test_a_malformed_rubric_is_refused_naming_line_field_and_what_to_change(name):
    text, expected = CASES[name]
    started = time.process_time()
    with pytest.raises(RubricError) as refused:
        reading.read(text)
    assert [(p.line, p.path, p.message) for p in refused.value.problems] == expected
    assert time.process_time() - started < 5  # refused, not worked through


def test_there_are_at_least_twenty_kinds_of_malformed_file():
    assert len(CASES) >= 20


def test_rubrics_read_by_libyaml_are_those_pythons_parser_reads():
    # libyaml reads every file that is fine (the built-ins at each start); what it reads must be the same document
    texts = [GOOD, *(path.read_text("utf-8") for path in sorted(rubrics.BUILTIN_FOLDER.glob("*.yaml")))]
    texts += [text for text, _problems in CASES.values() if isinstance(text, str) and not text.lstrip().startswith("{")]
    for text in texts:
        try:
            by_python = yaml.load(text, Loader=reading._Loader)  # noqa: S506 (a safe loader)
        except yaml.YAMLError:
            by_python = None
        quick = reading._quick_document(text)
        assert quick is None or quick == by_python, text[:200]
    assert reading._quick_document(GOOD) == yaml.safe_load(GOOD)
    assert reading._quick_document(GOOD_JSON) is None  # JSON is read strictly, by the JSON reader first
    assert reading._quick_document(edit("title: Warmth", "title: Warmth\ntitle: Twice")) is None
    assert reading._quick_document(edit("Warmth", "Warm\x07th")) is None  # a character PyYAML's reader refuses


def test_the_built_in_rubrics_pass_the_checks_they_are_read_without():
    for path in sorted(rubrics.BUILTIN_FOLDER.glob("*.yaml")):
        document = yaml.safe_load(path.read_text("utf-8"))
        assert list(reading._schema_problems(document, {})) == [], path.name
        rubric = reading.read(path.read_bytes(), builtin=True)
        assert list(reading._template_problems(rubric, {}, {})) == [], path.name
        # read as a user's file (the schema and templates checked) it is the same rubric
        assert reading.read(path.read_bytes()).sha256 == reading.read(path.read_bytes(), builtin=True).sha256


def test_reading_a_built_in_rubric_uses_libyaml_and_no_python_yaml_parsing(monkeypatch):
    composed = []
    monkeypatch.setattr(reading, "_parse", lambda data: composed.append(data) or pytest.fail("parsed by PyYAML"))
    for path in sorted(rubrics.BUILTIN_FOLDER.glob("*.yaml")):
        assert reading.read(path.read_bytes(), builtin=True).builtin
    assert not composed
