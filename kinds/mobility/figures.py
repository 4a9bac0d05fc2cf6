"""Plotly figures (plain JSON) of a mobility result: reference against generated distributions."""
from __future__ import annotations

from kinds.figures import AXIS, LEGEND, PALETTE, base_layout, legend_height, method_colours, plain
from kinds.mobility.format import INTENTIONS
from kinds.mobility.metrics import Histogram, Proportions, SlotShares
from kinds.mobility.result import MobilityResult
from translations import _

REFERENCE_COLOUR, GENERATED_COLOUR = "#627d98", "#ef553b"


def intention_labels() -> dict[int, str]:
    """Translated names of the seven intention codes."""
    names = {"sleep": _("sleep"), "home activity": _("home activity"), "other": _("other"), "work": _("work"),
             "shopping": _("shopping"), "eating out": _("eating out"),
             "leisure and entertainment": _("leisure and entertainment")}
    return {code: names[name] for code, name in INTENTIONS.items()}


def metric_labels() -> dict[str, str]:
    """Translated names of the four mobility metrics."""
    return {"gyration_radius": _("Gyration radius"), "daily_location_numbers": _("Daily location numbers"),
            "intention_sequences": _("Intention sequences"), "intention_proportions": _("Intention proportions")}


def _layout(title: str, x_title: str, y_title: str, **extra) -> dict:
    return {"title": {"text": title}, "xaxis": {**AXIS, "title": {"text": x_title}},
            "yaxis": {**AXIS, "title": {"text": y_title}}, "legend": LEGEND,
            "margin": {"l": 60, "r": 20, "t": 50, "b": 60}, "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
            "font": {"family": "system-ui, sans-serif"}, **extra}


def histogram_figure(data: Histogram, title: str, x_title: str) -> dict:
    """Reference and generated shares of users per bin, overlaid, on shared bins."""
    edges = data["edges"]
    centres = [(a + b) / 2 for a, b in zip(edges, edges[1:])]
    width = edges[1] - edges[0] if len(edges) > 1 else 1
    traces = [{"type": "bar", "name": name, "x": centres, "y": shares, "width": width, "opacity": 0.6,
               "marker": {"color": colour}}
              for shares, name, colour in ((data["reference"], _("Reference"), REFERENCE_COLOUR),
                                           (data["generated"], _("Generated"), GENERATED_COLOUR))]
    return {"data": traces, "layout": _layout(title, x_title, _("Share of users"), barmode="overlay")}


def slots_figure(slots: SlotShares) -> dict:
    """The share of each intention in every half-hour slot: reference solid, generated dashed."""
    labels = intention_labels()
    traces = []
    for code, label in labels.items():
        colour = PALETTE[(code - 1) % len(PALETTE)]
        for rows, dash, suffix in ((slots["reference"], "solid", _("reference")),
                                   (slots["generated"], "dash", _("generated"))):
            traces.append({"type": "scatter", "mode": "lines", "name": f"{label} · {suffix}", "legendgroup": label,
                           "x": [t / 2 for t in range(len(rows))], "y": [row[code - 1] for row in rows],
                           "line": {"color": colour, "dash": dash, "width": 2}})
    return {"data": traces, "layout": _layout(_("Share of each intention by half-hour slot"), _("Hour of the day"),
                                              _("Share of users"), height=legend_height(len(traces)))}


def proportions_figure(proportions: Proportions) -> dict:
    """Mean share of the day per intention, reference against generated."""
    labels = list(intention_labels().values())
    traces = [{"type": "bar", "name": name, "x": labels[:len(means)], "y": means, "marker": {"color": colour}}
              for means, name, colour in ((proportions["reference"], _("Reference"), REFERENCE_COLOUR),
                                          (proportions["generated"], _("Generated"), GENERATED_COLOUR))]
    return {"data": traces, "layout": _layout(_("Intention proportions"), "", _("Mean proportion"),
                                              barmode="group")}


def mobility_figures(result: MobilityResult) -> dict:
    """All charts of a mobility result page."""
    d = result["distributions"]
    return {
        "radius": histogram_figure(d["gyration_radius"], _("Gyration radius"), _("Radius (m)")),
        "locations": histogram_figure(d["daily_location_numbers"], _("Daily location numbers"),
                                      _("Locations per day")),
        "slots": slots_figure(d["slots"]),
        "proportions": proportions_figure(d["proportions"]),
    }


def compare_figures(runs: list[dict], labels: dict[str, str]) -> dict:
    """Grouped bars of the four JSDs per generated set, one chart per variant (lower is closer)."""
    colours = method_colours([run["id"] for run in runs])
    figures = {}
    for variant, title, y_title in (("official", _("Official JS distance by metric"), _("JS distance (nats)")),
                                    ("strict", _("Strict JS divergence by metric"), _("JS divergence (bits)"))):
        traces = [{"type": "bar", "name": plain(run["label"]), "x": list(labels.values()),
                   "y": [run["result"][variant]["jsd"][key] for key in labels], "marker": {"color": colours[run["id"]]}}
                  for run in runs]
        layout = {**base_layout(title, "", y_title, [0, 1]), "barmode": "group"}
        layout["xaxis"].pop("dtick", None)
        layout["yaxis"] = {key: value for key, value in layout["yaxis"].items() if key != "range"} | {"rangemode": "tozero"}
        figures[variant] = {"data": traces, "layout": layout}
    return figures
