"""Routes of the invocation-log API, included at /api/ by config/api_urls.py."""

from django.urls import path

from web.api.audit import views

INVOCATIONS = "campaigns/<uuid:campaign_id>/invocations/"
INVOCATION = INVOCATIONS + "<uuid:invocation_id>/"

urlpatterns = [
    path("analytics/tools/", views.ToolAnalyticsView.as_view(), name="api-analytics-tools"),
    path(INVOCATIONS, views.InvocationListView.as_view(), name="api-invocations"),
    path(INVOCATION, views.InvocationDetailView.as_view(), name="api-invocation"),
    path(INVOCATION + "revert/", views.InvocationRevertView.as_view(), name="api-revert"),
    path(
        INVOCATION + "revert-plan/",
        views.InvocationRevertPlanView.as_view(),
        name="api-revert-plan",
    ),
    path(INVOCATION + "approve/", views.InvocationApproveView.as_view(), name="api-approve"),
    path(INVOCATION + "reject/", views.InvocationRejectView.as_view(), name="api-reject"),
]
