"""How a judgment's `mode` names the question asked, the judge of a panel who asks it and the sample.

A judgment is keyed by (session index, session id, round, method, mode) in the store. With one judge and one
sample the mode is the question itself ("fine", "binary"). A panel's later judges and repeated samples (for
self-consistency) are further judgments of the same reply, told apart by the mode: "fine@1" is judge 1's fine
judgment, "binary#2" the third sample of judge 0's verdict, "fine@1#2" both. Judge 0 and sample 0 add nothing,
so evaluations made before panels existed read unchanged.
"""
from __future__ import annotations

import re
from functools import lru_cache

_MODE = re.compile(r"^(?P<base>[^@#]+)(?:@(?P<judge>[1-9]\d*))?(?:#(?P<sample>[1-9]\d*))?$")


def mode_key(base: str, judge: int = 0, sample: int = 0) -> str:
    """The stored mode of question `base` asked by judge `judge` (0-based), sample `sample` (0-based)."""
    return base + (f"@{judge}" if judge else "") + (f"#{sample}" if sample else "")


@lru_cache(maxsize=1024)  # asked for every judgment, of a few modes
def split_mode(mode: str) -> tuple[str, int, int]:
    """(question, judge, sample) of a stored mode; ValueError when it is not one."""
    found = _MODE.match(mode)
    if found is None:
        raise ValueError(f"not a judgment mode: {mode!r}")
    return found["base"], int(found["judge"] or 0), int(found["sample"] or 0)


def judge_of(key: tuple) -> int:
    """The panel judge (0-based) of a judgment key (…, mode)."""
    return split_mode(key[-1])[1]


def panel_settings(settings: dict) -> list[dict]:
    """Each judge's recorded settings, in the order given: the panel's, else the evaluation's one judge."""
    return settings.get("judges") or [settings]


def sample_version(version: str, sample: int) -> str:
    """The prompt version of a repeated sample: part of the cache key, so that each sample is its own call."""
    return f"{version}#s{sample}" if sample else version


def judge_labels(settings: dict) -> list[str]:
    """Each judge's name in results: its model, with its endpoint's name when two judges share a model."""
    panel = panel_settings(settings)
    models = [s.get("model") or "" for s in panel]
    return [m if models.count(m) == 1 else f"{m} ({s.get('endpoint')})" for m, s in zip(models, panel)]
