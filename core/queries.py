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
