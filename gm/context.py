"""What the GM knows when it answers a turn (docs/architecture.md#revert-and-undo: context-coherent
undo).

The history leaves out undone turns and reverted tool calls entirely, and carries instead a
short note per undo (what, by whom, why). A model that saw an undone attack would otherwise
narrate from a world that no longer exists ("the wounded goblin...").

The history holds only turns the GM answered. A turn it did not finish (failed) or was not
asked to answer is a note instead: sent again as a message, its player's words would read as
an action still to resolve (and run together with the next player's into one), and a failed
turn's half-told narration would read as a finished reply.
"""

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ai_tools import registry
from audit.models import ToolInvocation
from campaigns.models import Campaign, ChatMessage, Creature, Turn
from campaigns.selectors import campaign_fresh, campaign_member_names, campaign_state

# How many earlier turns the GM sees; older ones only live on in the state and GM memories.
HISTORY_TURNS = 20
QUOTE_CHARS = 80


@dataclass(frozen=True)
class ToolCall:
    id: str
    tool_name: str
    input: dict[str, Any]
    result: Any


@dataclass(frozen=True)
class PastTurn:
    id: int
    speaker: str
    message: str
    reply: str
    tool_calls: list[ToolCall]


@dataclass(frozen=True)
class GMContext:
    campaign: Campaign
    turn: Turn
    speaker: str  # the acting player, e.g. "alice (plays Thorin)"
    message: str
    history: list[PastTurn]  # answered turns only, oldest first
    undone: list[str]
    unfinished: list[str]  # notes on earlier turns the GM did not finish or was not asked
    state: dict[str, Any]
    players: dict[int, str]  # user id -> username, for the members


def gm_context(*, turn: Turn, state: dict[str, Any] | None = None) -> GMContext:
    """What the GM knows for `turn`; `state` is the game state it decides from (the state the
    turn began with, on a resumed turn), by default the campaign's state now."""
    campaign = campaign_fresh(campaign_id=turn.campaign_id)
    before = Turn.objects.filter(campaign_id=campaign.pk, pk__lt=turn.pk)
    earlier = list(before.select_related("reverted_by").order_by("-pk")[:HISTORY_TURNS])[::-1]
    players = _players(campaign)
    speakers = _speakers(campaign, players)
    said = _messages_by_turn([turn.pk, *(t.pk for t in earlier)])
    calls = _invocations_by_turn(campaign, [t.pk for t in earlier])
    history: list[PastTurn] = []
    undone: list[str] = []
    unfinished: list[str] = []
    for past in earlier:
        speaker = speakers.get(past.actor_id, f"user {past.actor_id}")
        message = _player_message(said[past.pk])
        if past.reverted_at is not None:
            undone.append(_turn_note(past, speaker, message, calls[past.pk]))
            continue
        undone += [
            _call_note(row, speaker, message)
            for row in calls[past.pk]
            if row.status == ToolInvocation.Status.REVERTED
        ]
        answered = _past_turn(past, speaker, message, said[past.pk], calls[past.pk])
        if past.status == Turn.Status.COMPLETED and (answered.reply or answered.tool_calls):
            history.append(answered)
        else:
            unfinished.append(_unfinished_note(past, speaker, message, answered.tool_calls))
    return GMContext(
        campaign=campaign,
        turn=turn,
        speaker=speakers.get(turn.actor_id, f"user {turn.actor_id}"),
        message=_player_message(said[turn.pk]),
        history=history,
        undone=undone,
        unfinished=unfinished,
        state=campaign_state(campaign) if state is None else state,
        players=players,
    )


# What the history and its notes read of a call: not its snapshots, sets and events, the
# log's widest columns, which a turn with twenty turns of history would otherwise decode.
CALL_FIELDS = (
    "turn_id",
    "tool_name",
    "input",
    "result",
    "status",
    "revert_reason",
    "reverted_by",
    "reverted_by__username",
)


def _players(campaign: Campaign) -> dict[int, str]:
    return campaign_member_names(campaign=campaign)


def _speakers(campaign: Campaign, players: dict[int, str]) -> dict[int, str]:
    """Each member's name with the characters they play: how the GM addresses the table."""
    characters: dict[int, list[str]] = defaultdict(list)
    pcs = Creature.objects.filter(campaign_id=campaign.pk, kind=Creature.Kind.PC).order_by("pk")
    for user_id, name in pcs.values_list("controlled_by_id", "name"):
        characters[user_id].append(name)
    return {
        user_id: f"{username} (plays {', '.join(characters[user_id])})"
        if characters[user_id]
        else username
        for user_id, username in players.items()
    }


def _messages_by_turn(turn_ids: list[int]) -> dict[int, list[ChatMessage]]:
    grouped: dict[int, list[ChatMessage]] = defaultdict(list)
    for message in ChatMessage.objects.filter(turn_id__in=turn_ids).order_by("created_at", "pk"):
        grouped[message.turn_id].append(message)
    return grouped


def _invocations_by_turn(campaign: Campaign, turn_ids: list[int]):
    grouped: dict[int, list[ToolInvocation]] = defaultdict(list)
    rows = ToolInvocation.objects.filter(
        campaign_id=campaign.pk,
        turn_id__in=turn_ids,
        status__in=[ToolInvocation.Status.COMMITTED, ToolInvocation.Status.REVERTED],
    )
    for row in rows.select_related("reverted_by").only(*CALL_FIELDS).order_by("sequence"):
        grouped[row.turn_id].append(row)
    return grouped


def _player_message(messages: list[ChatMessage]) -> str:
    return next((m.content for m in messages if m.role == ChatMessage.Role.PLAYER), "")


def _past_turn(turn, speaker, message, said, rows) -> PastTurn:
    reply = "\n\n".join(m.content for m in said if m.role == ChatMessage.Role.GM and not m.reverted)
    calls = [
        ToolCall(id=str(row.pk), tool_name=row.tool_name, input=row.input, result=row.result)
        for row in rows
        if row.status == ToolInvocation.Status.COMMITTED
    ]
    return PastTurn(id=turn.pk, speaker=speaker, message=message, reply=reply, tool_calls=calls)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _why(reason: str) -> str:
    return f'reason: "{_quote(reason)}"' if reason else "no reason given"


def _who(user: Any) -> str:
    return user.get_username() if user is not None else "someone"


def _turn_note(turn: Turn, speaker: str, message: str, rows: list[ToolInvocation]) -> str:
    names = ", ".join(row.tool_name for row in rows) or "no tool calls"
    return (
        f'{_who(turn.reverted_by)} undid the turn of {speaker} ("{_quote(message)}"; '
        f"{names}), {_why(turn.revert_reason)}. Everything it did was reverted: it never "
        "happened."
    )


def _call_note(row: ToolInvocation, speaker: str, message: str) -> str:
    summary = registry.summary(row.tool_name, row.input)
    return (
        f"{_who(row.reverted_by)} reverted the {row.tool_name} call ({summary}) of the turn of "
        f'{speaker} ("{_quote(message)}"), {_why(row.revert_reason)}. Its effect is gone.'
    )


def _unfinished_note(turn: Turn, speaker: str, message: str, calls: list[ToolCall]) -> str:
    if turn.status not in (Turn.Status.FAILED, Turn.Status.CANCELLED):
        why = "was not asked to answer" if turn.status == Turn.Status.OPEN else "gave no answer"
        return f'{speaker} said "{_quote(message)}" (the GM {why}).'
    ended = "failed" if turn.status == Turn.Status.FAILED else "was cancelled"
    note = (
        f'The turn of {speaker} ("{_quote(message)}") {ended} before the GM finished it: it is '
        "over, never act on it again."
    )
    if calls:
        summaries = ", ".join(
            f"{c.tool_name} ({registry.summary(c.tool_name, c.input)})" for c in calls
        )
        note += f" Its tool calls that ran stay in effect: {summaries}."
    return note


def state_summary(state: dict[str, Any], players: dict[int, str]) -> str:
    """The game state as a few lines of text with the ids the tools need."""
    camp = state["campaign"]
    chapters = {c["id"]: c["title"] for c in state["chapters"]}
    names = {c["id"]: c["name"] for c in state["creatures"]}
    lines = [
        f'Campaign "{camp["name"]}" ({camp["status"]}). '
        f"Chapter: {_named(chapters, camp['current_chapter_id'])}. "
        f"Active dungeon: {camp['active_dungeon_id'] or 'none'}.",
        f"Scene: {camp['scene'] or '(not set)'}"
        + (f" Location: {camp['location']}." if camp["location"] else ""),
        f"Combat: {_combat(state, names)}",
        "Creatures:",
        *(f"- {_creature(c, players)}" for c in state["creatures"]),
        "Resources: "
        + (
            "; ".join(
                f"{names[r['creature_id']]} {r['name']} {r['current']}/{r['maximum']}"
                for r in state["resources"]
            )
            or "none"
        ),
        "Items: "
        + (
            "; ".join(
                f"{names[i['creature_id']]} {i['quantity']} × {i['name']}" for i in state["items"]
            )
            or "none"
        ),
        "Chapters: " + ", ".join(f"#{i} {t}" for i, t in chapters.items()),
        "Dungeons: " + (", ".join(f"#{d['id']} {d['name']}" for d in state["dungeons"]) or "none"),
    ]
    return "\n".join(lines)


def _named(titles: dict[int, str], pk: int | None) -> str:
    return f"#{pk} {titles.get(pk, '?')}" if pk else "none"


def _combat(state: dict[str, Any], names: dict[int, str]) -> str:
    active = [e for e in state["encounters"] if e["active"]]
    if not active:
        return "none"
    encounter = active[0]
    order = ", ".join(
        f"#{o['creature_id']} {names.get(o['creature_id'], '?')} ({o['initiative']})"
        for o in encounter["order"]
    )
    return f"round {encounter['round']}, turn index {encounter['turn_index']}; order: {order}"


def _creature(c: dict[str, Any], players: dict[int, str]) -> str:
    kind = c["kind"]
    if c["controlled_by_id"]:
        kind += f" of {players.get(c['controlled_by_id'], 'a former member')}"
    text = f"#{c['id']} {c['name']} ({kind}): HP {c['hp']}/{c['max_hp']}"
    if c["temp_hp"]:
        text += f" +{c['temp_hp']} temp"
    text += f", at ({c['x']},{c['y']})"
    if c["conditions"]:
        text += ", conditions: " + ", ".join(c["conditions"])
    if c["death_save_successes"] or c["death_save_failures"]:
        text += f", death saves {c['death_save_successes']}/{c['death_save_failures']}"
    return text
