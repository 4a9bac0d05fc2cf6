"""The app's URL rules compile their URL builders when first used (web/url_rules.py), and build the same URLs."""
from __future__ import annotations

from flask import url_for
from werkzeug.routing import Map, Rule

from web.url_rules import LazyRule

VALUES = {"integer": 7, "path": "a/b c", "default": "x y", "float": 1.5, "uuid": "0" * 32}


def _values(rule: Rule) -> dict:
    """A value for each argument of the rule, of its converter's type, and one argument it does not have."""
    values = {name: sorted(converter.items)[0] if hasattr(converter, "items")  # `any(a, b)`: one of them
              else VALUES[type(converter).__name__.removesuffix("Converter").lower().replace("unicode", "default")]
              for name, converter in rule._converters.items()}
    return {**values, "extra": "é&?"}


def test_every_route_builds_the_url_werkzeug_builds(app):
    rules = list(app.url_map.iter_rules())
    assert len(rules) > 100 and all(isinstance(rule, LazyRule) for rule in rules if rule.endpoint != "static")
    for rule in rules:
        options = {"endpoint": rule.endpoint, "defaults": rule.defaults, "methods": rule.methods}
        lazy, plain = Map([LazyRule(rule.rule, **options)]), Map([Rule(rule.rule, **options)])
        values = _values(rule)
        for append_unknown in (True, False, True):  # the second use goes through the builder the first one kept
            built = lazy.bind("example.org").build(rule.endpoint, values, append_unknown=append_unknown)
            assert built == plain.bind("example.org").build(rule.endpoint, values, append_unknown=append_unknown)


def test_a_builder_is_compiled_on_first_use_and_kept(app):
    rule = next(rule for rule in app.url_map.iter_rules() if rule.endpoint == "pages.index")
    # neither builder compiled when the app was built
    assert rule._build.__name__ == rule._build_unknown.__name__ == "build_then_keep"
    with app.test_request_context():
        assert url_for("pages.index", page=2) == "/?page=2"  # url_for builds with the arguments a rule lacks
        assert rule._build_unknown.__name__ != "build_then_keep"
        assert url_for("pages.index", page=3) == "/?page=3"
