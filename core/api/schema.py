"""The OpenAPI document says exactly what the server accepts (docs/api.md; checked by schemathesis).

drf-spectacular describes serializers loosely where DRF is strict: it leaves out that a
`StrictSerializer` refuses unknown fields, that a CharField refuses blank (and, trimmed,
whitespace-only) strings, and that every body-taking operation answers 415 to anything but JSON.
This schema class and hook add those, so a client generated from the schema sends nothing the
server refuses for a reason the schema hides.
"""

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

from core.api.base import StrictSerializer

# A string with at least one character that `str.strip()` keeps (Python's `re` \S and
# `str.isspace` agree), i.e. not blank once DRF trims it.
NOT_ONLY_WHITESPACE = r"\S"
BODY_METHODS = ("post", "put", "patch")


class StrictAutoSchema(AutoSchema):
    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        if isinstance(serializer, StrictSerializer):
            schema["additionalProperties"] = False
        return schema

    def _map_serializer_field(
        self, field: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and _refuses_blank(field) and schema.get("type") == "string":
            schema.setdefault("minLength", 1)
            if field.trim_whitespace and not _has_pattern(field):
                schema["pattern"] = NOT_ONLY_WHITESPACE
        return schema


def _refuses_blank(field: Any) -> bool:
    if not isinstance(field, serializers.CharField):
        return False
    return not field.allow_blank and not field.read_only


def _has_pattern(field: Any) -> bool:
    """A RegexField's own pattern (which drf-spectacular adds later) already says it."""
    return any(isinstance(v, RegexValidator) for v in field.validators)


def document_unsupported_media_type(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: every operation that takes a body answers 415 to a body that is not
    `application/json` (DRF's parser negotiation), with the usual JSON `{detail}`."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method in BODY_METHODS and "requestBody" in operation:
                operation["responses"].setdefault(
                    "415",
                    {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                        },
                        "description": "The body is not application/json.",
                    },
                )
    return result
