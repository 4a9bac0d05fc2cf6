"""Thin Flask blueprints over the plain modules: pages, JSON API, CLI and error handlers."""
from __future__ import annotations

from flask import current_app
from flask_login import current_user
from flask_wtf.csrf import CSRFProtect

from kinds.host import site as get_site  # noqa: F401  (what the kinds' pages may read, for web/ too)
from pipeline.evaluations import Evaluations
from pipeline.job import Backend
from pipeline.rescores import Rescoring
from storage.blobs import Blobs
from storage.store import Store
from web.judge_settings import JudgeSettings


def get_store() -> Store:
    """The application's store."""
    return current_app.extensions["store"]


def get_runner() -> Backend[Evaluations]:
    """The application's evaluations' backend (pipeline/job.py)."""
    return current_app.extensions["runner"]


def get_rescores() -> Rescoring:
    """Scoring finished evaluations again as jobs on the evaluations' backend (pipeline/rescores.py)."""
    return current_app.extensions["rescores"]


def get_judge_settings() -> JudgeSettings:
    """The judge settings in force (environment and settings page)."""
    return current_app.extensions["judge_settings"]


def get_uploads() -> Blobs:
    """Where uploaded files (and chunked partials, reference sets) are kept: UPLOAD_FOLDER or STORAGE_URL."""
    return current_app.extensions["uploads"]


def get_results() -> Blobs:
    """Where result documents are kept: RESULTS_FOLDER or STORAGE_URL."""
    return current_app.extensions["results"]


def get_csrf() -> CSRFProtect:
    """The application's CSRF protection (Flask-WTF's init_app keeps it under "csrf")."""
    return current_app.extensions["csrf"]


def signed_in_name() -> str | None:
    """The signed-in user's name (by session or API token) with accounts on; None otherwise."""
    if current_app.config.get("AUTH") != "on" or not current_user.is_authenticated:
        return None
    return current_user.name
