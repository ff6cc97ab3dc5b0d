"""Reads every layer shares."""

from typing import Any

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db.models import Model, QuerySet

from core.errors import NotFound
from core.prepared import prepared


def get_or_not_found(queryset: QuerySet, **filters: Any) -> Model:
    """The one row `filters` name, or NotFound: a missing row and a malformed id (a string where
    an integer or a UUID goes) read alike, so a made-up id reveals nothing."""
    try:
        return queryset.get(**filters)
    except (queryset.model.DoesNotExist, ValidationError, ValueError, TypeError) as exc:
        raise NotFound() from exc


def read_or_not_found(read: prepared, *args: Any) -> Any:
    """The one row a prepared read finds for `args`, or NotFound, as `get_or_not_found`
    answers: a missing row and a malformed id read alike."""
    try:
        return read.get(*args)
    except (ObjectDoesNotExist, ValidationError, ValueError, TypeError) as exc:
        raise NotFound() from exc
