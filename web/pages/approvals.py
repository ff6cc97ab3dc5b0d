"""The campaign page's approval card (docs/architecture.md#human-in-the-loop): the calls of this
table that wait for a person, drawn by the server for the person looking — the diff, and
Approve/Reject for those the one rule lets answer (`Rights.approves`, `Rights.rejects`, through
`audit.selectors.viewer_rights`), a waiting note for everyone else. The page's script
(`static/js/table/approval.js`) swaps the fragment in on load and whenever an
`approval_requested` or `approval_resolved` event arrives; its buttons post to the REST API's
approve/reject, with the session and the CSRF token, like the rest of the page. A player reads a
held call that tells of a creature the fog hides only as something happening in the fog, without
its diff (`campaigns.visibility`, as the `approval_requested` event tells it)."""

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audit.models import ToolInvocation
from audit.selectors import Rights, held_call_affected_players, viewer_rights
from audit.services.dispatch import approval_deadline
from campaigns.models import Campaign
from campaigns.selectors import creature_names_in
from campaigns.visibility import HIDDEN_CHANGE, Fog, held_call_hidden
from web.pages.changes import named_summary
from web.pages.presenters import names_seen, players_fog
from web.pages.views import member_campaign


@login_required
@require_GET
def campaign_approvals(request: HttpRequest, campaign_id: Any) -> HttpResponse:
    campaign = member_campaign(request, campaign_id)
    rights = viewer_rights(campaign=campaign, user=request.user)
    cards = approval_cards(campaign=campaign, rights=rights)
    return render(request, "campaigns/_approval.html", {"approvals": cards, "campaign": campaign})


def approval_cards(*, campaign: Campaign, rights: Rights) -> list[dict[str, Any]]:
    """The held calls, oldest first, as the card shows them to the person `rights` are of."""
    held = (
        ToolInvocation.objects.filter(
            campaign=campaign, status=ToolInvocation.Status.AWAITING_APPROVAL
        )
        .select_related("user")
        .order_by("sequence")
    )
    if not held:
        return []
    fog = players_fog(campaign=campaign, rights=rights, rows=[{"input": r.input} for r in held])
    names = names_seen(creature_names_in(campaign_ids=[campaign.pk]), fog)
    cards = [_card(row, rights, names, fog, campaign) for row in held]
    for card, row in zip(cards, held, strict=True):
        card["may_object"] = rights.objects(held_call_affected_players(campaign=campaign, row=row))
    return cards


def _card(
    row: ToolInvocation, rights: Rights, names: dict, fog: Fog | None, campaign: Campaign
) -> dict[str, Any]:
    preview = row.preview or {}
    diff = preview.get("diff", [])
    hidden = fog is not None and held_call_hidden(row.input, diff, fog)
    return {
        "id": str(row.pk),
        "tool_name": row.tool_name,
        "summary": HIDDEN_CHANGE if hidden else named_summary(row.tool_name, row.input, names),
        "actor": row.user.get_username(),
        "model": row.model,
        "reason": preview.get("reason", ""),
        "diff": [] if hidden else [_change(d, names) for d in diff],
        "expires_at": approval_deadline(row, campaign),
        "may_approve": rights.approves(row.user_id),
        "may_reject": rights.rejects(row.user_id),
        "own": rights.user.pk == row.user_id,
    }


def _change(change: dict[str, Any], names: dict) -> dict[str, Any]:
    what = change["entity"]
    if what == "creature" and str(change["id"]).isdigit():
        what = names.get(int(change["id"]), f"creature {change['id']}")
    return {**change, "what": what}
