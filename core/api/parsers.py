"""The API's one request parser: JSON, bounded, and only what the database can store.

DRF's JSONParser reads the whole body whatever its size and lets through values PostgreSQL
refuses later (NUL characters, lone surrogates, overflowing floats), which would surface as a
500 or, inside the audited dispatch, as an audit-log failure. Refusing them here keeps every
bad body a 4xx that changes nothing.
"""

import json
import math
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from core.api.errors import PayloadTooLarge


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]}… is out of range")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _check_strings(value: Any) -> None:
    """Every string (keys too) must be storable text: no NUL, no lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if "\x00" in item:
                raise ParseError("JSON parse error - strings may not contain NUL characters.")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ParseError("JSON parse error - strings must be valid Unicode.") from exc


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if stream is None:
            raw = b""
        elif limit is None:
            raw = stream.read()
        else:
            raw = stream.read(limit + 1)
            if len(raw) > limit:
                raise PayloadTooLarge()
        try:
            data = json.loads(
                raw.decode("utf-8"), parse_float=_finite_float, parse_constant=_refuse_constant
            )
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        _check_strings(data)
        return data
