"""Each kind package's README.md against its code: a newcomer finds any metric's definition from it.

- every kind package (a folder of kinds/ with a kind.py) has a README.md; a kind that scores (it has a
  metrics.py) has a "## Metrics" table whose
  rows read name | definition | function, the function cell naming a module as a link and its functions in
  backticks ("[metrics.py](metrics.py) `score`"), or each as "`kinds/<kind>/metrics.py:score`";
- every function a row names exists in the module it links;
- every public function of the package's metrics.py has a row;
- a kind that scores nothing (personas) says so under its "## Metrics";
- every relative link of the README reaches a file, and its #anchor a heading.
"""
from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from tests.doc_commands import ROOT
from tests.test_docs import LINK, _without_code_blocks, anchors

BENCHMARKS = ROOT / "kinds"
KIND_PACKAGES = sorted(path.parent.name for path in BENCHMARKS.glob("*/kind.py"))
DOCUMENTED = [name for name in KIND_PACKAGES if (BENCHMARKS / name / "README.md").exists()]
SCORED = [name for name in DOCUMENTED if (BENCHMARKS / name / "metrics.py").exists()]
CITATION = re.compile(r"\[[^\]]*\]\(([^)\s]+\.py)\)((?:\s*,?\s*`[A-Za-z_][\w.]*`)+)")  # relative to the README
QUALIFIED = re.compile(r"`([\w/]+\.py):([A-Za-z_][\w.]*)`")  # relative to the repository
RULE = re.compile(r"\|[\s:|-]+\|")


def readme(kind: str) -> Path:
    return BENCHMARKS / kind / "README.md"


def metric_rows(kind: str) -> list[list[str]]:
    """The cells of each row of the README's "## Metrics" table (its header and rule left out)."""
    text = _without_code_blocks(readme(kind).read_text(encoding="utf-8"))
    section = text.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split(" | ")]
            for line in section.splitlines() if line.startswith("|") and not RULE.fullmatch(line.strip())]
    return [row for row in rows if row != ["name", "definition", "function"]]


def cited(kind: str, cell: str) -> list[tuple[str, str]]:
    """(module name, function name) of every function a cell names."""
    out = []
    for path, names in CITATION.findall(cell):
        module = (readme(kind).parent / path).resolve().relative_to(ROOT).with_suffix("")
        out += [(".".join(module.parts), name) for name in re.findall(r"`([^`]+)`", names)]
    for path, name in QUALIFIED.findall(cell):
        out.append((".".join(Path(path).with_suffix("").parts), name))
    return out


def test_the_kind_packages_are_found():
    assert set(KIND_PACKAGES) == {"agentbench", "conversation", "dialogue", "mobility", "personas"}
    assert set(SCORED) == {"agentbench", "conversation", "dialogue", "mobility"}


def test_every_kind_package_has_a_readme():
    assert sorted(set(KIND_PACKAGES) - set(DOCUMENTED)) == []


@pytest.mark.parametrize("kind", SCORED)
def test_every_metric_row_names_a_function_that_exists(kind):
    rows = metric_rows(kind)
    assert len(rows) >= 5
    for row in rows:
        assert len(row) == 3, f"{kind}: {row} is not name | definition | function"
        functions = cited(kind, row[2])
        assert functions, f"{kind}: the row {row[0]} names no function"
        for module_name, name in functions:
            target = importlib.import_module(module_name)
            for part in name.split("."):
                target = getattr(target, part, None)
                assert target is not None, f"{kind}: {module_name} has no {name} (row {row[0]})"
            assert callable(target), f"{kind}: {module_name}.{name} is not a function"


@pytest.mark.parametrize("kind", sorted(set(DOCUMENTED) - set(SCORED)))
def test_a_kind_that_scores_nothing_says_so(kind):
    section = readme(kind).read_text(encoding="utf-8").split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    assert section.lstrip().startswith("None: ") and "not scored" in section
    assert "|" not in section


@pytest.mark.parametrize("kind", SCORED)
def test_every_public_metric_function_has_a_row(kind):
    module_name = f"kinds.{kind}.metrics"
    module = importlib.import_module(module_name)
    public = {name for name, value in inspect.getmembers(module, inspect.isfunction)
              if not name.startswith("_") and value.__module__ == module_name}
    named = {name for row in metric_rows(kind) for found, name in cited(kind, row[2]) if found == module_name}
    assert public, f"{module_name} has no public function"
    assert sorted(public - named) == [], f"{kind}/README.md lacks rows for these functions of metrics.py"


@pytest.mark.parametrize("kind", DOCUMENTED)
def test_every_relative_link_of_a_kind_readme_resolves(kind):
    page = readme(kind)
    for target in LINK.findall(_without_code_blocks(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        address, _, anchor = target.partition("#")
        file = (page.parent / address).resolve() if address else page
        assert file.is_relative_to(ROOT) and file.exists(), f"{kind}/README.md: {target} names a missing file"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{kind}/README.md: {target} names no heading of {file.name}"
