"""Routes of the REST API, included at /api/ by config/api_urls.py: the campaign, its turns and
its invocation log (docs/api.md#paths)."""

from django.urls import path

from web.api import auth, rolls, tokens, turns, views
from web.api.audit import views as log

CAMPAIGN = "campaigns/<uuid:campaign_id>/"
TURN = CAMPAIGN + "turns/<int:turn_id>/"
INVOCATIONS = CAMPAIGN + "invocations/"
INVOCATION = INVOCATIONS + "<uuid:invocation_id>/"

urlpatterns = [
    path("auth/token/", auth.TokenView.as_view(), name="api-token"),
    path("auth/register/", auth.RegisterView.as_view(), name="api-register"),
    path("campaigns/", views.CampaignListView.as_view(), name="api-campaigns"),
    path(CAMPAIGN, views.CampaignDetailView.as_view(), name="api-campaign"),
    path(CAMPAIGN + "state/", views.CampaignStateView.as_view(), name="api-campaign-state"),
    path(CAMPAIGN + "members/", views.MemberAddView.as_view(), name="api-members"),
    path(CAMPAIGN + "creatures/", views.CreatureCreateView.as_view(), name="api-creatures"),
    path(
        CAMPAIGN + "creatures/<int:creature_id>/resources/",
        views.ResourceCreateView.as_view(),
        name="api-resources",
    ),
    path(
        CAMPAIGN + "creatures/<int:creature_id>/move/",
        tokens.TokenMoveView.as_view(),
        name="api-token-move",
    ),
    path(CAMPAIGN + "chapters/", views.ChapterCreateView.as_view(), name="api-chapters"),
    path(CAMPAIGN + "dungeons/", views.DungeonCreateView.as_view(), name="api-dungeons"),
    path(CAMPAIGN + "turns/", turns.TurnListView.as_view(), name="api-turns"),
    path(CAMPAIGN + "rolls/", rolls.RollListView.as_view(), name="api-rolls"),
    path(TURN + "tool-calls/", turns.ToolCallView.as_view(), name="api-tool-calls"),
    path(TURN + "cancel/", turns.TurnCancelView.as_view(), name="api-turn-cancel"),
    path(TURN + "retry/", turns.TurnRetryView.as_view(), name="api-turn-retry"),
    path(TURN + "redo/", turns.TurnRedoView.as_view(), name="api-turn-redo"),
    path(TURN + "undo/", turns.TurnUndoView.as_view(), name="api-turn-undo"),
    path(TURN + "undo-plan/", turns.TurnUndoPlanView.as_view(), name="api-turn-undo-plan"),
    path(TURN + "rewind/", turns.TurnRewindView.as_view(), name="api-turn-rewind"),
    path(TURN + "rewind-plan/", turns.TurnRewindPlanView.as_view(), name="api-turn-rewind-plan"),
    path("analytics/tools/", log.ToolAnalyticsView.as_view(), name="api-analytics-tools"),
    path(
        "analytics/approvals/", log.ApprovalAnalyticsView.as_view(), name="api-analytics-approvals"
    ),
    path(INVOCATIONS, log.InvocationListView.as_view(), name="api-invocations"),
    path(INVOCATION, log.InvocationDetailView.as_view(), name="api-invocation"),
    path(INVOCATION + "revert/", log.InvocationRevertView.as_view(), name="api-revert"),
    path(
        INVOCATION + "revert-plan/", log.InvocationRevertPlanView.as_view(), name="api-revert-plan"
    ),
    path(INVOCATION + "approve/", log.InvocationApproveView.as_view(), name="api-approve"),
    path(INVOCATION + "reject/", log.InvocationRejectView.as_view(), name="api-reject"),
    path(INVOCATION + "object/", log.InvocationObjectView.as_view(), name="api-object"),
]
