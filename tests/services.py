"""Real PostgreSQL, Redis and S3 servers for the tests, started on free loopback ports in temporary folders and
stopped at the end: Debian's PostgreSQL and Redis; for S3, SeaweedFS when a `weed` binary is on PATH, else moto's
standalone server (`moto_server`, from requirements-dev.txt). A test that needs one is skipped, with the reason, when
its binaries are missing."""
from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

POSTGRES_USER = "postgres"  # Debian's package creates it; PostgreSQL refuses to run as root


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, what: str, timeout: float = 30.0) -> None:
    """Wait until `process` listens on `port`; RuntimeError if it exits or takes longer than `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


def postgres_bin() -> Path | None:
    """The folder of Debian's PostgreSQL server binaries (newest version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _as_postgres_user() -> list[str]:
    """The command prefix that runs a server binary as a non-root user when the tests run as root."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(POSTGRES_USER)
    except KeyError:
        pytest.skip(f"running as root and there is no '{POSTGRES_USER}' user to run PostgreSQL as")
    return ["runuser", "-u", POSTGRES_USER, "--"]


class Postgres:
    """One PostgreSQL server in a temporary folder; `url(db)` creates a fresh database and gives its URL."""

    def __init__(self):
        binaries = postgres_bin()
        if binaries is None:
            pytest.skip("PostgreSQL is not installed (Debian package postgresql)")
        self.bin, self.prefix, self.port = binaries, _as_postgres_user(), free_port()
        # Directly under the system's temporary folder: pytest's own folders are private to root, and the
        # server may run as another user.
        self.folder = folder = Path(tempfile.mkdtemp(prefix="psb-postgres-"))
        self.data = folder / "pgdata"
        if self.prefix:
            shutil.chown(folder, POSTGRES_USER)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start_server()
        self._databases = 0

    def start_server(self) -> None:
        """Start the server on its data folder and port (again, after `stop_server`)."""
        self.process = subprocess.Popen(
            [*self.prefix, str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-k", str(self.folder), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
             "-c", "max_connections=200"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.process, "postgres")
        self._wait_accepting()

    def _wait_accepting(self, timeout: float = 30.0) -> None:
        """The port opens while the server still replays its log ("the database system is starting up"): wait
        until pg_isready says it accepts connections."""
        deadline = time.monotonic() + timeout
        while subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
                             capture_output=True).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"postgres on port {self.port} does not accept connections")
            time.sleep(0.05)

    def stop_server(self) -> None:
        """Stop the server (fast shutdown: open connections are closed), keeping its data folder. Through pg_ctl,
        which waits until the server is gone: a signal would reach `runuser`, not the server, when run as root."""
        try:
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w", "-t", "20")
        except subprocess.CalledProcessError:  # not running any more
            pass
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def restart(self) -> None:
        """Stop the server and start it again on the same data folder and port."""
        self.stop_server()
        self.start_server()

    def _run(self, binary: str, *args: str) -> None:
        subprocess.run([*self.prefix, str(self.bin / binary), *args], check=True, capture_output=True)

    def url(self) -> str:
        """A new, empty database on this server."""
        self._databases += 1
        name = f"test{self._databases}"
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder."""
        self.stop_server()
        shutil.rmtree(self.folder, ignore_errors=True)


class Redis:
    """One redis-server on a free port: without persistence, or with its append-only file (`appendonly yes`, as a
    deployment runs it) when `persistent`."""

    def __init__(self, folder: Path, persistent: bool = False):
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.skip("Redis is not installed (Debian package redis-server)")
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.port, self.persistent = folder, free_port(), persistent
        self.start()
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server on its port (again, after `stop`: empty, unless it is persistent)."""
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if self.persistent else "no", "--appendfsync", "always",
             "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.process, "redis-server")

    def stop(self) -> None:
        """Stop the server."""
        self.process.terminate()
        self.process.wait(10)

    def restart(self) -> None:
        """Stop the server and start it again on the same port: without persistence, every key and queued message
        is gone; with it, they are back."""
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the whole test session."""
    server = Postgres()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A Redis server for the whole test session."""
    server = Redis(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


class S3Server:
    """An S3-compatible server on a free port: SeaweedFS (`weed server -s3`) when installed, else moto's server;
    `environ` holds the variables a client needs (endpoint, keys, region)."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        weed, moto = shutil.which("weed"), shutil.which("moto_server")
        if weed:
            self.name = "SeaweedFS"
            command = [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={folder}",
                       f"-master.port={free_port()}", f"-volume.port={free_port()}", f"-filer.port={free_port()}",
                       "-s3", f"-s3.port={self.port}"]
        elif moto:
            self.name = "moto"
            command = [moto, "-H", "127.0.0.1", "-p", str(self.port)]
        else:
            pytest.skip("no S3 server: neither SeaweedFS ('weed') nor moto's server ('moto_server', pip install "
                        "\"moto[server]\") is installed")
        self.log = (folder / "server.log").open("wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, cwd=folder)
        wait_for_port(self.port, self.process, self.name)
        self.environ = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}", "AWS_ACCESS_KEY_ID": "psb-test",
                        "AWS_SECRET_ACCESS_KEY": "psb-test-secret", "AWS_REGION": "us-east-1"}
        self._buckets = itertools.count(1)
        self._wait_ready()

    def client(self):
        """A boto3 client of this server."""
        from storage import blobs

        return blobs.s3_client(self.environ)

    def _wait_ready(self, timeout: float = 60.0) -> None:
        """SeaweedFS listens before its S3 gateway answers: wait until a listing works."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.client().list_buckets()
                return
            except Exception:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.2)

    def bucket(self) -> str:
        """A new, empty bucket's name."""
        name = f"psb-test-{os.getpid()}-{next(self._buckets)}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        """Every key in a bucket."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def stop(self) -> None:
        """Stop the server."""
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """An S3 server for the whole test session."""
    server = S3Server(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


@pytest.fixture
def s3_storage(s3_server, monkeypatch):
    """A STORAGE_URL on a fresh bucket of the test S3 server, with its endpoint and keys in the environment (as a
    deployment sets them); returns (url, bucket)."""
    for name, value in s3_server.environ.items():
        monkeypatch.setenv(name, value)
    bucket = s3_server.bucket()
    return f"s3://{bucket}/psb", bucket
