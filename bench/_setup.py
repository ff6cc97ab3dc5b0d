"""Shared set-up for benchmarks: a PostgreSQL database of their own, migrated, Django ready."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_on_postgres(database: str) -> None:
    """Point Django at `database` on the local PostgreSQL (created if missing) and migrate."""
    import psycopg

    base = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')
    os.environ["DATABASE_URL"] = f"{base}/{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
