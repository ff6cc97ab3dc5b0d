"""A vocabulary is declared once and every surface reads it from there: skip reasons, a log row's
origin, the statuses the analytics count. These fail when a surface grows a value of its own or
misses one the declaration has."""

from audit.models import InvocationOrigin, SkipReason, ToolCounts, ToolInvocation
from web.admin import reverting
from web.api.audit.serializers import RevertResultSerializer
from web.pages import presenters


def test_every_surface_words_every_skip_reason_and_no_other():
    assert set(presenters.SKIPS) == set(SkipReason)
    assert set(reverting.SKIP_REASONS) == set(SkipReason)
    assert set(RevertResultSerializer().fields["skip_reason"].choices) == set(SkipReason)


def test_a_log_rows_source_is_one_of_the_origins():
    assert ToolInvocation._meta.get_field("source").choices == InvocationOrigin.choices


def test_every_status_has_its_analytics_column():
    columns = ToolCounts.STATUS_COLUMNS
    assert set(columns) == set(ToolInvocation.Status)
    assert all(ToolCounts._meta.get_field(name) for name in columns.values())
    assert columns[ToolInvocation.Status.AWAITING_APPROVAL] == "awaiting"  # the API's key
