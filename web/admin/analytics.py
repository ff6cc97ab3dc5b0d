"""The analytics page of the admin: models side by side (the API's `?by=model` rows, with the
undo rate per GM turn as a chart), revert rates by model, by tool and by day, drawn as SVG on
the server (web/admin/charts.py), with the table the API serves beneath. Staff holding the audit
permission read every campaign, as they read the whole log."""

from datetime import timedelta
from typing import Any

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from audit.analytics import (
    approval_fatigue,
    model_stats,
    revert_rate_by,
    revert_rate_by_day,
    tool_stats,
)
from campaigns.models import Campaign
from web.admin.charts import bar_chart, time_chart
from web.admin.reverting import can_read_log

DEFAULT_DAYS = 30


class AnalyticsFilter(forms.Form):
    days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, initial=DEFAULT_DAYS, label="Last days"
    )
    campaign = forms.ModelChoiceField(
        Campaign.objects.order_by("name"),
        required=False,
        to_field_name="pk",
        empty_label="every campaign",
        widget=forms.HiddenInput,
    )

    def clean(self) -> dict[str, Any]:
        """Digits in ASCII: Django's integer and UUID fields read every script's ("３０")."""
        for name in self.fields:
            if not str(self.data.get(name, "")).isascii():
                self.add_error(name, "Use the digits 0-9.")
        return self.cleaned_data


def analytics_page(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """GET only; a bad filter is a 400 that shows the form's errors."""
    if not can_read_log(request.user):
        raise PermissionDenied
    form = AnalyticsFilter(request.GET)
    valid = form.is_valid()
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Tool analytics",
        "form": form,
        "media": model_admin.media,
    }
    if not valid:
        return TemplateResponse(request, "admin/audit/analytics.html", context, status=400)
    days = form.cleaned_data["days"] or DEFAULT_DAYS
    campaign = form.cleaned_data["campaign"]
    scope = {
        "campaign_ids": None if campaign is None else [campaign.pk],
        "since": timezone.now() - timedelta(days=days),
    }
    rows = tool_stats(**scope)
    models = model_stats(**scope)
    answered = [(m["model"], m["undo_rate"], m["turns"]) for m in models if m["turns"]]
    context.update(
        models=models,
        undo_by_model=bar_chart(answered),
        days=days,
        campaign=campaign,
        rows=rows,
        by_model=bar_chart(revert_rate_by(rows, "model")),
        by_tool=bar_chart(revert_rate_by(rows, "tool_name")),
        by_day=time_chart(revert_rate_by_day(**scope)),
        fatigue=approval_fatigue(**scope),
    )
    return TemplateResponse(request, "admin/audit/analytics.html", context)
