"""Plotly figures (plain JSON) of the analysis block, for the choices the result page's query string makes:
`labels` (a label set), `reference` (people's set the labels are checked against), `chat_model` (the assistant's
model, empty: all), `task` (the behaviour chart's scope, empty: all tasks) and `hallucination` (a counting rule)."""
from __future__ import annotations

from typing import Any, Mapping

from kinds.conversation.analysis import Analysis, View, chosen_view
from kinds.conversation.assistant_stats import HALLUCINATION_RULES
from kinds.conversation.behaviour import BY_KEY
from kinds.conversation.figures import COLOURS, source_labels, term_labels
from kinds.conversation.label_sets import DEFAULT_SET, REFERENCES
from kinds.figures import PALETTE, base_layout, plain
from translations import _

# The three sides of the assistant's quality the paper puts together (statistics/assistant_quality.py): per side, the
# field of each measure (simulated users' ratings, their self-report, real people's questionnaire).
QUALITY_SIDES = {"detail": {"ratings": "Detail Level", "self_report": "detail", "questionnaire": "Detail"},
                 "utility": {"ratings": "Practical Usefulness", "self_report": "utility",
                             "questionnaire": "Availability"},
                 "diversity": {"ratings": "Diversity", "self_report": "diversity", "questionnaire": "Diversity"}}
VALUE_COLOURS = ("#d64545", "#f0b429", "#3ebd93")  # 0, 1, 2: bad to good


def choices(block: Analysis, args: Mapping) -> dict[str, Any]:
    """The page's choices from the query string, each replaced by its default when the block has no such value."""
    sets, references = block["label_sets"], block["references"]
    labels = args.get("labels") or DEFAULT_SET
    reference = args.get("reference") or REFERENCES[0]
    model = args.get("chat_model") or None
    task = args.get("task") or None
    rule = args.get("hallucination") or HALLUCINATION_RULES[0]
    return {"labels": labels if labels in sets else (DEFAULT_SET if DEFAULT_SET in sets or not sets else sets[0]),
            "reference": reference if reference in references else (references[0] if references else None),
            "chat_model": model if model in block["chat_models"] else None,
            "task": task if task in block["tasks"] else None,
            "hallucination": rule if rule in HALLUCINATION_RULES else HALLUCINATION_RULES[0]}


def measure_labels() -> dict[str, str]:
    """Translated names of the quality measures and of the paper's three sides of quality."""
    return {"ratings": _("Simulated users' ratings"), "self_report": _("Simulated users' self-report"),
            "questionnaire": _("Real users' questionnaire"), "detail": _("Detail"), "utility": _("Utility"),
            "diversity": _("Diversity")}


def rule_labels() -> dict[str, str]:
    """Translated names of the hallucination counting rules."""
    return {"paper": _("the paper's rule: \"can't judge\" counts as no"),
            "known": _("known labels only: \"can't judge\" left out")}


def behaviour_figure(view: View, label_set: str, task: str | None) -> dict:
    """Stacked shares of each dimension's values, simulated and real users side by side (one scope)."""
    sources = source_labels()
    behaviour = view["behaviour"].get(label_set)
    traces = []
    for d in behaviour["dimensions"] if behaviour else []:
        comparison = d["all"] if task is None else d["by_task"][task]
        name = plain(str(BY_KEY[d["key"]].label))
        for i, value in enumerate(d["values"]):
            traces.append({
                "type": "bar", "name": str(value), "showlegend": False,
                "marker": {"color": PALETTE[i % len(PALETTE)], "line": {"color": "#fff", "width": 1}},
                "x": [[name, name], [sources["agent"], sources["human"]]],
                "y": [comparison["agent"]["shares"][i], comparison["human"]["shares"][i]],
                "customdata": [comparison["agent"]["counts"][i], comparison["human"]["counts"][i]],
                "text": [str(value), str(value)], "textposition": "inside", "insidetextanchor": "middle",
                "hovertemplate": f"{plain(str(value))}: %{{y:.1%}} (n=%{{customdata}})<extra></extra>"})
    layout = {**base_layout(_("Behaviour of simulated and real users"), "", _("Share of conversations"), [0, 1]),
              "barmode": "stack", "height": 520}
    layout["xaxis"].pop("dtick", None)
    layout["xaxis"]["tickangle"] = 0
    layout["yaxis"]["tickformat"] = ".0%"
    return {"data": traces, "layout": layout}


def label_check_figure(view: View, reference: str | None, label_set: str) -> dict:
    """Cohen's kappa of a label set against the reference per dimension with its interval: all, simulated, real."""
    names = {"all": _("All users"), **source_labels()}
    colours = {"all": "#486581", **COLOURS}
    check = view["label_checks"].get(reference or "", {}).get(label_set)
    traces = []
    for group in ("all", "agent", "human"):
        rows = check["dimensions"] if check else []
        kappas = [row[group]["kappa"] for row in rows]
        traces.append({
            "type": "bar", "name": names[group], "marker": {"color": colours[group]},
            "x": [plain(str(BY_KEY[row["key"]].label)) for row in rows], "y": [k["value"] for k in kappas],
            "error_y": {"type": "data", "symmetric": False,
                        "array": [None if k["high"] is None or k["value"] is None else k["high"] - k["value"]
                                  for k in kappas],
                        "arrayminus": [None if k["low"] is None or k["value"] is None else k["value"] - k["low"]
                                       for k in kappas]},
            "customdata": [k["n"] for k in kappas],
            "hovertemplate": "%{x}: %{y:.2f} (n=%{customdata})<extra></extra>"})
    layout = {**base_layout(_("Labels against people's: Cohen's kappa with 95% CI"), "", _("Cohen's kappa"),
                            [-0.2, 1]), "barmode": "group"}
    layout["xaxis"].pop("dtick", None)
    return {"data": traces, "layout": layout}


def hallucination_figure(view: View, rule: str, tasks: list[str], per: str) -> dict:
    """The share of assistant turns flagged (`per` "turn") or of conversations with a flag ("conversation"), per
    source, over all tasks and per task, with 95% CIs."""
    sources, terms = source_labels(), term_labels()
    awareness = view["hallucination"][rule]
    scopes = [("all", awareness["all"])] + [(task, awareness["by_task"][task]) for task in tasks]
    x = [_("All tasks") if scope == "all" else plain(terms.get(scope, scope)) for scope, _b in scopes]
    traces = []
    for source in ("agent", "human"):
        shares = [by_source[source][f"{per}_share"] for _s, by_source in scopes]  # type: ignore[literal-required]
        traces.append({
            "type": "bar", "name": sources[source], "marker": {"color": COLOURS[source]}, "x": x,
            "y": [s["value"] for s in shares], "customdata": [s["n"] for s in shares],
            "error_y": {"type": "data", "symmetric": False,
                        "array": [None if s["high"] is None else s["high"] - s["value"] for s in shares],
                        "arrayminus": [None if s["low"] is None else s["value"] - s["low"] for s in shares]},
            "hovertemplate": "%{x}: %{y:.1%} (n=%{customdata})<extra></extra>"})
    title = _("Assistant turns flagged as hallucinating") if per == "turn" else \
        _("Conversations with at least one flag")
    layout = {**base_layout(title, "", _("Share"), [0, 1]), "barmode": "group"}
    layout["xaxis"].pop("dtick", None)
    layout["yaxis"].pop("range", None)
    layout["yaxis"].update({"tickformat": ".0%", "rangemode": "tozero"})
    return {"data": traces, "layout": layout}


def quality_figure(view: View) -> dict:
    """Stacked shares of 0, 1 and 2 for the paper's three sides of quality, by each measure that has them."""
    labels = measure_labels()
    quality = view["quality"]
    bars = [(side, measure, quality[measure][field])  # type: ignore[literal-required]
            for side, fields in QUALITY_SIDES.items() for measure, field in fields.items()
            if field in quality[measure]]  # type: ignore[literal-required]
    x = [[labels[side] for side, _m, _s in bars], [labels[measure] for _side, measure, _s in bars]]
    traces = []
    for i, value in enumerate((0, 1, 2)):
        shares = [s["shares"][s["values"].index(value)] for _side, _m, s in bars]
        traces.append({"type": "bar", "name": str(value), "marker": {"color": VALUE_COLOURS[i]}, "x": x, "y": shares,
                       "customdata": [s["n"] for _side, _m, s in bars],
                       "hovertemplate": f"{value}: %{{y:.1%}} (n=%{{customdata}})<extra></extra>"})
    layout = {**base_layout(_("Assistant quality: shares of 0, 1 and 2"), "", _("Share of conversations"), [0, 1]),
              "barmode": "stack", "height": 480}
    layout["xaxis"].pop("dtick", None)
    layout["yaxis"]["tickformat"] = ".0%"
    return {"data": traces, "layout": layout}


def analysis_figures(block: Analysis, args: Mapping) -> dict:
    """Every figure of the analysis for the page's choices."""
    chosen = choices(block, args)
    view = chosen_view(block, chosen["chat_model"])
    return {"behaviour": behaviour_figure(view, chosen["labels"], chosen["task"]),
            "label_checks": label_check_figure(view, chosen["reference"], chosen["labels"]),
            "hallucination_turns": hallucination_figure(view, chosen["hallucination"], block["tasks"], "turn"),
            "hallucination_conversations": hallucination_figure(view, chosen["hallucination"], block["tasks"],
                                                                "conversation"),
            "quality": quality_figure(view)}
