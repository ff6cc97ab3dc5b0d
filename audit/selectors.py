"""Reads of the invocation log, and of turns with their log rows. Filters match the log's
(campaign, column, -sequence) indexes, so every filtered page is one index range scan. What a
person may do, for the surfaces to draw (`viewer_rights`, `reads_every_campaign`), and which
logged calls the fog hides from them (`log_fog`, `call_concealed`, `calls_concealed`): the
feed, the approval card and the log's API read them alike."""

from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet

from ai_tools import entities
from ai_tools.base import Tier
from audit.models import StatusTransition, ToolInvocation
from audit.permissions import Rights
from campaigns.models import (
    Campaign,
    ChatMessage,
    Creature,
    Membership,
    Turn,
)
from campaigns.permissions import is_audit_staff
from campaigns.selectors import revert_any_granted
from campaigns.visibility import Fog, Sight, call_hidden, fog_read, held_call_hidden, placed_cell
from core.queries import get_or_not_found

# Columns only revert needs; the API never shows them, so a page of the log does not load them.
_INTERNAL = ("revert_snapshot", "post_state", "write_set", "read_set", "broadcast_events")


def invocation_list(
    *,
    campaign: Campaign,
    status: str | None = None,
    tier: str | None = None,
    tool: str | None = None,
    turn: int | None = None,
) -> QuerySet[ToolInvocation]:
    filters: dict[str, Any] = {
        "status": status,
        "tool_tier": tier,
        "tool_name": tool,
        "turn_id": turn,
    }
    return (
        ToolInvocation.objects.filter(
            campaign=campaign, **{k: v for k, v in filters.items() if v is not None}
        )
        .select_related("user", "requested_by", "reverted_by")
        .defer(*_INTERNAL)
    )


def invocation_get(*, campaign: Campaign, invocation_id: Any, lock: bool = False) -> ToolInvocation:
    """An invocation of this campaign; one of another campaign is NotFound, like a made-up id.
    With `lock`, the row alone is locked (no joins: FOR UPDATE refuses an outer join's nullable
    side), as revert needs it; every column is loaded, since revert and its plan read them all."""
    rows = ToolInvocation.objects.filter(campaign_id=campaign.pk)
    if lock:
        rows = rows.select_for_update()
    else:
        rows = rows.select_related("user", "requested_by", "reverted_by")
    return get_or_not_found(rows, pk=invocation_id)


def turn_list(*, campaign: Campaign) -> QuerySet[Turn]:
    """Turns newest first with their messages and invocation summaries: four queries a page."""
    return (
        Turn.objects.filter(campaign=campaign)
        .select_related("actor", "reverted_by")
        .prefetch_related(
            Prefetch(
                "messages",
                queryset=ChatMessage.objects.select_related("author").order_by("created_at", "id"),
            ),
            Prefetch(
                "invocations",
                queryset=ToolInvocation.objects.order_by("sequence").only(
                    "id", "turn_id", "sequence", "tool_name", "tool_tier", "status"
                ),
            ),
        )
    )


# What the feed reads of a logged call: its words, its status and who made it.
FEED_CALL_FIELDS = (
    "approval_of_id",
    "reverted_by__username",
    "revert_reason",
    "tool_name",
    "input",
    "status",
    "error",
    "user__username",
    "requested_by__username",
    "source",
    "revert_snapshot",
    "post_state",
)


def _feed_turns(campaign_id: Any, limit: int, turn_id: Any) -> QuerySet[Turn]:
    turns = (
        Turn.objects.filter(campaign_id=campaign_id)
        .select_related("actor", "reverted_by")
        .annotate(
            retried=Exists(Turn.objects.filter(retry_of=OuterRef("pk"))),
            redone=Exists(Turn.objects.filter(redo_of=OuterRef("pk"))),
        )
    )
    if turn_id is not None:
        turns = turns.filter(pk=turn_id)
    return turns.order_by("-created_at", "-pk")[:limit]


def _feed_messages(campaign_id: Any, turn_ids: list[int]) -> QuerySet[ChatMessage]:
    return (
        ChatMessage.objects.filter(campaign_id=campaign_id, turn_id__in=turn_ids)
        .filter(Q(reverted=False) | Q(turn__reverted_at__isnull=False))
        .select_related("author")
        .order_by("created_at", "pk")
    )


def _feed_calls(campaign_id: Any, turn_ids: list[int]) -> QuerySet:
    return (
        ToolInvocation.objects.filter(campaign_id=campaign_id, turn_id__in=turn_ids)
        # A held call that was approved ran as a row of its own (`approval_of`), which the feed
        # shows; the held row it ran for is not a second call.
        .exclude(Exists(ToolInvocation.objects.filter(approval_of=OuterRef("pk"))))
        .order_by("sequence")
        .values("turn_id", "pk", *FEED_CALL_FIELDS)
    )


def turn_feed(
    *, campaign: Campaign, limit: int, turn_id: Any = None
) -> tuple[list[Turn], dict[int, list[ChatMessage]], dict[int, list[dict[str, Any]]]]:
    """The campaign page's feed: the last `limit` turns oldest first (or the one `turn_id`), the
    messages of each (an undone turn's too, which its collapsed line expands to; a live turn's
    only those still shown), and each turn's log rows as plain values, oldest first. Each
    turn says whether it was `retried`. Three queries whatever the number of turns."""
    recent = list(_feed_turns(campaign.pk, limit, turn_id))[::-1]
    ids = [t.pk for t in recent]
    messages: dict[int, list[ChatMessage]] = defaultdict(list)
    for message in _feed_messages(campaign.pk, ids):
        messages[message.turn_id].append(message)
    calls: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in _feed_calls(campaign.pk, ids):
        calls[row["turn_id"]].append(row)
    return recent, messages, calls


def call_answers(*, campaign: Campaign, ids: list[Any]) -> dict[str, dict[str, Any]]:
    """How each of these held calls was answered, by its id (as a string): `{by, to, reason}`
    from its chained transition out of `awaiting_approval` (`to` is `pending` once approved).
    One query for the feed, whatever the number of calls."""
    answers: dict[str, dict[str, Any]] = {}
    links = StatusTransition.objects.filter(
        campaign_id=campaign.pk,
        invocation_id__in=list(ids),
        from_status=ToolInvocation.Status.AWAITING_APPROVAL,
    ).order_by("after_sequence", "ordinal")
    for link in links.values("invocation_id", "to_status", "reason", "by__username"):
        answers.setdefault(
            str(link["invocation_id"]),
            {"by": link["by__username"] or "", "to": link["to_status"], "reason": link["reason"]},
        )
    return answers


def _outside_turns(campaign_id: Any, limit: int, invocation_id: Any) -> QuerySet:
    rows = ToolInvocation.objects.filter(
        campaign_id=campaign_id,
        turn__isnull=True,
        status__in=[ToolInvocation.Status.COMMITTED, ToolInvocation.Status.REVERTED],
    )
    if invocation_id is not None:
        rows = rows.filter(pk=invocation_id)
    return rows.order_by("-sequence").values("pk", "created_at", *FEED_CALL_FIELDS)[:limit]


def calls_outside_turns(
    *, campaign: Campaign, limit: int, invocation_id: Any = None
) -> list[dict[str, Any]]:
    """The last `limit` calls that took effect outside any turn (a token dragged on the map:
    nobody's message to the GM), oldest first, as plain values (the feed's fields, with `pk`
    and `created_at`); or the one `invocation_id`. One query."""
    return list(_outside_turns(campaign.pk, limit, invocation_id))[::-1]


def later_turn_actors(*, campaign: Campaign, since: Turn) -> list[tuple[int, int]]:
    """(turn id, actor id) of `since` and every turn after it not yet undone, oldest first: who
    would have to be allowed to revert for an undo from `since` onwards."""
    at = since.created_at
    return list(
        Turn.objects.filter(campaign_id=campaign.pk, reverted_at__isnull=True)
        .filter(Q(created_at__gt=at) | Q(created_at=at, pk__gte=since.pk))
        .order_by("created_at", "pk")
        .values_list("pk", "actor_id")
    )


def logged_calls(*, campaign: Campaign, ids: list[Any]) -> dict[str, dict[str, Any]]:
    """The logged rows of these invocations by id (as a string), as plain values: enough to
    describe each call in people's words (tool, input, before and after)."""
    rows = ToolInvocation.objects.filter(campaign=campaign, pk__in=ids).values(
        "pk", "tool_name", "input", "revert_snapshot", "post_state", "turn_id"
    )
    return {str(row["pk"]): row for row in rows}


def held_call_rows(*, campaign: Campaign) -> list[ToolInvocation]:
    """The campaign's calls awaiting approval, oldest first, with who made each."""
    return list(
        ToolInvocation.objects.filter(
            campaign_id=campaign.pk, status=ToolInvocation.Status.AWAITING_APPROVAL
        )
        .select_related("user")
        .order_by("sequence")
    )


def held_call_affected_players(*, campaign: Campaign, row: Any) -> set[int]:
    """The players whose characters a held critical call would change: the controllers of the
    player characters its preview's diff names (what the tool really writes, run in a rolled
    back savepoint). Empty for a call of a lower tier, or one that touches no PC."""
    if row.tool_tier != Tier.CRITICAL:
        return set()
    ids = {
        int(change["id"])
        for change in (row.preview or {}).get("diff", [])
        if change.get("entity") == "creature" and str(change.get("id")).isdigit()
    }
    if not ids:
        return set()
    characters = Creature.objects.filter(
        campaign_id=campaign.pk, pk__in=ids, kind=Creature.Kind.PC, controlled_by__isnull=False
    )
    return set(characters.values_list("controlled_by_id", flat=True))


# A turn the GM has yet to answer: queued, or running or paused on the held call it made.
WAITING_TURNS = (Turn.Status.QUEUED, Turn.Status.RUNNING, Turn.Status.AWAITING_APPROVAL)


def _oldest_held(campaign_id: Any) -> dict[str, Any] | None:
    return (
        ToolInvocation.objects.filter(
            campaign_id=campaign_id,
            status=ToolInvocation.Status.AWAITING_APPROVAL,
            turn__reverted_at__isnull=True,
            # A GM turn holding its campaign's place (gm.tasks.HOLDING); an agent's call held in an
            # open turn holds nobody up.
            turn__status__in=(Turn.Status.RUNNING, Turn.Status.AWAITING_APPROVAL),
        )
        .order_by("sequence")
        .values("pk", "tool_name", "turn_id", "user_id", "created_at")
        .first()
    )


def held_call_waiting(*, campaign: Campaign) -> dict[str, Any] | None:
    """What the campaign's waiting turns wait for while a call is held (docs/api.md#paths, a
    turn's `waiting`): the oldest call still awaiting approval, on a turn not undone — {for:
    "approval", invocation, tool_name, turn (the paused turn), on (who may approve it: the
    owner and the co-GMs, the call's own player aside unless they own the table), since (when it
    was held), expires_at} — or None. A paused turn holds its campaign's place, so every later
    queued turn waits for this same answer. Two queries, three when a call is held."""
    row = _oldest_held(campaign.pk)
    if row is None:
        return None
    granted = revert_any_granted(campaign=campaign)
    members = Membership.objects.filter(campaign_id=campaign.pk).order_by("joined_at", "pk")
    on = [
        name
        for user_id, name in members.values_list("user_id", "user__username")
        if user_id == campaign.owner_id or (user_id in granted and user_id != row["user_id"])
    ]
    return {
        "for": "approval",
        "invocation": str(row["pk"]),
        "tool_name": row["tool_name"],
        "turn": row["turn_id"],
        "on": on,
        "since": row["created_at"],
        "expires_at": row["created_at"] + timedelta(seconds=campaign.approval_timeout),
    }


def turn_waiting(turn: Turn, held: dict[str, Any] | None) -> dict[str, Any] | None:
    """`held_call_waiting`'s answer for one turn: a turn the GM has yet to answer, not undone,
    waits while a call is held — its own (the turn runs until it pauses on it, then waits), or
    an earlier turn's, whose place it holds (queued behind it)."""
    if held is None or turn.reverted_at is not None or turn.status not in WAITING_TURNS:
        return None
    if turn.pk == held["turn"]:
        return held
    return held if turn.status == Turn.Status.QUEUED and turn.pk > held["turn"] else None


def viewer_rights(*, campaign: Campaign, user: Any) -> Rights:
    """What `user` may do at `campaign`, read once per request for a surface to draw: who is
    offered Undo, Stop, Retry, Approve and Reject, which tokens they may drag, whether they get
    the GM's view. The answers are the policy's (`audit.permissions.Rights`), and drawing is all
    they are for: the services enforce the same rules on every request."""
    return Rights(campaign=campaign, user=user)


def reads_every_campaign(user: Any) -> bool:
    """Staff holding the audit permission police every table, so they read every campaign's log
    and figures (as they see every campaign, `campaign_get_visible`): the admin's log pages and
    the analytics of every campaign."""
    return is_audit_staff(user)


# ---- the log as a player reads it through the fog --------------------------------------------


def log_fog(*, campaign: Campaign, rights: Rights, inputs: Iterable[Any]) -> Fog | None:
    """The fog a player reads logged calls (their `inputs`) through — every creature of the
    campaign and the cells the calls put creatures on, one query — or None for the GM, who
    reads all."""
    if rights.sight is Sight.GM:
        return None
    cells = {cell for data in inputs if (cell := placed_cell(data)) is not None}
    return fog_read(campaign_id=campaign.pk, cells=cells)


def call_concealed(data: Any, post_state: Any, fog: Fog | None) -> bool:
    """Whether a logged call tells a player (who sees the world through `fog`; None: the GM)
    of a creature the fog hides: it acts on one, made one, or put one in the fog."""
    if fog is None:
        return False
    made = [  # a whole creature row written: one the call made
        int(entities.parse(key)[1])
        for key in entities.logged_map(post_state)
        if key.startswith("creature:") and key == entities.root(key)
    ]
    return call_hidden(data, fog, created=made)


def calls_concealed(
    *, campaign: Campaign, rights: Rights, rows: list[ToolInvocation]
) -> frozenset[Any]:
    """The ids of the log rows `rows` whose input, result and preview the fog hides from this
    viewer: none for the GM (no query); for a player one fog read and, while fog is in play,
    one read of what the calls wrote (the creatures they made)."""
    if not rows:
        return frozenset()
    fog = log_fog(campaign=campaign, rights=rights, inputs=[row.input for row in rows])
    if fog is None or not fog.in_play:
        return frozenset()
    written = dict(
        ToolInvocation.objects.filter(pk__in=[row.pk for row in rows]).values_list(
            "pk", "post_state"
        )
    )
    held = ToolInvocation.Status.AWAITING_APPROVAL
    return frozenset(
        row.pk
        for row in rows
        if call_concealed(row.input, written.get(row.pk), fog)
        or (
            row.status == held
            and held_call_hidden(row.input, (row.preview or {}).get("diff", []), fog)
        )
    )
