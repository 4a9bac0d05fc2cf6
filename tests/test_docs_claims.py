"""Claims the manual (README.md, docs/*.md, the folders' README.md) and the code's docstrings make about the code,
checked against it:

- every route a docstring, a comment or the manual names is one the app has;
- the retry tables of docs/judge.md say what judge/retry.py retries and how long it waits, and the judge does so
  through each status the local test server can answer;
- the libraries docs/layout.md and common/README.md say common/lazy_modules.py loads on first use are those
  `lazy(...)` is called with;
- every module of the core and of the plug-in API is in the layout's code tree, every module of a kind in its
  README.md;
- a folder the layout says has no Flask imports none, but in the modules it names;
- results/<id>.json is a copy: the API answers the database's;
- the README's Documentation list links each page of docs/ once.
"""
from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import httpx2
import openai
import pytest

from judge.retry import MAX_WAIT_S, RETRYABLE_STATUSES, backoff_s, is_retryable, retry_after_s
from tests.conftest import jsonl, session_line, wait_for
from tests.doc_commands import DOCS, README, ROOT, section
from tests.judge.test_evaluator import ctx, make_judge, prompt
from tests.judge_server import ERROR_STATUSES
from tests.kinds.test_boundaries import MODULES

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


# --- the judge's retries --------------------------------------------------------------------------------------------

RETRY_HEADING = "What is retried, and the waits"


def tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of a text: each a list of rows (its header and separator left out), each row its cells."""
    found, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            found.append(rows[2:])
            rows = []
    return found


def status_error(status: int, headers: dict | None = None) -> openai.APIStatusError:
    """The SDK's exception for an HTTP answer of `status`, as the judge's client raises it."""
    request = httpx2.Request("POST", "http://judge.test/v1/chat/completions")
    return openai.APIStatusError(f"Error code: {status}", response=httpx2.Response(status, headers=headers,
                                                                                   request=request), body=None)


def documented_retries() -> dict[str, list[tuple[str, set[int]]]]:
    """The first table of the retries section: for each verdict (retries, fails at once), its rows' text and the HTTP
    statuses each names (`500 to 599` is each of them)."""
    verdicts: dict[str, list[tuple[str, set[int]]]] = {}
    for failure, verdict in tables(section(DOCS / "judge.md", RETRY_HEADING))[0]:
        statuses = {int(s) for s in re.findall(r"\b([1-5]\d\d)\b", failure)}
        for low, high in re.findall(r"\b(\d{3}) to (\d{3})\b", failure):
            statuses |= set(range(int(low), int(high) + 1))
        verdicts.setdefault(verdict, []).append((failure, statuses))
    return verdicts


def test_the_retry_table_says_which_statuses_the_judge_retries():
    verdicts = documented_retries()
    assert set(verdicts) == {"retries", "fails at once"}
    retried = set().union(*(statuses for _row, statuses in verdicts["retries"]))
    named_4xx = {status for status in retried if status < 500}
    assert named_4xx == RETRYABLE_STATUSES  # a status added to the code and not to the table fails here
    others = [row for row, statuses in verdicts["fails at once"] if row.startswith("any other HTTP status")]
    assert len(others) == 1
    for status in range(400, 600):  # the table holds every status: those it names, and "any other"
        assert is_retryable(status_error(status)) == (status in retried), status
    request = httpx2.Request("POST", "http://judge.test/v1/chat/completions")
    [connection] = [row for row, statuses in verdicts["retries"] if not statuses]
    assert "timeout" in connection and "connection" in connection
    assert is_retryable(openai.APITimeoutError(request)) and is_retryable(openai.APIConnectionError(request=request))
    [refusal] = [row for row, _statuses in verdicts["fails at once"] if "x-should-retry: false" in row]
    assert not any(is_retryable(status_error(status, {"x-should-retry": "false"})) for status in (408, 429, 503))


def test_the_wait_table_says_how_long_the_judge_waits():
    waits = {failure: wait for failure, wait in tables(section(DOCS / "judge.md", RETRY_HEADING))[1]}
    asked = next(failure for failure in waits if failure.startswith("asks for a wait"))
    assert "`retry-after-ms`, else `Retry-After` in seconds or as an HTTP date" in asked
    assert retry_after_s({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    assert retry_after_s({"Retry-After": "3"}) == 3.0
    assert retry_after_s({"Retry-After": "Thu, 01 Jan 1970 00:01:40 GMT"}, now=90.0) == 10.0
    assert retry_after_s({}) is None
    assert waits["asks for none"] == ("full jitter: uniform in [0, min(`JUDGE_RETRY_MAX_S`, `JUDGE_RETRY_BASE_S` x "
                                      "2^k)]")

    class Bounds:
        def uniform(self, low: float, high: float) -> float:
            return high if low == 0.0 else -1.0

    assert [backoff_s(k, 0.5, 30.0, Bounds()) for k in range(8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert waits["either"] == f"at most {MAX_WAIT_S:g} s"


@pytest.mark.parametrize("kind", [*ERROR_STATUSES, "timeout", "drop"])
def test_the_judge_does_what_the_retry_table_says(judge_server, kind):
    verdicts = documented_retries()
    if kind in ERROR_STATUSES:
        retried = any(int(kind) in statuses for _row, statuses in verdicts["retries"])
    else:  # a timeout, a dropped connection
        retried = any(not statuses for _row, statuses in verdicts["retries"])
    judge_server.retry_after_s = 0.01
    judge_server.hang_s = 5
    judge_server.fail_next(1, kind)
    with make_judge(judge_server, max_retries=1, timeout_s=0.5 if kind == "timeout" else 5.0) as judge:
        verdict = judge.judge(prompt("fine", ctx(), "en"))
    if retried:
        assert verdict.status == "ok" and verdict.attempts == 2 and judge_server.requests == 2
    else:
        assert verdict.status == "failed" and verdict.attempts == 1 and judge_server.requests == 1
        assert verdict.error.endswith("(1 attempt; this error is not retried)")


# --- what is loaded on first use, and where Flask is --------------------------------------------------------------

def lazily_loaded() -> set[str]:
    """The modules the product's code hands to common.lazy_modules.lazy(...)."""
    names = set()
    for path in MODULES.values():
        for node in ast.walk(ast.parse(_text(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy":
                assert isinstance(node.args[0], ast.Constant), f"{_where(path)}:{node.lineno}: lazy() of a name"
                names.add(node.args[0].value)
    return names


@pytest.mark.parametrize("page, claim", [
    (LAYOUT, r"lazy_modules\.py\s+lazy\(name\): a heavy library \(([^)]*)\)"),
    (ROOT / "common" / "README.md", r"`lazy_modules\.py` loads heavy libraries\s+\(([^)]*)\)"),
])
def test_the_libraries_said_to_load_on_first_use_are_those_lazy_loads(page, claim):
    listed = re.search(claim, _text(page))
    assert listed, f"{_where(page)} no longer lists what lazy_modules.py loads"
    assert {name.strip() for name in listed.group(1).split(",")} == lazily_loaded() == {
        "openai", "httpx2", "numpy", "pandas", "markdown_it", "nh3", "jsonschema"}


def code_tree() -> dict[str, str]:
    """The code tree of docs/layout.md: each top-level folder's description (its continuation lines joined)."""
    block = _text(LAYOUT).split("## The code", 1)[1].split("```")[1]
    described: dict[str, str] = {}
    folder = None
    for line in block.splitlines():
        match = re.match(r"(\w+)/\s+(.*)", line)
        if match:
            folder = match.group(1)
            described[folder] = match.group(2)
        elif folder and re.match(r"\s{20}\S", line):
            described[folder] += " " + line.strip()
        else:
            folder = None if not line.startswith(" ") else folder
    return described


def flask_importers(folder: str) -> set[str]:
    """The modules of a folder that import Flask or one of its extensions."""
    found = set()
    for path in (ROOT / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(_text(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            if any(name.split(".")[0] in ("flask", "flask_babel", "flask_wtf") for name in names):
                found.add(_where(path).removeprefix(f"{folder}/"))
    return found


def test_every_module_is_in_the_code_tree_and_every_kinds_in_its_readme():
    tree = _text(LAYOUT).split("## The code", 1)[1].split("```")[1]
    unnamed = []
    for folder in ("common", "judge", "storage", "pipeline", "simulate", "web", "kinds", "kinds/readers"):
        for path in sorted((ROOT / folder).glob("*.py")):
            named = path.name in tree or folder == "web" and re.search(rf"\b{path.stem}\b", tree)
            unnamed += [] if named or path.stem == "__init__" else [_where(path)]
    for readme in sorted((ROOT / "kinds").glob("*/README.md")):
        unnamed += [_where(path) for path in sorted(readme.parent.glob("*.py"))
                    if path.stem != "__init__" and f"`{path.name}`" not in _text(readme)]
    assert unnamed == []


def test_a_folder_said_to_have_no_flask_imports_it_only_where_it_says():
    claims = {folder: text for folder, text in code_tree().items() if "no Flask" in text}
    assert set(claims) >= {"pipeline", "simulate"}
    for folder, text in claims.items():
        but = re.search(r"no Flask but in ([\w., ]+?)\s*\(", text)
        allowed = set(re.findall(r"\w+\.py", but.group(1))) if but else set()
        assert flask_importers(folder) == allowed, f"docs/layout.md, {folder}/: {text}"


# --- where results are read from ----------------------------------------------------------------------------------

def test_the_result_file_is_a_copy_and_the_api_answers_the_databases(client, app):
    claim = ("`results/<evaluation id>.json`: the result document of each finished evaluation, a copy for people and "
             "tools outside the dashboard: the API, the pages and the `.json` export read the copy kept in the database")
    assert claim in " ".join(_text(LAYOUT).split())
    upload = client.post("/api/uploads", data={"file": (io.BytesIO(jsonl(session_line())), "log.jsonl")})
    evaluation_id = client.post("/api/evaluations", json={"upload_id": upload.get_json()["id"]}).get_json()["id"]
    assert wait_for(client, evaluation_id)["status"] == "done"
    document = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    written = Path(app.config["RESULTS_FOLDER"]) / f"{evaluation_id}.json"
    assert json.loads(_text(written)) == document
    written.unlink()
    assert client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"] == document
    assert client.get(f"/evaluations/{evaluation_id}.json").get_json() == document
    assert client.get(f"/evaluations/{evaluation_id}").status_code == 200


# --- the README's list of the manual ------------------------------------------------------------------------------

def test_the_readme_lists_each_page_of_the_manual_once():
    listed = re.findall(r"\]\(docs/([\w-]+\.md)\)", section(README, "Documentation"))  # a page, not one of its parts
    pages = sorted(page.name for page in DOCS.glob("*.md"))
    assert sorted(listed) == pages, {page: listed.count(page) for page in pages if listed.count(page) != 1}


def test_the_team_page_gives_a_blocks_lease_and_its_renewal_as_the_code_has_them():
    from pipeline.celery_tasks import DEFAULT_VISIBILITY_TIMEOUT, LEASE_S, lease_seconds

    assert lease_seconds({}) == LEASE_S < DEFAULT_VISIBILITY_TIMEOUT / 2  # under the default visibility timeout
    said = f"({LEASE_S:.0f} s, renewed every {LEASE_S / 3:.0f} s: a killed worker's block is free again within " \
           f"{LEASE_S:.0f} s)"
    assert said in " ".join(_text(DOCS / "team-deployment.md").split())
