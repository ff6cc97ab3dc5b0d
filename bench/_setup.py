"""Shared set-up for benchmarks: sizes from the command line (`--smoke` for tiny ones), the
environment of production's settings for a bench that measures as production runs, and a
PostgreSQL database of their own, migrated (a copy of a template migrated once), Django ready,
dropped afterwards. The engines are the app's: BENCH_PG (a server's URL, no database) and
REDIS_URL, else the embedded ones under DATA_DIR (config/embedded.py), Redis's database 4 (its
fragment-cache keys stay apart)."""

import argparse
import hashlib
import os
import re
import secrets
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config import embedded  # noqa: E402 (imports no Django)


def redis_url() -> str:
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"]
    return embedded.redis_url(embedded.data_dir_from_env(ROOT)).rsplit("/", 1)[0] + "/4"


def postgres_server() -> str:
    """The server the benchmark's database goes on, as a URL without a database."""
    if os.environ.get("BENCH_PG"):
        return os.environ["BENCH_PG"]
    return embedded.postgres_url(embedded.data_dir_from_env(ROOT)).rsplit("/", 1)[0]


def sizes(
    doc: str | None,
    full: dict[str, Any],
    smoke: dict[str, Any],
    switches: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The run's sizes: `full` by default, `smoke` with `--smoke` (tiny, seconds, the same code
    paths, so CI notices a benchmark broken by a schema change), each overridable by a positional
    argument in `full`'s order (a list-valued size takes the remaining arguments); and each of
    `switches` (name: help), False unless `--name` is given."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does it still run?")
    for name, help in (switches or {}).items():
        parser.add_argument(f"--{name}", action="store_true", help=help)
    for name, default in full.items():
        many = isinstance(default, list)
        parser.add_argument(name, nargs="*" if many else "?", type=int, help=f"default {default}")
    options = vars(parser.parse_args())
    chosen = smoke if options.pop("smoke") else full
    if chosen is smoke:
        print("smoke run: tiny sizes; the figures below are not measurements")
    return {name: chosen[name] if value in (None, []) else value for name, value in options.items()}


def production_environment() -> None:
    """The servers run as production does (DEBUG off, real keys), over plain HTTP on loopback;
    this process shares the keys, so the log it writes and the one they write form one chain."""
    os.environ["REDIS_URL"] = redis_url()
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    os.environ["AUDIT_CHAIN_KEY"] = secrets.token_urlsafe(32)
    os.environ["DJANGO_SECURE_SSL_REDIRECT"] = "0"
    os.environ["GM_PROVIDER"] = "scripted"


@contextmanager
def django_on_postgres(name: str) -> Iterator[None]:
    """Point Django at a new database `bench_<name>_<random>` on the local PostgreSQL, migrated,
    and drop it when the body ends, also when it fails or is interrupted (SIGINT, SIGTERM). The
    random suffix lets runs share a server: CI twice in a row, or two people at once; BENCH_PG
    names another server than the embedded one, and BENCH_DB_PREFIX another prefix than
    `bench`."""
    import psycopg

    base = postgres_server()
    os.environ["REDIS_URL"] = redis_url()
    prefix = os.environ.get("BENCH_DB_PREFIX", "bench")
    database = f"{prefix}_{name}_{uuid.uuid4().hex[:8]}"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        try:
            template = f"{prefix}_template_{schema_digest()}"
            conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{template}"')
        except psycopg.errors.InvalidCatalogName:  # none of this schema yet
            template = template_make(conn, base, prefix)
            conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{template}"')
    try:
        os.environ["DATABASE_URL"] = f"{base}/{database}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        yield
    finally:  # FORCE ends the sessions still open, this process's and its threads'
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def schema_digest() -> str:
    """What the schema is made of: the project's migrations and the pinned packages (theirs)."""
    digest = hashlib.sha256()
    for path in [*sorted(ROOT.glob("*/migrations/*.py")), ROOT / "requirements.txt"]:
        digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def template_make(conn: Any, base: str, prefix: str) -> str:
    """The database that each run copies, migrated, `<prefix>_template_<schema_digest()>`:
    migrating costs every bench seconds of CPU (Django renders the models of every migration),
    a copy a fraction of one. Migrated under a name of its own and then renamed, so that of two
    runs making it at once one keeps it; the templates of the schema's earlier states go."""
    import psycopg

    template = f"{prefix}_template_{schema_digest()}"
    draft = f"{template}_{uuid.uuid4().hex[:8]}"
    conn.execute(f'CREATE DATABASE "{draft}"')
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": f"{base}/{draft}"},
            check=True,
        )
        conn.execute(f'ALTER DATABASE "{draft}" RENAME TO "{template}"')
    except psycopg.errors.DuplicateDatabase:
        pass  # another run's
    finally:
        conn.execute(f'DROP DATABASE IF EXISTS "{draft}"')
    for (name,) in conn.execute("SELECT datname FROM pg_database").fetchall():
        if name != template and re.fullmatch(rf"{prefix}_template_[0-9a-f]{{16}}", name):
            with suppress(psycopg.errors.ObjectInUse):  # a run copying it: left to the next
                conn.execute(f'DROP DATABASE "{name}"')
    return template
