"""The analysis block's figures as tables (header, rows), every label set, reference, model and rule in one table per
figure: the result's `<name>.csv` downloads and, as JSON records, `figures/<name>.json` (routes.py)."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Iterable, Mapping

from kinds.conversation.analysis import Analysis

Table = tuple[tuple, list[tuple]]


def _model(view) -> str:
    return view["chat_model"] or "all"


def behaviour_table(block: Analysis) -> Table:
    """One row per model, label set, scope, dimension and value: both sources' counts and shares, and the test."""
    header = ("chat_model", "label_set", "task", "dimension", "value", "agent_count", "agent_share", "human_count",
              "human_share", "agent_mean", "human_mean", "test", "statistic", "df", "p_value", "p_holm", "effect")
    rows = []
    for view in block["views"]:
        for name, behaviour in view["behaviour"].items():
            for d in behaviour["dimensions"]:
                for scope, c in {"all": d["all"], **d["by_task"]}.items():
                    for i, value in enumerate(d["values"]):
                        rows.append((_model(view), name, scope, d["key"], value, c["agent"]["counts"][i],
                                     c["agent"]["shares"][i], c["human"]["counts"][i], c["human"]["shares"][i],
                                     c["agent"].get("mean"), c["human"].get("mean"), c["test"], c["statistic"],
                                     c["df"], c["p_value"], c["p_holm"], c["effect"]))
    return header, rows


def label_check_table(block: Analysis) -> Table:
    """One row per model, reference, label set, dimension and group (all, agent, human): n and each agreement with
    its interval."""
    measures = ("accuracy", "kappa", "weighted_kappa", "mae")
    header = ("chat_model", "reference", "label_set", "dimension", "users", "n",
              *(f"{m}{end}" for m in measures for end in ("", "_low", "_high")))
    rows = []
    for view in block["views"]:
        for reference, checks in view["label_checks"].items():
            for name, check in checks.items():
                for d in check["dimensions"]:
                    for group in ("all", "agent", "human"):
                        c: Mapping[str, Any] = d[group]
                        cells = []
                        for m in measures:
                            e = c.get(m) or {}
                            cells += [e.get("value"), e.get("low"), e.get("high")]
                        rows.append((_model(view), reference, name, d["key"], group, c["n"], *cells))
    return header, rows


def hallucination_table(block: Analysis) -> Table:
    """One row per model, rule, scope and source: turns and conversations counted and flagged, shares, intervals."""
    header = ("chat_model", "rule", "task", "users", "turns", "flagged_turns", "turn_share", "turn_share_low",
              "turn_share_high", "conversations", "flagged_conversations", "conversation_share",
              "conversation_share_low", "conversation_share_high")
    rows = []
    for view in block["views"]:
        for rule, awareness in view["hallucination"].items():
            for scope, by_source in {"all": awareness["all"], **awareness["by_task"]}.items():
                for source, a in by_source.items():
                    t, c = a["turn_share"], a["conversation_share"]
                    rows.append((_model(view), rule, scope, source, a["turns"], a["flagged_turns"], t["value"],
                                 t["low"], t["high"], a["conversations"], a["flagged_conversations"], c["value"],
                                 c["low"], c["high"]))
    return header, rows


def quality_table(block: Analysis) -> Table:
    """One row per model, measure (ratings, self_report, questionnaire), field and value: n, mean, count, share."""
    header = ("chat_model", "measure", "field", "n", "mean", "value", "count", "share")
    rows = []
    for view in block["views"]:
        for measure, fields in view["quality"].items():
            for name, s in fields.items():  # type: ignore[attr-defined]
                for value, count, share in zip(s["values"], s["counts"], s["shares"]):
                    rows.append((_model(view), measure, name, s["n"], s["mean"], value, count, share))
    return header, rows


TABLES: dict[str, Callable[[Analysis], Table]] = {
    "behaviour": behaviour_table, "label_checks": label_check_table, "hallucination": hallucination_table,
    "quality": quality_table}


def records(table: Table) -> list[dict]:
    """A table's rows as JSON records keyed by its header."""
    header, rows = table
    return [dict(zip(header, row)) for row in rows]


def tables(block: Analysis) -> Iterable[tuple[str, Callable[[], Table]]]:
    """Each figure's table by name, as a function (the result's downloads)."""
    return [(name, partial(make, block)) for name, make in TABLES.items()]
