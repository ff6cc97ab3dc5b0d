"""The embedded default's engines (config/embedded.py): with DATABASE_URL / REDIS_URL unset, a
real PostgreSQL and Redis under DATA_DIR, started by the first process that needs them and shared
by the next; with them set, nothing embedded starts; what cannot start says so in one line."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_settings import ROOT, python

ENGINES = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "from django.db import connection; from django.core.cache import cache; "
    "cursor = connection.cursor(); cursor.execute('SELECT pg_backend_pid(), version()'); "
    "cache.set('probe', 1); "
    "print(json.dumps({'host': s.DATABASES['default']['HOST'], 'redis': s.REDIS_URL, "
    "'version': cursor.fetchone()[1], 'cached': cache.get('probe')}))"
)


def engines_in(data_dir: Path, **env: str) -> subprocess.CompletedProcess:
    """A fresh process's settings under DATA_DIR=data_dir with `env` and none of the suite's
    own DATABASE_URL, REDIS_URL or Django settings."""
    drop = ("DJANGO_", "DATABASE_URL", "REDIS_URL", "DATA_DIR")
    return python("-c", ENGINES, drop=drop, DATA_DIR=str(data_dir), **env)


def stop(data_dir: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "config.embedded", "stop", str(data_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data folder of the test's own; its engines are stopped afterwards."""
    folder = tmp_path / "data"
    yield folder
    if folder.exists():
        stop(folder)


def test_unset_urls_start_real_engines_that_the_next_process_shares(data_dir):
    first = engines_in(data_dir)
    assert first.returncode == 0, first.stderr
    seen = json.loads(first.stdout)
    assert seen["host"] == str(data_dir / "postgres")  # its socket: no TCP port to collide with
    assert seen["version"].startswith("PostgreSQL 18")
    assert seen["cached"] == 1
    port = (data_dir / "redis" / "port").read_text()
    assert seen["redis"] == f"redis://127.0.0.1:{port}/0"
    postmaster = (data_dir / "postgres" / "postmaster.pid").read_text()
    again = engines_in(data_dir)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == seen
    assert (data_dir / "postgres" / "postmaster.pid").read_text() == postmaster  # not restarted
    assert stop(data_dir).splitlines() == [
        f"stopped Redis (127.0.0.1:{port})",
        f"stopped PostgreSQL (pid {postmaster.split()[0]})",
    ]
    assert stop(data_dir).strip() == "nothing was running"


def test_set_urls_start_nothing_embedded(data_dir):
    """Production's environment: its own servers, and no engine of ours under DATA_DIR."""
    from django.conf import settings

    from tests.processes import database_environment

    result = engines_in(
        data_dir, DATABASE_URL=database_environment()["DATABASE_URL"], REDIS_URL=settings.REDIS_URL
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["redis"] == settings.REDIS_URL
    assert not (data_dir / "postgres").exists() and not (data_dir / "redis").exists()


def test_a_database_url_that_is_not_postgresql_is_refused(data_dir, tmp_path):
    from django.conf import settings

    url = f"sqlite:///{tmp_path / 'x.sqlite3'}"
    result = engines_in(data_dir, DATABASE_URL=url, REDIS_URL=settings.REDIS_URL)
    assert result.returncode != 0
    assert "DATABASE_URL must name a PostgreSQL database" in result.stderr


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    message = result.stderr.strip()
    assert message.splitlines() == [message], message  # one line, no traceback
    return message


def test_a_server_that_will_not_start_says_so_in_one_line(data_dir):
    """A data folder whose PostgreSQL cannot start (here: a PG_VERSION no server of ours reads)
    stops every command at once with the reason and where the log is."""
    (data_dir / "postgres").mkdir(parents=True)
    (data_dir / "postgres" / "PG_VERSION").write_text("9\n")
    result = python("manage.py", "check", drop=("DATABASE_URL", "DATA_DIR"), DATA_DIR=str(data_dir))
    message = one_line(result)
    pgdata = data_dir / "postgres"
    assert message.startswith(f"embedded engines: PostgreSQL under {pgdata} would not start")
    assert f"its log: {data_dir / 'postgres' / 'log'}" in message


def test_a_data_folder_of_someone_else_is_refused_in_one_line(tmp_path, monkeypatch):
    """A process of another user than the folder's (root may use any: it runs the server as a
    user of its own) is refused before it starts anything there."""
    from config import embedded

    owner = tmp_path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    with pytest.raises(SystemExit) as refusal:
        embedded.postgres_url(tmp_path)
    message = str(refusal.value.code)
    assert message.splitlines() == [message]
    assert f"the data folder {tmp_path} belongs to user id {owner}, not to you" in message
    assert not (tmp_path / "postgres").exists()
