"""Plotly figures (plain JSON) of a conversation result: simulated against real users."""
from __future__ import annotations

from kinds.conversation.result import ConversationResult
from kinds.figures import base_layout, count_axis, plain
from translations import _

COLOURS = {"agent": "#ef553b", "human": "#627d98"}


def source_labels() -> dict[str, str]:
    """Translated names of the two sources."""
    return {"agent": _("Simulated users"), "human": _("Real users")}


def term_labels() -> dict[str, str]:
    """Translated names of the dataset's tasks, user intents, rating fields and questionnaire questions, by their
    English names in the data (names not listed here are shown as they are)."""
    return {
        "travel planning": _("travel planning"), "recipe planning": _("recipe planning"),
        "preparing gifts": _("preparing gifts"), "skills learning planning": _("skills learning planning"),
        "Planning": _("Planning"), "Recommendation": _("Recommendation"), "Search": _("Search"),
        "Search & Recommendation": _("Search & Recommendation"), "Evaluation": _("Evaluation"), "Others": _("Others"),
        "Detail Level": _("Detail Level"), "Diversity": _("Diversity"), "Practical Usefulness": _("Practical Usefulness"),
        "Preference Alignment": _("Preference Alignment"), "Additional Preferences": _("Additional Preferences"),
        "Role-Playing Completeness": _("Role-Playing Completeness"), "Memorization": _("Memorization"),
        "Detail": _("Detail"), "Availability": _("Availability"),
    }


def turns_figure(result: ConversationResult) -> dict:
    """How many conversations have each number of turns, per source."""
    labels = source_labels()
    traces = [{"type": "bar", "name": labels[source], "marker": {"color": COLOURS[source]},
               "x": [row["turns"] for row in rows], "y": [row["conversations"] for row in rows]}
              for source, rows in result["by_turns"].items() if rows]
    layout = {**base_layout(_("Conversations by number of turns"), _("Turns"), _("Conversations"), [0, 1]),
              "barmode": "group"}
    most = max((row["conversations"] for rows in result["by_turns"].values() for row in rows), default=1)
    layout["yaxis"] = {**count_axis(most), "title": layout["yaxis"]["title"]}
    return {"data": traces, "layout": layout}


def intents_figure(result: ConversationResult) -> dict:
    """The share of each user intent, per source."""
    labels, terms = source_labels(), term_labels()
    names = sorted({label for shares in result["intents"].values() for label in shares})
    traces = [{"type": "bar", "name": labels[source], "marker": {"color": COLOURS[source]},
               "x": [plain(terms.get(name, name)) for name in names], "y": [shares.get(name, 0) for name in names]}
              for source, shares in result["intents"].items() if shares]
    layout = {**base_layout(_("User intents"), "", _("Share of user turns"), [0, 1]), "barmode": "group"}
    layout["xaxis"].pop("dtick", None)
    return {"data": traces, "layout": layout}


def satisfaction_figure(result: ConversationResult) -> dict:
    """Mean per-turn satisfaction by assistant turn number, per source that has it."""
    labels = source_labels()
    traces = [{"type": "scatter", "mode": "lines+markers", "name": labels[source],
               "line": {"color": COLOURS[source]}, "x": [row["turn"] for row in s["by_turn"]],
               "y": [row["mean"] for row in s["by_turn"]], "customdata": [row["n"] for row in s["by_turn"]],
               "hovertemplate": "%{x}: %{y:.2f} (n=%{customdata})<extra></extra>"}
              for source, s in result.get("satisfaction", {}).items() if s]
    layout = base_layout(_("Per-turn satisfaction"), _("Assistant turn"), _("Mean satisfaction"), [0, 1])
    layout["yaxis"] = {k: v for k, v in layout["yaxis"].items() if k != "range"}
    return {"data": traces, "layout": layout}


def conversation_figures(result: ConversationResult) -> dict:
    """All charts of a conversation result page."""
    return {"turns": turns_figure(result), "intents": intents_figure(result),
            "satisfaction": satisfaction_figure(result)}
