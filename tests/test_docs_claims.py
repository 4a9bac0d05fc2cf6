"""Claims the manual (README.md, docs/*.md, the folders' README.md) and the code's docstrings make about the code,
checked against it:

- every route a docstring, a comment or the manual names is one the app has;
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.benchmarks.test_boundaries import MODULES
from tests.doc_commands import DOCS, README, ROOT

LAYOUT = DOCS / "layout.md"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _where(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- routes -------------------------------------------------------------------------------------------------------

PLACEHOLDER = "\x01"  # what <id>, <evaluation id>, {evaluation_id} of a text become: any one segment
ROUTE = re.compile(r"(?<![\w.\x01/-])/[\w\x01.-]+(?:/[\w\x01.-]+)*")


def product_texts() -> list[tuple[str, str]]:
    """(where, text) of every docstring and comment of the product's modules, and of every page of the manual."""
    texts = []
    for path in MODULES.values():
        source = _text(path)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node, clean=False)
                if docstring:
                    texts.append((f"{_where(path)}:{getattr(node, 'lineno', 1)}", docstring))
        texts += [(f"{_where(path)}:{token.start[0]}", token.string)
                  for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT]
    return texts + [(_where(page), _text(page)) for page in [README, *sorted(DOCS.glob("*.md"))]]


def _segment(part: str) -> str:
    """The regular expression of one piece of a Flask rule: a literal, or a placeholder by its converter."""
    if not part.startswith("<"):
        return re.escape(part)
    converter = part[1:-1].split(":")[0] if ":" in part else ""
    if converter.startswith("any("):
        choices = [choice.strip().strip("'\"") for choice in converter[4:-1].split(",")]
        return "(?:" + "|".join([*map(re.escape, choices), PLACEHOLDER]) + ")"
    return {"path": ".+", "int": rf"(?:\d+|{PLACEHOLDER})"}.get(converter, "[^/]+")


def route_patterns(app) -> tuple[set[str], list[re.Pattern]]:
    """The first segments of the app's rules, and a pattern for each rule and each of its leading parts (so that
    `/api` and `/share/<token>` are routes too: the beginnings of some)."""
    firsts, patterns = set(), []
    for rule in app.url_map.iter_rules():
        parts = rule.rule.split("/")
        firsts.add(parts[1])
        for end in range(2, len(parts) + 1):
            pattern = "".join(_segment(piece) for piece in re.split(r"(<[^>]+>)", "/".join(parts[:end])))
            patterns.append(re.compile(pattern))
    return firsts, patterns


def named_routes(text: str, firsts: set[str]) -> list[str]:
    """The routes a text names: paths that start as one of the app's rules does, placeholders made one."""
    text = re.sub(r"\{[\w ]{1,40}\}", PLACEHOLDER, re.sub(r"<[^<>\n]{1,40}>", PLACEHOLDER, text))
    found = (match.group().rstrip("./") for match in ROUTE.finditer(text))
    return [path for path in found if path.split("/")[1] in firsts]


@pytest.fixture(scope="module")
def routes(tmp_path_factory):
    from app import create_app

    folder = tmp_path_factory.mktemp("routes")
    app = create_app({"TESTING": True, "SECRET_KEY": "test", "DATABASE": str(folder / "test.sqlite"),
                      "UPLOAD_FOLDER": str(folder / "uploads"), "RESULTS_FOLDER": str(folder / "results"),
                      "RESUME_ON_START": False, "JUDGE_ENV": {}, "DATABASE_URL": None, "CELERY_BROKER_URL": ""})
    return route_patterns(app)


def _missing(path: str, patterns: list[re.Pattern]) -> bool:
    return not any(pattern.fullmatch(path) for pattern in patterns)


def test_the_route_check_finds_routes_and_tells_a_missing_one(routes):
    firsts, patterns = routes
    named = named_routes("`POST /api/evaluations/<id>/rerun-failed`, {evaluation_id}: /share/<token>/view/<name>."
                         " /tmp/x, /resume", firsts)
    assert named == [f"/api/evaluations/{PLACEHOLDER}/rerun-failed", f"/share/{PLACEHOLDER}/view/{PLACEHOLDER}"]
    assert not any(_missing(path, patterns) for path in named)
    assert _missing(named_routes("(`/api/evaluations/<id>/samples`)", firsts)[0], patterns)
    assert _missing("/evaluations/e1/action", patterns) and not _missing("/evaluations/e1/resume", patterns)


def test_every_route_a_docstring_a_comment_or_the_manual_names_exists(routes):
    firsts, patterns = routes
    named = [(where, path) for where, text in product_texts() for path in named_routes(text, firsts)]
    assert len(named) > 100 and len({where.split(":")[0] for where, _path in named}) > 20
    assert [(where, path.replace(PLACEHOLDER, "<id>")) for where, path in named if _missing(path, patterns)] == []
