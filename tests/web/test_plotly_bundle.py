"""The partial Plotly bundle the pages load (static/vendor/plotly-personasteer.min.js, built by vendor/plotly-bundle/): the
same plotly.js as the Python package's full bundle, the trace types every figure builder uses, no eval, a quarter
of the size. The browser tests draw every kind's charts with it (tests/web/test_browser.py)."""
from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess

import pytest

from kinds.figures import FULL_PLOTLY_JS_FILE, PLOTLY_JS_FILE
from tests.conftest import ROOT

RECIPE = ROOT / "vendor" / "plotly-bundle"
HEADER_VERSION = re.compile(r"\A/\*\*\n\* plotly\.js (?:\([^)]*\) )?v(\d+\.\d+\.\d+)\n")


def registered_traces() -> set[str]:
    """The trace types entry.js registers, and scatter, which plotly.js's core always holds."""
    entry = (RECIPE / "entry.js").read_text("utf-8")
    return {"scatter"} | set(re.findall(r"require\('plotly\.js/lib/(\w+)'\)", entry)) - {"core"}


def test_the_bundle_is_the_python_packages_plotly_js_version_with_its_licence():
    partial, full = PLOTLY_JS_FILE.read_text("utf-8"), FULL_PLOTLY_JS_FILE.read_text("utf-8")
    version = HEADER_VERSION.match(full).group(1)
    assert HEADER_VERSION.match(partial).group(1) == version, "rebuild it: see vendor/plotly-bundle/README.md"
    assert "Licensed under the MIT license" in partial[:300]
    recipe = json.loads((RECIPE / "package.json").read_text("utf-8"))
    assert recipe["devDependencies"]["plotly.js"] == version
    lock = json.loads((RECIPE / "package-lock.json").read_text("utf-8"))
    assert lock["packages"]["node_modules/plotly.js"]["version"] == version


def test_every_trace_type_the_figure_builders_use_is_registered():
    used = set()
    for path in (ROOT / "kinds").rglob("figures.py"):
        used |= set(re.findall(r'"type": "(\w+)"', path.read_text("utf-8")))
    used.discard("data")  # error bars' "type": "data" (part of scatter and bar), not a trace type
    assert used == registered_traces() == {"scatter", "bar", "scatterpolar", "heatmap"}


def test_the_bundle_is_a_quarter_of_the_full_one_and_runs_under_the_policy():
    partial, full = PLOTLY_JS_FILE.read_bytes(), FULL_PLOTLY_JS_FILE.read_bytes()
    assert len(partial) < 0.3 * len(full)
    assert len(gzip.compress(partial)) < 500 * 1024
    assert b"eval(" not in partial and b"new Function" not in partial  # script-src 'self', no 'unsafe-eval'


def test_the_committed_bundle_is_what_the_recipe_builds(tmp_path):
    if not (RECIPE / "node_modules" / "esbuild").exists() or not shutil.which("node"):
        pytest.skip("vendor/plotly-bundle/node_modules is not installed (`npm ci` there, see its README.md)")
    out = tmp_path / "plotly.min.js"
    subprocess.run(["node", "build.mjs", str(out)], cwd=RECIPE, check=True, capture_output=True, timeout=120)
    assert out.read_bytes() == PLOTLY_JS_FILE.read_bytes()
