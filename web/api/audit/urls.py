"""Routes of the invocation-log API, included at /api/ by config/api_urls.py."""

from django.urls import path

from web.api.audit import views

TURN = "campaigns/<uuid:campaign_id>/turns/<int:turn_id>/"
INVOCATIONS = "campaigns/<uuid:campaign_id>/invocations/"
INVOCATION = INVOCATIONS + "<uuid:invocation_id>/"

urlpatterns = [
    path(TURN + "tool-calls/", views.ToolCallView.as_view(), name="api-tool-calls"),
    path(TURN + "undo/", views.TurnUndoView.as_view(), name="api-turn-undo"),
    path(TURN + "undo-plan/", views.RevertPlanView.as_view(), name="api-turn-undo-plan"),
    path("analytics/tools/", views.ToolAnalyticsView.as_view(), name="api-analytics-tools"),
    path(INVOCATIONS, views.InvocationListView.as_view(), name="api-invocations"),
    path(INVOCATION, views.InvocationDetailView.as_view(), name="api-invocation"),
    path(INVOCATION + "revert/", views.InvocationRevertView.as_view(), name="api-revert"),
    path(INVOCATION + "revert-plan/", views.RevertPlanView.as_view(), name="api-revert-plan"),
    path(INVOCATION + "approve/", views.InvocationApproveView.as_view(), name="api-approve"),
    path(INVOCATION + "reject/", views.InvocationRejectView.as_view(), name="api-reject"),
]
