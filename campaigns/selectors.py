"""Reads of the game world."""

import functools
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import CharField, DateTimeField, QuerySet, Value
from django.utils import timezone

from campaigns.models import (
    Achievement,
    Campaign,
    CampaignUserObjectPermission,
    Chapter,
    Creature,
    DiceRoll,
    Dungeon,
    Encounter,
    Episode,
    FogCell,
    GMMemory,
    InventoryItem,
    Invite,
    MapBackground,
    Membership,
    Resource,
    ResourceEvent,
    Turn,
)
from campaigns.permissions import is_audit_staff, is_member
from campaigns.visibility import Sight, state_seen
from core.errors import Gone, NotFound
from core.prepared import prepared
from core.queries import get_or_not_found, locked_if, read_or_not_found


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _world_rows(model: type, *fields: str) -> prepared:
    """One table of the dump: the campaign's rows of `model`, by primary key."""
    return prepared(
        lambda campaign_id: (
            model.objects.filter(campaign_id=campaign_id).order_by("pk").values(*fields)
        )
    )


# The dump's reads, each compiled once (core/prepared.py): the campaign page draws the board from
# the dump after every event that changes the world.
_campaign_row = prepared(lambda campaign_id: Campaign.objects.filter(pk=campaign_id))
_world = {
    "members": prepared(
        lambda campaign_id: (
            Membership.objects.filter(campaign_id=campaign_id)
            .order_by("user_id")
            .values("user_id", "role")
        )
    ),
    "creatures": _world_rows(
        Creature,
        "id",
        *(f"{name}_id" if name == "controlled_by" else name for name in Creature.SHOWN),
    ),
    "resources": _world_rows(
        Resource, "id", "creature_id", "name", "current", "maximum", "recharge"
    ),
    "resource_events": _world_rows(ResourceEvent, "id", "resource_id", "delta", "reason"),
    "items": _world_rows(InventoryItem, "id", "creature_id", "name", "quantity"),
    "chapters": _world_rows(Chapter, "id", "title", "position"),
    "dungeons": _world_rows(Dungeon, "id", "name"),
    "encounters": _world_rows(Encounter, "id", "active", "round", "turn_index", "order"),
    "fog": _world_rows(FogCell, "id", "x", "y"),
    "memories": _world_rows(GMMemory, "id", "key", "content"),
    "achievements": _world_rows(Achievement, "id", "user_id", "code"),
    "episodes": _world_rows(Episode, "id", "number", "active", "summary", "ended_at"),
}


def campaign_state(campaign: Campaign) -> dict[str, Any]:
    """The canonical dump of one campaign's game world.

    Stable ordering and only values a revert restores (no creation timestamps), so two dumps
    taken before a tool call and after its revert compare equal byte for byte.
    """
    return campaign_world(campaign)[1]


def campaign_world(campaign: Campaign) -> tuple[int, dict[str, Any]]:
    """The dump (`campaign_state`) and the number of the campaign's last event when it was read:
    the campaign's row comes first, with its `event_seq`, so the dump reflects every event up to
    that number (and may reflect a later one's change, never miss an earlier one's)."""
    fresh = campaign_fresh(campaign_id=campaign.pk)
    return fresh.event_seq, world_dump(fresh)


def world_dump(fresh: Campaign) -> dict[str, Any]:
    """The dump of a campaign row just read: its fields, and its world's tables read now."""
    rows = _world_tables(fresh.pk)
    return {
        "campaign": {
            "id": str(fresh.pk),
            "name": fresh.name,
            "status": fresh.status,
            "completed_at": _iso(fresh.completed_at),
            "current_chapter_id": fresh.current_chapter_id,
            "active_dungeon_id": fresh.active_dungeon_id,
            "active_encounter_id": fresh.active_encounter_id,
            "scene": fresh.scene,
            "location": fresh.location,
        },
        **rows,
        "episodes": [{**row, "ended_at": _iso(row["ended_at"])} for row in rows["episodes"]],
    }


def _world_tables(campaign_id: Any) -> dict[str, list[dict[str, Any]]]:
    """The world's tables of the dump, each as its `_world` read returns it. On PostgreSQL in
    one statement (`_world_sql`): the board is drawn from the dump after every event that
    changes the world, and a dozen reads one after the other cost a dozen round trips and a
    dozen times the ORM's work per row set; elsewhere one read per table."""
    if connection.vendor != "postgresql":
        return {name: read(campaign_id) for name, read in _world.items()}
    sql, shapes = _world_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, [campaign_id] * len(shapes))
        texts = cursor.fetchone()
    return {
        name: [_world_row(fields, moments, values) for values in json.loads(text)]
        for (name, fields, moments), text in zip(shapes, texts, strict=True)
    }


def _world_row(fields: tuple[str, ...], moments: frozenset[str], values: list[Any]) -> dict:
    """A row of the one statement as its read's `values()` returns it: JSON carries a moment
    as text, the ORM reads it as a datetime in UTC."""
    row = dict(zip(fields, values, strict=True))
    for field in moments:
        if row[field] is not None:
            row[field] = datetime.fromisoformat(row[field]).astimezone(UTC)
    return row


@functools.cache
def _world_sql() -> tuple[str, list[tuple[str, tuple[str, ...], frozenset[str]]]]:
    """One statement that reads every table of `_world` for a campaign: a column per table, its
    rows as a JSON array of arrays in the read's own order, and beside it the read's fields (the
    keys of its `values()` dicts). Made from the reads' own querysets: a field added to a read
    is read here too."""
    quote = connection.ops.quote_name
    columns, shapes = [], []
    for name, read in _world.items():
        query = read.build(0).query
        meta = query.model._meta

        def column(field: str, meta: Any = meta) -> str:
            return quote((meta.pk if field == "pk" else meta.get_field(field)).column)

        fields = tuple(query.values_select)
        order = ", ".join(
            column(f.removeprefix("-")) + (" DESC" if f.startswith("-") else "")
            for f in query.order_by
        )
        columns.append(
            f"(SELECT COALESCE(json_agg(json_build_array({', '.join(map(column, fields))}) "
            f"ORDER BY {order}), '[]')::text FROM {quote(meta.db_table)} "
            f"WHERE {column('campaign')} = %s)"
        )
        moments = frozenset(
            f for f in fields if f != "pk" and isinstance(meta.get_field(f), DateTimeField)
        )
        shapes.append((name, fields, moments))
    return "SELECT " + ", ".join(columns), shapes


_event_seq = prepared(
    lambda campaign_id: Campaign.objects.filter(pk=campaign_id).values_list("event_seq", flat=True)
)


def campaign_fresh(*, campaign_id: Any) -> Campaign:
    """The campaign as it is now (its event numbers read fresh), whoever asks: for code that has
    checked who asks already, or asks for nobody (a push of the page's fragments)."""
    return _campaign_row.get(campaign_id)


def campaign_event_seq(*, campaign_id: Any) -> int:
    """The number of the campaign's last realtime event, read fresh from the database."""
    return _event_seq.get(campaign_id)


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Reads inside see the database at one moment, and hold no writer back. PostgreSQL's
    default READ COMMITTED gives each statement its own moment, so a new transaction asks for
    REPEATABLE READ. SQLite's transactions are one snapshot already (WAL: from the first read),
    but ours begin IMMEDIATE (config/settings.py), taking the write lock a reader does not need:
    every drawing of the feed would queue the table's writes behind it, and they it; a new one
    begins DEFERRED. For reads only: a deferred transaction that then writes may be refused.
    Nested in a caller's transaction, it reads in that."""
    outermost = not connection.in_atomic_block
    with ExitStack() as stack:
        if outermost and connection.vendor == "sqlite":
            connection.ensure_connection()  # connecting sets the mode from the settings
            mode, connection.transaction_mode = connection.transaction_mode, "DEFERRED"
            try:
                stack.enter_context(transaction.atomic())
            finally:
                connection.transaction_mode = mode
        else:
            stack.enter_context(transaction.atomic())
            if outermost and connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def campaign_state_at_seq(campaign: Campaign, *, sight: Sight) -> dict[str, Any]:
    """The dump as `sight` sees it (the GM's: the canonical dump; a player's: without what the
    fog hides, `campaigns.visibility`) with `seq`, the number of the last event it reflects,
    read in one snapshot: a client that applies the events after `seq` on top of it misses
    nothing and applies nothing twice."""
    with one_snapshot():
        seq, dump = campaign_world(campaign)
        return {"seq": seq, **state_seen(dump, sight)}


def nearest_free(
    occupied: set[tuple[int, int]], *, near: tuple[int, int], cols: int, rows: int
) -> tuple[int, int]:
    """The cell of the cols × rows grid nearest `near` (in moves of a token: rings of cells
    around it, then row, then column) that holds no token; `near` itself when every cell is
    taken."""
    nx, ny = near
    free = (
        (max(abs(x - nx), abs(y - ny)), y, x)
        for y in range(rows)
        for x in range(cols)
        if (x, y) not in occupied
    )
    best = min(free, default=None)
    return (best[2], best[1]) if best else near


def map_free_cell(*, campaign: Campaign, near: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """Where a new token goes: the free cell of the campaign's grid nearest `near`."""
    occupied = set(Creature.objects.filter(campaign_id=campaign.pk).values_list("x", "y"))
    return nearest_free(occupied, near=near, cols=campaign.map_cols, rows=campaign.map_rows)


_background_version = prepared(
    lambda campaign_id: (
        MapBackground.objects.filter(campaign_id=campaign_id)
        .order_by("pk")
        .values_list("version", flat=True)[:1]
    )
)


def map_background_version(*, campaign: Campaign) -> int | None:
    """The background's version (the page's cache key), None without one; the bytes stay put."""
    return _background_version.first(campaign.pk)


def map_background_get(*, campaign: Campaign) -> Any:
    """The map's background image; NotFound when it has none."""
    return get_or_not_found(MapBackground.objects.all(), campaign_id=campaign.pk)


def _campaign_rows(lock: bool, **filters: Any) -> QuerySet[Campaign]:
    # Locked: the campaign row only, not the joined owner or membership.
    queryset = Campaign.objects.select_related("owner").filter(**filters)
    return locked_if(queryset, lock, of=("self",))


# Every request of a member reads its campaign so, and every write of one locks it so: compiled
# once (core/prepared.py), with the lock and without.
_campaign_of_member = prepared(
    lambda campaign_id, user_id, lock: _campaign_rows(
        lock, pk=campaign_id, memberships__user_id=user_id
    )
)
_campaign_for_staff = prepared(lambda campaign_id, lock: _campaign_rows(lock, pk=campaign_id))


def campaign_get_for_member(*, campaign_id: Any, user: Any, lock: bool = False) -> Campaign:
    """The campaign if `user` is a member; NotFound otherwise, so its existence is not revealed.
    With `lock`, the campaign row is locked in the same query (the writers' campaign lock)."""
    if not getattr(user, "is_authenticated", False):
        raise NotFound()
    return read_or_not_found(_campaign_of_member, campaign_id, user.pk, bool(lock))


def campaign_get_visible(*, campaign_id: Any, user: Any, lock: bool = False) -> Campaign:
    """Members see a campaign, and so does staff holding the global revert permission (they
    police every table from the admin). Everyone else gets NotFound."""
    if is_audit_staff(user):
        return read_or_not_found(_campaign_for_staff, campaign_id, bool(lock))
    return campaign_get_for_member(campaign_id=campaign_id, user=user, lock=lock)


def campaign_list_for_member(*, user: Any) -> QuerySet[Campaign]:
    """The campaigns `user` belongs to, open ones first, newest first within a status."""
    return (
        Campaign.objects.filter(memberships__user_id=user.pk)
        .select_related("owner")
        .order_by("status", "-created_at")
    )


_revert_any_granted = prepared(
    lambda campaign_id: CampaignUserObjectPermission.objects.filter(
        content_object_id=campaign_id, permission__codename="revert_any_turn"
    ).values_list("user_id", flat=True)
)


def revert_any_granted(*, campaign: Campaign) -> set[int]:
    """The members granted `revert_any_turn` (the co-GMs), read from guardian's direct-FK table."""
    return set(_revert_any_granted(campaign.pk))


_members_joined = prepared(
    lambda campaign_id: (
        Membership.objects.filter(campaign_id=campaign_id)
        .select_related("user")
        .order_by("joined_at")
    )
)


def campaign_members(*, campaign: Campaign) -> list[dict[str, Any]]:
    """Members with their role and whether they hold `revert_any_turn`: two queries, however
    many members (the grant is read from guardian's direct-FK table)."""
    granted = revert_any_granted(campaign=campaign)
    return [
        {
            "username": m.user.get_username(),
            "role": m.role,
            "can_revert_any": m.user_id in granted,
        }
        for m in _members_joined(campaign.pk)
    ]


_member_names = prepared(
    lambda campaign_id: Membership.objects.filter(campaign_id=campaign_id).values_list(
        "user_id", "user__username"
    )
)


def campaign_member_names(*, campaign: Campaign) -> dict[int, str]:
    """User id → username of every member: how the page names people in text and events."""
    return dict(_member_names(campaign.pk))


_turn_row = prepared(
    lambda campaign_id, turn_id, lock: locked_if(
        Turn.objects.filter(campaign_id=campaign_id, pk=turn_id), lock
    )
)


def turn_get(*, campaign: Campaign, turn_id: Any, lock: bool = False) -> Turn:
    """A turn of this campaign; one of another campaign, or a malformed id, is NotFound. With
    `lock`, the turn row is locked (undo holds it while it reverts the turn's calls)."""
    return read_or_not_found(_turn_row, campaign.pk, turn_id, bool(lock))


def creature_get(*, campaign: Campaign, creature_id: Any) -> Creature:
    """A creature of this campaign; one of another campaign, or a malformed id, is NotFound."""
    return get_or_not_found(Creature.objects.filter(campaign=campaign), pk=creature_id)


def creature_names(*, campaign: Campaign) -> dict[int, str]:
    """Each creature's name by id, to put names where logged calls carry ids."""
    return creature_names_in(campaign_ids=[campaign.pk])


_names_in = prepared(
    lambda campaign_ids: Creature.objects.filter(campaign_id__in=campaign_ids).values_list(
        "pk", "name"
    )
)


def creature_names_in(*, campaign_ids: Iterable[Any]) -> dict[int, str]:
    """The same for the creatures of several campaigns, in one query (a creature's id is
    unique across campaigns): an admin page lists calls of many."""
    return dict(_names_in(list(campaign_ids)))


def _labels(campaign_id: Any) -> QuerySet:
    chapters = Chapter.objects.filter(campaign_id=campaign_id).values_list("pk", "title").order_by()
    dungeons = Dungeon.objects.filter(campaign_id=campaign_id).values_list("pk", "name").order_by()
    return chapters.annotate(kind=Value("chapter", output_field=CharField())).union(
        dungeons.annotate(kind=Value("dungeon", output_field=CharField())), all=True
    )


_labels_read = prepared(_labels)


def world_labels(*, campaign_id: Any) -> dict[str, str]:
    """The names of the campaign's chapters and dungeons by entity key (`chapter:3` ->
    "Depths"), for the words of logged calls that name them by id; one query."""
    return {f"{kind}:{pk}": label for pk, label, kind in _labels_read(campaign_id)}


def creatures_added(*, campaign: Campaign, limit: int, creature_id: Any = None) -> list[Creature]:
    """The last `limit` creatures people put on the table through the set-up (or the one
    `creature_id`), oldest first, with who added each: the feed tells of them."""
    added = Creature.objects.filter(campaign=campaign, added_at__isnull=False)
    if creature_id is not None:
        added = added.filter(pk=creature_id)
    return list(added.select_related("added_by").order_by("-added_at", "-pk")[:limit])[::-1]


def roll_list(*, campaign: Campaign) -> QuerySet[DiceRoll]:
    """Every roll of the campaign, players' and the GM's, with who rolled."""
    return DiceRoll.objects.filter(campaign=campaign).select_related("author")


_roll_row = prepared(
    lambda campaign_id, roll_id: DiceRoll.objects.filter(
        campaign_id=campaign_id, pk=roll_id
    ).select_related("author")
)


def roll_get(*, campaign: Campaign, roll_id: Any) -> DiceRoll:
    """A roll of this campaign; one of another campaign, or a malformed id, is NotFound."""
    return read_or_not_found(_roll_row, campaign.pk, roll_id)


def rolls_outside_turns(*, campaign: Campaign, limit: int) -> list[DiceRoll]:
    """The last `limit` rolls made outside any turn (players' from the page), oldest first."""
    rolls = roll_list(campaign=campaign).filter(turn__isnull=True)
    return list(rolls.order_by("-created_at", "-pk")[:limit])[::-1]


_rolls_of_turns = prepared(
    lambda campaign_id, turn_ids: (
        DiceRoll.objects.filter(campaign_id=campaign_id, turn_id__in=turn_ids)
        .select_related("author")
        .order_by("created_at", "pk")
    )
)


def turn_rolls(*, campaign: Campaign, turn_ids: list[int]) -> dict[int, list[DiceRoll]]:
    """The rolls made during each of these turns (the GM's `roll_dice`), oldest first."""
    rolls: dict[int, list[DiceRoll]] = defaultdict(list)
    for roll in _rolls_of_turns(campaign.pk, list(turn_ids)):
        rolls[roll.turn_id].append(roll)
    return rolls


INVITE_UNUSABLE = {
    "revoked": "This invite link has been revoked.",
    "expired": "This invite link has expired.",
    "used up": "This invite link has been used as many times as it allows.",
}


def invite_get_usable(*, token: str, user: Any, lock: bool = False) -> tuple[Invite, bool]:
    """The invite a link names and whether `user` is already a member (a member may follow a
    spent link again: it takes them to the table). Unknown: NotFound; spent: Gone."""
    invites = Invite.objects.select_related("campaign", "campaign__owner")
    invite = (
        (invites.select_for_update(of=("self",)) if lock else invites)
        .filter(token_hash=Invite.hash_token(token))
        .first()
    )
    if invite is None:
        raise NotFound("This invite link does not exist. Check that you copied all of it.")
    if is_member(campaign=invite.campaign, user=user):
        return invite, True
    reason = invite.unusable_because(timezone.now())
    if reason:
        raise Gone(f"{INVITE_UNUSABLE[reason]} Ask the game's owner for a new one.")
    return invite, False


_invites_newest_first = prepared(
    lambda campaign_id: Invite.objects.filter(campaign_id=campaign_id).order_by("-created_at")
)


def invite_list(*, campaign: Campaign) -> list[Invite]:
    """The campaign's invite links, newest first (their tokens are not kept: only the rows)."""
    return _invites_newest_first(campaign.pk)
