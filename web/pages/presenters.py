"""The game world shaped for people: the campaign page, its feed and its undo dialog.

One renderer: every fragment of the page is drawn by the server's templates from what these
functions return (the board's parts are shaped in `web.pages.board`); the page's script only
swaps the server's fragments in (docs/architecture.md). Each is drawn as its viewer may see the
world (`campaigns.visibility`): a player's board, feed and undo dialog tell nothing of what the
fog hides.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone

from audit.models import InvocationOrigin, SkipReason, ToolInvocation
from audit.selectors import (
    WAITING_TURNS,
    Rights,
    call_answers,
    call_concealed,
    calls_outside_turns,
    held_call_waiting,
    later_turn_actors,
    log_fog,
    logged_calls,
    turn_and_later_actors,
    turn_feed,
    turn_waiting,
)
from audit.services.revert import turn_undo_plan
from audit.services.rewind import turn_rewind_plan
from campaigns.models import Campaign, ChatMessage, Creature, DiceRoll, Turn
from campaigns.selectors import (
    BoardWorld,
    board_world,
    campaign_event_seq,
    campaign_fresh,
    creature_names,
    creatures_added,
    invite_list,
    one_snapshot,
    roll_get,
    rolls_outside_turns,
    turn_rolls,
    world_names,
)
from campaigns.visibility import (
    UNSEEN,
    Fog,
    Sight,
    fog_read,
    state_seen,
)
from core.errors import NotFound
from gm.services import STOPPABLE
from web.pages import board as boards
from web.pages.changes import describe

FEED_TURNS = 50
FEED_ROLLS = 50
FEED_CHANGES = 50

CALL_LABELS = {
    ToolInvocation.Status.PENDING: "running",
    ToolInvocation.Status.FAILED: "refused",
    ToolInvocation.Status.REVERTED: "undone",
    # Held for a person's answer (docs/architecture.md#human-in-the-loop); answered no, or never, it
    # did not happen.
    ToolInvocation.Status.AWAITING_APPROVAL: "awaiting approval",
    # Rejected by an approver or withdrawn by the turn's player: the call's note says which,
    # by whom and why (`call_note`), so the label does not say "rejected" of a withdrawal.
    ToolInvocation.Status.REJECTED: "not done",
    ToolInvocation.Status.EXPIRED: "not approved in time: not done",
}


@dataclass
class ToolCallCard:
    """One tool call as the turn feed draws it (a card, not a view: no request handling)."""

    tool_name: str
    summary: str
    status: str
    error: str
    actor: str = ""
    requested_by: str = ""
    by_hand: bool = False  # a person's own call (the GM's hand), not the AI's
    note: str = ""  # who answered or undid it, and why, in the table's words (`call_note`)
    show_tool: bool = False  # the tool's name, folded, for those who run the table only

    @property
    def by(self) -> str:
        """Who changed the table by their own hand ("Mira: Wren heals 4 HP (5 → 9)"); the AI's
        calls are the GM's, said by the turn."""
        return self.actor if self.by_hand else ""

    @property
    def provenance(self) -> str:
        """A call someone else made on the actor's turn says so (provenance:
        docs/architecture.md#the-log-row)."""
        return f"by {self.requested_by} for {self.actor}" if self.requested_by else ""

    @property
    def label(self) -> str:
        """How a call that did not simply happen is marked; committed calls carry no label."""
        return CALL_LABELS.get(self.status, "")


@dataclass
class RollCard:
    """One roll as the feed draws it: who rolled what, each die, and the total."""

    id: int
    who: str
    by_gm: bool
    formula: str
    mode: str
    dice: list[int]
    discarded: list[int]
    modifier: int
    total: int
    created_at: datetime
    turn_id: int | None = None
    kind = "roll"

    @property
    def modifier_text(self) -> str:
        return f"{self.modifier:+d}" if self.modifier else ""

    @property
    def mode_text(self) -> str:
        return "" if self.mode == DiceRoll.Mode.NORMAL else f"with {self.mode}"


def roll_card(roll: DiceRoll) -> RollCard:
    who = "Game Master" if roll.by_gm else roll.author.get_username() if roll.author else "someone"
    return RollCard(
        id=roll.pk,
        who=who,
        by_gm=roll.by_gm,
        formula=roll.formula,
        mode=roll.mode,
        dice=roll.dice,
        discarded=roll.discarded,
        modifier=roll.modifier,
        total=roll.total,
        created_at=roll.created_at,
        turn_id=roll.turn_id,
    )


@dataclass
class TurnCard:
    """One turn of the feed with its messages, the GM's rolls and tool-call cards, as the page
    draws it."""

    id: int
    actor: str
    status: str
    created_at: datetime
    messages: list[ChatMessage] = field(default_factory=list)
    rolls: list[RollCard] = field(default_factory=list)
    calls: list[ToolCallCard] = field(default_factory=list)
    undoable: bool = False
    reverted: bool = False
    reverted_by: str = ""
    revert_reason: str = ""
    latest_gm: bool = False
    stopping: bool = False
    retried: bool = False
    retry_of: int | None = None
    redone: bool = False  # put back as it was, in a later turn (`audit.services.redo`)
    redo_of: int | None = None
    reverted_at: datetime | None = None
    undo_onwards: bool = False  # may revert this turn and every later one (the one policy)
    undo_from_here: bool = False  # ... and there is a later one: "Undo from here" is offered
    waiting: dict[str, Any] | None = None  # the held call it waits for (audit.selectors)
    kind = "turn"

    @property
    def waiting_text(self) -> str:
        """The page's words for what the turn waits for, after "Waiting for approval": "the GM’s
        modify creature call made in an earlier turn waits for gm or cogm to answer it"."""
        if self.waiting is None:
            return ""
        tool = self.waiting["tool_name"].replace("_", " ")
        own = self.waiting["turn"] == self.id
        where = "in this turn" if own else "made in an earlier turn"
        on = " or ".join(self.waiting["on"]) or "the GM"
        return f"the GM’s {tool} call {where} waits for {on} to answer it"

    @property
    def said(self) -> str:
        """What the actor said to open the turn, as the undo dialog quotes it."""
        said = next((m.content for m in self.messages if m.role == ChatMessage.Role.PLAYER), "")
        return said if len(said) <= 60 else f"{said[:59]}…"

    @property
    def undo_title(self) -> str:
        """The undo dialog's question, naming the turn: "Undo alice's turn: 'I attack…'?"."""
        if not self.said:
            return f"Undo {self.actor}’s turn?"
        return f"Undo {self.actor}’s turn: ‘{self.said}’?"

    @property
    def hand(self) -> bool:
        """A turn of the GM's own hand: its calls are a person's, none the AI's. Each offers
        Undo to whoever may undo it, not only the latest, and it never hides the latest GM
        turn's Undo."""
        return bool(self.calls) and all(call.by_hand for call in self.calls)

    @property
    def gm(self) -> bool:
        """A GM turn: the GM answered or acted, and it is not still running."""
        answered = any(m.role == ChatMessage.Role.GM for m in self.messages) or bool(self.calls)
        return (
            answered and not self.hand and not self.reverted and self.status != Turn.Status.RUNNING
        )

    @property
    def thinking(self) -> bool:
        """The GM has yet to finish answering: every member sees a note saying so, which the
        page's script replaces with the narration as it streams."""
        return self.status in STOPPABLE and not self.reverted

    @property
    def stoppable(self) -> bool:
        """Stop is offered to those the cancel service lets stop it (`undoable`: the actor or
        whoever may revert), until someone has asked."""
        return self.thinking and self.undoable and not self.stopping

    @property
    def retryable(self) -> bool:
        """Retry is offered on an undone turn the GM was asked to answer, once, to those the
        retry service lets retry it."""
        asked = self.status != Turn.Status.OPEN
        return self.reverted and asked and not self.retried and not self.redone and self.undoable

    @property
    def redoable(self) -> bool:
        """Redo ("put it back as it was") is offered on an undone turn that said or did
        something, once, to those the redo service lets redo it; not after a retry."""
        did = bool(self.calls) or any(m.role == ChatMessage.Role.GM for m in self.messages)
        return self.reverted and did and not self.retried and not self.redone and self.undoable


@dataclass
class ChangeEntry:
    """A change someone made outside any turn (a token dragged on the map: nobody's message to
    the GM), as the feed draws it: who, in the tool's words, and whether it was undone."""

    id: str
    who: str
    text: str
    undone: bool
    created_at: datetime
    kind = "change"


@dataclass(frozen=True)
class TurnRead:
    """What drawing one turn reads of the campaign whoever looks: the turn, and (when it is not
    undone) it and every later turn not undone, as (turn id, actor id), oldest first."""

    turn: Turn
    later: list[tuple[int, int]]


@dataclass(frozen=True)
class FeedRead:
    """What drawing the feed (or one turn of it) reads of the campaign, for every viewer alike
    but the fog, which is read once for each sight asked for: one read serves each class of
    viewer a push draws the turn for (web/pages/fragments.py)."""

    turns: list[Turn]
    messages: dict[int, list[ChatMessage]]
    rows: dict[int, list[dict[str, Any]]]
    rolls: dict[int, list[DiceRoll]]
    fogs: dict[Sight, Fog | None]  # by sight: the GM's None
    names: dict[int, str]
    labels: dict[str, str]
    later: list[tuple[int, int]]  # `later_turn_actors` from the first turn shown not undone
    answers: dict[str, dict[str, Any]]
    held: dict[str, Any] | None


def feed_read(
    *, campaign: Campaign, viewers: list[Rights], turn_id: Any = None, turn: TurnRead | None = None
) -> FeedRead:
    """The feed's read for these viewers (the fog once per sight among them), in one snapshot:
    a turn the GM completes meanwhile (its reply and its status, one commit) is drawn before or
    after, never its reply beside the note that the GM is thinking, which the page's script
    would fill with the streamed narration (the reply twice). For the one turn `turn` already
    read (`turn_read`, whose later actors a push's class keys were made of), the feed of that
    turn, its later actors not read again."""
    if turn is not None:
        turn_id = turn.turn.pk
    with one_snapshot():
        turns, messages, rows = turn_feed(campaign=campaign, limit=FEED_TURNS, turn_id=turn_id)
        logged = [r for t in rows.values() for r in t]
        sights = {rights.sight: rights for rights in viewers}
        live = [t for t in turns if t.reverted_at is None]
        if turn is not None:
            later = turn.later
        else:
            later = later_turn_actors(campaign=campaign, since=live[0]) if live else []
        names, labels = world_names(campaign_id=campaign.pk)
        return FeedRead(
            turns=turns,
            messages=messages,
            rows=rows,
            rolls=turn_rolls(campaign=campaign, turn_ids=[t.pk for t in turns]),
            fogs={
                sight: players_fog(campaign=campaign, rights=rights, rows=logged)
                for sight, rights in sights.items()
            },
            names=names,
            labels=labels,
            later=later,
            answers=answers_of(campaign=campaign, rows=logged),
            held=(
                held_call_waiting(campaign=campaign)
                if any(t.status in WAITING_TURNS for t in live)
                else None
            ),
        )


def feed(
    *, campaign: Campaign, rights: Rights, turn_id: Any = None, read: FeedRead | None = None
) -> list[TurnCard]:
    """The last turns with their visible messages and tool calls, oldest first (or the one
    `turn_id`), from `read` (`feed_read`: its fogs must hold this viewer's sight) or read for
    this viewer alone. The most recent GM turn is flagged; undone turns stay as a note of who
    undid them and why."""
    if read is None:
        read = feed_read(campaign=campaign, viewers=[rights], turn_id=turn_id)
    turns, messages, rows, rolls = read.turns, read.messages, read.rows, read.rolls
    fog = read.fogs[rights.sight]
    names = names_seen(read.names, fog)
    labels, answers, held = read.labels, read.answers, read.held
    onwards, last = _undo_onwards(rights=rights, rows=read.later)
    views = [
        TurnCard(
            id=t.pk,
            actor=t.actor.get_username(),
            status=t.status,
            created_at=t.created_at,
            messages=messages[t.pk],
            rolls=[roll_card(roll) for roll in rolls[t.pk]],
            calls=[
                noted(_tool_call(row, names, fog, labels, rights), row, answers)
                for row in rows[t.pk]
            ],
            undoable=rights.reverts(t.actor_id),
            reverted=t.reverted_at is not None,
            reverted_by=t.reverted_by.get_username() if t.reverted_by else "",
            revert_reason=t.revert_reason,
            stopping=t.cancel_requested_at is not None,
            retried=t.retried,
            retry_of=t.retry_of_id,
            redone=t.redone,
            redo_of=t.redo_of_id,
            reverted_at=t.reverted_at,
            undo_onwards=t.pk in onwards,
            undo_from_here=t.pk in onwards and t.pk != last,
            waiting=turn_waiting(t, held),
        )
        for t in turns
    ]
    for view in views:
        if view.hand:  # the change says who made it: no "adjusts the table by hand" above it
            view.messages = [m for m in view.messages if m.role != ChatMessage.Role.PLAYER]
    latest = next((v for v in reversed(views) if v.gm), None)
    if latest is not None and turn_id is None:
        latest.latest_gm = True
    return views


def turn_read(*, campaign: Campaign, turn_id: int) -> TurnRead | None:
    """The turn and the later turns' actors, in one query; None when the campaign has no such
    turn."""
    try:
        turn, later = turn_and_later_actors(campaign=campaign, turn_id=turn_id)
    except NotFound:
        return None
    return TurnRead(turn=turn, later=later)


def turn_facts(*, read: TurnRead, rights: Rights) -> dict[str, Any]:
    """What drawing the turn asks of its viewer beyond their sight (web/pages/fragments.py):
    whether they may undo from it onwards and a later turn offers its own Undo (the feed's
    `undo_onwards` and `undo_from_here`). No query: every viewer's facts come from one read."""
    onwards, last = _undo_onwards(rights=rights, rows=read.later)
    return {
        "turn": read.turn,
        "onwards": read.turn.pk in onwards,
        "from_here": read.turn.pk in onwards and read.turn.pk != last,
    }


def _undo_onwards(*, rights: Rights, rows: list[tuple[int, int]]) -> tuple[set[int], int | None]:
    """Of these turns not undone (`later_turn_actors`), those from which this user may undo
    onwards (each whose actor and every later turn's the one policy, `Rights.reverts`, lets
    the user revert), and the last one, which offers its own Undo instead."""
    if not rows:
        return set(), None
    result: set[int] = set()
    every_later = True
    for pk, actor_id in reversed(rows):
        every_later = every_later and rights.reverts(actor_id)
        if every_later:
            result.add(pk)
    return result, rows[-1][0]


def timeline(*, campaign: Campaign, rights: Rights) -> list[TurnCard | RollCard | ChangeEntry]:
    """The whole feed, oldest first: the last turns, and the rolls players made and the tokens
    people dragged between and after them (the last FEED_ROLLS and FEED_CHANGES, none older
    than the oldest turn shown when turns were cut)."""
    turns = feed(campaign=campaign, rights=rights)
    rolls = [roll_card(r) for r in rolls_outside_turns(campaign=campaign, limit=FEED_ROLLS)]
    moves = changes_outside_turns(campaign=campaign, rights=rights)
    moves += creature_additions(campaign=campaign, rights=rights)
    if len(turns) == FEED_TURNS:
        rolls = [r for r in rolls if r.created_at >= turns[0].created_at]
        moves = [m for m in moves if m.created_at >= turns[0].created_at]
    return sorted([*turns, *rolls, *moves], key=lambda entry: entry.created_at)


def roll_entry(*, campaign: Campaign, roll_id: int) -> RollCard:
    """One roll of the feed, for the script to draw when its `dice_rolled` event arrives."""
    return roll_card(roll_get(campaign=campaign, roll_id=roll_id))


def players_fog(*, campaign: Campaign, rights: Rights, rows: list[dict[str, Any]]) -> Fog | None:
    """The fog a player reads the logged calls `rows` (dicts with their `input`) through, or
    None for the GM (`audit.selectors.log_fog`)."""
    return log_fog(campaign=campaign, rights=rights, inputs=[row.get("input") for row in rows])


def names_seen(names: dict[int, str], fog: Fog | None) -> dict[int, str]:
    """Creatures' names as a player reads them: one the fog hides is someone unseen."""
    if fog is None:
        return names
    return {pk: UNSEEN if pk in fog.hidden else name for pk, name in names.items()}


def _tool_call(
    row: dict[str, Any],
    names: dict[int, str],
    fog: Fog | None,
    labels: dict[str, str],
    rights: Rights,
) -> ToolCallCard:
    return ToolCallCard(
        tool_name=row["tool_name"],
        summary=describe(
            row["tool_name"],
            row["input"],
            names=names,
            snapshot=row["revert_snapshot"],
            post_state=row["post_state"],
            fog=fog,
            labels=labels,
        ),
        status=row["status"],
        error="" if call_concealed(row["input"], row["post_state"], fog) else row["error"],
        actor=row["user__username"],
        requested_by=row["requested_by__username"] or "",
        by_hand=row["source"] == InvocationOrigin.USER,
        show_tool=rights.gm,
    )


def answers_of(*, campaign: Campaign, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """How the held calls among the feed's rows were answered (`audit.selectors.call_answers`):
    a refused or expired one by its own id, an approved one by the row it ran as."""
    refused = (ToolInvocation.Status.REJECTED, ToolInvocation.Status.EXPIRED)
    held = {str(r["pk"]): str(r["pk"]) for r in rows if r["status"] in refused}
    held.update({str(r["approval_of_id"]): str(r["pk"]) for r in rows if r["approval_of_id"]})
    if not held:
        return {}
    answers = call_answers(campaign=campaign, ids=list(held))
    return {held[pk]: answer for pk, answer in answers.items()}


def noted(
    card: ToolCallCard, row: dict[str, Any], answers: dict[str, dict[str, Any]]
) -> ToolCallCard:
    """The card with its note: who approved, refused or withdrew it, or undid it alone, and
    their reason, as the table reads it (docs/api.md#the-feeds-history-and-the-undo-dialog)."""
    card.note = call_note(row, answers.get(str(row["pk"])))
    return card


def call_note(row: dict[str, Any], answer: dict[str, Any] | None) -> str:
    reverted_by = row.get("reverted_by__username") or ""
    if row["status"] == ToolInvocation.Status.REVERTED and reverted_by:
        why = (row.get("revert_reason") or "").strip()
        return f"Undone by {reverted_by}" + (f": “{why}”" if why else "")
    if answer is None:
        return ""
    if answer["to"] == ToolInvocation.Status.PENDING:  # approved, and ran as this row
        why = answer["reason"].strip()
        said = f": “{why}”" if why and why != APPROVED_MARK else ""
        return f"Approved by {answer['by'] or 'someone'}{said}"
    return answer["reason"]  # the refusal's own sentence: "dara withdrew this call: …"


# The reason the approval service chains on an approval given without a note.
APPROVED_MARK = "approved"
KIND_WORDS = {
    Creature.Kind.PC: "a player character",
    Creature.Kind.NPC: "an NPC",
    Creature.Kind.MONSTER: "a monster",
}


def creature_additions(
    *, campaign: Campaign, rights: Rights, creature_id: Any = None
) -> list[ChangeEntry]:
    """The creatures people added through the set-up (the last FEED_CHANGES, or the one
    `creature_id`), oldest first, as entries of the feed: "owner adds Goblin at 5,5: a
    monster with 7 HP". A player is not told of one the fog hides now."""
    added = creatures_added(campaign=campaign, limit=FEED_CHANGES, creature_id=creature_id)
    if not added:
        return []
    hidden = frozenset()
    if rights.sight is not Sight.GM:
        hidden = fog_read(campaign_id=campaign.pk, creature_ids=[c.pk for c in added]).hidden
    return [
        ChangeEntry(
            id=f"added-{c.pk}",
            who=c.added_by.get_username() if c.added_by else "someone",
            # What it is, not where it stands or how hurt it is now: those change, the feed
            # tells of each change as it comes.
            text=f"adds {c.name}: {KIND_WORDS.get(c.kind, 'a creature')} with {c.max_hp} HP",
            undone=False,
            created_at=c.added_at,
        )
        for c in added
        if c.pk not in hidden
    ]


def changes_outside_turns(
    *, campaign: Campaign, rights: Rights, invocation_id: Any = None
) -> list[ChangeEntry]:
    """The last FEED_CHANGES changes made outside turns (or the one `invocation_id`), oldest
    first, in the words the viewer may read (a player's of a creature in the fog: that
    something happens there)."""
    rows = calls_outside_turns(campaign=campaign, limit=FEED_CHANGES, invocation_id=invocation_id)
    if not rows:
        return []
    fog = players_fog(campaign=campaign, rights=rights, rows=rows)
    names, labels = world_names(campaign_id=campaign.pk)
    names = names_seen(names, fog)
    return [
        ChangeEntry(
            id=str(row["pk"]),
            who=row["user__username"],
            text=_tool_call(row, names, fog, labels, rights).summary,
            undone=row["status"] == ToolInvocation.Status.REVERTED,
            created_at=row["created_at"],
        )
        for row in rows
    ]


def event_seq(campaign: Campaign) -> int:
    """The number of the campaign's last realtime event, read fresh from the database."""
    return campaign_event_seq(campaign_id=campaign.pk)


def table(*, campaign: Campaign, rights: Rights) -> dict[str, Any]:
    """Everything the campaign page draws, and the data its script starts from: the event
    number the page reflects (read first, so an event after it is never missed)."""
    context = board_parts(campaign=campaign, rights=rights)
    return {
        **context,
        "feed": timeline(campaign=campaign, rights=rights),
        "script_data": {
            "campaign": str(campaign.pk),
            "me": rights.user.get_username(),
            "seq": context["seq"],
        },
    }


def board_parts(
    *, campaign: Campaign, rights: Rights, world: BoardWorld | None = None
) -> dict[str, Any]:
    """The board as this user sees it (scene, map, combat, rosters, the forms' choices), and
    the number of the last event it reflects: the page draws it, and so does the fragment the
    script swaps in after an event (`/campaigns/{id}/board/`), with the same templates.
    `world`: that number, the campaign's dump read after it, its members and background
    (`board_world`), as web/pages/fragments.py keeps one per event for every class's board;
    None: read now."""
    if world is None:
        world = board_world(campaign_fresh(campaign_id=campaign.pk))
    state = state_seen(world.dump, rights.sight)
    members = world.member_list if rights.owner else []
    setup_context = setup(campaign=campaign, rights=rights, state=state, members=members)
    return {
        "campaign": campaign,
        "seq": world.seq,
        "board": {
            **boards.board(state, world.people),
            "map": boards.battle_map(
                state,
                rights=rights,
                grid=(campaign.map_cols, campaign.map_rows),
                background=_background_url(campaign, world.background),
            ),
        },
        "setup": setup_context,
        "seen": state,  # the dump the board was drawn from (web/pages/fragments.py reads it)
    }


def _background_url(campaign: Campaign, version: int | None) -> str:
    """The map background's address, its version in the query (a new image, a new URL); none
    without a background (`version` None)."""
    if version is None:
        return ""
    return reverse("campaign_map_background", args=[campaign.pk]) + f"?v={version}"


INVITE_LENGTHS = [("24", "1 day"), ("72", "3 days"), ("168", "7 days"), ("720", "30 days")]


@dataclass
class InviteCard:
    id: int
    expires_at: datetime
    uses: int
    max_uses: int | None
    unusable: str

    @property
    def uses_text(self) -> str:
        return f"{self.uses} of {self.max_uses}" if self.max_uses else f"{self.uses} (no limit)"


def setup(
    *, campaign: Campaign, rights: Rights, state: dict[str, Any], members: list[dict[str, Any]]
) -> dict[str, Any]:
    """What the set-up and GM's-hand panels offer this user: the owner sets the table up and
    invites, the owner and co-GMs have the GM's hand, every member may add their own character.
    `members`: the owner's list of them (`campaign_members`, read with the board's world), []
    for anyone else. `errors` ({form: message}) and `new_invite_url` are filled in by a form's
    answer."""
    is_owner = rights.owner
    now = timezone.now()
    invites = [
        InviteCard(i.pk, i.expires_at, i.uses, i.max_uses, i.unusable_because(now))
        for i in (invite_list(campaign=campaign) if is_owner else [])
    ]
    mine = [
        c
        for c in state["creatures"]
        if c["kind"] == "pc" and c["controlled_by_id"] == rights.user.pk
    ]
    return {
        "is_owner": is_owner,
        "is_gm": rights.gm,
        "my_characters": mine,
        "map": {"cols": campaign.map_cols, "rows": campaign.map_rows},
        "members": members,
        "invites": invites,
        "kinds": Creature.Kind.choices,
        "options": boards.options(state, members),
        "errors": {},
        "new_invite_url": "",
        "invite_lengths": INVITE_LENGTHS,
        # The invite form's values: the defaults, or what the owner chose for the last link.
        "invite_values": {"expires_in_hours": "72", "max_uses": "1"},
    }


@dataclass
class PlannedChange:
    """One call an undo would revert (or leave), in people's words."""

    text: str
    tool_name: str
    later: bool = False  # a later turn's, reverted with it (cascade)
    stays: str = ""  # why it is left as it is
    show_tool: bool = False  # the tool's name, for those who run the table only


SKIPS = {
    SkipReason.ALREADY_REVERTED: "already undone",
    SkipReason.NOT_COMMITTED: "never took effect",
    SkipReason.NOT_REVERTIBLE: "cannot be undone: its before-state was not captured",
}


def undo_plan(
    *, campaign: Campaign, rights: Rights, turn_id: int, cascade: bool, ip: str | None
) -> dict[str, Any]:
    """The undo dialog's content for a turn (and, with `cascade`, every later call that depends
    on it): each change once, in plain words, and the fields it puts back, before → after. The
    plan service decides and authorises (a Forbidden or NotFound propagates)."""
    plan = turn_undo_plan(
        campaign_id=campaign.pk, user=rights.user, turn_id=turn_id, cascade=cascade, ip=ip
    )
    turns = feed(campaign=campaign, rights=rights, turn_id=turn_id)
    ids = [c["id"] for c in plan["invocations"] + plan["conflicting_invocations"]]
    rows = logged_calls(campaign=campaign, ids=ids)
    fog = players_fog(campaign=campaign, rights=rights, rows=list(rows.values()))
    names, labels = world_names(campaign_id=campaign.pk)
    names = names_seen(names, fog)

    def change(call: dict[str, Any]) -> PlannedChange:
        row = rows.get(call["id"], {})
        text = describe(
            call["tool_name"],
            row.get("input"),
            names=names,
            snapshot=row.get("revert_snapshot"),
            post_state=row.get("post_state"),
            fog=fog,
            labels=labels,
        )
        reason = call.get("skip_reason") or ""
        return PlannedChange(
            text=text,
            tool_name=call["tool_name"],
            later=row.get("turn_id") != turn_id,
            stays=SKIPS.get(reason, reason),
            show_tool=rights.gm,
        )

    def once(calls: list[dict[str, Any]]) -> list[PlannedChange]:
        seen: dict[str, dict[str, Any]] = {}
        for call in calls:
            seen.setdefault(call["id"], call)
        return [change(call) for call in seen.values()]

    return {
        "turn": turns[0] if turns else None,
        "cascade": cascade,
        "changes": once(plan["invocations"]),
        "diff": list(
            dict.fromkeys(
                _diff_line(row, names)
                for row in plan["diff"]
                if not _hides(row, fog) and (rights.gm or _plain(row))
            )
        ),
        "conflicts": once(plan["conflicting_invocations"]) if plan["conflicts"] else [],
    }


# A creature's fields a player reads field by field; the rest of the record (other entities'
# rows, keys, timestamps) is the GM's, the tools' words above it tell the player of them.
PLAIN_FIELDS = frozenset({*Creature.VITALS, "x", "y", "name"})


def _plain(row: dict[str, Any]) -> bool:
    """Whether a field an undo puts back reads as plain words to a player."""
    return row["entity"] == "creature" and row["field"] in PLAIN_FIELDS


def _hides(row: dict[str, Any], fog: Fog | None) -> bool:
    """Whether a field an undo puts back is a hidden creature's, which a player does not read."""
    pk = str(row["id"])
    if fog is None or row["entity"] != "creature" or not pk.isdigit():
        return False
    return int(pk) in fog.hidden


def _diff_line(row: dict[str, Any], names: dict[int, str]) -> str:
    """One field an undo puts back: `Goblin hp: 3 → 7` (now → what it goes back to)."""
    pk = row["id"]
    key = int(pk) if str(pk).isdigit() else pk
    what = names.get(key, f"creature {pk}") if row["entity"] == "creature" else row["entity"]
    field = str(row["field"]).removesuffix("_id").replace("_", " ")
    if row["field"] == "id":
        return f"{what} is removed" if row["before"] is None else f"{what} comes back"

    def shown(value: Any) -> str:
        if value is None or value == "":
            return "—"
        if isinstance(value, list):
            return ", ".join(map(str, value)) or "—"
        text = str(value)
        return text if len(text) <= 40 else f"{text[:39]}…"

    return f"{what} {field}: {shown(row['now'])} → {shown(row['before'])}"


def rewind_plan(
    *, campaign: Campaign, rights: Rights, turn_id: int, ip: str | None
) -> dict[str, Any]:
    """The rewind dialog's content: the turns that go (newest first, each named as the undo
    dialog names one), every change put back in plain words, the fields before → after, and
    what cannot be reverted. The plan service decides and authorises (a Forbidden or NotFound
    propagates: the dialog then shows the refusal alone, which names what blocks it)."""
    plan = turn_rewind_plan(campaign_id=campaign.pk, user=rights.user, turn_id=turn_id, ip=ip)
    shown = {t.id: t for t in feed(campaign=campaign, rights=rights) if not t.reverted}
    ids = [c["id"] for c in plan["invocations"]]
    rows = logged_calls(campaign=campaign, ids=ids)
    fog = players_fog(campaign=campaign, rights=rights, rows=list(rows.values()))
    names = names_seen(creature_names(campaign=campaign), fog)

    def change(call: dict[str, Any]) -> PlannedChange:
        row = rows.get(call["id"], {})
        text = describe(
            call["tool_name"],
            row.get("input"),
            names=names,
            snapshot=row.get("revert_snapshot"),
            post_state=row.get("post_state"),
            fog=fog,
        )
        return PlannedChange(text=text, tool_name=call["tool_name"])

    def turn_words(turn: dict[str, Any]) -> str:
        card = shown.get(turn["id"])
        said = card.said if card else ""
        return f"{turn['actor']}’s turn" + (f": ‘{said}’" if said else "")

    first = next((t for t in plan["turns"] if t["id"] == turn_id), None)
    return {
        "turn_id": turn_id,
        "title": f"Rewind to before {turn_words(first)}?" if first else "Rewind to here?",
        "turns": [turn_words(t) for t in plan["turns"]],
        "changes": [change(c) for c in plan["invocations"]],
        "blocked": [change(c) for c in plan["blocked"]],
        "diff": list(
            dict.fromkeys(_diff_line(row, names) for row in plan["diff"] if not _hides(row, fog))
        ),
    }
