"""Refused attempts, for staff to review. Read-only like the invocation log."""

from django.contrib import admin
from django.utils.safestring import SafeString

from audit.models import SecurityEvent
from web.admin.display import pretty_json, time_column
from web.admin.pagination import EstimatedCountPaginator
from web.admin.reverting import LogReaderMixin, ReadOnlyMixin


@admin.register(SecurityEvent)
class SecurityEventAdmin(ReadOnlyMixin, LogReaderMixin, admin.ModelAdmin):
    list_display = ("when", "kind", "user", "campaign", "target", "ip")
    list_filter = (
        "kind",
        ("user", admin.RelatedOnlyFieldListFilter),
        ("campaign", admin.RelatedOnlyFieldListFilter),
        "created_at",
    )
    list_select_related = ("user", "campaign")
    search_fields = ("user__username", "campaign__name", "target")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    fields = ("created_at", "kind", "user", "campaign", "target", "ip", "detail_json")
    readonly_fields = fields
    when = time_column("created_at", "when")

    class Media:
        css = {"all": ["audit/admin.css"]}

    @admin.display(description="detail")
    def detail_json(self, event: SecurityEvent) -> SafeString:
        return pretty_json(event.detail)
