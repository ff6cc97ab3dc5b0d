"""Set-up from the browser and the GM's own hand (docs/architecture.md#set-up-and-the-gms-hand): the
campaign page's forms.

Each form posts here with the session and its CSRF token, and is validated by the API's own
input serializers and handled by the API's services (which decide who may, and record a
refusal), so a form and the REST API accept, refuse and word their refusals alike (the message
is the API's `detail`, made by the API's error handler). A plain POST answers with a redirect
back to the page (or the page again with the form's error); the page's script posts the same
forms with `Accept: application/json` and gets the API's status and body instead. Either way,
what changed reaches every open page as events.
"""

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import exceptions

from audit.models import ToolInvocation
from audit.selectors import viewer_rights
from audit.services.hand import hand_call
from campaigns import services
from campaigns.images import MAX_BYTES
from campaigns.models import Campaign
from campaigns.selectors import creature_get, invite_get_usable, map_background_get
from core.api.base import client_ip
from core.api.errors import exception_handler
from core.errors import AppError, InvalidInput
from web.api import serializers as s
from web.negotiation import wants_json
from web.pages import presenters
from web.pages.forms import HandInput, InviteCreateInput, MapInput, as_json, posted_fields
from web.pages.views import member_campaign, signed_in
from web.shared import validated

Action = Callable[..., dict[str, Any]]


def valid(serializer_class: type, fields: dict[str, str]) -> dict[str, Any]:
    """The form validated by the API's input serializer, as the API validates its JSON."""
    return validated(serializer_class, as_json(serializer_class, fields))


def _answer(
    request: HttpRequest, campaign_id: Any, form: str, action: Action, path: dict[str, Any]
) -> HttpResponse:
    """Run one form's action and answer as the asker expects (see the module docstring); a
    script's refusal is the API's, answered by `web.middleware`."""
    campaign = member_campaign(request, campaign_id)
    try:
        body = action(request, campaign, posted_fields(request), **path)
    except (AppError, exceptions.ValidationError) as exc:
        if wants_json(request):
            raise
        refusal = exception_handler(exc, {})
        rights = viewer_rights(campaign=campaign, user=request.user)
        context = presenters.table(campaign=campaign, rights=rights)
        context["setup"]["errors"] = {form: refusal.data["detail"]}
        return render(request, "campaigns/detail.html", context, status=refusal.status_code)
    if wants_json(request):
        return JsonResponse(body, status=201)
    if "invite_url" in body:  # shown once: the page itself, not a redirect that would lose it
        rights = viewer_rights(campaign=campaign, user=request.user)
        context = presenters.table(campaign=campaign, rights=rights)
        context["setup"]["new_invite_url"] = body["invite_url"]
        chosen = {name: request.POST.get(name, "") for name in ("expires_in_hours", "max_uses")}
        context["setup"]["invite_values"] = chosen  # the next link starts from the same choice
        return render(request, "campaigns/detail.html", context, status=201)
    return redirect(reverse("campaign_detail", args=[campaign.pk]) + f"#{form}")


def _form_view(form: str, action: Action) -> Callable[..., HttpResponse]:
    @signed_in
    @require_POST
    def view(request: HttpRequest, campaign_id: Any, **path: Any) -> HttpResponse:
        return _answer(request, campaign_id, form, action, path)

    view.__name__ = view.__qualname__ = f"{form.replace('-', '_')}_post"
    return view


def _member_add(request: HttpRequest, campaign: Campaign, data: dict[str, Any]) -> dict[str, Any]:
    data = valid(s.MemberAddInput, data)
    membership = services.membership_add(
        campaign=campaign, by=request.user, ip=client_ip(request), **data
    )
    return {"username": membership.user.get_username(), "role": membership.role}


def _creature_add(request: HttpRequest, campaign: Campaign, data: dict[str, Any]) -> dict:
    """As `POST /api/campaigns/{id}/creatures/`: the owner adds anything, a player only their
    own player character (which is theirs without saying so)."""
    data = valid(s.CreatureCreateInput, data)
    creature = services.creature_create(
        campaign=campaign, by=request.user, ip=client_ip(request), **data
    )
    return {"id": creature.pk}


def _owner_create(service: Callable[..., Any], input_serializer: type) -> Action:
    def create(request: HttpRequest, campaign: Campaign, data: dict[str, Any]) -> dict:
        data = valid(input_serializer, data)
        row = service(campaign=campaign, by=request.user, ip=client_ip(request), **data)
        return {"id": row.pk}

    return create


def _resource_add(request: HttpRequest, campaign: Campaign, data: dict[str, Any]) -> dict:
    """As `POST …/creatures/{cid}/resources/`; the API names the creature in its path, the
    page's form picks it in a field."""
    creature = creature_get(campaign=campaign, creature_id=data.pop("creature_id", None))
    resource = services.resource_create(
        campaign=campaign,
        creature=creature,
        by=request.user,
        ip=client_ip(request),
        **valid(s.ResourceCreateInput, data),
    )
    return {"id": resource.pk}


def _invite_create(request: HttpRequest, campaign: Campaign, data: dict[str, Any]) -> dict:
    data = valid(InviteCreateInput, data)
    invite, token = services.invite_create(
        campaign=campaign,
        expires_in=timedelta(hours=data["expires_in_hours"]),
        max_uses=data.get("max_uses"),
        by=request.user,
        ip=client_ip(request),
    )
    url = request.build_absolute_uri(reverse("invite_accept", args=[token]))
    return {"id": invite.pk, "invite_url": url}


def _invite_revoke(
    request: HttpRequest, campaign: Campaign, data: dict[str, Any], invite_id: int
) -> dict:
    invite = services.invite_revoke(
        campaign=campaign, invite_id=invite_id, by=request.user, ip=client_ip(request)
    )
    return {"id": invite.pk, "revoked": True}


def _hand(request: HttpRequest, campaign: Campaign, data: dict[str, Any]) -> dict[str, Any]:
    """A tool call by the owner's or a co-GM's own hand; its input comes from the form's fields
    as the tool's schema types them."""
    tool_name = validated(HandInput, {"tool": data.pop("tool", "")})["tool"]
    row = hand_call(
        campaign=campaign,
        tool_name=tool_name,
        input=HandInput.tool_input(tool_name, data),
        by=request.user,
        ip=client_ip(request),
    )
    if row.status != ToolInvocation.Status.COMMITTED:
        raise InvalidInput(row.error)
    return {"invocation": str(row.pk), "turn": row.turn_id, "status": row.status}


def _map_set(request: HttpRequest, campaign: Campaign, data: dict[str, Any]) -> dict[str, Any]:
    """The GM sets the battle map's grid and background (`campaign_map_set` decides who may and
    checks the image); the file is read no further than one byte past the size limit."""
    data = valid(MapInput, data)
    upload = request.FILES.get("background")
    image = upload.read(MAX_BYTES + 1) if upload is not None else None
    updated = services.campaign_map_set(
        campaign=campaign,
        by=request.user,
        cols=data.get("cols"),
        rows=data.get("rows"),
        background=image,
        remove_background=data.get("remove_background", False),
        ip=client_ip(request),
    )
    return {"cols": updated.map_cols, "rows": updated.map_rows}


member_add = _form_view("members", _member_add)
creature_add = _form_view("creatures", _creature_add)
resource_add = _form_view("resources", _resource_add)
chapter_add = _form_view("chapters", _owner_create(services.chapter_create, s.ChapterCreateInput))
dungeon_add = _form_view("dungeons", _owner_create(services.dungeon_create, s.DungeonCreateInput))
invite_add = _form_view("invites", _invite_create)
invite_revoke = _form_view("invites", _invite_revoke)
hand = _form_view("hand", _hand)
map_set = _form_view("map", _map_set)


@signed_in
@require_GET
def map_background(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    """The map's background image, to members only (a stranger: 404, as for the campaign),
    with the type its content proved and nothing a browser could run or sniff otherwise."""
    campaign = member_campaign(request, campaign_id)
    image = map_background_get(campaign=campaign)
    response = HttpResponse(bytes(image.data), content_type=image.content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Content-Disposition"] = "inline"
    response["Cache-Control"] = "private, max-age=86400"  # its URL changes with each upload
    return response


@require_http_methods(["GET", "POST"])
def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    """The invite link: its page names the campaign and who invited you — signed out too, with
    "Sign up to join" and "Sign in" leading back here — and joining is a POST, signed in (a link
    preview or a prefetch must not make anyone a member). An unknown, expired, revoked or
    used-up link gets a page saying so, with its status (404, 410); a script, the API's JSON."""
    if not request.user.is_authenticated and (request.method == "POST" or wants_json(request)):
        return signed_in(invite_accept)(request, token)  # to the sign-in page, or a 401
    try:
        if request.method == "POST":
            membership = services.invite_accept(token=token, user=request.user)
            return redirect("campaign_detail", campaign_id=membership.campaign_id)
        invite, member = invite_get_usable(token=token, user=request.user)
    except AppError as exc:
        if wants_json(request):
            raise
        context = {"refusal": exc.detail}
        return render(request, "campaigns/invite.html", context, status=exc.status_code)
    inviter = invite.created_by or invite.campaign.owner
    context = {"invite": invite, "member": member, "inviter": inviter.get_username()}
    return render(request, "campaigns/invite.html", context)
