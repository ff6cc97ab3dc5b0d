"""The campaign page's approval card (docs/architecture.md#human-in-the-loop): the calls of this
table that wait for a person, as the person looking sees them — the diff, and Approve/Reject for
those the one rule lets answer (`Rights.approves`, `Rights.rejects`, through
`audit.selectors.viewer_rights`), Object for the player of a character a critical call would
change, a waiting note for everyone else. A player reads a held call that tells of a creature the
fog hides only as something happening in the fog, without its diff (`campaigns.visibility`, as
the `approval_requested` event tells it).

The card is drawn once per event number for each class of viewer (web/pages/fragments.py), as
the board and the turns are, and sent down the sockets after an `approval_requested` or
`approval_resolved` event: five pages cost one drawing for each set of buttons, and no request.
A class is the viewer's sight and, for each held call, which of its buttons are theirs
(`approval_class`), so everyone in it is drawn the same card; the key also names what changes
without an event (`held_digest`: a stale preview refreshed by an approve that could not run, the
owner's new timeout), so a changed card is never served from an older drawing. The page's script
(`static/js/table/approval.js`) swaps it in; its buttons post to the REST API's approve, reject
and object, with the session and the CSRF token, like the rest of the page."""

import hashlib
import json
from typing import Any

from ai_tools.base import Names
from audit.models import ToolInvocation
from audit.selectors import Rights, held_call_affected_players, held_call_rows
from audit.services.dispatch import approval_deadline
from campaigns.models import Campaign
from campaigns.selectors import world_names
from campaigns.visibility import HIDDEN_CHANGE, Fog, held_call_hidden
from web.pages.changes import described, held_maps, in_words, named_summary, reader_names
from web.pages.presenters import names_seen, players_fog

# The held calls, oldest first, and by each call's id the players it would change.
HeldCalls = tuple[list[ToolInvocation], dict[Any, set[int]]]


def held_calls(*, campaign: Campaign) -> HeldCalls:
    """The campaign's held calls, oldest first, and the players each would change (one query,
    and one more for each critical call among them)."""
    held = held_call_rows(campaign=campaign)
    return held, {row.pk: held_call_affected_players(campaign=campaign, row=row) for row in held}


def held_digest(campaign: Campaign, held: HeldCalls) -> str:
    """What the card shows that may change without an event: each held call's preview, and
    the approval timeout its expiry is counted from."""
    shown = [[str(row.pk), row.preview] for row in held[0]]
    text = json.dumps([campaign.approval_timeout, shown], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def approval_class(rights: Rights, held: HeldCalls) -> str:
    """Everything the card draws differently for its viewer: their sight (the fog, the raw
    details), and for each held call whether they may approve it, reject it, or object to it.
    "Withdraw" for "Reject" follows: whoever may reject a call but not approve it is its turn's
    own player (`Rights.rejects`)."""
    calls, affected = held
    marks = [
        f"{rights.approves(row.user_id):d}{rights.rejects(row.user_id):d}"
        f"{rights.objects(affected[row.pk]):d}"
        for row in calls
    ]
    return f"{rights.sight.value}:{'.'.join(marks)}"


def approval_cards(*, campaign: Campaign, rights: Rights, held: HeldCalls) -> list[dict[str, Any]]:
    """The held calls (`held_calls`), as the card shows them to the person `rights` are of."""
    calls, affected = held
    if not calls:
        return []
    fog = players_fog(campaign=campaign, rights=rights, rows=[{"input": r.input} for r in calls])
    creatures, labels = world_names(campaign_id=campaign.pk)
    names = reader_names(names_seen(creatures, fog), labels, fog)
    cards = [_card(row, rights, names, fog, campaign) for row in calls]
    for card, row in zip(cards, calls, strict=True):
        card["may_object"] = rights.objects(affected[row.pk])
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
