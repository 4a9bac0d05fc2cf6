"""Benchmark kinds and what they share.

`kind.py` is the interface every kind implements, `host.py` the plug-in API (all a kind may use of the app),
`registry.py` the one place that registers them; each kind is a package (`dialogue/`, `mobility/`, `conversation/`,
`agentbench/`) holding its format, metrics, figures, templates and the tables only it keeps. Shared: `problems.py`
(validation reports), `readers/` (JSON Lines, hard input limits, ZIP members), `stats.py` (the math), `figures.py`
(Plotly basics). What kinds use of the judge (prompts, verdicts, judgment keys, the judge block of a result) they
import from the `judge` package.
"""
