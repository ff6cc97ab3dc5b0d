"""Reads every layer shares."""

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet

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


def with_rows(instance: Model, **related: list[Model]) -> Model:
    """`instance` with the rows of its reverse relations `related` (by related name) known, as a
    `prefetch_related` of them would have left them: `instance.<name>.all()` is those rows and
    reads nothing, while `.filter()` and the like read afresh, as after a prefetch. For a row
    just written whose related rows were written with it (a turn and its opening message), so an
    answer built from it reads nothing again. It stores what Django's prefetch stores
    (`prefetch_one_level`): the relation's queryset with its result cache filled, in the
    instance's `_prefetched_objects_cache`."""
    known = {}
    for name, rows in related.items():
        queryset = getattr(instance, name).get_queryset()  # lazy: reads nothing
        queryset._result_cache = list(rows)
        queryset._prefetch_done = True
        known[name] = queryset
    cached = getattr(instance, "_prefetched_objects_cache", None) or {}
    instance._prefetched_objects_cache = {**cached, **known}
    return instance
