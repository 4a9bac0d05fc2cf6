"""URL rules whose URL builders are compiled the first time a URL is built from them, not as the app starts."""
from __future__ import annotations

from typing import Any

from werkzeug.routing import Rule


class LazyRule(Rule):
    """A werkzeug Rule that compiles its two URL builders on first use.

    Werkzeug compiles them as each rule is added (Python built as a syntax tree, then compile()): for this app's
    150 rules, 40 of the 50 ms that create_app() takes after its imports, paid by every process that builds the app,
    the `flask` commands and the workers included, which build few URLs or none. A builder depends only on its
    rule, so compiling it later gives the same function; two threads that build the same one first both compile
    it, to the same effect."""

    def _compile_builder(self, append_unknown: bool = True) -> Any:
        def build_then_keep(rule: Rule, **values: Any) -> tuple[str, str]:
            compiled = Rule._compile_builder(rule, append_unknown).__get__(rule, None)
            setattr(rule, "_build_unknown" if append_unknown else "_build", compiled)
            return compiled(**values)

        return build_then_keep
