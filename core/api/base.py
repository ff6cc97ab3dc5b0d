"""What every API view and input serializer shares."""

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.errors import error_responses
from core.api.parsers import StrictJSONParser


class JsonOnly:
    """JSON in, JSON out, through the one parser that refuses what the database cannot store."""

    parser_classes = [StrictJSONParser]
    renderer_classes = [JSONRenderer]


class ApiView(JsonOnly, APIView):
    """A JSON endpoint; subclasses say in their docstring who may call it (it becomes the
    operation's description in the OpenAPI schema)."""


View = TypeVar("View", bound=type[APIView])


def list_schema(tag: str, summary: str, **operation: Any) -> Callable[[View], View]:
    """Document a list view's GET: its rows (`serializer_class`, many) and the errors every
    endpoint behind sign-in can answer; `operation` adds to it (the filter parameters)."""

    def document(view: View) -> View:
        responses = {200: view.serializer_class(many=True), **error_responses()}
        get = extend_schema(summary=summary, responses=responses, **operation)
        return extend_schema(tags=[tag])(extend_schema_view(get=get)(view))

    return document


def with_post_schema(view: View, *, tag: str, **operation: Any) -> View:
    """Document the POST a view inherits from a shared base: drf-spectacular gives the subclass
    its own copy of the method to describe, so each route has its own request and responses."""
    return extend_schema(tags=[tag])(extend_schema_view(post=extend_schema(**operation))(view))


# JSON types each field accepts. DRF would coerce "5" to 5 and 5 to "5"; a JSON API that
# guesses hides client bugs, so a value of the wrong JSON type is refused.
_JSON_TYPES: list[tuple[type[serializers.Field], type, str]] = [
    (serializers.BooleanField, bool, "a boolean"),
    (serializers.IntegerField, int, "an integer"),
    (serializers.ChoiceField, str, "a string"),
    (serializers.CharField, str, "a string"),
]


def _json_type_error(field: serializers.Field, value: Any) -> str | None:
    if value is None:
        return None  # null is the field's own business (allow_null)
    for field_class, json_type, name in _JSON_TYPES:
        if isinstance(field, field_class):
            # `type(...) is`, not isinstance: true is not the integer 1 here.
            return None if type(value) is json_type else f"Must be {name}."
    return None


def _length_error(field: serializers.Field, value: Any) -> str | None:
    """`max_length` bounds the string as sent: DRF would trim first and then measure, so
    "a" and 300 spaces would pass a 200-character limit the schema states."""
    limit = getattr(field, "max_length", None)
    if not isinstance(field, serializers.CharField) or limit is None or not isinstance(value, str):
        return None
    return f"Ensure this field has no more than {limit} characters." if len(value) > limit else None


def _blank_relation_error(field: serializers.Field, value: Any) -> str | None:
    """DRF reads "" as null for a relation; a blank name is not "nobody", so it is refused."""
    if isinstance(field, serializers.RelatedField) and value == "":
        return "This field may not be blank."
    return None


def _value_error(field: serializers.Field, value: Any) -> str | None:
    checks = (_json_type_error, _length_error, _blank_relation_error)
    return next((problem for check in checks if (problem := check(field, value))), None)


class StrictSerializer(serializers.Serializer):
    """Unknown fields and values of the wrong JSON type are refused, not silently dropped or
    coerced: a misspelt `cascade` must not look like a request that succeeded without it."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            errors = {str(key): ["Unknown field."] for key in data if key not in self.fields}
            for name, field in self.fields.items():
                problem = name in data and _value_error(field, data[name])
                if problem:
                    errors[name] = [problem]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


def client_ip(request: Request) -> str | None:
    """The peer address for the security log; None when it is not an IP (unix sockets)."""
    raw = request.META.get("REMOTE_ADDR") or ""
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return None


class ResultsPagination(CursorPagination):
    """`{"results": [...], "next": url|null}`, ordered by an indexed column, so a page far down
    the log costs one index range scan like the first page does."""

    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"

    def _as_the_view_says(self, view: Any) -> None:
        """The order the view names (`ApiListView.ordering`) and its page size by default."""
        self.ordering = view.ordering
        self.page_size = view.page_size or self.page_size

    def decode_cursor(self, request: Request) -> Any:
        """A forged cursor whose position does not fit the ordering column is an invalid cursor,
        not a database error."""
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            try:
                self._position_field.to_python(cursor.position)
            except (DjangoValidationError, ValueError, TypeError, OverflowError) as exc:
                raise NotFound(self.invalid_cursor_message) from exc
        return cursor

    def get_page_size(self, request: Request) -> int:
        """A bad `page_size` is a 400, not silently the default: the caller asked for
        something else than what they would get."""
        field = serializers.IntegerField(min_value=1, max_value=self.max_page_size)
        values = request.query_params.getlist(self.page_size_query_param)
        try:
            if not all(value.isascii() for value in values):
                field.fail("invalid")  # int() would read "５０" or "٥٠" as 50
            sizes = [field.run_validation(value) for value in values]
        except serializers.ValidationError as exc:
            raise serializers.ValidationError({self.page_size_query_param: exc.detail}) from exc
        return sizes[-1] if sizes else self.page_size

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        self._as_the_view_says(view)
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(
                    minimum=1, maximum=self.max_page_size, default=self.page_size
                )
        return parameters

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> Any:
        self._as_the_view_says(view)
        ordering = self.ordering if isinstance(self.ordering, str) else self.ordering[0]
        self._position_field = queryset.model._meta.get_field(ordering.lstrip("-"))
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data: list[Any]) -> Response:
        return Response({"results": data, "next": self.get_next_link()})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["results", "next"],
            "properties": {
                "results": schema,
                "next": {"type": "string", "format": "uri", "nullable": True},
            },
        }


class ApiListView(JsonOnly, generics.ListAPIView):
    """A cursor-paginated list (`ResultsPagination`); a subclass names its `ordering` (an
    indexed column) and, if not the default, its `page_size`."""

    pagination_class = ResultsPagination
    ordering: str
    page_size: int | None = None
