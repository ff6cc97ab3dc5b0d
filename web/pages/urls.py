"""People's pages: sign-in/up, the campaign list and the campaign page
(docs/architecture.md#the-campaign-page-one-renderer-the-server)."""

from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import path
from django.utils.functional import lazy
from django.views.generic import RedirectView

from web.pages import setup, views

CAMPAIGN = "campaigns/<uuid:campaign_id>/"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="campaign_list"), name="home"),
    # Where browsers and feed readers look without a page's <link rel="icon">.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.png")), name="favicon"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/signup/", views.signup, name="signup"),
    path("campaigns/", views.campaign_list, name="campaign_list"),
    path("campaigns/<uuid:campaign_id>/", views.campaign_detail, name="campaign_detail"),
    path("campaigns/<uuid:campaign_id>/policy/", views.campaign_policy, name="campaign_policy"),
    path("campaigns/<uuid:campaign_id>/gm/", views.campaign_gm, name="campaign_gm"),
    path("help/playing/", views.help_playing, name="help_playing"),
    path(
        "campaigns/<uuid:campaign_id>/approval-timeout/",
        views.campaign_approval_timeout,
        name="campaign_approval_timeout",
    ),
    path("campaigns/<uuid:campaign_id>/board/", views.campaign_board, name="campaign_board"),
    path("campaigns/<uuid:campaign_id>/feed/", views.campaign_feed, name="campaign_feed"),
    path(
        "campaigns/<uuid:campaign_id>/undo-plan/",
        views.campaign_undo_plan,
        name="campaign_undo_plan",
    ),
    path(CAMPAIGN + "rewind-plan/", views.campaign_rewind_plan, name="campaign_rewind_plan"),
    path(CAMPAIGN + "approvals/", views.campaign_approvals, name="campaign_approvals"),
    path(CAMPAIGN + "members/", setup.member_add, name="page_members"),
    path(CAMPAIGN + "creatures/", setup.creature_add, name="page_creatures"),
    path(CAMPAIGN + "resources/", setup.resource_add, name="page_resources"),
    path(CAMPAIGN + "chapters/", setup.chapter_add, name="page_chapters"),
    path(CAMPAIGN + "dungeons/", setup.dungeon_add, name="page_dungeons"),
    path(CAMPAIGN + "invites/", setup.invite_add, name="page_invites"),
    path(
        CAMPAIGN + "invites/<int:invite_id>/revoke/", setup.invite_revoke, name="page_invite_revoke"
    ),
    path(CAMPAIGN + "hand/", setup.hand, name="page_hand"),
    path(CAMPAIGN + "map/", setup.map_set, name="page_map"),
    path(CAMPAIGN + "map/background/", setup.map_background, name="campaign_map_background"),
    path("invites/<str:token>/", setup.invite_accept, name="invite_accept"),
]
