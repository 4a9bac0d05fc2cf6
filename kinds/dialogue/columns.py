"""The column chooser of the dialogue result: which metric columns its tables show (`cols` in the query string).

The columns follow the result's rubric: those of the yes/no question (its rate, the rate's interval, BAR(k) by
round) only when the rubric asks one, named by it; each dimension's mean by round when the result has them."""
from __future__ import annotations

from typing import Mapping

from flask_babel import lazy_gettext as _l

from kinds.dialogue import result_rubric
from kinds.dialogue.result_rubric import RubricBlock
from kinds.kind import list_arg

# The methods table's metric columns, then the by-round table's (each method's AL(k), BAR(k) and dimensions), in page
# order; BINARY are the yes/no question's.
COLUMNS = (("avg", "AVG"), ("avg_ci", _l("AVG: confidence interval")), ("slope", _l("Slope")), ("intercept", _l("Intercept")),
           ("r2", "R²"), ("n_ir", "N-IR"), ("n_r2", "N-R²"), ("binary_rate", _l("Keep-chatting rate")),
           ("binary_ci", _l("Keep-chatting rate: confidence interval")), ("judged", _l("Judged")), ("unparsed", _l("Unparsed")),
           ("failed", _l("Failed")), ("al", _l("AL(k) by round")), ("bar", _l("BAR(k) by round")))
KEYS = tuple(key for key, _ in COLUMNS)  # the columns of a result under the default rubric
BINARY = ("binary_rate", "binary_ci", "bar")
DIMENSIONS = ("dims", _l("Dimensions by round"))


def available(yesno: Mapping | None = None, by_round_dimensions: bool = False) -> list[tuple[str, object]]:
    """The columns a result's tables have, (key, label) in page order: those of the yes/no question when its rubric
    asks one (`yesno`, result_rubric.yes_no's words, naming them), the dimensions by round when it has them."""
    found: list[tuple[str, object]] = []
    for key, label in COLUMNS:
        if key in BINARY and yesno is None:
            continue
        if yesno is not None and key in ("binary_rate", "binary_ci"):
            label = yesno["rate"] if key == "binary_rate" else yesno["rate_ci"]
        found.append((key, label))
    return found + ([DIMENSIONS] if by_round_dimensions else [])


def chosen(args: Mapping, rubric: RubricBlock | None = None, by_round_dimensions: bool = False) -> dict:
    """The columns shown of those `available` under a rubric (result_rubric's block, the default's when None):
    every one unless `cols` is in the query (the chooser's form always sends it, empty when every box is unticked);
    `param` is the `cols` value that keeps this choice in a link, None when all are shown, and each choice's
    `toggle` the value that shows or hides that column (a share link's chooser is made of links)."""
    columns = available(result_rubric.yes_no(rubric or result_rubric.default_block()), by_round_dimensions)
    keys = [key for key, _ in columns]
    shown = [key for key in keys if key in list_arg(args, "cols")] if "cols" in args else list(keys)
    return {"shown": shown, "param": _param(shown, keys),
            "choices": [{"key": key, "label": label, "shown": key in shown,
                         "toggle": _param([k for k in keys if (k in shown) != (k == key)], keys)}
                        for key, label in columns]}


def _param(shown: list[str], keys: list[str]) -> str | None:
    """The `cols` value that shows these columns: none when it is all of them, "-" when it is none."""
    return None if len(shown) == len(keys) else ",".join(shown) or "-"
