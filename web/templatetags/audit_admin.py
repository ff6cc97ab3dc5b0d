"""`calendar_date_hierarchy`: Django's date drill-down without its SELECT DISTINCT.

To list the years, months or days that hold rows, Django's `date_hierarchy` truncates the date
of every row of the list and keeps the distinct ones: a read of the whole table, most of a
second at a million log rows. This tag runs Django's own tag on a stand-in queryset whose
`datetimes()` lists the calendar periods between the first and the last row instead, found by
MIN and MAX, two ends of the date index. A period in that range without rows is listed too.
"""

import copy
import datetime
from typing import Any

from django import template
from django.contrib.admin.templatetags.admin_list import date_hierarchy
from django.contrib.admin.views.main import ChangeList
from django.db.models import Max, Min, QuerySet
from django.utils import timezone

register = template.Library()


class CalendarQuerySet:
    """Stands in for the changelist queryset inside Django's `date_hierarchy`."""

    def __init__(self, queryset: QuerySet) -> None:
        self.queryset = queryset

    def aggregate(self, **aggregates: Any) -> dict[str, Any]:
        return self.queryset.aggregate(**aggregates)

    def datetimes(self, field_name: str, kind: str) -> list[datetime.datetime]:
        bounds = self.queryset.aggregate(first=Min(field_name), last=Max(field_name))
        if bounds["first"] is None:
            return []
        return calendar_periods(
            timezone.localtime(bounds["first"]), timezone.localtime(bounds["last"]), kind
        )

    dates = datetimes


def calendar_periods(
    first: datetime.datetime, last: datetime.datetime, kind: str
) -> list[datetime.datetime]:
    """The start of every year, month or day from `first` to `last`, both included."""
    if kind == "year":
        return [first.replace(year=y, month=1, day=1) for y in range(first.year, last.year + 1)]
    if kind == "month":
        months = range(first.year * 12 + first.month - 1, last.year * 12 + last.month)
        return [first.replace(year=m // 12, month=m % 12 + 1, day=1) for m in months]
    days = (last.date() - first.date()).days
    start = first.replace(hour=0, minute=0, second=0, microsecond=0)
    return [start + datetime.timedelta(days=n) for n in range(days + 1)]


@register.inclusion_tag("admin/date_hierarchy.html")
def calendar_date_hierarchy(cl: ChangeList) -> dict[str, Any] | None:
    stand_in = copy.copy(cl)
    stand_in.queryset = CalendarQuerySet(cl.queryset)
    return date_hierarchy(stand_in)
