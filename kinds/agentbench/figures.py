"""Plotly figures (plain JSON) and translated labels of an AgentBench result."""
from __future__ import annotations

from kinds.agentbench.result import AgentBenchResult, AgentScores
from kinds.agentbench.tasks import STANDARD_TASKS, STATUS_GROUPS, WEIGHTS
from kinds.figures import AXIS, method_colours, polar, toggle_legend
from translations import _

STATUS_COLOURS = {"completed": "#2f9e44", "context_limit": "#f08c00", "invalid_format": "#e8590c",
                  "invalid_action": "#c92a2a", "task_limit": "#868e96"}


def task_labels() -> dict[str, str]:
    """Translated names of the eight standard tasks."""
    return {"os": _("Operating System"), "db": _("Database"), "kg": _("Knowledge Graph"),
            "dcg": _("Digital Card Game"), "ltp": _("Lateral Thinking Puzzles"), "hh": _("House-Holding"),
            "ws": _("Web Shopping"), "wb": _("Web Browsing")}


def status_labels() -> dict[str, str]:
    """Translated names of the five status groups."""
    return {"completed": _("Completed"), "context_limit": _("Context Limit Exceeded"),
            "invalid_format": _("Invalid Format"), "invalid_action": _("Invalid Action"),
            "task_limit": _("Task Limit Exceeded")}


def agent_status(agent: AgentScores) -> dict[str, float] | None:
    """An agent's status shares over all its tasks, each task weighted by its number of samples."""
    parts = [(t["status"], t["total"] or 0) for t in agent["tasks"].values() if t["status"]]
    weight = sum(total for _status, total in parts)
    if not parts:
        return None
    if not weight:  # no sample counts (e.g. from summary files): a plain mean over the tasks
        parts, weight = [(status, 1) for status, _total in parts], len(parts)
    return {g: sum(status.get(g, 0.0) * total for status, total in parts) / weight for g in STATUS_GROUPS}


def status_figure(result: AgentBenchResult) -> dict:
    """One horizontal stacked bar per agent: the share of its samples in each status group."""
    labels = status_labels()
    shares = {name: s for name, agent in result["agents"].items() if (s := agent_status(agent))}
    names = list(shares)
    traces = [{"type": "bar", "orientation": "h", "name": labels[g], "marker": {"color": STATUS_COLOURS[g]},
               "y": names, "x": [shares[n][g] for n in names],
               "hovertemplate": "%{y}: %{x:.1%}<extra>" + labels[g] + "</extra>"} for g in STATUS_GROUPS]
    layout = {"title": {"text": _("How samples ended")}, "barmode": "stack",
              "xaxis": {**AXIS, "range": [0, 1], "tickformat": ".0%", "side": "top"},
              "yaxis": {**AXIS, "automargin": True, "autorange": "reversed"},
              "legend": {"orientation": "h", "y": -0.05, "yanchor": "top"},
              "margin": {"l": 20, "r": 20, "t": 80, "b": 20}, "height": 220 + 40 * len(names),
              "paper_bgcolor": "#fff", "plot_bgcolor": "#fff", "font": {"family": "system-ui, sans-serif"}}
    return {"data": traces, "layout": layout}


def radar_figure(result: AgentBenchResult, models: list[dict]) -> dict:
    """The eight standard tasks normalised by W_t: every agent (solid) and the chosen leaderboard models (dotted)."""
    labels = task_labels()
    theta = [labels[k] for k in STANDARD_TASKS] + [labels[STANDARD_TASKS[0]]]
    colours = method_colours([*result["agents"], *(m["model"] for m in models)])

    def trace(name: str, values: list, dash: str) -> dict:
        return {"type": "scatterpolar", "name": name, "r": values + values[:1], "theta": theta,
                "mode": "lines+markers", "line": {"color": colours[name], "dash": dash}, "connectgaps": False,
                "hovertemplate": "%{theta}: %{r:.2f}<extra>" + name + "</extra>"}

    points = {name: [_normalised(agent, k) for k in STANDARD_TASKS] for name, agent in result["agents"].items()}
    # An agent with no standard task scored has nothing to draw: left out, not listed in the legend with no line.
    traces = [trace(name, values, "solid") for name, values in points.items() if any(v is not None for v in values)]
    traces += [trace(m["model"], [m["scores"][k] / WEIGHTS[k] for k in STANDARD_TASKS], "dot") for m in models]
    layout = {"title": {"text": _("Score / W per task (1 = the average model of the paper)")},
              "polar": polar(len(STANDARD_TASKS), {"rangemode": "tozero"}, rotation=90),
              "legend": toggle_legend(), "showlegend": True, "margin": {"l": 60, "r": 60, "t": 60, "b": 40},
              "paper_bgcolor": "#fff", "font": {"family": "system-ui, sans-serif"}}
    return {"data": traces, "layout": layout}


def _normalised(agent: AgentScores, task: str) -> float | None:
    found = agent["tasks"].get(task)
    return found["normalised"] if found else None


def agentbench_figures(result: AgentBenchResult, models: list[dict]) -> dict:
    """All charts of an AgentBench result page."""
    return {"status": status_figure(result), "radar": radar_figure(result, models)}
