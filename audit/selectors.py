"""Reads of the invocation log, and of turns with their log rows. Filters match the log's
(campaign, column, -sequence) indexes, so every filtered page is one index range scan. What a
person may do, for the surfaces to draw (`viewer_rights`, `reads_every_campaign`), and which
logged calls the fog hides from them (`log_fog`, `call_concealed`, `calls_concealed`): the
feed, the approval card and the log's API read them alike."""

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Prefetch, Q, QuerySet

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
from core.errors import NotFound
from core.queries import columns_of, db_value, get_or_not_found, plain_rows, plain_sql, python_value

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


def turn_messages() -> QuerySet[ChatMessage]:
    """A turn's messages as the turn list prefetches them: oldest first, with their authors."""
    return ChatMessage.objects.select_related("author").order_by("created_at", "id")


def turn_list(*, campaign: Campaign) -> QuerySet[Turn]:
    """Turns newest first with their messages and invocation summaries: four queries a page."""
    return (
        Turn.objects.filter(campaign=campaign)
        .select_related("actor", "reverted_by")
        .prefetch_related(
            Prefetch("messages", queryset=turn_messages()),
            Prefetch(
                "invocations",
                queryset=ToolInvocation.objects.order_by("sequence").only(
                    "id", "turn_id", "sequence", "tool_name", "tool_tier", "status"
                ),
            ),
        )
    )


# The feed's reads are plain SQL: every turn drawn after an event (the push of the page's
# fragments) reads them, and the ORM's building and compiling cost several times each statement.

_FEED_TURNS = (
    "SELECT {t_columns}, {a_columns}, {r_columns}, "
    "EXISTS (SELECT 1 FROM {t} x WHERE x.{t:retry_of} = t.{t:id}), "
    "EXISTS (SELECT 1 FROM {t} x WHERE x.{t:redo_of} = t.{t:id}) "
    "FROM {t} t JOIN {a} a ON a.{a:id} = t.{t:actor} "
    "LEFT JOIN {r} r ON r.{r:id} = t.{t:reverted_by} "
    "WHERE t.{t:campaign} = %s"
)
_FEED_TURNS_ORDER = " ORDER BY t.{t:created_at} DESC, t.{t:id} DESC LIMIT %s"


def _feed_turns(campaign_id: Any, limit: int, turn_id: Any) -> list[Turn]:
    """The last `limit` turns, newest first (or the one `turn_id`), each with its actor and who
    undid it, and whether it was `retried` and `redone`."""
    one = " AND t.{t:id} = %s" if turn_id is not None else ""
    sql = plain_sql(_FEED_TURNS + one + _FEED_TURNS_ORDER, t=Turn, a=User, r=User)
    params = [campaign_id, *([db_value(Turn, "id", turn_id)] if one else []), limit]
    turns, users = columns_of(Turn), columns_of(User)
    recent = []
    for row in plain_rows(sql, params):
        turn = turns.load(row)
        turn.actor = users.load(row, turns.width)
        turn.reverted_by = users.load(row, turns.width + users.width)
        turn.retried, turn.redone = row[-2:]
        recent.append(turn)
    return recent


def _feed_messages(campaign_id: Any, turn_ids: list[int]) -> list[ChatMessage]:
    """The messages of these turns, oldest first, with their authors: a live turn's still
    shown, an undone turn's all (its collapsed line expands to them)."""
    sql = plain_sql(
        "SELECT {m_columns}, {u_columns} FROM {m} m JOIN {t} t ON t.{t:id} = m.{m:turn} "
        "LEFT JOIN {u} u ON u.{u:id} = m.{m:author} "
        "WHERE m.{m:campaign} = %s AND m.{m:turn} = ANY(%s) "
        "AND (NOT m.{m:reverted} OR t.{t:reverted_at} IS NOT NULL) "
        "ORDER BY m.{m:created_at}, m.{m:id}",
        m=ChatMessage,
        t=Turn,
        u=User,
    )
    messages, users = columns_of(ChatMessage), columns_of(User)
    found = []
    for row in plain_rows(sql, [campaign_id, turn_ids]):
        message = messages.load(row)
        message.author = users.load(row, messages.width)
        found.append(message)
    return found


# What the feed reads of a logged call, as the SQL of `_call_rows` names each: its words, its
# status and who made it.
_CALL_COLUMNS = {
    "turn_id": "i.{i:turn}",
    "pk": "i.{i:id}",
    "created_at": "i.{i:created_at}",
    "approval_of_id": "i.{i:approval_of}",
    "reverted_by__username": "r.{u:username}",
    "revert_reason": "i.{i:revert_reason}",
    "tool_name": "i.{i:tool_name}",
    "input": "i.{i:input}",
    "status": "i.{i:status}",
    "error": "i.{i:error}",
    "user__username": "a.{u:username}",
    "requested_by__username": "q.{u:username}",
    "source": "i.{i:source}",
    "revert_snapshot": "i.{i:revert_snapshot}",
    "post_state": "i.{i:post_state}",
}
_CALL_JSON = ("input", "revert_snapshot", "post_state")


def _call_rows(where: str, params: list[Any], order: str) -> list[dict[str, Any]]:
    """Logged calls as plain values (`_CALL_COLUMNS`), as `values()` reads them, with who made,
    asked for and undid each: the rows `where` picks, in `order`."""
    sql = plain_sql(
        f"SELECT {', '.join(_CALL_COLUMNS.values())} FROM {{i}} i "
        "LEFT JOIN {u} a ON a.{u:id} = i.{i:user} "
        "LEFT JOIN {u} q ON q.{u:id} = i.{i:requested_by} "
        "LEFT JOIN {u} r ON r.{u:id} = i.{i:reverted_by} "
        f"WHERE i.{{i:campaign}} = %s AND {where} {order}",
        i=ToolInvocation,
        u=User,
    )
    rows = [dict(zip(_CALL_COLUMNS, values, strict=True)) for values in plain_rows(sql, params)]
    for row in rows:
        for name in _CALL_JSON:
            row[name] = python_value(ToolInvocation, name, row[name])
    return rows


def _feed_calls(campaign_id: Any, turn_ids: list[int]) -> list[dict[str, Any]]:
    # A held call that was approved ran as a row of its own (`approval_of`), which the feed
    # shows; the held row it ran for is not a second call.
    where = (
        "i.{i:turn} = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM {i} x WHERE x.{i:approval_of} = i.{i:id})"
    )
    return _call_rows(where, [campaign_id, turn_ids], "ORDER BY i.{i:sequence}")


def turn_feed(
    *, campaign: Campaign, limit: int, turn_id: Any = None
) -> tuple[list[Turn], dict[int, list[ChatMessage]], dict[int, list[dict[str, Any]]]]:
    """The campaign page's feed: the last `limit` turns oldest first (or the one `turn_id`), the
    messages of each (an undone turn's too, which its collapsed line expands to; a live turn's
    only those still shown), and each turn's log rows as plain values, oldest first. Each
    turn says whether it was `retried`. Three queries whatever the number of turns."""
    recent = _feed_turns(campaign.pk, limit, turn_id)[::-1]
    ids = [t.pk for t in recent]
    messages: dict[int, list[ChatMessage]] = defaultdict(list)
    for message in _feed_messages(campaign.pk, ids):
        messages[message.turn_id].append(message)
    calls: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in _feed_calls(campaign.pk, ids):
        del row["created_at"]
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


def calls_outside_turns(
    *, campaign: Campaign, limit: int, invocation_id: Any = None
) -> list[dict[str, Any]]:
    """The last `limit` calls that took effect outside any turn (a token dragged on the map:
    nobody's message to the GM), oldest first, as plain values (the feed's fields, with `pk`
    and `created_at`); or the one `invocation_id`. One query."""
    # A change outside any turn is pushed to every page after its event, as a turn is
    where = "i.{i:turn} IS NULL AND i.{i:status} = ANY(%s)"
    took_effect = [ToolInvocation.Status.COMMITTED.value, ToolInvocation.Status.REVERTED.value]
    params = [campaign.pk, took_effect]
    if invocation_id is not None:
        where += " AND i.{i:id} = %s"
        params.append(db_value(ToolInvocation, "id", invocation_id))
    rows = _call_rows(where, [*params, limit], "ORDER BY i.{i:sequence} DESC LIMIT %s")
    for row in rows:
        del row["turn_id"]
    return rows[::-1]


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


def turn_and_later_actors(
    *, campaign: Campaign, turn_id: Any
) -> tuple[Turn, list[tuple[int, int]]]:
    """A turn of this campaign (`turn_get`: NotFound for another campaign's or a malformed id)
    and, unless it is undone, `later_turn_actors` from it: one statement."""
    # Raw SQL: read by every push of a turn to the page (its viewers' classes are made of it)
    sql = plain_sql(
        "SELECT {t_columns}, (SELECT COALESCE(json_agg(json_build_array(l.{t:id}, l.{t:actor}) "
        "ORDER BY l.{t:created_at}, l.{t:id}), '[]')::text FROM {t} l "
        "WHERE l.{t:campaign} = t.{t:campaign} AND l.{t:reverted_at} IS NULL "
        "AND t.{t:reverted_at} IS NULL AND (l.{t:created_at} > t.{t:created_at} "
        "OR (l.{t:created_at} = t.{t:created_at} AND l.{t:id} >= t.{t:id}))) "
        "FROM {t} t WHERE t.{t:campaign} = %s AND t.{t:id} = %s",
        t=Turn,
    )
    try:
        rows = plain_rows(sql, [campaign.pk, db_value(Turn, "id", turn_id)])
    except (ValidationError, ValueError, TypeError) as exc:
        raise NotFound() from exc
    if not rows:
        raise NotFound()
    return columns_of(Turn).load(rows[0]), [tuple(later) for later in json.loads(rows[0][-1])]


def logged_calls(*, campaign: Campaign, ids: list[Any]) -> dict[str, dict[str, Any]]:
    """The logged rows of these invocations by id (as a string), as plain values: enough to
    describe each call in people's words (tool, input, before and after)."""
    rows = ToolInvocation.objects.filter(campaign=campaign, pk__in=ids).values(
        "pk", "tool_name", "input", "revert_snapshot", "post_state", "turn_id"
    )
    return {str(row["pk"]): row for row in rows}


def held_call_rows(*, campaign: Campaign) -> list[ToolInvocation]:
    """The campaign's calls awaiting approval, oldest first, with who made each."""
    # Raw SQL: read by every push of the page's fragments after an approval's event
    sql = plain_sql(
        "SELECT {i_columns}, {u_columns} FROM {i} i JOIN {u} u ON u.{u:id} = i.{i:user} "
        "WHERE i.{i:campaign} = %s AND i.{i:status} = %s ORDER BY i.{i:sequence}",
        i=ToolInvocation,
        u=User,
    )
    calls, users = columns_of(ToolInvocation), columns_of(User)
    held = []
    for row in plain_rows(sql, [campaign.pk, ToolInvocation.Status.AWAITING_APPROVAL.value]):
        call = calls.load(row)
        call.user = users.load(row, calls.width)
        held.append(call)
    return held


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
