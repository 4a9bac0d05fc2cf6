"""What every kind's Plotly figures share: the palette, axes and layout, the styles of runs compared, Plotly's
JavaScript. Figures are plain Plotly JSON dicts: building graph_objects validates every property and costs more
than the rest of the page."""
from __future__ import annotations

import hashlib
from pathlib import Path

import plotly
from plotly.colors import qualitative

from translations import _

PALETTE = qualitative.Plotly + qualitative.D3
# Plotly's JavaScript, served by the app (no CDN) and inlined in the offline report: plotly.js built with only the
# trace types the figures use (scatter, bar, scatterpolar, heatmap), a quarter of the full bundle; vendor/plotly-bundle/
# builds it from the same plotly.js version as the Python package's full bundle (FULL_PLOTLY_JS_FILE).
PLOTLY_JS_FILE = Path(__file__).resolve().parents[1] / "static" / "vendor" / "plotly-personasteer.min.js"
FULL_PLOTLY_JS_FILE = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


# The colours of methods (and of runs where a chart gives each run one colour): each at least 3:1 against white
# (WCAG 1.4.11, for lines and markers), and at least 28 apart in CIE Lab from every other.
METHOD_PALETTE = ("#1F77B4", "#D62728", "#2CA02C", "#9467BD", "#8C564B", "#C4458F", "#7F7F7F", "#B35C00",
                  "#0E8A9B", "#6B6B00", "#3344CC", "#00805A", "#A020C0", "#8A1C3C")


def colour_slot(name: str) -> int:
    """A name's own place in METHOD_PALETTE: from its SHA-256, so the same in every process and on every page."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % len(METHOD_PALETTE)


def method_colours(methods: list[str]) -> dict[str, str]:
    """A colour per method from its name, never from its position: the names shown together are taken in sorted
    order, each gets its own slot (colour_slot) or, when an earlier name has it, the next free one; so the same
    set of names gets the same colours in any order, and a name keeps its own colour on every page where no
    other name shown shares its slot. Only with more names than colours do two share one."""
    taken: set[int] = set()
    slots: dict[str, int] = {}
    for name in sorted(set(methods)):
        slot = colour_slot(name)
        if len(taken) < len(METHOD_PALETTE):
            while slot in taken:
                slot = (slot + 1) % len(METHOD_PALETTE)
        taken.add(slot)
        slots[name] = slot
    return {name: METHOD_PALETTE[slots[name]] for name in methods}


AXIS = {"gridcolor": "#e4e7eb", "zeroline": False, "automargin": True}
# Legends: beside the plot, where Plotly widens the right margin to hold it (charts as wide as the page); or, in
# narrow cards, a horizontal one at the foot of the figure (not of the plot area), under the x axis's title.
LEGEND = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"}
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom", "yref": "container"}


def toggle_legend() -> dict:
    """A legend at the figure's foot whose title says what a click on an entry does (Plotly hides or shows its
    trace; a double click shows it alone)."""
    return {**LEGEND_BELOW, "title": {"text": _("Click a name to hide or show it"), "side": "top",
                                      "font": {"size": 12, "color": "#616e7c"}}}


def legend_height(entries: int) -> int:
    """A figure height (px) whose plot area holds a legend of this many entries without scrolling."""
    return max(450, 22 * entries + 160)


def base_layout(title: str, x_title: str, y_title: str, y_range: list[float]) -> dict:
    """A chart's title, axes, legend and margins."""
    return {"title": {"text": title}, "xaxis": {**AXIS, "title": {"text": x_title}, "dtick": 1},
            "yaxis": {**AXIS, "title": {"text": y_title}, "range": y_range}, "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
            "legend": LEGEND_BELOW, "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
            "font": {"family": "system-ui, sans-serif"}}


def radial_angle(categories: int, rotation: float = 0) -> float:
    """The direction (degrees, counterclockwise from east) of a radar's radial axis: halfway between two
    neighbouring categories (over neither's label), the halfway line nearest to upright, so that its horizontal tick
    labels stack one above the other instead of running into each other along a slanted line."""
    step = 360 / categories
    halfway = [(rotation + step / 2 + k * step) % 360 for k in range(categories)]
    return min(halfway, key=lambda angle: (abs(angle - 90), angle))


def polar(categories: int, radial: dict, rotation: int = 0) -> dict:
    """A radar's polar axes: the radial axis and its tick labels between two categories, upright (radial_angle),
    and the circle kept off the plot area's foot, where the lowest category's label goes (Plotly leaves labels out
    of its margins, and a legend under the chart would cover it)."""
    angle = radial_angle(categories, rotation)
    return {"domain": {"x": [0, 1], "y": [0.14, 1]},
            # Plotly turns the tick labels with the axis; turned back by its angle, they read horizontally.
            "radialaxis": {"gridcolor": "#e4e7eb", "angle": angle, "tickangle": angle,
                           "tickfont": {"size": 10, "color": "#616e7c"}, **radial},
            "angularaxis": {"gridcolor": "#e4e7eb", "rotation": rotation, "direction": "counterclockwise"}}


def count_axis(most: float, ticks: int = 8) -> dict:
    """A y axis of counts: ticks on whole numbers only (1, 2, 5, 10, 20, 50 .. apart, at most `ticks` of them) from
    zero, so a chart of a few items never shows 0.5 of one."""
    step = 1
    while most / step > ticks:
        step = next(s * 10 ** e for e in range(20) for s in (1, 2, 5) if s * 10 ** e > step)
    return {**AXIS, "dtick": step, "tick0": 0, "rangemode": "tozero", "tickformat": ",d"}


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


def plain(text: str) -> str:
    """Text shown literally by Plotly, which reads <b>, <a href> and the like in names as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
