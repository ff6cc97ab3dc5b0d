"""Shared set-up for benchmarks: a PostgreSQL database of their own, migrated, Django ready."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_on_postgres(database: str) -> None:
    """Point Django at a fresh `database` on the local PostgreSQL (dropped and created anew, so
    runs do not accumulate rows) and migrate it."""
    import psycopg

    base = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    os.environ["DATABASE_URL"] = f"{base}/{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
