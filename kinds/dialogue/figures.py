"""The dialogue kind's Plotly figures: AL(k) and BAR(k) curves with their bands, the dimensions' radar (a bar chart
below three dimensions), and the same curves of several evaluations overlaid (one colour per method, one dash per
evaluation). The dimensions, their labels and the yes/no question are the result's rubric's (result_rubric.py)."""
from __future__ import annotations

from typing import Any, Literal

from kinds.dialogue import result_rubric
from kinds.dialogue.calibrated import CurvePoint as CalibratedPoint
from kinds.dialogue.metrics import CurvePoint, MethodScores
from kinds.dialogue.pairwise_mode import PairRates
from kinds.dialogue.result import DialogueResult
from kinds.figures import LEGEND, base_layout, legend_height, method_colours, plain, polar, run_style, toggle_legend
from translations import _

MIN_RADAR = 3  # dimensions a radar needs to draw an area; fewer are drawn as bars
Curve = Literal["al_curve", "binary_curve"]  # a method's per-round curves


def curve_figure(result: DialogueResult, key: Curve, title: str, y_title: str, colours: dict[str, str]) -> dict:
    """Line chart of a per-round curve (AL(k) or BAR(k)) for every method, with its 95% band; AL(k) calibrated to
    people too, where the result has it."""
    traces = []
    calibrated = result["calibration"]["methods"] if key == "al_curve" and "calibration" in result else {}
    for name, m in result["methods"].items():
        points = m[key] or []  # BAR(k) is drawn only when the rubric asks a yes/no question
        traces.extend(_band(points, name, colours[name]))
        traces.append({"type": "scatter", "mode": "lines+markers", "name": name, "line": {"color": colours[name]},
                       "legendgroup": name,
                       "x": [p["round"] for p in points], "y": [p["value"] for p in points],
                       "customdata": [p.get("n") for p in points],
                       "hovertemplate": "k=%{x}: %{y:.1f} (n=%{customdata})<extra>" + name + "</extra>"})
        curve = calibrated.get(name, {}).get("al_curve")
        if curve and curve["points"]:
            traces.append(_calibrated_curve(curve["points"], name, colours[name]))
    return {"data": traces, "layout": base_layout(title, _("Round k"), y_title, [0, 100])}


def _calibrated_curve(points: list[CalibratedPoint], name: str, colour: str) -> dict:
    """A method's AL(k) calibrated to people: dotted, each round's 95% interval as an error bar."""
    label = _("%(method)s, calibrated to people", method=name)
    return {"type": "scatter", "mode": "lines+markers", "name": plain(label), "legendgroup": name,
            "line": {"color": colour, "dash": "dot"}, "marker": {"color": colour, "symbol": "diamond", "size": 7},
            "x": [p["round"] for p in points], "y": [p["value"] for p in points],
            "error_y": {"type": "data", "symmetric": False, "color": colour, "thickness": 1.5, "width": 4,
                        "array": [None if p["high"] is None or p["value"] is None else p["high"] - p["value"]
                                  for p in points],
                        "arrayminus": [None if p["low"] is None or p["value"] is None else p["value"] - p["low"]
                                       for p in points]},
            "customdata": [p["n_rated"] for p in points],
            "hovertemplate": "k=%{x}: %{y:.1f} (" + _("rated") + ": %{customdata})<extra>" + plain(label)
                             + "</extra>"}


def _rgba(colour: str, alpha: float) -> str:
    """A #rrggbb colour with transparency."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _band(points: list[CurvePoint], name: str, colour: str) -> list[dict]:
    """The 95% interval of a curve as a shaded band: one closed outline, along the upper edge and back along the
    lower one, filled (one trace, not two edges filled between: fewer traces for Plotly to draw)."""
    with_ci = [(p["round"], ci) for p in points if (ci := p.get("ci95"))]
    if not with_ci:
        return []
    x = [k for k, _ci in with_ci]
    upper, lower = [ci[1] for _k, ci in with_ci], [ci[0] for _k, ci in with_ci]
    return [{"type": "scatter", "mode": "lines", "line": {"width": 0}, "legendgroup": name, "showlegend": False,
             "hoverinfo": "skip", "x": x + x[::-1], "y": upper + lower[::-1], "fill": "toself",
             "fillcolor": _rgba(colour, 0.15)}]


def radar_figure(result: DialogueResult, colours: dict[str, str]) -> dict:
    """The dimension means of every method, each on 0-100 from its own scale: a radar, or grouped bars when the
    rubric has fewer than MIN_RADAR dimensions (a radar of one or two axes draws no area)."""
    rubric = result_rubric.of(result)
    dimensions = rubric["dimensions"]
    labels = result_rubric.dimension_labels(rubric)
    theta = [labels[d["key"]] for d in dimensions]
    layout: dict[str, Any] = {"title": {"text": _("Dimension scores (0-100)")}, "legend": toggle_legend(),
                              "showlegend": True,
                              "margin": {"l": 90, "r": 90, "t": 60, "b": 40}, "paper_bgcolor": "#fff",
                              "font": {"family": "system-ui, sans-serif"}}
    traces: list[dict[str, Any]] = []
    for name, m in result["methods"].items():
        values = [result_rubric.normalised(m["dimensions"].get(d["key"]), d) for d in dimensions]
        if len(dimensions) < MIN_RADAR:
            traces.append({"type": "bar", "name": name, "x": theta, "y": values, "marker": {"color": colours[name]},
                           "hovertemplate": "%{x}: %{y:.1f}<extra>" + name + "</extra>"})
        else:
            # Outlines, not filled areas: six filled polygons cover each other.
            traces.append({"type": "scatterpolar", "name": name, "mode": "lines+markers",
                           "r": values + values[:1], "theta": theta + theta[:1],
                           "line": {"color": colours[name], "width": 2}, "marker": {"size": 5},
                           "hovertemplate": "%{theta}: %{r:.1f}<extra>" + name + "</extra>"})
    if len(dimensions) < MIN_RADAR:
        layout.update(barmode="group", plot_bgcolor="#fff", margin={"l": 60, "r": 20, "t": 60, "b": 40},
                      yaxis={"range": [0, 100], "title": {"text": _("Score (0-100)")}, "automargin": True},
                      xaxis={"automargin": True})
    else:
        layout["polar"] = polar(len(dimensions), {"range": [0, 100], "tickvals": [20, 40, 60, 80, 100]})
    return {"data": traces, "layout": layout}


def length_figure(result: DialogueResult, colours: dict[str, str]) -> dict:
    """Fine score against reply length, a sample of each shown method's judgments."""
    bias = result.get("length_bias")
    points = (bias.get("points") if bias else None) or {}
    traces = [{"type": "scatter", "mode": "markers", "name": m, "x": [p[0] for p in points[m]],
               "y": [p[1] for p in points[m]], "marker": {"color": colours.get(m), "size": 5, "opacity": 0.6}}
              for m in result["methods"] if points.get(m)]
    layout = base_layout(_("Fine score against reply length"), _("Reply length (characters)"), _("Fine score (0-100)"),
                         [0, 100])
    layout["xaxis"].pop("dtick")  # lengths, not rounds: let Plotly space the ticks
    return {"data": traces, "layout": layout}


def agreement_figure(result: DialogueResult) -> dict:
    """Heatmap of Spearman's rho between every two judges of a panel (fine scores), the value in each cell."""
    labels = result["judges"]
    rho = {(p["a"], p["b"]): p["spearman"]["value"] for p in result["agreement"]["pairs"]}
    z = [[1.0 if a == b else rho.get((a, b), rho.get((b, a))) for b in labels] for a in labels]
    names = [plain(label) for label in labels]
    return {"data": [{"type": "heatmap", "x": names, "y": names, "z": z, "zmin": -1, "zmax": 1,
                      "colorscale": "RdBu", "texttemplate": "%{z:.2f}",
                      "hovertemplate": "%{y} · %{x}: ρ = %{z:.3f}<extra></extra>"}],
            "layout": {"title": {"text": _("Spearman ρ between judges (fine scores)")},
                       "xaxis": {"automargin": True}, "yaxis": {"automargin": True, "autorange": "reversed"},
                       "height": 160 + 60 * len(labels), "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
                       "paper_bgcolor": "#fff", "font": {"family": "system-ui, sans-serif"}}}


def people_figure(result: DialogueResult, colours: dict[str, str]) -> dict:
    """The judge's total of each reply people rated against people's mean total (agreement.human.scatter), one colour
    per method, the line where they would be equal; a reply several people rated has a bar from the lowest to the
    highest of their totals."""
    scatter = result["agreement"]["human"]["scatter"]
    traces: list[dict[str, Any]] = [{"type": "scatter", "mode": "lines", "x": [0, 100], "y": [0, 100],
                                     "name": _("Judge = people"), "hoverinfo": "skip",
                                     "line": {"color": "#9aa5b1", "dash": "dot", "width": 1}}]
    for method in result["methods"]:
        points = [p for p in scatter["points"] if p["method"] == method]
        if not points:
            continue
        traces.append({"type": "scatter", "mode": "markers", "name": method,
                       "marker": {"color": colours.get(method), "size": 7, "opacity": 0.75},
                       "x": [p["judge"] for p in points], "y": [p["people"] for p in points],
                       "error_y": {"type": "data", "symmetric": False, "color": colours.get(method), "thickness": 1,
                                   "width": 3, "array": [p["high"] - p["people"] for p in points],
                                   "arrayminus": [p["people"] - p["low"] for p in points]},
                       "customdata": [[plain(p["session_id"]), p["round"], p["raters"]] for p in points],
                       "hovertemplate": _("%(session)s, round %(round)s: judge %(judge)s, people %(people)s "
                                          "(%(raters)s raters)", session="%{customdata[0]}",
                                          round="%{customdata[1]}", judge="%{x:.1f}", people="%{y:.1f}",
                                          raters="%{customdata[2]}") + "<extra>" + method + "</extra>"})
    rater = scatter["rater"]
    layout = base_layout(_("Judge against people, each rated reply"),
                         _("Fine score by the panel (0-100)") if rater == "panel"
                         else _("Fine score by %(judge)s (0-100)", judge=plain(rater)),
                         _("People's mean fine score (0-100)"), [0, 100])
    layout["xaxis"] = {**layout["xaxis"], "range": [0, 100]}
    layout["xaxis"].pop("dtick")
    return {"data": traces, "layout": layout}


def win_rate_figure(result: DialogueResult) -> dict:
    """Win, tie and loss rates of every pair of methods in pairwise mode (the panel's, or the one judge's) as
    stacked bars, with the 95% interval of the win rate."""
    pairwise = result["pairwise"]
    shown = pairwise.get("panel") or next(iter(pairwise["judges"].values()))
    rows = [p for p in shown["pairs"] if p["n"] and p["a"] in result["methods"] and p["b"] in result["methods"]]
    names = [plain(f"{p['a']} vs {p['b']}") for p in rows]
    traces = []
    for key, label, colour in (("win", _("Win"), "#2ca02c"), ("tie", _("Tie"), "#c7c7c7"), ("loss", _("Loss"), "#d62728")):
        trace = {"type": "bar", "orientation": "h", "name": label, "y": names, "marker": {"color": colour},
                 "x": [100 * _rates(p)[key] for p in rows],
                 "hovertemplate": "%{y}: %{x:.1f}%<extra>" + label + "</extra>"}
        if key == "win":
            errors = [_win_error(p) for p in rows]
            trace["error_x"] = {"type": "data", "symmetric": False, "color": "#333",
                                "array": [above for above, _below in errors],
                                "arrayminus": [below for _above, below in errors]}
        traces.append(trace)
    layout = base_layout(_("Pairwise preference: first method's win, tie and loss rates"), _("Share of comparisons (%)"),
                         "", [0, 100])
    layout.update(barmode="stack", height=180 + 40 * len(rows))
    layout["legend"] = {**layout["legend"], "traceorder": "normal"}
    layout["xaxis"] = {**layout["xaxis"], "range": [0, 100]}
    layout["xaxis"].pop("dtick")
    layout["yaxis"] = {"automargin": True, "autorange": "reversed"}
    return {"data": traces, "layout": layout}


def _rates(pair: PairRates) -> dict[str, float]:
    """A pair's win, tie and loss rates (a pair with outcomes has each)."""
    return {"win": pair["win"]["rate"] or 0.0, "tie": pair["tie"]["rate"] or 0.0, "loss": pair["loss"]["rate"] or 0.0}


def _win_error(pair: PairRates) -> tuple[float, float]:
    """How far the win rate's interval reaches above and below it, in %; 0 without an interval."""
    ci, rate = pair["win"]["ci95"], pair["win"]["rate"] or 0.0
    return (100 * (ci[1] - rate), 100 * (rate - ci[0])) if ci else (0, 0)


def dialogue_figures(result: DialogueResult, colours: dict[str, str] | None = None) -> dict:
    """All charts of a dialogue result page (colours by method, so a subset keeps the full result's colours); no
    BAR(k) when the rubric asks no yes/no question."""
    colours = colours or method_colours(list(result["methods"]))
    asked = result_rubric.yes_no(result_rubric.of(result))
    return {
        "al_curve": curve_figure(result, "al_curve", _("AL(k): fine score by round"), _("Mean fine score (0-100)"),
                                 colours),
        **({"binary_curve": curve_figure(result, "binary_curve", asked["curve"], asked["axis"], colours)}
           if asked else {}),
        "radar": radar_figure(result, colours),
        "length": length_figure(result, colours),
        **({"agreement": agreement_figure(result)} if result.get("by_judge") else {}),
        **({"winrate": win_rate_figure(result)} if result.get("pairwise") else {}),
        **({"people": people_figure(result, colours)} if "scatter" in result.get("agreement", {}).get("human", {})
           else {}),
    }


def overlay_figure(runs: list[dict], colours: dict[str, str], key: Curve, title: str, y_title: str) -> dict:
    """One line per (evaluation, method) of a per-round curve (`al_curve` or `binary_curve`)."""
    traces = []
    for position, run in enumerate(runs):
        style = run_style(position)
        methods: dict[str, MethodScores] = run["result"]["methods"]
        for name, m in methods.items():
            points = m[key] or []
            traces.append({
                "type": "scatter", "mode": "lines+markers", "name": plain(f"{name} · {run['label']}"),
                "legendgroup": run["id"], "meta": {"evaluation_id": run["id"], "method": name},
                "line": {"color": colours[name], "dash": style["dash"]},
                "marker": {"color": colours[name], "symbol": style["symbol"], "size": 7},
                "x": [p["round"] for p in points], "y": [p["value"] for p in points],
                "customdata": [p.get("n") for p in points],
                "hovertemplate": "k=%{x}: %{y:.1f} (n=%{customdata})<extra>%{fullData.name}</extra>"})
    layout = base_layout(title, _("Round k"), y_title, [0, 100])
    layout.update(legend=LEGEND, height=legend_height(len(traces)))
    return {"data": traces, "layout": layout}


def compare_figures(runs: list[dict], colours: dict[str, str]) -> dict:
    """The compare page's charts, keyed like the result page's: BAR(k) only when the runs share a rubric that asks a
    yes/no question."""
    results = [run["result"] for run in runs]
    asked = result_rubric.yes_no(result_rubric.of(results[0])) if result_rubric.same_rubric(results) else None
    return {
        "al_curve": overlay_figure(runs, colours, "al_curve", _("AL(k): fine score by round"),
                                   _("Mean fine score (0-100)")),
        **({"binary_curve": overlay_figure(runs, colours, "binary_curve", asked["curve"], asked["axis"])}
           if asked else {}),
    }
