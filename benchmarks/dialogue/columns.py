"""The column chooser of the dialogue result: which metric columns its tables show (`cols` in the query string)."""
from __future__ import annotations

from typing import Mapping

from flask_babel import lazy_gettext as _l

from benchmarks.kind import list_arg

# The methods table's metric columns, then the by-round table's (each method's AL(k) and BAR(k)), in page order.
COLUMNS = (("avg", "AVG"), ("avg_ci", _l("AVG: confidence interval")), ("slope", _l("Slope")), ("intercept", _l("Intercept")),
           ("r2", "R²"), ("n_ir", "N-IR"), ("n_r2", "N-R²"), ("binary_rate", _l("Keep-chatting rate")),
           ("binary_ci", _l("Keep-chatting rate: confidence interval")), ("judged", _l("Judged")), ("unparsed", _l("Unparsed")),
           ("failed", _l("Failed")), ("al", _l("AL(k) by round")), ("bar", _l("BAR(k) by round")))
KEYS = tuple(key for key, _ in COLUMNS)


def chosen(args: Mapping) -> dict:
    """The columns shown: every one unless `cols` is in the query (the chooser's form always sends it, empty when
    every box is unticked); `param` is the `cols` value that keeps this choice in a link, None when all are shown,
    and each choice's `toggle` the value that shows or hides that column (a share link's chooser is made of links)."""
    shown = [key for key in KEYS if key in list_arg(args, "cols")] if "cols" in args else list(KEYS)
    return {"shown": shown, "param": _param(shown),
            "choices": [{"key": key, "label": label, "shown": key in shown,
                         "toggle": _param([k for k in KEYS if (k in shown) != (k == key)])} for key, label in COLUMNS]}


def _param(shown: list[str]) -> str | None:
    """The `cols` value that shows these columns: none when it is all of them, "-" when it is none."""
    return None if len(shown) == len(KEYS) else ",".join(shown) or "-"
