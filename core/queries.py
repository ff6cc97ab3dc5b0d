"""Reads every layer shares."""

import functools
import string
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Field, Model, QuerySet

from core.errors import NotFound


def get_or_not_found(queryset: QuerySet, **filters: Any) -> Model:
    """The one row `filters` name, or NotFound: a missing row and a malformed id (a string where
    an integer or a UUID goes) read alike, so a made-up id reveals nothing."""
    try:
        return queryset.get(**filters)
    except (queryset.model.DoesNotExist, ValidationError, ValueError, TypeError) as exc:
        raise NotFound() from exc


def locked_if(queryset: QuerySet, lock: bool, **options: Any) -> QuerySet:
    """`queryset` with `select_for_update(**options)` when `lock`: a read that serves both the
    writers (who lock) and the pages (who do not)."""
    return queryset.select_for_update(**options) if lock else queryset


# ---- plain SQL for the hot reads ------------------------------------------------------------
#
# A read the pages make after every event (the push of the live fragments: web/pages/fragments.py)
# costs more to build and compile through the ORM than to run: there, and only there, a read is
# one plain SQL statement through `connection.cursor()`, its reason beside it. Tables and columns
# come from `Model._meta`, parameters are always bound, and instances are made as the ORM makes
# them (each field's `from_db_value`, then `Model.from_db`).


class _Names:
    """A model in a SQL template: `{turn}` its table, `{turn:actor}` a field's column, quoted."""

    def __init__(self, model: type[Model]) -> None:
        self.meta = model._meta

    def __format__(self, spec: str) -> str:
        quote = connection.ops.quote_name
        return quote(self.meta.get_field(spec).column if spec else self.meta.db_table)


@functools.cache
def plain_sql(template: str, **models: type[Model]) -> str:
    """`template` with its models' table and column names (`_Names`); `%s` stays a parameter,
    and `{name_columns}` is every concrete column of `name`'s model qualified by `name` (the
    SQL's alias for it), in the order `Columns.load` reads them."""
    values = {alias: _Names(model) for alias, model in models.items()}
    columns = {f"{alias}_columns": columns_of(model).sql(alias) for alias, model in models.items()}
    return string.Formatter().vformat(template, (), {**values, **columns})


def plain_rows(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of one plain SQL statement, its parameters bound."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def db_value(model: type[Model], field: str, value: Any) -> Any:
    """`value` as a parameter for `model`'s `field` (its `get_db_prep_value`): a malformed id
    raises ValidationError (or ValueError, TypeError) here, before any statement."""
    return model._meta.get_field(field).get_db_prep_value(value, connection)


def python_value(model: type[Model], field: str, value: Any) -> Any:
    """`value` of `model`'s `field` as the ORM reads it: through the field's `from_db_value`
    (a JSON column's text decoded), for a plain read's values."""
    converter = getattr(model._meta.get_field(field), "from_db_value", None)
    return value if converter is None else converter(value, None, connection)


@functools.cache
def columns_of(model: type[Model]) -> "Columns":
    return Columns(model)


class Columns:
    """A model's concrete columns in a plain SQL read, and its instances made from them."""

    def __init__(self, model: type[Model]) -> None:
        self.model = model
        self.fields: tuple[Field, ...] = tuple(
            f for f in model._meta.get_fields() if f.concrete and not f.many_to_many
        )
        self.width = len(self.fields)
        self._names = [f.attname for f in self.fields]
        self._pk = self.fields.index(model._meta.pk)
        self._convert = [(i, f) for i, f in enumerate(self.fields) if hasattr(f, "from_db_value")]

    def sql(self, alias: str) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{alias}.{quote(f.column)}" for f in self.fields)

    def load(self, row: Sequence[Any], start: int = 0) -> Any:
        """The instance of the columns at `start` of `row`; None for the null side of an outer
        join (no primary key)."""
        values = list(row[start : start + self.width])
        if values[self._pk] is None:
            return None
        for i, field in self._convert:
            values[i] = field.from_db_value(values[i], None, connection)
        return self.model.from_db(connection.alias, self._names, values)
