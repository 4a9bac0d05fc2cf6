"""PersonaSteer Bench: the application factory; `python app.py` serves the dashboard."""
from __future__ import annotations

import gc
import logging
import os
import sys
import threading
from pathlib import Path

import jinja2
from flask import Flask
from flask.json.provider import DefaultJSONProvider
from flask_wtf.csrf import CSRFProtect

import translations
from kinds import registry
from kinds.host import Site
from kinds.kind import OwnPages
from kinds.readers import limits as hard_limits
from pipeline import provenance
from pipeline.evaluations import Evaluations
from pipeline.ingest import stored_name
from pipeline.job import Backend
from pipeline.live_results import LiveResults
from pipeline.rescores import Rescores, Rescoring
from pipeline.thread_backend import ThreadBackend
from simulate.simulations import Simulations
from storage import blobs, shared_secrets
from storage.store import Store
from web import (
    accounts,
    api,
    auth,
    bundle,
    cli,
    compare,
    compression,
    errors,
    exports,
    leaderboard,
    live,
    manage,
    pages,
    reading,
    request_input,
    row_diff,
    security_headers,
    share,
    simulation_pages,
    simulations_api,
)
from web.judge_settings import JudgeSettings
from web.url_rules import LazyRule

ROOT = Path(__file__).resolve().parent
# `celery -A app:celery_app` puts the current folder first on sys.path only while it imports this module, then
# takes it off, and the rest of the project is imported later (create_app, the tasks): a lasting entry at the end.
sys.path.append(str(ROOT))
# numpy's OpenBLAS starts a thread per core, which spins for a while after each matrix product: on two cores a
# 4,000-judgment `flask score` spent 0.45 s more CPU with it and took no less time (a Celery worker's threads, each
# scoring, multiply the spinners). Set before numpy is first loaded, on first use; one's own setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The whole public Human-vs-Agent dataset and a typical AgentBench leaderboard run, zipped, in one upload.
DEFAULT_UPLOAD_MB = 512
csrf = CSRFProtect()


class _JSON(DefaultJSONProvider):
    """Flask's JSON, keys in the order given: method order is meaningful (display order, chosen by the user)."""

    sort_keys = False


def create_app(config: dict | None = None) -> Flask:
    """Build the Flask application with its store, job backends, blueprints and translations.

    The backends run evaluations and simulations on threads of this process, or on Celery workers when
    CELERY_BROKER_URL is set (in `config` or the environment; pipeline/job.py). Nothing shared is kept in the process
    or its instance folder: the session secret and saved judge keys live in the database (storage/shared_secrets.py),
    sign-in counts in Redis when a broker is configured.
    """
    instance_path = os.environ.get("INSTANCE_PATH", "").strip()
    app = Flask(__name__, instance_path=os.path.abspath(instance_path) if instance_path else None,
                instance_relative_config=True)
    instance = Path(app.instance_path)
    instance.mkdir(parents=True, exist_ok=True)
    app.config.update(
        DATABASE=os.environ.get("DATABASE") or str(instance / "personasteer.sqlite"),
        DATABASE_URL=os.environ.get("DATABASE_URL", "").strip() or None,  # PostgreSQL; wins over DATABASE
        UPLOAD_FOLDER=os.environ.get("UPLOAD_FOLDER") or str(ROOT / "uploads"),  # shared by every worker machine
        RESULTS_FOLDER=os.environ.get("RESULTS_FOLDER") or str(ROOT / "results"),
        STORAGE_URL=os.environ.get("STORAGE_URL", "").strip() or None,  # s3://bucket/prefix instead of the folders
        MAX_CONTENT_LENGTH=int(float(os.environ.get("MAX_UPLOAD_MB", DEFAULT_UPLOAD_MB)) * 1024 * 1024),
        RESUME_ON_START=True,
        JUDGE_ENV=os.environ,
        JUDGE_KEY_FILE=str(instance / "judge_api_key"),  # where earlier versions kept the saved key: moved in once
        RATELIMIT_STORAGE_URI=os.environ.get("RATELIMIT_STORAGE_URI", "").strip() or None,  # sign-in attempts
        SECRET_KEY=os.environ.get("SECRET_KEY", "").strip() or None,  # else generated once, kept in the database
        SETTINGS_KEY=os.environ.get("SETTINGS_KEY", "").strip() or None,  # encrypts saved judge keys
        PSB_KINDS=os.environ.get("PSB_KINDS", ""),  # kinds of modules that are not installed, as module:Class
    )
    app.config.update(config or {})
    hard_limits.current()  # a bad LIMIT_* setting stops the server here, naming the variable
    # the kinds of installed packages (entry points) and of PSB_KINDS, before the store creates their tables: the web
    # app, the CLI and the Celery workers all build their app here, so all see the same kinds
    registry.load_installed(app.config["PSB_KINDS"] or "")
    if "AUTH" not in app.config:  # on / off / local (web/accounts.py)
        app.config["AUTH"] = accounts.auth_mode(os.environ.get("AUTH"), os.environ.get("HOST"))
    broker = _broker_url(app.config)
    if not app.config["RATELIMIT_STORAGE_URI"]:  # counted where every web process sees them
        app.config["RATELIMIT_STORAGE_URI"] = broker if broker and broker.startswith("redis") else "memory://"

    app.url_rule_class = LazyRule
    app.json = _JSON(app)
    request_input.register(app)  # JSON bodies read like uploaded JSON; no NUL in addresses, queries and forms
    # a URL, else the SQLite file; with the tables the kinds keep
    store = Store(app.config.get("DATABASE_URL") or app.config["DATABASE"], registry.tables())
    if not app.config["SECRET_KEY"]:
        app.config["SECRET_KEY"] = shared_secrets.session_secret(store, instance / "secret_key")
    fernet = shared_secrets.settings_fernet(app.config["SETTINGS_KEY"], app.config["SECRET_KEY"])
    judge_settings = JudgeSettings(store, fernet, app.config["JUDGE_ENV"], app.config["JUDGE_KEY_FILE"])
    uploads, results = blobs.for_config(app.config)  # the two folders, or the bucket of STORAGE_URL
    # Evaluations and simulations (whose files the evaluations' backend scores) run on threads of this process, or
    # on Celery workers with a broker (app.extensions["celery"]); `flask score` and `flask simulate` stay local.
    evaluations = Evaluations(store, uploads, results, judge_settings.environ)
    runner: Backend[Evaluations] = ThreadBackend(evaluations)
    workers = None
    if broker:
        from pipeline import celery_tasks  # Celery only when a broker is configured

        workers = celery_tasks.init_app(app, broker, store)
        runner = workers.add(evaluations)
    simulation_jobs = Simulations(store, uploads, runner, judge_settings.environ)
    simulations: Backend[Simulations] = workers.add(simulation_jobs) if workers else ThreadBackend(simulation_jobs)
    # scoring a finished evaluation again (people's ratings changed), a job on the same backend
    rescore_jobs = Rescores(evaluations)
    rescores: Backend[Rescores] = workers.add(rescore_jobs) if workers else ThreadBackend(rescore_jobs)
    app.extensions["store"] = store
    app.extensions["runner"] = runner
    app.extensions["live_results"] = LiveResults(evaluations.pipeline)  # running evaluations' partial results
    app.extensions["simulations"] = simulations
    app.extensions["rescores"] = Rescoring(rescores)  # kinds/host.py's rescores(); its .backend runs them
    app.extensions["judge_settings"] = judge_settings
    app.extensions["uploads"], app.extensions["results"] = uploads, results
    app.extensions["site"] = Site(store, uploads, stored_name)  # what the kinds' pages read (kinds/host.py)

    csrf.init_app(app)
    translations.init_app(app)
    # templates/ first, then each kind's own folder under its name ("dialogue/result.html")
    loaders = [app.jinja_loader, registry.template_loader()]  # (Flask's is None only without a template folder)
    app.jinja_loader = jinja2.ChoiceLoader([loader for loader in loaders if loader is not None])
    app.jinja_env.globals["kinds"] = registry.kinds
    app.jinja_env.globals["kinds_with_pages"] = lambda: registry.having(OwnPages)  # their links in the header
    reading.register(app)  # the `reply` filter: replies as Markdown or JSON, or as written (?raw=1)
    app.jinja_env.filters["provenance_rows"] = provenance.rows  # a result's provenance as labelled fields
    app.register_blueprint(pages.bp)
    app.register_blueprint(live.bp)  # a running evaluation's figures so far
    app.register_blueprint(api.bp)
    app.register_blueprint(exports.bp)
    app.register_blueprint(bundle.bp)
    csrf.exempt(api.bp)
    app.register_blueprint(simulations_api.bp)
    app.register_blueprint(simulation_pages.bp)
    csrf.exempt(simulations_api.bp)
    share.register(app, csrf)  # share pages, and the share API exempt from CSRF
    manage.register(app, csrf)  # rename, tag and delete
    compare.register(app)
    leaderboard.register(app, csrf)  # a dataset's leaderboard, its API (exempt from CSRF) and share links
    row_diff.register(app)  # the row-level diff of two runs, also under share links
    for kind in registry.having(OwnPages):  # pages a kind adds (mobility: reference sets); its API skips CSRF like ours
        for blueprint in kind.blueprints():
            app.register_blueprint(blueprint)
            if (blueprint.url_prefix or "").startswith("/api"):
                csrf.exempt(blueprint)
    errors.register(app)
    security_headers.register(app)  # CSP and the other headers, cookie flags, TRUSTED_PROXIES
    compression.register(app)  # gzip; pages only for the site's own requests (BREACH)
    cli.register(app)
    auth.register(app)  # after every blueprint: guards them all

    if app.config["RESUME_ON_START"]:
        # On the first request rather than here, so that CLI commands never pick up a server's work.
        resumed: list[list[str]] = []

        @app.before_request
        def resume_once() -> None:
            if not resumed:
                resumed.append(runner.resume())
                simulations.resume()
                rescores.resume()
    _freeze_once()
    return app


_frozen: list[bool] = []


def _freeze_once() -> None:
    """The first app a process builds, and all it imported, leave the garbage collector's care (gc.freeze): they
    live as long as the process, yet each full collection went through them again (some 100,000 objects), and so did
    the interpreter on its way out, about 0.15 s of CPU at the end of every flask command. Once per process: a later
    freeze would also keep the garbage of the apps before it (tests build hundreds)."""
    if not _frozen:
        _frozen.append(True)
        gc.freeze()


def _broker_url(config) -> str | None:
    """CELERY_BROKER_URL of the app's config, else of the environment ("" in the config turns it off)."""
    if "CELERY_BROKER_URL" in config:
        return config["CELERY_BROKER_URL"] or None
    return os.environ.get("CELERY_BROKER_URL", "").strip() or None


_celery_lock = threading.Lock()


def __getattr__(name: str):
    """`celery_app`, for `celery -A app:celery_app worker`: the Celery app of an application built on first use
    (importing this module builds nothing)."""
    if name != "celery_app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _celery_lock:
        if "celery_app" not in globals():
            celery = create_app().extensions.get("celery")
            if celery is None:
                raise RuntimeError("Celery workers need a broker: set CELERY_BROKER_URL=redis://HOST:6379/0")
            globals()["celery_app"] = celery
    return globals()["celery_app"]


if __name__ == "__main__":
    host = os.environ.get("HOST", "127.0.0.1")
    try:
        application = create_app()
        notes = accounts.check_serving(application.config["AUTH"], host,
                                       len(application.extensions["store"].list_users()))
    except (accounts.AuthConfigError, ValueError) as exc:  # a setting that must be fixed first (message says how)
        sys.exit(f"PersonaSteer Bench: {exc}")
    for note in notes:
        logging.getLogger("personasteer").warning(note)
    application.extensions["runner"].resume()
    application.extensions["simulations"].resume()
    application.extensions["rescores"].backend.resume()
    application.run(host=host, port=int(os.environ.get("PORT", "5000")), threaded=True, use_reloader=False)
