"""The campaign page's approval card (docs/architecture.md#human-in-the-loop): the calls of this
table that wait for a person, drawn by the server for the person looking — the diff, and
Approve/Reject for those the one rule lets answer (`Rights.approves`, `Rights.rejects`, through
`audit.selectors.viewer_rights`), a waiting note for everyone else. The page's script
(`static/js/table/approval.js`) swaps the fragment in on load and whenever an
`approval_requested` or `approval_resolved` event arrives; its buttons post to the REST API's
approve/reject, with the session and the CSRF token, like the rest of the page. A player reads a
held call that tells of a creature the fog hides only as something happening in the fog, without
its diff (`campaigns.visibility`, as the `approval_requested` event tells it)."""

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ai_tools.base import Names
from audit.models import ToolInvocation
from audit.selectors import Rights, held_call_affected_players, viewer_rights
from audit.services.dispatch import approval_deadline
from campaigns.models import Campaign
from campaigns.selectors import creature_names_in, world_labels
from campaigns.visibility import HIDDEN_CHANGE, Fog, held_call_hidden
from web.pages.changes import described, held_maps, in_words, named_summary, reader_names
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
    names = reader_names(
        names_seen(creature_names_in(campaign_ids=[campaign.pk]), fog),
        world_labels(campaign_id=campaign.pk),
        fog,
    )
    cards = [_card(row, rights, names, fog, campaign) for row in held]
    for card, row in zip(cards, held, strict=True):
        card["may_object"] = rights.objects(held_call_affected_players(campaign=campaign, row=row))
    return cards


def _card(
    row: ToolInvocation, rights: Rights, names: Names, fog: Fog | None, campaign: Campaign
) -> dict[str, Any]:
    """One held call as the card shows it: its tool's own words for what it would do (from the
    preview's before and after, so the numbers are the ones it would write), the reason, who
    asked; the raw fields (tool, input, the preview's field by field diff) behind "details",
    for those who run the table only: a player reads no internal name."""
    preview = row.preview if isinstance(row.preview, dict) else {}
    diff = preview.get("diff") if isinstance(preview.get("diff"), list) else []
    hidden = fog is not None and held_call_hidden(row.input, diff, fog)
    lines = (
        [HIDDEN_CHANGE]
        if hidden
        else described(row.tool_name, row.input, names, *held_maps(preview))
    )
    if not lines:
        lines = [named_summary(row.tool_name, row.input, dict(names.known))]
    return {
        "id": str(row.pk),
        "tool_name": row.tool_name,
        "title": lines[0],
        "lines": lines[1:],
        "actor": row.user.get_username(),
        "reason": in_words(str(preview.get("reason") or "")),
        "raw": None if hidden or not rights.gm else _raw(row, diff),
        "expires_at": approval_deadline(row, campaign),
        "may_approve": rights.approves(row.user_id),
        "may_reject": rights.rejects(row.user_id),
        "own": rights.user.pk == row.user_id,
    }


def _raw(row: ToolInvocation, diff: list[Any]) -> dict[str, Any]:
    """The call as the log holds it, for the GM to check the words against: JSON, never a
    Python repr."""
    return {
        "tool": row.tool_name,
        "model": row.model,
        "input": _json(row.input),
        "diff": [
            {
                "entity": f"{d.get('entity')}:{d.get('id')}",
                "field": d.get("field"),
                "before": _json(d.get("before")),
                "after": _json(d.get("after")),
            }
            for d in diff
            if isinstance(d, dict)
        ],
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
