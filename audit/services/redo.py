"""Redo: put an undone turn back exactly as it was (docs/architecture.md#rewind-and-redo).

Retry runs the GM afresh on an undone turn (new words, fresh dice). Redo puts the turn back as
it was: its calls, with the same inputs, run again through the audited dispatch's own steps as
new log rows in a new turn (`redo_of`), with the turn's messages and the GM's dice as they were.
Only if none of the entities the turn wrote changed since it was undone (each is as the turn's
first call on it found it), and only if each call then writes exactly what it wrote the first
time; otherwise a 409 saying what changed, and nothing stays. The new rows are logged and
undoable like any call, and the redone turn is undone, rewound or redone like any turn.
"""

from typing import Any

from django.db import transaction

from ai_tools import entities
from audit.models import ToolInvocation
from audit.permissions import authorize_revert
from audit.services.common import ToolFailed
from audit.services.dispatch import redone_call_run
from campaigns.models import Campaign, ChatMessage, DiceRoll, Turn
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible, turn_get
from campaigns.services import dice_roll_record, message_post
from core.errors import Conflict, Diverged


def turn_redo(*, campaign_id: Any, turn_id: Any, user: Any, ip: str | None = None) -> Turn:
    """Put the undone turn `turn_id` back as a new turn of the same actor (its actor, or whoever
    may revert it, may). A turn is redone once, and not one that was retried. Durable: nested
    in a caller's transaction it raises RuntimeError."""
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign = campaign_get_visible(campaign_id=campaign_id, user=user, lock=True)
        turn = turn_get(campaign=campaign, turn_id=turn_id, lock=True)
        authorize_revert(
            user=user, campaign=campaign, actor_id=turn.actor_id, target=f"turn:{turn.pk}"
        )
        _refuse_unless_redoable(turn)
        rows = list(
            ToolInvocation.objects.filter(
                campaign=campaign, turn=turn, status=ToolInvocation.Status.REVERTED
            )
            .select_related("user")
            .order_by("sequence")
        )
        changes = changed_since(campaign, rows)
        if changes:
            raise Diverged(
                "The table has changed since this turn was undone, so it cannot be put back "
                f"exactly: {_words(changes)}.",
                changes=changes,
            )
        redone = Turn.objects.create(
            campaign=campaign, actor=turn.actor, status=_ended(turn), redo_of=turn
        )
        # The calls first: the dispatch's steps number their events after the locked row's
        # last one; the messages and dice after reserve theirs from the row as it then is.
        for row in rows:
            _call_again(row, campaign, redone, by=user)
        _messages_again(turn, redone)
        _dice_again(campaign, turn, redone)
    return redone


def _refuse_unless_redoable(turn: Turn) -> None:
    if turn.reverted_at is None:
        raise Conflict("Only an undone turn can be redone: this one stands.")
    if Turn.objects.filter(redo_of=turn).exists():
        raise Conflict("This turn has already been redone.")
    if Turn.objects.filter(retry_of=turn).exists():
        raise Conflict("This turn was retried: its retry stands in its place.")


def _ended(turn: Turn) -> str:
    """The new turn ends as the old one ended; one the GM was still answering is completed
    with what it had said and done."""
    finished = (Turn.Status.OPEN, Turn.Status.COMPLETED, Turn.Status.FAILED, Turn.Status.CANCELLED)
    return turn.status if turn.status in finished else Turn.Status.COMPLETED


def changed_since(campaign: Campaign, rows: list[ToolInvocation]) -> list[dict[str, Any]]:
    """Each field of what `rows` wrote that is not now as the first of them to write it found
    it: `{entity, id, field, was, now}` (`was`: what the turn found, which its undo put back)."""
    found: dict[str, dict[str, Any] | None] = {}
    for row in rows:  # oldest first: the first call on an entity saw it as the turn found it
        snapshot = entities.snapshot_map(row.revert_snapshot)
        for k in entities.logged_keys(row.write_set):
            found.setdefault(k, snapshot.get(k))
    changes = []
    for k, was in found.items():
        now = entities.capture(campaign, k)
        if now == was:
            continue
        kind, pk, _ = entities.parse(k)
        for name in dict.fromkeys([*(was or {}), *(now or {})]):
            before, after = (was or {}).get(name), (now or {}).get(name)
            if before != after or was is None or now is None:
                changes.append(
                    {"entity": kind, "id": pk, "field": name, "was": before, "now": after}
                )
    return changes


def _words(changes: list[dict[str, Any]]) -> str:
    shown = [
        f"{c['entity']} {c['id']} {c['field']} is {c['now']!r}, not {c['was']!r}" for c in changes
    ]
    more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
    return "; ".join(shown[:3]) + more


def _messages_again(turn: Turn, redone: Turn) -> None:
    for message in ChatMessage.objects.filter(turn=turn).order_by("created_at", "pk"):
        message_post(
            turn=redone,
            author=message.author,
            role=message.role,
            source=message.source,
            content=message.content,
        )


def _dice_again(campaign: Campaign, turn: Turn, redone: Turn) -> None:
    """The GM's dice as they fell: the narration and the calls rest on them."""
    for roll in DiceRoll.objects.filter(turn=turn).order_by("created_at", "pk"):
        dice_roll_record(
            campaign=campaign,
            author=roll.author,
            formula=roll.formula,
            mode=roll.mode,
            dice=roll.dice,
            discarded=roll.discarded,
            modifier=roll.modifier,
            total=roll.total,
            turn=redone,
            by_gm=roll.by_gm,
            tool_use_id=roll.tool_use_id,
        )


def _call_again(row: ToolInvocation, campaign: Campaign, redone: Turn, *, by: Any) -> None:
    """Run one call again; it must write what it wrote the first time, or nothing stays."""
    try:
        again = redone_call_run(row, campaign, turn=redone, by=by)
    except ToolFailed as failure:
        raise Conflict(
            f"The {row.tool_name} call cannot be put back: {failure}", conflicts=[str(row.pk)]
        ) from failure
    if entities.logged_map(again.post_state) != entities.logged_map(row.post_state):
        raise Conflict(
            f"The {row.tool_name} call would not write what it wrote the first time (it made "
            "something anew, or read what has changed), so the turn cannot be put back exactly.",
            conflicts=[str(row.pk)],
        )
