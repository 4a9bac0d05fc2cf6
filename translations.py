"""Languages of the dashboard: the locale choice, catalog compilation, and the gettext every module uses."""
from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from flask import Flask, has_request_context, request
from flask_babel import Babel, format_datetime, format_decimal, get_locale, gettext, lazy_gettext, ngettext

LANGUAGES = {"en": "English", "zh": "中文", "ko": "한국어"}
DEFAULT_LANGUAGE = "en"
COOKIE = "lang"
CATALOGS = Path(__file__).resolve().parent / "translations"

_ = gettext
__all__ = ["LANGUAGES", "_", "gettext", "lazy_gettext", "ngettext", "init_app", "select_locale", "status_label"]


def select_locale() -> str:
    """The language cookie if valid, else the browser's best Accept-Language match, else English."""
    if not has_request_context():  # CLI and background jobs
        return DEFAULT_LANGUAGE
    chosen = request.cookies.get(COOKIE)
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(LANGUAGES.keys()) or DEFAULT_LANGUAGE


def compile_catalogs(folder: Path = CATALOGS) -> list[Path]:
    """Compile every .po catalog whose .mo is missing or older; returns the files written."""
    written = []
    for po in folder.glob("*/LC_MESSAGES/*.po"):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as f:
            catalog = read_po(f, locale=po.parent.parent.name)
        # A temporary file of this process's own, renamed into place: several server processes starting at once
        # (gunicorn -w 4) each write a whole file and the last rename wins, never a half-written catalog.
        fd, tmp = tempfile.mkstemp(dir=mo.parent, prefix=".messages-", suffix=".mo.tmp")
        with os.fdopen(fd, "wb") as f:
            write_mo(f, catalog)
        os.replace(tmp, mo)
        written.append(mo)
    return written


def status_label(status: str) -> str:
    """Translated name of an evaluation or judgment status."""
    labels = {"queued": _("queued"), "running": _("running"), "done": _("done"), "failed": _("failed"),
              "cancelled": _("cancelled"), "incomplete": _("incomplete"), "ok": _("ok"), "unparsed": _("unparsed"),
              "pending": _("pending")}
    return labels.get(status, status)


def number(value, digits: int = 1) -> str:
    """A number formatted for the current locale, or a dash when there is none."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):  # None, or missing in a template
        return "—"
    if abs(value) < 0.5 * 10 ** -digits:  # shown as zero: never "-0.0"
        value = 0.0
    return format_decimal(value, format="#,##0" + ("." + "0" * digits if digits else ""))


def interval(bounds, digits: int = 1) -> str:
    """A confidence interval as [low, high], or a dash."""
    if not bounds:
        return "—"
    return f"[{number(bounds[0], digits)}, {number(bounds[1], digits)}]"


def duration(seconds) -> str:
    """A number of seconds as a short h/min/s text, or a dash."""
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return _("%(h)s h %(m)s min", h=seconds // 3600, m=seconds % 3600 // 60)
    if seconds >= 60:
        return _("%(m)s min %(s)s s", m=seconds // 60, s=seconds % 60)
    return _("%(s)s s", s=seconds)


def when(iso: str | None) -> str:
    """A stored ISO timestamp as a date and time written the way the current locale writes them."""
    if not iso:
        return "—"
    return format_datetime(datetime.fromisoformat(iso), "medium")


def init_app(app: Flask) -> None:
    """Attach Flask-Babel with our locale selector, compiling the catalogs first."""
    compile_catalogs()
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(CATALOGS))
    Babel(app, locale_selector=select_locale)
    app.jinja_env.globals.update(LANGUAGES=LANGUAGES, get_locale=get_locale, status_label=status_label)
    app.jinja_env.filters.update(num=number, ci=interval, duration=duration, when=when)
