"""Changelist filters that stay cheap on a log of millions of rows.

Django's `AllValuesFieldListFilter` lists choices with SELECT DISTINCT, which reads the whole
table, and `RelatedFieldListFilter` lists every campaign. These list what is in the log by skip
scan over the column's index, and the newest campaigns plus the selected one.
"""

import uuid

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.db import connections, router
from django.db.models import Model, QuerySet

from campaigns.models import Campaign
from web.shared import ascii_uuid

BLANK = "-"

# One index probe per distinct value (a "loose index scan"): each step asks the index for the
# smallest value above the previous one. Raw SQL: the ORM cannot say a recursive CTE.
SKIP_SCAN_SQL = """
    WITH RECURSIVE found(value) AS (
        SELECT MIN({column}) FROM {table}
        UNION ALL
        SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > found.value)
        FROM found WHERE found.value IS NOT NULL
    )
    SELECT value FROM found WHERE value IS NOT NULL
"""


def distinct_values(model: type[Model], field_name: str) -> list[str]:
    """The distinct values of an indexed column, in order, without reading the table."""
    connection = connections[router.db_for_read(model)]
    quote = connection.ops.quote_name
    column = model._meta.get_field(field_name).column
    sql = SKIP_SCAN_SQL.format(column=quote(column), table=quote(model._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [value for (value,) in cursor.fetchall()]


class IndexedValuesFilter(admin.SimpleListFilter):
    """The values of one indexed column that occur in the log; a blank value is listed too."""

    field_name = ""
    blank_label = "(none)"

    def lookups(self, request, model_admin):
        return [
            (value or BLANK, value or self.blank_label)
            for value in distinct_values(model_admin.model, self.field_name)
        ]

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(**{self.field_name: "" if value == BLANK else value})


class ToolFilter(IndexedValuesFilter):
    title = "tool"
    parameter_name = "tool"
    field_name = "tool_name"


class ModelFilter(IndexedValuesFilter):
    title = "model"
    parameter_name = "model"
    field_name = "model"


class SourceFilter(IndexedValuesFilter):
    title = "source"
    parameter_name = "source"
    field_name = "source"


class StatusFilter(admin.SimpleListFilter):
    """A log row's status (`awaiting_approval` is the admin's approval queue). The query string
    is that of Django's own field filter."""

    title = "status"
    parameter_name = "status__exact"

    def lookups(self, request, model_admin):
        return model_admin.model._meta.get_field("status").choices

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset if value is None else queryset.filter(status=value)


class CampaignFilter(admin.SimpleListFilter):
    """The newest campaigns and the selected one: a list of every campaign would not fit the
    page at scale. Any campaign is one click away from its cell in the list."""

    title = "campaign"
    parameter_name = "campaign"
    shown = 25

    def lookups(self, request, model_admin):
        campaigns = list(
            Campaign.objects.order_by("-created_at").values_list("pk", "name")[: self.shown]
        )
        selected = self._selected()
        if selected and selected not in {pk for pk, _ in campaigns}:
            campaigns += Campaign.objects.filter(pk=selected).values_list("pk", "name")
        return [(str(pk), name) for pk, name in campaigns]

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        selected = self._selected()
        return queryset if selected is None else queryset.filter(campaign_id=selected)

    def _selected(self) -> uuid.UUID | None:
        if self.value() is None:
            return None
        try:
            return ascii_uuid(self.value())
        except ValueError as exc:
            raise IncorrectLookupParameters(exc) from exc
