"""Helpers for the browser tests: a real dashboard server in a subprocess, and Debian's Chromium.

Used by tests/web/test_browser.py (its pytest fixtures and its `--screenshots` mode). Playwright never
downloads a browser here: it drives the Chromium at CHROMIUM.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from tests.conftest import ROOT


def _chromium() -> Path:
    """CHROMIUM_PATH if set; else Debian's headless build of Chromium (package `chromium-headless-shell`: the same
    engine without the desktop browser's UI processes, a quarter less CPU per page) or, without it, `chromium`."""
    if "CHROMIUM_PATH" in os.environ:
        return Path(os.environ["CHROMIUM_PATH"])
    shell = Path("/usr/bin/chromium-headless-shell")
    return shell if shell.exists() else Path("/usr/bin/chromium")


CHROMIUM = _chromium()
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 900}
SAMPLE = ROOT / "sample_data.jsonl"
LOCAL_HOSTS = ("127.0.0.1", "localhost")
# Content-Security-Policy violations, from every page of every context made by new_context: Chromium's own
# console report ("... violates the following Content Security Policy directive ...", "Refused to ...") and,
# through CSP_LISTENER, each `securitypolicyviolation` event (also one that a page's script caught).
# tests/conftest.py fails the test during which any was seen.
CSP_MARKERS = ("Content Security Policy", "Content-Security-Policy", "Refused to")
CSP_LISTENER = """document.addEventListener("securitypolicyviolation", function (e) {
  console.error("Content Security Policy violation: " + e.violatedDirective + " blocked " +
                (e.blockedURI || "inline code") + " at " + e.sourceFile + ":" + e.lineNumber);
});"""
csp_violations: list[str] = []

SERVE = """
import sys, json
from app import create_app
app = create_app(json.loads(sys.argv[1]))
app.run(host="127.0.0.1", port=int(sys.argv[2]), threaded=True, use_reloader=False)
"""


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def judge_environment(judge_url: str) -> dict[str, str]:
    """The server's environment: ours without any judge settings, plus the local judge's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_"))}
    env.update({"JUDGE_BASE_URL": judge_url, "JUDGE_API_KEY": "sk-browser-test", "JUDGE_MODEL": "judge-test",
                "JUDGE_CONCURRENCY": "4", "JUDGE_MAX_RETRIES": "2", "JUDGE_TIMEOUT_S": "10",
                "PYTHONUNBUFFERED": "1"})
    return env


class DashboardServer:
    """`create_app({...tmp paths...})` then `app.run(port=...)` in a subprocess; its log goes to a file."""

    def __init__(self, folder: Path, judge_url: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / "server.log"
        self.config = {"DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
                       "RESULTS_FOLDER": str(folder / "results"), "JUDGE_KEY_FILE": str(folder / "judge_api_key"),
                       "SECRET_KEY": "browser-test"}
        self.env = judge_environment(judge_url)
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 20.0) -> DashboardServer:
        # The log goes to a file, not a pipe: werkzeug logs every request and a full pipe would block it.
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-c", SERVE, json.dumps(self.config), str(self.port)],
                                         cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                urllib.request.urlopen(f"{self.url}/api/evaluations", timeout=1).close()
                return self
            except urllib.error.HTTPError:  # it answers, if only "sign in first" (AUTH=on)
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the dashboard server did not start:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # -- the JSON API, for setting up state that a test does not exercise through the browser ------

    def call(self, path: str, body: bytes | None = None, headers: dict | None = None) -> dict:
        request = urllib.request.Request(self.url + path, data=body, headers=headers or {})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def upload(self, data: bytes, filename: str = "log.jsonl") -> str:
        boundary = "browsertestboundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        return self.call("/api/uploads", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"})["id"]

    def evaluate(self, upload_id: str, judge: dict | None = None, timeout: float = 60.0) -> dict:
        """Start an evaluation through the API and wait until it ends; returns its last status."""
        payload = {"upload_id": upload_id, **({"judge": judge} if judge else {})}
        created = self.call("/api/evaluations", json.dumps(payload).encode(), {"Content-Type": "application/json"})
        deadline = time.monotonic() + timeout
        while (body := self.call(f"/api/evaluations/{created['id']}"))["status"] in ("queued", "running"):
            if time.monotonic() > deadline:
                raise AssertionError(f"evaluation {created['id']} did not finish: {body['progress']}")
            time.sleep(0.1)
        return body


@contextmanager
def dashboard_server(folder: Path, judge_url: str) -> Iterator[DashboardServer]:
    server = DashboardServer(folder, judge_url).start()
    try:
        yield server
    finally:
        server.stop()


def launch_chromium(playwright):
    """Debian's Chromium, headless, with no background traffic of its own."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)


def new_context(browser, locale: str = "en-US", **options):
    """A fresh context (no cookies) at the documented screenshot size, in English unless `locale` says otherwise,
    recording CSP violations."""
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale=locale, accept_downloads=True,
                                  **options)
    context.add_init_script(CSP_LISTENER)
    context.on("console", lambda msg: csp_violations.append(f"{msg.text} @ {msg.location.get('url')}")
               if any(marker in msg.text for marker in CSP_MARKERS) else None)
    return context


def tab(context):
    """The context's open page (one made on first use) at VIEWPORT's size again, for tests that each navigate it in
    turn: a result page with charts cost Chromium 2.5 s of CPU in a new page (a new renderer, which compiles Plotly
    afresh) against 1.0 s in a page that had loaded it before."""
    page = next((page for page in context.pages if not page.is_closed()), None) or context.new_page()
    page.set_viewport_size(VIEWPORT)  # the last test may have left it at another width
    return page


def check_csp_violations() -> None:
    """Fail when a page reported a Content-Security-Policy violation since the last check (then forget them)."""
    seen = csp_violations[:]
    csp_violations.clear()
    assert not seen, "Content-Security-Policy violations in the browser:\n" + "\n".join(seen)


def is_local(url: str) -> bool:
    """Whether a request stays on this machine (data: and blob: URLs never leave the page)."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.hostname in LOCAL_HOSTS


class PageWatch:
    """Records a page's console errors, uncaught exceptions, dialogs and request URLs; dialogs are dismissed
    ("Cancel") unless `accept_dialogs` is set. `stop()` leaves the page to the next test's watch."""

    def __init__(self, page) -> None:
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.dialogs: list[str] = []
        self.accept_dialogs = False
        self.requests: list[str] = []

        def on_dialog(dialog) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.accept() if self.accept_dialogs else dialog.dismiss()

        self.page = page
        self.handlers = {
            "console": lambda msg: self.console_errors.append(f"{msg.text} @ {msg.location}")
            if msg.type == "error" else None,
            "pageerror": lambda exc: self.page_errors.append(str(exc)),
            "request": lambda req: self.requests.append(req.url),
            "dialog": on_dialog,
        }
        for event, handler in self.handlers.items():
            page.on(event, handler)

    def stop(self) -> None:
        """Stop watching the page."""
        for event, handler in self.handlers.items():
            self.page.remove_listener(event, handler)

    @property
    def errors(self) -> list[str]:
        return self.console_errors + self.page_errors

    def foreign_requests(self) -> list[str]:
        return [url for url in self.requests if not is_local(url)]


AXE_FAILING = ("critical", "serious")  # axe's impacts that fail a page; "moderate" and "minor" do not
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"  # the version package.json pins, installed by `npm ci`
AXE_MISSING = f"axe-core is not installed at {AXE_JS}: run `npm ci` in the repository (package.json pins it)"


def require_axe() -> None:
    """Fail (in CI, where it must be there) or skip (elsewhere) when `npm ci` has not installed axe-core."""
    import pytest

    if not AXE_JS.exists():
        pytest.fail(AXE_MISSING) if os.environ.get("CI") else pytest.skip(AXE_MISSING)


def axe_violations(page) -> list[str]:
    """axe-core's critical and serious violations of the page as it is now, one line per rule with its nodes (npm's
    axe-core from node_modules/, run by Playwright outside the page's Content-Security-Policy)."""
    require_axe()
    page.evaluate(AXE_JS.read_text("utf-8"))
    found = page.evaluate("axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map("
                          "v => [v.impact, v.id, v.help, v.nodes.slice(0, 5).map(n => n.target.join(' '))]))")
    return [f"{impact} {rule}: {why} at {nodes}" for impact, rule, why, nodes in found if impact in AXE_FAILING]
