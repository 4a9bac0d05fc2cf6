"""The database connection layer under the store: SQLite or PostgreSQL through SQLAlchemy Core, one code path.

`Database` opens the engine (SQLite in WAL mode; a pre-pinged pool for PostgreSQL), brings the schema up to date
(storage/migrations.py, with the kinds' own tables) and gives the few ways the store's sections read and write:
queries as dicts, a transaction, statements run on the driver's cursor where SQLAlchemy's own layer costs more
than the database. The generic `rows`, `row`, `execute` and `transaction` are what a kind's own tables use
(kinds/host.py).
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import sqlite3
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from sqlalchemy import bindparam, create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import TextClause

from kinds.host import Table
from storage import migrations as store_migrations

BATCH = 2000  # rows per executemany, so that a 400,000-row write never builds all its parameters at once


def database_unreachable(exc: BaseException) -> bool:
    """Whether an error says the database cannot be reached for now (a restart, a lost connection, SQLite's lock
    held too long) rather than a mistake in a query: worth trying again in a moment. Errors of queries run on the
    driver's cursor (`Store._lookup`, `Store._many`) come unwrapped, the others wrapped by SQLAlchemy."""
    error: BaseException | None = exc
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        error = exc.orig
    if isinstance(error, sqlite3.OperationalError):  # also "no such table" and the like: only these two are passing
        return "database is locked" in str(error) or "unable to open" in str(error)
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError))


def now() -> str:
    """Current UTC time as an ISO 8601 string."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def database_url(target: str | Path | URL) -> URL:
    """The SQLAlchemy URL of a SQLite file path or a database URL; `postgresql://` and `postgres://` use psycopg 3."""
    if isinstance(target, URL):
        url = target
    elif "://" in str(target):
        url = make_url(str(target))
    else:
        return URL.create("sqlite", database=str(target))
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in store_migrations.DIALECTS:
        raise ValueError(f"unsupported database {url.drivername!r}: give a SQLite file or a postgresql:// URL")
    return url


SET_SETTING = ("INSERT INTO settings (name, value) VALUES (:name, :value)"
               " ON CONFLICT (name) DO UPDATE SET value = excluded.value")  # a setting's JSON, made or replaced


@functools.lru_cache(maxsize=512)
def text_query(statement: str) -> TextClause:
    """A compiled-once text() query (SQLAlchemy caches its compiled form by statement)."""
    return text(statement)


@functools.lru_cache(maxsize=64)
def text_query_in(statement: str, *expanding: str) -> TextClause:
    """A text() query whose `IN :name` parameters take a list."""
    return text(statement).bindparams(*(bindparam(name, expanding=True) for name in expanding))


def dict_rows(result) -> list[dict]:
    keys = tuple(result.keys())
    return [dict(zip(keys, row)) for row in result]


def first_dict(result) -> dict | None:
    row = result.first()
    return None if row is None else dict(row._mapping)


def one_dict(result) -> dict:
    """The one row a statement gives (an INSERT ... RETURNING), as a dict."""
    return dict(result.one()._mapping)


def in_batches(rows: Iterable[dict]) -> Iterator[list[dict]]:
    batch: list[dict] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        # Connections are kept open for reuse (opening one costs more than a query), any number of them: a thread
        # never waits for another's connection, only (30 s at most) for another process's write lock.
        engine = create_engine(url, pool_size=8, max_overflow=-1, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _wal(dbapi_connection, _record) -> None:
            # Readers never wait for the writer. Setting the journal mode can answer "locked" at once, without the
            # busy timeout, while another process migrates a new database: asked again until it answers.
            for attempt in itertools.count():
                try:
                    dbapi_connection.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError:
                    if attempt >= 600:  # 30 s, like the busy timeout
                        raise
                    time.sleep(0.05)
            # In WAL mode a commit then needs no fsync: a killed process loses nothing, a power cut at most the last
            # transactions (never consistency). With an fsync per commit, writing each wave of judge answers cost
            # more than asking for them.
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        return engine
    # A pool shared by the threads; a connection the server closed meanwhile is noticed before it is used.
    return create_engine(url, pool_pre_ping=True)


@functools.lru_cache(maxsize=256)
def _picker(names: tuple[str, ...]) -> Callable[[Mapping], tuple]:
    """A row's parameters in these names' order, for a driver that takes them by position."""
    if len(names) < 2:  # itemgetter gives one value, not a tuple, for one name
        return lambda row: tuple(row[name] for name in names)
    return operator.itemgetter(*names)


class Database:
    """Connections to one database, safe across threads and processes.

    `target` is a SQLite file path or a database URL (`postgresql://user:pass@host/db`). Each call takes a
    connection from the engine's pool for one transaction. SQLite: one writer at a time inside this process (other
    processes wait up to 30 s for the lock).
    """

    def __init__(self, target: str | Path | URL, tables: Sequence[Table] = ()):
        self.tables = tuple(tables)  # the kinds' own tables (kinds/registry.py's tables())
        self.url = database_url(target)
        self.dialect = self.url.get_backend_name()  # "sqlite" or "postgresql"
        self.path = self.url.database if self.dialect == "sqlite" else None
        self.engine = _engine(self.url)
        sqlite = self.dialect == "sqlite"
        # One writer at a time inside this process keeps SQLite from returning "database is locked".
        self._write_lock = threading.Lock() if sqlite else contextlib.nullcontext()
        self._statements: dict[str, tuple] = {}  # _compiled
        self._local = threading.local() if sqlite else None  # _lookup
        self.migrated = store_migrations.migrate(self.engine, tables=self.tables)  # the schema steps this opening applied

    def close(self) -> None:
        """Close the pool's connections and this thread's own (the store opens new ones if used again)."""
        driver = getattr(self._local, "driver", None)
        if self._local is not None and driver is not None:
            del self._local.driver
            driver.close()
        self.engine.dispose()

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A connection for reading (its transaction is rolled back when it goes back to the pool)."""
        with self.engine.connect() as con:
            yield con

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """A connection in a transaction, committed at the end of the block (rolled back on an error)."""
        with self._write_lock, self.engine.begin() as con:
            yield con

    def _all(self, sql: str, params: dict | None = None) -> list[dict]:
        """Every row of a query, as dicts."""
        keys, rows = self._fetch(sql, params or {})
        return [dict(zip(keys, row)) for row in rows]

    def _one(self, sql: str, params: dict | None = None) -> dict | None:
        with self._connection() as con:
            return first_dict(con.execute(text_query(sql), params or {}))

    def _value(self, sql: str, params: dict | None = None) -> Any:
        """The one value a query gives (a count)."""
        with self._connection() as con:
            return con.execute(text_query(sql), params or {}).scalar_one()

    def _write(self, sql: str, params: dict | None = None) -> int:
        with self._writing() as con:
            return con.execute(text_query(sql), params or {}).rowcount

    def _lookup(self, sql: str, params: dict) -> dict | None:
        """`_one` for the hottest read, the judge cache (once per judgment): the same text() query, compiled by
        SQLAlchemy for this database, run on the driver's cursor, since SQLAlchemy's execution layer and pool
        checkout cost several times what SQLite takes to answer (bench/bench_cache.py)."""
        statement, names = self._compiled(sql)
        if self._local is None:  # PostgreSQL: a pooled connection, whose return to the pool ends the transaction
            con = self.engine.raw_connection()
            try:
                return self._fetch_one(con.cursor(), statement, params, names)
            finally:
                con.close()
        driver: Any = getattr(self._local, "driver", None)  # sqlite3's connection (the pool types it optional)
        if driver is None:  # SQLite: as before, a connection per thread, kept open (made by the engine, then detached)
            pooled = self.engine.raw_connection()
            pooled.detach()
            driver = self._local.driver = pooled.dbapi_connection
        return self._fetch_one(driver.cursor(), statement, params, names)

    def _tuples(self, sql: str, params: dict) -> list[tuple]:
        """`_all`'s rows as tuples."""
        return [tuple(row) for row in self._fetch(sql, params)[1]]

    def _fetch(self, sql: str, params: dict) -> tuple[list[str], Sequence]:
        """The column names and rows of a query, run on the driver's cursor (as in `_lookup`): SQLAlchemy's result
        rows cost more than the database takes to find them, which the reads of a run's every judgment (the judge
        cache's, a result's) would pay."""
        statement, names = self._compiled(sql)
        with self._connection() as con:
            cursor = con.connection.cursor()
            try:
                cursor.execute(statement, params if names is None else tuple(params[n] for n in names))
                return [d[0] for d in cursor.description], cursor.fetchall()
            finally:
                cursor.close()

    @staticmethod
    def _fetch_one(cursor, statement: str, params: dict, names: tuple[str, ...] | None) -> dict | None:
        try:
            cursor.execute(statement, params if names is None else tuple(params[n] for n in names))
            row = cursor.fetchone()
            return None if row is None else dict(zip([d[0] for d in cursor.description], row))
        finally:
            cursor.close()

    def _many(self, con: Connection, sql: str, rows: Iterable[dict]) -> int:
        """Run a statement once per row in `con`'s transaction, in batches, on the driver's cursor (as in `_lookup`:
        SQLAlchemy's executemany costs more per row than the database); returns the rows changed."""
        statement, names = self._compiled(sql)
        cursor = con.connection.cursor()
        changed = 0
        try:
            for batch in in_batches(rows):
                cursor.executemany(statement, batch if names is None else list(map(_picker(names), batch)))
                changed += max(cursor.rowcount, 0)
        finally:
            cursor.close()
        return changed

    def _compiled(self, sql: str) -> tuple[str, tuple[str, ...] | None]:
        """The driver's form of a query and, for drivers that take parameters by position, their order."""
        found = self._statements.get(sql)
        if found is None:
            compiled = text_query(sql).compile(dialect=self.engine.dialect)
            found = self._statements[sql] = (compiled.string, tuple(compiled.positiontup or ()) if compiled.positional
                                             else None)
        return found

    # a kind's own tables (kinds/host.py: Kind.tables) -----------------------
    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict]:
        """The rows a query gives, as dicts."""
        return self._all(sql, dict(params or {}))

    def row(self, sql: str, params: Mapping[str, Any] | None = None) -> dict | None:
        """The first row a query gives, or None."""
        return self._one(sql, dict(params or {}))

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run one statement in a transaction of its own; the number of rows it changed."""
        return self._write(sql, dict(params or {}))

    @contextmanager
    def transaction(self) -> Iterator["Transaction"]:
        """A transaction for several statements, committed at the end of the block (rolled back on an error)."""
        with self._writing() as con:
            yield Transaction(self, con)


class Transaction:
    """Statements in one transaction of a store (`Store.transaction()`)."""

    def __init__(self, store: Database, con: Connection):
        self._store, self._con = store, con

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run one statement; the number of rows it changed."""
        return self._con.execute(text_query(sql), dict(params or {})).rowcount

    def execute_many(self, sql: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Run one statement per row of parameters, in batches; the number of rows changed."""
        return self._store._many(self._con, sql, (dict(row) for row in rows))
