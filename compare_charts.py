"""Plotly figures of the compare page: the AL(k) and BAR(k) curves of several evaluations overlaid.

A method keeps one colour in every chart (charts.method_colours over all the methods compared); each evaluation
has its own line dash and marker symbol, so two runs of the same method stay apart.
"""
from __future__ import annotations

import charts
from translations import _

DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "5px,2px,1px,2px", "1px,6px")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "pentagon")
# The same dashes as SVG stroke-dasharray values, for the line samples in the page's list of evaluations.
DASHARRAYS = {"solid": "", "dash": "9,9", "dot": "3,3", "dashdot": "9,3,3,3", "longdash": "15,6",
              "longdashdot": "15,6,3,6", "5px,2px,1px,2px": "5,2,1,2", "1px,6px": "1,6"}
MAX_RUNS = len(DASHES)


def run_style(position: int) -> dict:
    """Dash, marker symbol and SVG dasharray of the evaluation at this position of the comparison."""
    dash = DASHES[position % len(DASHES)]
    return {"dash": dash, "symbol": SYMBOLS[position % len(SYMBOLS)], "dasharray": DASHARRAYS[dash]}


def _plain(text: str) -> str:
    """Text shown literally by Plotly, which reads <b>, <a href> and the like in names as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def overlay_figure(runs: list[dict], colours: dict[str, str], key: str, title: str, y_title: str) -> dict:
    """One line per (evaluation, method) of a per-round curve (`al_curve` or `binary_curve`)."""
    traces = []
    for position, run in enumerate(runs):
        style = run_style(position)
        for name, m in run["result"]["methods"].items():
            points = m[key]
            traces.append({
                "type": "scatter", "mode": "lines+markers", "name": _plain(f"{name} · {run['label']}"),
                "legendgroup": run["id"], "meta": {"evaluation_id": run["id"], "method": name},
                "line": {"color": colours[name], "dash": style["dash"]},
                "marker": {"color": colours[name], "symbol": style["symbol"], "size": 7},
                "x": [p["round"] for p in points], "y": [p["value"] for p in points],
                "customdata": [p.get("n") for p in points],
                "hovertemplate": "k=%{x}: %{y:.1f} (n=%{customdata})<extra>%{fullData.name}</extra>"})
    layout = charts._layout(title, _("Round k"), y_title, [0, 100])
    # One legend line per trace under the x-axis title, and room for it (the result page's charts have fewer).
    layout["legend"] = {**layout.get("legend", {}), "orientation": "h", "y": -0.18, "yanchor": "top"}
    layout["height"] = 400 + 22 * len(traces)
    return {"data": traces, "layout": layout}


def compare_figures(runs: list[dict], colours: dict[str, str]) -> dict:
    """The compare page's charts, keyed like the result page's."""
    return {
        "al_curve": overlay_figure(runs, colours, "al_curve", _("AL(k): fine score by round"),
                                   _("Mean fine score (0-100)")),
        "binary_curve": overlay_figure(runs, colours, "binary_curve", _("BAR(k): share who want to keep chatting"),
                                       _("Keep-chatting rate (%)")),
    }


def mobility_figures(runs: list[dict], labels: dict[str, str]) -> dict:
    """Grouped bars of the four JSDs per generated set, one chart per variant (lower is closer)."""
    colours = charts.method_colours([run["id"] for run in runs])
    figures = {}
    for variant, title, y_title in (("official", _("Official JS distance by metric"), _("JS distance (nats)")),
                                    ("strict", _("Strict JS divergence by metric"), _("JS divergence (bits)"))):
        traces = [{"type": "bar", "name": _plain(run["label"]), "x": list(labels.values()),
                   "y": [run["result"][variant]["jsd"][key] for key in labels], "marker": {"color": colours[run["id"]]}}
                  for run in runs]
        layout = {**charts._layout(title, "", y_title, [0, 1]), "barmode": "group"}
        layout["xaxis"].pop("dtick", None)
        layout["yaxis"] = {key: value for key, value in layout["yaxis"].items() if key != "range"} | {"rangemode": "tozero"}
        figures[variant] = {"data": traces, "layout": layout}
    return figures
