"""Plain SQL for the statements a GM turn makes at every turn, through `connection.cursor()`.

A worker's turn is some fifty statements, most of them small: built and compiled by the ORM at
every turn, their querysets cost the worker more CPU than the rest of the turn does, which shows
in how many tables a host carries (bench/capacity.py: the workers' CPU per table-minute). So the
statements every turn makes are said as text made once from the models' `_meta` (their tables
and columns), every value bound (`%s`), and what they read comes back as the ORM hands it:
`Model.from_db` over each field's `from_db_value`. Each says beside it why it is plain SQL.
"""

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, models

M = TypeVar("M", bound=models.Model)


def quote(name: str) -> str:
    return connections[DEFAULT_DB_ALIAS].ops.quote_name(name)


def table(model: type[models.Model]) -> str:
    return quote(model._meta.db_table)


def column(model: type[models.Model], name: str) -> str:
    """The quoted column of a field (`pk` for the primary key)."""
    meta = model._meta
    return quote((meta.pk if name == "pk" else meta.get_field(name)).column)


@functools.cache
def columns(model: type[models.Model], alias: str) -> str:
    """Every concrete column of `model`, as `alias.column`, in the order `instance` reads."""
    return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)


def width(model: type[models.Model]) -> int:
    return len(model._meta.concrete_fields)


def instance(model: type[M], values: Sequence[Any]) -> M:
    """The row as the ORM hands it, from the values of `columns(model, ...)`."""
    fields = model._meta.concrete_fields
    converted = [from_db(f, v) for f, v in zip(fields, values, strict=True)]
    return model.from_db(DEFAULT_DB_ALIAS, [f.attname for f in fields], converted)


def from_db(field: Any, value: Any) -> Any:
    """A column's value as the ORM hands it (a JSON column's, decoded)."""
    if not hasattr(field, "from_db_value"):
        return value
    return field.from_db_value(value, None, connections[DEFAULT_DB_ALIAS])


def prep(model: type[models.Model], name: str, value: Any) -> Any:
    """A value for a parameter compared with or written to a field, as the ORM sends it."""
    field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    return field.get_db_prep_save(value, connections[DEFAULT_DB_ALIAS])


def fetch_one(sql: str, params: Sequence[Any]) -> tuple | None:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def fetch_all(sql: str, params: Sequence[Any]) -> list[tuple]:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
