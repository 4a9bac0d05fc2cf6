"""Shared fixtures: an app on a temporary store, its clients, and the local judge server."""
from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import sys
import time
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

# Imported while collecting, before any test starts a thread: Python 3.11.7 corrupts its AST-building state
# when two threads parse at once (a traceback printed on a background thread parses its source line), and
# Hypothesis' pytest plugin would otherwise import, and so parse, its modules only at the end of the session.
import hypothesis  # noqa: F401
import pytest

from app import create_app
from tests.judge_server import judge_server  # noqa: F401  (fixture)
from tests.services import postgres_server, redis_server, s3_server, s3_storage  # noqa: F401

# The session's own work (tests/suite.py): `npm ci` where the audits' packages are missing, no skip while CI is set,
# no file of the work tree changed by the run.
pytest_plugins = ["tests.suite"]

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


# The product hashes passwords with werkzeug's scrypt at its default cost (N=2**15, 32 MiB: about 0.1 s of CPU per
# hash or check, on purpose). The suite makes and checks a few hundred of them, so in this process it hashes with the
# same scrypt at N=2**10; a hash names its own cost, so checking one reads it from the hash. Servers the tests start
# as subprocesses keep the product's cost. tests/web/test_auth.py checks the product's own method and cost.
TEST_PASSWORD_METHOD = "scrypt:1024:8:1"


@pytest.fixture(autouse=True, scope="session")
def cheap_password_hashes():
    """Accounts made in this process hash at TEST_PASSWORD_METHOD's cost instead of the product's (which it gives)."""
    from web import accounts

    product = accounts.PASSWORD_METHOD
    accounts.PASSWORD_METHOD = TEST_PASSWORD_METHOD
    accounts._dummy_hash.cache_clear()
    yield product
    accounts.PASSWORD_METHOD = product
    accounts._dummy_hash.cache_clear()


@pytest.fixture(autouse=True, scope="session")
def url_builders_compiled_once():
    """Each route's URL builders are compiled once per test process instead of once per app.

    Werkzeug compiles two URL-building functions per route (Python built as a syntax tree, then compile()); the
    app's rules do so when a URL is first built from them (web/url_rules.py), so each app that renders pages pays
    again for those it uses, and the suite makes over 800 apps. A builder is a pure function of the route's text,
    its parsed parts and the names of its defaults, which make the key; a route whose default fills a part of its
    path (a value put through a converter) is compiled each time, as before."""
    from werkzeug.routing.rules import Rule

    compile_builder = Rule._compile_builder
    built: dict[tuple, object] = {}

    def compiled_once(rule: Rule, append_unknown: bool = True):
        defaults = rule.defaults or {}
        if any(dynamic and part in defaults for dynamic, part in rule._trace):
            return compile_builder(rule, append_unknown)
        key = (rule.rule, tuple(rule._trace), tuple(defaults), append_unknown)
        if key not in built:
            built[key] = compile_builder(rule, append_unknown)
        return built[key]

    Rule._compile_builder = compiled_once
    yield
    Rule._compile_builder = compile_builder


@pytest.fixture(autouse=True)
def no_csp_violations():
    """Fails any test during which a browser page reported a Content-Security-Policy violation."""
    support = sys.modules.get("tests.browser_support")  # loaded by the browser tests only
    if support is not None:
        support.csp_violations.clear()
    yield
    if support is not None:
        support.check_csp_violations()


SHARED_BROWSER: list = []  # the test process's Chromium, once a test has started it


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, launched once per test process (xdist worker) for all the browser tests it runs, instead of
    once per module or test (19 launches a run, about 1.2 s of the machine's CPU each with Playwright's driver)."""
    from playwright.sync_api import sync_playwright

    from tests.browser_support import launch_chromium

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        SHARED_BROWSER.append(chromium)
        yield chromium
        SHARED_BROWSER.clear()
        chromium.close()


@contextmanager
def browser_loop_set_aside(uses_browser: bool) -> Iterator[None]:
    """Runs what follows without the shared browser's event loop, unless it drives the browser.

    While Playwright's sync API is started it leaves its asyncio loop set as the thread's running loop, so an
    `asyncio.run()` of the product (the judge's client) in this thread would refuse to start; Playwright's own
    calls need it set."""
    loop = asyncio._get_running_loop()
    if uses_browser or loop is None:
        yield
        return
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(loop)


@pytest.fixture(autouse=True, scope="module")
def browser_kept_to_its_modules(request):
    """A module none of whose tests drives the browser runs, fixtures included, without the browser's event loop; the
    browser contexts a module opened (cookies, storage, pages still polling its servers) are closed at its end, as
    when each module launched a browser of its own."""
    uses_browser = any("browser" in item.fixturenames for item in request.session.items if item.module is request.module)
    with browser_loop_set_aside(uses_browser):
        yield
    for chromium in SHARED_BROWSER:
        for context in chromium.contexts:
            context.close()


@pytest.fixture(autouse=True)
def browser_kept_to_its_tests(request):
    """A test that does not drive the browser runs without its event loop, also in a module whose others do."""
    with browser_loop_set_aside("browser" in request.fixturenames):
        yield


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory) -> Path:
    """A SQLite store the app has just made and migrated to the current schema (nothing else in it), as one file.
    make_app starts its stores as copies of it: the 21 schema steps run once per test process, not once per app."""
    folder = tmp_path_factory.mktemp("migrated")
    create_app({"TESTING": True, "SECRET_KEY": "test", "DATABASE": str(folder / "made.sqlite"),
                "UPLOAD_FOLDER": str(folder / "uploads"), "RESULTS_FOLDER": str(folder / "results"),
                "RESUME_ON_START": False, "DATABASE_URL": None, "CELERY_BROKER_URL": ""})
    made, copy = sqlite3.connect(folder / "made.sqlite"), sqlite3.connect(folder / "store.sqlite")
    with made, copy:
        made.backup(copy)  # one consistent file, the write-ahead log folded in
    made.close()
    copy.close()
    return folder / "store.sqlite"


@pytest.fixture
def make_app(tmp_path, migrated_sqlite):
    """Factory for apps on a fresh database and folders; judge settings come from `env`."""
    def make(env: dict | None = None, **config):
        database = tmp_path / "test.sqlite"
        if not ({"DATABASE", "DATABASE_URL"} & config.keys() or database.exists()):
            shutil.copyfile(migrated_sqlite, database)
        return create_app({
            "TESTING": True,
            "SECRET_KEY": "test",
            "DATABASE": str(tmp_path / "test.sqlite"),
            "UPLOAD_FOLDER": str(tmp_path / "uploads"),
            "RESULTS_FOLDER": str(tmp_path / "results"),
            "JUDGE_KEY_FILE": str(tmp_path / "judge_api_key"),
            "RESUME_ON_START": False,
            "WTF_CSRF_ENABLED": False,
            "JUDGE_ENV": env or {},
            # the developer's own deployment settings never reach the tests' apps
            "DATABASE_URL": None, "CELERY_BROKER_URL": "",
            **config,
        })
    return make


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """Where a store lives, once per database: a SQLite file, or a fresh PostgreSQL database (skipped, with the
    reason, when PostgreSQL is not installed)."""
    if request.param == "sqlite":
        return str(tmp_path / "store.sqlite")
    return request.getfixturevalue("postgres_server").url()


@pytest.fixture
def judge_env(judge_server):  # noqa: F811
    """Environment that points the judge at the local server."""
    return {"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test-secret-key", "JUDGE_MODEL": "judge-test",
            "JUDGE_CONCURRENCY": "4", "JUDGE_MAX_RETRIES": "2", "JUDGE_TIMEOUT_S": "5"}


@pytest.fixture
def app(make_app, judge_env):
    """An app whose judge is the local server."""
    return make_app(judge_env)


@pytest.fixture
def client(app):
    """Flask test client."""
    return app.test_client()


@pytest.fixture
def runner(app):
    """Flask CLI runner."""
    return app.test_cli_runner()


def session_line(session_id: str = "s1", rounds: int = 3, methods=("A", "B"), **extra) -> dict:
    """A valid dialogue session with replies that carry [[score=..]] markers for the local judge."""
    return {"session_id": session_id, "user_profile": "A 30-year-old nurse who runs marathons.",
            "user_personality": "Cheerful and direct.",
            "rounds": [{"round": k, "user_message": f"message {k}",
                        "responses": {m: f"reply {k} from {m}" for m in methods}} for k in range(1, rounds + 1)],
            **extra}


class _ElementCount(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def handle_starttag(self, tag, attrs) -> None:
        self.count += 1


def element_count(html: str) -> int:
    """The number of elements of an HTML text."""
    counter = _ElementCount()
    counter.feed(html)
    return counter.count


def marked(session: dict, marker: str) -> dict:
    """The session with a marker for the local judge (tests/judge_server.py, e.g. "[[dims=6,6,6]]") after every reply."""
    for rnd in session["rounds"]:
        rnd["responses"] = {m: f"{reply} {marker}" for m, reply in rnd["responses"].items()}
    return session


def jsonl(*sessions: dict) -> bytes:
    """Sessions as JSONL bytes."""
    return "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sessions).encode("utf-8")


def wait_for(client, evaluation_id: str, timeout: float = 30.0) -> dict:
    """Poll the API until the evaluation leaves queued/running; returns the last body."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/api/evaluations/{evaluation_id}").get_json()
        if body["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def wait_rescored(client, evaluation_id: str, timeout: float = 30.0) -> dict:
    """Poll the API until the evaluation's rescore job (pipeline/rescores.py) is over; its last state."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/api/evaluations/{evaluation_id}/rescore").get_json()
        if body.get("status") not in ("queued", "running") or time.monotonic() > deadline:
            return body
        time.sleep(0.02)


@pytest.fixture
def builtin_two(tmp_path, monkeypatch):
    """The built-in personas replaced by two of the simulation tests' (P2 gives a scenario and an opening)."""
    from tests.simulate.support import P1, P2, use_as_builtin

    use_as_builtin(tmp_path, monkeypatch, P1, P2)
