"""Reads of the game world."""

import functools
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
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
from core.queries import columns_of, db_value, get_or_not_found, locked_if, plain_rows, plain_sql


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


# The dump's tables: each the campaign's rows of a model, in the order of one field, as
# `values()` of these fields reads them.
WORLD_TABLES: dict[str, tuple[type, str, tuple[str, ...]]] = {
    "members": (Membership, "user_id", ("user_id", "role")),
    "creatures": (
        Creature,
        "pk",
        ("id", *(f"{name}_id" if name == "controlled_by" else name for name in Creature.SHOWN)),
    ),
    "resources": (
        Resource,
        "pk",
        ("id", "creature_id", "name", "current", "maximum", "recharge"),
    ),
    "resource_events": (ResourceEvent, "pk", ("id", "resource_id", "delta", "reason")),
    "items": (InventoryItem, "pk", ("id", "creature_id", "name", "quantity")),
    "chapters": (Chapter, "pk", ("id", "title", "position")),
    "dungeons": (Dungeon, "pk", ("id", "name")),
    "encounters": (Encounter, "pk", ("id", "active", "round", "turn_index", "order")),
    "fog": (FogCell, "pk", ("id", "x", "y")),
    "memories": (GMMemory, "pk", ("id", "key", "content")),
    "achievements": (Achievement, "pk", ("id", "user_id", "code")),
    "episodes": (Episode, "pk", ("id", "number", "active", "summary", "ended_at")),
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
    return _dump(fresh, _world_tables(fresh.pk))


def _dump(fresh: Campaign, rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
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
    """The world's tables of the dump (`WORLD_TABLES`), read in one statement (`_world_sql`): a
    column per table, its rows as a JSON array of arrays in the table's order."""
    with connection.cursor() as cursor:
        cursor.execute(_world_sql(), [campaign_id] * len(WORLD_TABLES))
        return _tables(cursor.fetchone())


def _tables(texts: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [_world_row(fields, _moments(model, fields), values) for values in json.loads(text)]
        for (name, (model, _, fields)), text in zip(WORLD_TABLES.items(), texts, strict=True)
    }


def _world_row(fields: tuple[str, ...], moments: frozenset[str], values: list[Any]) -> dict:
    """A row of the one statement as `values()` reads it: JSON carries a moment as text, the
    ORM reads it as a datetime in UTC."""
    row = dict(zip(fields, values, strict=True))
    for field in moments:
        if row[field] is not None:
            row[field] = datetime.fromisoformat(row[field]).astimezone(UTC)
    return row


def _moments(model: type, fields: tuple[str, ...]) -> frozenset[str]:
    return frozenset(f for f in fields if isinstance(model._meta.get_field(f), DateTimeField))


@functools.cache
def _world_sql() -> str:
    """Raw SQL: the ORM reads a table per statement, and the dozen reads of the dump one after
    the other cost the campaign page (drawn from the dump after every event that changes the
    world) about seven times what this one statement does (0.9 against 7.2 ms, 60 rows)."""
    quote = connection.ops.quote_name
    columns = []
    for model, order, fields in WORLD_TABLES.values():
        meta = model._meta

        def column(field: str, meta: Any = meta) -> str:
            return quote((meta.pk if field == "pk" else meta.get_field(field)).column)

        columns.append(
            f"(SELECT COALESCE(json_agg(json_build_array({', '.join(map(column, fields))}) "
            f"ORDER BY {column(order)}), '[]')::text FROM {quote(meta.db_table)} "
            f"WHERE {column('campaign')} = %s)"
        )
    return "SELECT " + ", ".join(columns)


class BoardWorld(NamedTuple):
    """What the board draws of the campaign (web/pages/presenters.py, `board_parts`): the
    number of the last event the rest reflects, the dump, the members (oldest first: user id,
    username, role, whether they hold `revert_any_turn`) and the map background's version."""

    seq: int
    dump: dict[str, Any]
    members: list[tuple[int, str, str, bool]]
    background: int | None

    @property
    def people(self) -> dict[int, str]:
        """User id -> username of every member (`campaign_member_names`)."""
        return {user_id: name for user_id, name, _, _ in self.members}

    @property
    def member_list(self) -> list[dict[str, Any]]:
        """The members as `campaign_members` lists them."""
        return _member_list(self.members)


def board_world(fresh: Campaign) -> BoardWorld:
    """The board's read of a campaign row just read (its `event_seq` comes first, as in
    `campaign_world`), in one statement: the dump's tables, the members and the background.
    The page's board after every event reads it once for every class of viewer."""
    with connection.cursor() as cursor:
        params = [fresh.pk] * len(WORLD_TABLES) + [REVERT_ANY, fresh.pk, fresh.pk]
        cursor.execute(_board_sql(), params)
        texts = cursor.fetchone()
    members = [tuple(member) for member in json.loads(texts[-2])]
    return BoardWorld(fresh.event_seq, _dump(fresh, _tables(texts[:-2])), members, texts[-1])


# The object permission that makes a member a co-GM (`campaigns.permissions.runs_table`).
REVERT_ANY = "revert_any_turn"


@functools.cache
def _board_sql() -> str:
    """Raw SQL: `_world_sql`'s columns and two more, the members and the background's version:
    the board is drawn again after every event that changes the world, and its reads as the
    ORM's five statements cost the push of the page's fragments more than this one does."""
    background = plain_sql(
        "(SELECT b.{b:version} FROM {b} b WHERE b.{b:campaign} = %s)", b=MapBackground
    )
    return f"{_world_sql()}, {_members_sql()}, {background}"


@functools.cache
def _members_sql() -> str:
    """The members as one JSON text (`BoardWorld.members`); parameters: `REVERT_ANY`, the
    campaign's id."""
    return plain_sql(
        "(SELECT COALESCE(json_agg(json_build_array(m.{m:user}, u.{u:username}, m.{m:role}, "
        "EXISTS (SELECT 1 FROM {g} g JOIN {p} p ON p.{p:id} = g.{g:permission} "
        "WHERE g.{g:content_object} = m.{m:campaign} AND g.{g:user} = m.{m:user} "
        "AND p.{p:codename} = %s)) ORDER BY m.{m:joined_at}, m.{m:id}), '[]')::text "
        "FROM {m} m JOIN {u} u ON u.{u:id} = m.{m:user} WHERE m.{m:campaign} = %s)",
        m=Membership,
        u=User,
        g=CampaignUserObjectPermission,
        p=CampaignUserObjectPermission._meta.get_field("permission").related_model,
    )


def _member_list(members: list[tuple[int, str, str, bool]]) -> list[dict[str, Any]]:
    return [
        {"username": name, "role": role, "can_revert_any": granted}
        for _, name, role, granted in members
    ]


def campaign_fresh(*, campaign_id: Any) -> Campaign:
    """The campaign as it is now (its event numbers read fresh), whoever asks: for code that has
    checked who asks already, or asks for nobody (a push of the page's fragments)."""
    # Raw SQL: the first read of every push of the page's fragments (measured: the ORM's
    # building and compiling cost several times the statement)
    sql = plain_sql("SELECT {c_columns} FROM {c} c WHERE c.{c:id} = %s", c=Campaign)
    rows = plain_rows(sql, [db_value(Campaign, "id", campaign_id)])
    if not rows:
        raise Campaign.DoesNotExist("Campaign matching query does not exist.")
    return columns_of(Campaign).load(rows[0])


def campaign_event_seq(*, campaign_id: Any) -> int:
    """The number of the campaign's last realtime event, read fresh from the database."""
    return Campaign.objects.values_list("event_seq", flat=True).get(pk=campaign_id)


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Reads inside see the database at one moment, and hold no writer back: READ COMMITTED,
    the default, gives each statement its own moment, so a new transaction asks for REPEATABLE
    READ. For reads only. Nested in a caller's transaction, it reads in that."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:  # raw SQL: the ORM sets no isolation level
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


def map_background_get(*, campaign: Campaign) -> Any:
    """The map's background image; NotFound when it has none."""
    return get_or_not_found(MapBackground.objects.all(), campaign_id=campaign.pk)


def _campaign_rows(lock: bool, **filters: Any) -> QuerySet[Campaign]:
    # Locked: the campaign row only, not the joined owner or membership.
    queryset = Campaign.objects.select_related("owner").filter(**filters)
    return locked_if(queryset, lock, of=("self",))


def _campaign_read(campaign_id: Any, member_id: Any = None) -> Campaign:
    """The campaign `campaign_id` with its owner, if `member_id` (None: anyone's) is one of its
    members; NotFound otherwise, or for a malformed id."""
    # Raw SQL: every request of every surface resolves its campaign here first (measured in
    # the web process's profile under load); the writers' locked read stays the ORM's
    member = " AND EXISTS (SELECT 1 FROM {m} m WHERE m.{m:campaign} = c.{c:id} AND m.{m:user} = %s)"
    sql = plain_sql(
        "SELECT {c_columns}, {u_columns} FROM {c} c JOIN {u} u ON u.{u:id} = c.{c:owner} "
        "WHERE c.{c:id} = %s" + (member if member_id is not None else ""),
        c=Campaign,
        u=User,
        m=Membership,
    )
    try:
        pk = db_value(Campaign, "id", campaign_id)
    except (ValidationError, ValueError, TypeError) as exc:
        raise NotFound() from exc
    rows = plain_rows(sql, [pk] if member_id is None else [pk, member_id])
    if not rows:
        raise NotFound()
    campaign, owners = columns_of(Campaign), columns_of(User)
    found = campaign.load(rows[0])
    found.owner = owners.load(rows[0], campaign.width)
    return found


def campaign_get_for_member(*, campaign_id: Any, user: Any, lock: bool = False) -> Campaign:
    """The campaign if `user` is a member; NotFound otherwise, so its existence is not revealed.
    With `lock`, the campaign row is locked in the same query (the writers' campaign lock)."""
    if not getattr(user, "is_authenticated", False):
        raise NotFound()
    if not lock:
        return _campaign_read(campaign_id, user.pk)
    return get_or_not_found(_campaign_rows(lock, memberships__user_id=user.pk), pk=campaign_id)


def campaign_get_visible(*, campaign_id: Any, user: Any, lock: bool = False) -> Campaign:
    """Members see a campaign, and so does staff holding the global revert permission (they
    police every table from the admin). Everyone else gets NotFound."""
    if is_audit_staff(user):
        if not lock:
            return _campaign_read(campaign_id)
        return get_or_not_found(_campaign_rows(lock), pk=campaign_id)
    return campaign_get_for_member(campaign_id=campaign_id, user=user, lock=lock)


def campaign_list_for_member(*, user: Any) -> QuerySet[Campaign]:
    """The campaigns `user` belongs to, open ones first, newest first within a status."""
    return (
        Campaign.objects.filter(memberships__user_id=user.pk)
        .select_related("owner")
        .order_by("status", "-created_at")
    )


def revert_any_granted(*, campaign: Campaign) -> set[int]:
    """The members granted `revert_any_turn` (the co-GMs), read from guardian's direct-FK table."""
    grants = CampaignUserObjectPermission.objects.filter(
        content_object_id=campaign.pk, permission__codename=REVERT_ANY
    )
    return set(grants.values_list("user_id", flat=True))


def campaign_members(*, campaign: Campaign) -> list[dict[str, Any]]:
    """Members with their role and whether they hold `revert_any_turn`, oldest first: one
    statement, however many members (the grant is read from guardian's direct-FK table)."""
    # Raw SQL: the members' read the board's makes with the dump (`board_world`), alone
    (text,) = plain_rows(f"SELECT {_members_sql()}", [REVERT_ANY, campaign.pk])[0]
    return _member_list([tuple(member) for member in json.loads(text)])


def campaign_member_names(*, campaign: Campaign) -> dict[int, str]:
    """User id → username of every member: how the page names people in text and events."""
    members = Membership.objects.filter(campaign_id=campaign.pk)
    return dict(members.values_list("user_id", "user__username"))


def turn_get(*, campaign: Campaign, turn_id: Any, lock: bool = False) -> Turn:
    """A turn of this campaign; one of another campaign, or a malformed id, is NotFound. With
    `lock`, the turn row is locked (undo holds it while it reverts the turn's calls)."""
    turns = locked_if(Turn.objects.filter(campaign_id=campaign.pk), lock)
    return get_or_not_found(turns, pk=turn_id)


def creature_get(*, campaign: Campaign, creature_id: Any) -> Creature:
    """A creature of this campaign; one of another campaign, or a malformed id, is NotFound."""
    return get_or_not_found(Creature.objects.filter(campaign=campaign), pk=creature_id)


def creature_names(*, campaign: Campaign) -> dict[int, str]:
    """Each creature's name by id, to put names where logged calls carry ids."""
    return creature_names_in(campaign_ids=[campaign.pk])


def creature_names_in(*, campaign_ids: Iterable[Any]) -> dict[int, str]:
    """The same for the creatures of several campaigns, in one query (a creature's id is
    unique across campaigns): an admin page lists calls of many."""
    creatures = Creature.objects.filter(campaign_id__in=list(campaign_ids))
    return dict(creatures.values_list("pk", "name"))


def _labels(campaign_id: Any) -> QuerySet:
    chapters = Chapter.objects.filter(campaign_id=campaign_id).values_list("pk", "title").order_by()
    dungeons = Dungeon.objects.filter(campaign_id=campaign_id).values_list("pk", "name").order_by()
    return chapters.annotate(kind=Value("chapter", output_field=CharField())).union(
        dungeons.annotate(kind=Value("dungeon", output_field=CharField())), all=True
    )


def world_labels(*, campaign_id: Any) -> dict[str, str]:
    """The names of the campaign's chapters and dungeons by entity key (`chapter:3` ->
    "Depths"), for the words of logged calls that name them by id; one query."""
    return {f"{kind}:{pk}": label for pk, label, kind in _labels(campaign_id)}


def world_names(*, campaign_id: Any) -> tuple[dict[int, str], dict[str, str]]:
    """`creature_names` and `world_labels` in one statement: the feed's words for logged calls
    and the approval card's read both."""
    # Raw SQL: a read of every turn drawn after an event (the push of the page's fragments)
    sql = plain_sql(
        "SELECT 'creature', c.{c:id}, c.{c:name} FROM {c} c WHERE c.{c:campaign} = %s "
        "UNION ALL SELECT 'chapter', h.{h:id}, h.{h:title} FROM {h} h WHERE h.{h:campaign} = %s "
        "UNION ALL SELECT 'dungeon', d.{d:id}, d.{d:name} FROM {d} d WHERE d.{d:campaign} = %s",
        c=Creature,
        h=Chapter,
        d=Dungeon,
    )
    names: dict[int, str] = {}
    labels: dict[str, str] = {}
    for kind, pk, label in plain_rows(sql, [campaign_id] * 3):
        if kind == "creature":
            names[pk] = label
        else:
            labels[f"{kind}:{pk}"] = label
    return names, labels


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


def roll_get(*, campaign: Campaign, roll_id: Any) -> DiceRoll:
    """A roll of this campaign; one of another campaign, or a malformed id, is NotFound."""
    return get_or_not_found(roll_list(campaign=campaign), pk=roll_id)


def rolls_outside_turns(*, campaign: Campaign, limit: int) -> list[DiceRoll]:
    """The last `limit` rolls made outside any turn (players' from the page), oldest first."""
    rolls = roll_list(campaign=campaign).filter(turn__isnull=True)
    return list(rolls.order_by("-created_at", "-pk")[:limit])[::-1]


def turn_rolls(*, campaign: Campaign, turn_ids: list[int]) -> dict[int, list[DiceRoll]]:
    """The rolls made during each of these turns (the GM's `roll_dice`), oldest first, with
    who rolled."""
    # Raw SQL: a read of every turn drawn after an event (the push of the page's fragments)
    sql = plain_sql(
        "SELECT {r_columns}, {u_columns} FROM {r} r LEFT JOIN {u} u ON u.{u:id} = r.{r:author} "
        "WHERE r.{r:campaign} = %s AND r.{r:turn} = ANY(%s) ORDER BY r.{r:created_at}, r.{r:id}",
        r=DiceRoll,
        u=User,
    )
    rolls: dict[int, list[DiceRoll]] = defaultdict(list)
    made, authors = columns_of(DiceRoll), columns_of(User)
    for row in plain_rows(sql, [campaign.pk, [int(pk) for pk in turn_ids]]):
        roll = made.load(row)
        roll.author = authors.load(row, made.width)
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


def invite_list(*, campaign: Campaign) -> list[Invite]:
    """The campaign's invite links, newest first (their tokens are not kept: only the rows)."""
    # Raw SQL: the owner's board reads it after every event that changes the world
    sql = plain_sql(
        "SELECT {i_columns} FROM {i} i WHERE i.{i:campaign} = %s ORDER BY i.{i:created_at} DESC",
        i=Invite,
    )
    invites = columns_of(Invite)
    return [invites.load(row) for row in plain_rows(sql, [campaign.pk])]
