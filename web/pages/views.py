"""People's pages (docs/architecture.md#the-campaign-page-one-renderer-the-server): sign-up, the
campaign list and the live campaign page.

Views validate, call one selector or service, and render. Play itself (messages, undo) goes
through the REST API from the page's script, so the browser and API clients share one path.
"""

import functools
import re
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import exceptions

from audit.selectors import viewer_rights
from campaigns.models import ApprovalPolicyChange, Campaign
from campaigns.selectors import campaign_get_for_member, campaign_list_for_member, one_snapshot
from campaigns.services import (
    campaign_create,
    campaign_set_approval_policy,
    campaign_set_approval_timeout,
)
from core.api.base import client_ip
from core.errors import Forbidden, InvalidInput, NotFound
from gm.providers import seat_of, seats
from gm.services import campaign_gm_set
from web.accounts import ExpiringTokenAuthentication, SignupRateThrottle, too_many
from web.api import serializers as s
from web.negotiation import wants_json
from web.pages import fragments, presenters
from web.pages.forms import (
    ApprovalPolicyForm,
    ApprovalTimeoutInput,
    CampaignForm,
    GMSeatForm,
    SignupForm,
    as_json,
    posted_fields,
    refused,
)
from web.shared import validated

# A turn's or roll's id as the URL converters take it: ASCII digits only (str.isdigit also takes
# "²", which int() refuses), and short enough for a bigint.
FEED_ID = re.compile(r"[0-9]{1,18}")


def signed_in(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """`login_required` for people. A script is told what the API tells a caller without
    credentials (401, its `detail`, `WWW-Authenticate`) rather than sent to the sign-in page,
    which it would follow and read as a success."""
    for_people = login_required(view)

    @functools.wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if wants_json(request) and not request.user.is_authenticated:
            refusal = exceptions.NotAuthenticated()
            refusal.auth_header = ExpiringTokenAuthentication().authenticate_header(request)
            raise refusal
        return for_people(request, *args, **kwargs)

    return checked


def member_campaign(request: HttpRequest, campaign_id: Any) -> Campaign:
    """The campaign of the path; NotFound for a stranger (`web.middleware` answers it: a page for
    people, the API's JSON for a script)."""
    return campaign_get_for_member(campaign_id=campaign_id, user=request.user)


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """The sign-up page, rate-limited per address by the same limiter as the API's sign-up."""
    next_url = _safe_next(request)
    if request.user.is_authenticated:
        return HttpResponseRedirect(next_url or reverse("campaign_list"))
    throttle = SignupRateThrottle()
    if not throttle.allow_request(request, None):
        return too_many(request, what="Too many sign-ups from your address.", wait=throttle.wait())
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return HttpResponseRedirect(next_url or reverse("campaign_list"))
    if request.method == "POST" and wants_json(request):
        raise refused(form)
    response = render(request, "registration/signup.html", {"form": form, "next": next_url})
    patch_cache_control(response, no_store=True)  # it may hold the passwords typed
    return response


def _safe_next(request: HttpRequest) -> str:
    """Where to go after signing up (an invite link), if it is a page of this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    allowed = target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if allowed else ""


@signed_in
@require_http_methods(["GET", "POST"])
def campaign_list(request: HttpRequest) -> HttpResponse:
    form = CampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        campaign = campaign_create(owner=request.user, **form.cleaned_data)
        return redirect("campaign_detail", campaign_id=campaign.pk)
    if request.method == "POST" and wants_json(request):
        raise refused(form)
    campaigns = campaign_list_for_member(user=request.user)
    return render(request, "campaigns/list.html", {"campaigns": campaigns, "form": form})


@login_required
@require_GET
def campaign_detail(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    campaign = member_campaign(request, campaign_id)
    rights = viewer_rights(campaign=campaign, user=request.user)
    context = presenters.table(campaign=campaign, rights=rights)
    context["gm_seat"] = seat_of(campaign)
    if rights.owner:
        policy = {"approval_policy": campaign.approval_policy}
        context["policy_form"] = ApprovalPolicyForm(initial=policy)
        seat = {"provider": context["gm_seat"].name}
        context["gm_form"] = GMSeatForm(initial=seat, seats=seats())
    context["approval_timeout_minutes"] = round(campaign.approval_timeout / 60)
    return render(request, "campaigns/detail.html", context)


@signed_in
@require_POST
def campaign_gm(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The owner seats another of this server's GMs at the campaign's table
    (`gm.services.campaign_gm_set` decides who may, and which GMs there are)."""
    campaign = member_campaign(request, campaign_id)
    provider = request.POST.get("provider", "")
    if not provider:
        raise InvalidInput("provider: choose one of this server's GMs.")
    campaign_gm_set(campaign=campaign, by=request.user, provider=provider, ip=client_ip(request))
    return redirect("campaign_detail", campaign_id=campaign.pk)


@require_GET
def help_playing(request: HttpRequest) -> HttpResponse:
    """The README's "Playing" section: how to seat a real GM, what the scripted one knows."""
    readme = (settings.BASE_DIR / "README.md").read_text(encoding="utf-8")
    start = readme.find("\n## Playing")
    end = readme.find("\n## ", start + 1) if start >= 0 else -1
    section = readme[start : end if end >= 0 else None] if start >= 0 else readme
    text = section.strip().removeprefix("## Playing").strip()
    return render(request, "help/playing.html", {"text": text})


@signed_in
@require_POST
def campaign_policy(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The owner changes the approval policy from the campaign page; the change is logged. As
    `PATCH /api/campaigns/{id}/`: the same check and input serializer, so the same refusals
    (`web.middleware` answers them: a page for people, the API's JSON for a script)."""
    campaign = member_campaign(request, campaign_id)
    data = validated(s.CampaignUpdateInput, posted_fields(request))
    campaign_set_approval_policy(
        campaign=campaign,
        by=request.user,
        policy=data["approval_policy"],
        via=ApprovalPolicyChange.Via.PAGE,
        ip=client_ip(request),
    )
    return redirect("campaign_detail", campaign_id=campaign.pk)


@signed_in
@require_POST
def campaign_approval_timeout(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The owner sets how long a held call waits before it expires, in minutes: the API's
    `PATCH … {approval_timeout}` in seconds, by the same service and its refusals."""
    campaign = member_campaign(request, campaign_id)
    data = validated(ApprovalTimeoutInput, as_json(ApprovalTimeoutInput, posted_fields(request)))
    campaign_set_approval_timeout(
        campaign=campaign,
        by=request.user,
        seconds=data["minutes"] * 60,
        via=ApprovalPolicyChange.Via.PAGE,
        ip=client_ip(request),
    )
    return redirect("campaign_detail", campaign_id=campaign.pk)


@login_required
@require_GET
def campaign_board(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The board's parts as HTML (scene, map, combat, rosters, the forms' choices), drawn by
    the same templates as the page, with the number of the last event they reflect: the script
    swaps them in when an event says the world changed, and after a gap in the event stream."""
    campaign = member_campaign(request, campaign_id)
    rights = viewer_rights(campaign=campaign, user=request.user)
    return HttpResponse(fragments.board(campaign=campaign, rights=rights))


@login_required
@require_GET
def campaign_approvals(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The approval card for the person looking (web/pages/approvals.py): on the page's load,
    after a resync, after an answer the API refused, and when the server could not send it."""
    campaign = member_campaign(request, campaign_id)
    rights = viewer_rights(campaign=campaign, user=request.user)
    return HttpResponse(fragments.approvals(campaign=campaign, rights=rights))


@login_required
@require_GET
def campaign_feed(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The feed as HTML, whole, one turn (`?turn=`) or one roll (`?roll=`): the script swaps it
    in after a turn completes or is undone, draws a roll when it is announced, and reloads the
    whole after a gap in the event stream."""
    campaign = member_campaign(request, campaign_id)
    rights = viewer_rights(campaign=campaign, user=request.user)
    turn_id, roll_id = request.GET.get("turn"), request.GET.get("roll")
    if roll_id is not None:
        return _roll_fragment(request, campaign, roll_id)
    if "change" in request.GET:
        return _change_fragment(request, campaign, rights, request.GET["change"])
    if "added" in request.GET:
        return _added_fragment(request, campaign, rights, request.GET["added"])
    if turn_id is None:
        with one_snapshot():  # the entries and the number of the last event they reflect
            seq = presenters.event_seq(campaign)
            entries = presenters.timeline(campaign=campaign, rights=rights)
        return render(request, "campaigns/_feed.html", {"feed": entries, "seq": seq})
    if not FEED_ID.fullmatch(turn_id):
        raise Http404("No such turn.")
    drawn = fragments.turn(campaign=campaign, rights=rights, turn_id=int(turn_id))
    if drawn is None:
        raise Http404("No such turn.")
    return HttpResponse(drawn)


def _change_fragment(
    request: HttpRequest, campaign: Campaign, rights: Any, invocation_id: str
) -> HttpResponse:
    """A change made outside any turn (a token dragged), one entry of the feed: `?change=` its
    invocation's id."""
    try:
        uuid.UUID(invocation_id)
    except ValueError:
        raise Http404("No such change.") from None
    drawn = fragments.change(campaign=campaign, rights=rights, invocation_id=invocation_id)
    if not drawn:
        raise Http404("No such change.")
    return HttpResponse(drawn)


def _added_fragment(
    request: HttpRequest, campaign: Campaign, rights: Any, creature_id: str
) -> HttpResponse:
    """A creature someone added through the set-up, one entry of the feed: `?added=` its id."""
    if not FEED_ID.fullmatch(creature_id):
        raise Http404("No such change.")

    def draw() -> str:
        found = presenters.creature_additions(
            campaign=campaign, rights=rights, creature_id=int(creature_id)
        )
        return (
            render_to_string("campaigns/_change_entry.html", {"change": found[0]}) if found else ""
        )

    drawn = fragments.for_sight(
        campaign=campaign, rights=rights, fragment=f"added:{creature_id}", draw=draw
    )
    if not drawn:
        raise Http404("No such change.")
    return HttpResponse(drawn)


def _roll_fragment(request: HttpRequest, campaign: Campaign, roll_id: str) -> HttpResponse:
    """A roll made during a turn (the GM's) is drawn inside its turn; a player's is an entry of
    the feed of its own."""
    if not FEED_ID.fullmatch(roll_id):
        raise Http404("No such roll.")
    drawn = fragments.roll(campaign=campaign, roll_id=int(roll_id))
    if not drawn:
        raise Http404("No such roll.")
    return HttpResponse(drawn)


@login_required
@require_GET
def campaign_undo_plan(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The undo dialog's content for `?turn=` (with `cascade=1`: that turn and every later call
    depending on it), drawn by the server in plain words. The plan service authorises: a member
    who may not undo it gets a 403 with the message alone (and a security event)."""
    campaign = member_campaign(request, campaign_id)
    turn_id = request.GET.get("turn", "")
    if not FEED_ID.fullmatch(turn_id):
        raise Http404("No such turn.")
    try:
        plan = presenters.undo_plan(
            campaign=campaign,
            rights=viewer_rights(campaign=campaign, user=request.user),
            turn_id=int(turn_id),
            cascade=request.GET.get("cascade") in ("1", "true"),
            ip=client_ip(request),
        )
    except Forbidden as denial:
        return HttpResponse(denial.detail, status=403, content_type="text/plain")
    except NotFound as exc:
        raise Http404("No such turn.") from exc
    return render(request, "campaigns/_undo_plan.html", plan)


@login_required
@require_GET
def campaign_rewind_plan(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The rewind dialog's content for `?turn=`: that turn and every later one, drawn by the
    server in plain words, on the same plan service as `…/turns/{tid}/rewind-plan/`. A member
    who may not rewind it all gets a 403 with the message alone, naming what blocks it (and a
    security event)."""
    campaign = member_campaign(request, campaign_id)
    turn_id = request.GET.get("turn", "")
    if not FEED_ID.fullmatch(turn_id):
        raise Http404("No such turn.")
    try:
        plan = presenters.rewind_plan(
            campaign=campaign,
            rights=viewer_rights(campaign=campaign, user=request.user),
            turn_id=int(turn_id),
            ip=client_ip(request),
        )
    except Forbidden as denial:
        return HttpResponse(denial.detail, status=403, content_type="text/plain")
    except NotFound as exc:
        raise Http404("No such turn.") from exc
    return render(request, "campaigns/_rewind_plan.html", plan)
