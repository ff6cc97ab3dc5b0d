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

import functools
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, NamedTuple

from ai_tools import registry
from audit.models import ToolInvocation
from campaigns.models import Campaign, ChatMessage, Creature, Membership, Turn
from campaigns.selectors import world_dump
from gm import rows

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
    campaign, members = _campaign_and_members(turn.campaign_id)
    players = {user_id: username for user_id, username, _ in members}
    speakers = {user_id: _speaker(username, names) for user_id, username, names in members}
    said: dict[int, list[Said]] = defaultdict(list)
    calls: dict[int, list[Call]] = defaultdict(list)
    undoers: dict[int, str | None] = {}
    earlier: list[Turn] = []
    for past, undoer, messages, rows_ in _turns(turn):
        said[past.pk], calls[past.pk], undoers[past.pk] = messages, rows_, undoer
        if past.pk != turn.pk:
            earlier.append(past)
    history: list[PastTurn] = []
    undone: list[str] = []
    unfinished: list[str] = []
    for past in earlier[-HISTORY_TURNS:]:
        speaker = speakers.get(past.actor_id, f"user {past.actor_id}")
        message = _player_message(said[past.pk])
        if past.reverted_at is not None:
            undone.append(_turn_note(past, undoers[past.pk], speaker, message, calls[past.pk]))
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
        state=world_dump(campaign) if state is None else state,
        players=players,
    )


class Said(NamedTuple):
    """What the context reads of a message of a turn."""

    role: str
    content: str
    reverted: bool


class Call(NamedTuple):
    """What the history and its notes read of a call that ran: not its snapshots, sets and
    events, the log's widest columns, which twenty turns of history would otherwise decode."""

    id: str
    tool_name: str
    input: Any
    result: Any
    status: str
    revert_reason: str
    reverted_by: str | None  # who reverted it (a username)


USER = Turn._meta.get_field("actor").related_model


def _campaign_and_members(campaign_id: Any) -> tuple[Campaign, list[tuple[int, str, list[str]]]]:
    """The campaign as it is now, and each member (user id, username, the names of the
    characters they play, oldest first), in the order they joined."""
    # Plain SQL: a hot read (every GM turn), one statement where the ORM's are three.
    found = rows.fetch_one(_campaign_sql(), [Creature.Kind.PC, campaign_id])
    if found is None:
        raise Campaign.DoesNotExist(f"No campaign {campaign_id}.")
    *values, members = found
    return rows.instance(Campaign, values), [tuple(m) for m in json.loads(members)]


@functools.cache
def _campaign_sql() -> str:
    m, p, u = (functools.partial(rows.column, model) for model in (Membership, Creature, USER))
    characters = (
        f"SELECT COALESCE(json_agg(p.{p('name')} ORDER BY p.{p('pk')}), '[]') "
        f"FROM {rows.table(Creature)} p WHERE p.{p('campaign')} = c.{rows.column(Campaign, 'pk')} "
        f"AND p.{p('kind')} = %s AND p.{p('controlled_by')} = m.{m('user')}"
    )
    members = (
        f"SELECT COALESCE(json_agg(json_build_array(m.{m('user')}, u.{u(USER.USERNAME_FIELD)}, "
        f"({characters})) ORDER BY m.{m('pk')}), '[]')::text FROM {rows.table(Membership)} m "
        f"JOIN {rows.table(USER)} u ON u.{u('pk')} = m.{m('user')} "
        f"WHERE m.{m('campaign')} = c.{rows.column(Campaign, 'pk')}"
    )
    return (
        f"SELECT {rows.columns(Campaign, 'c')}, ({members}) FROM {rows.table(Campaign)} c "
        f"WHERE c.{rows.column(Campaign, 'pk')} = %s"
    )


def _turns(turn: Turn) -> list[tuple[Turn, str | None, list[Said], list[Call]]]:
    """`turn` and the HISTORY_TURNS before it in its campaign, oldest first: each with who
    undid it (a username), its messages in the order they were posted and its calls that ran
    (committed, some since reverted) in the log's order."""
    params = [*RAN, turn.campaign_id, turn.pk, HISTORY_TURNS + 1]
    # Plain SQL: a hot read (every GM turn), one statement where the ORM's are three, and the
    # messages and calls of twenty turns read as tuples rather than model instances.
    found = rows.fetch_all(_turns_sql(), params)
    width = rows.width(Turn)
    return [
        (
            rows.instance(Turn, values[:width]),
            values[width],
            [Said(*m) for m in json.loads(values[width + 1])],
            [Call(str(c[0]), *c[1:]) for c in json.loads(values[width + 2])],
        )
        for values in reversed(found)
    ]


# The calls the history and its notes read: those that ran.
RAN = (ToolInvocation.Status.COMMITTED, ToolInvocation.Status.REVERTED)


@functools.cache
def _turns_sql() -> str:
    t, m, i, u = (
        functools.partial(rows.column, model) for model in (Turn, ChatMessage, ToolInvocation, USER)
    )
    said = ", ".join(f"m.{m(name)}" for name in Said._fields)
    messages = (
        f"SELECT COALESCE(json_agg(json_build_array({said}) ORDER BY m.{m('created_at')}, "
        f"m.{m('pk')}), '[]')::text FROM {rows.table(ChatMessage)} m "
        f"WHERE m.{m('turn')} = t.{t('pk')}"
    )
    ran = ", ".join(f"i.{i(name)}" for name in Call._fields[:-1])
    calls = (
        f"SELECT COALESCE(json_agg(json_build_array({ran}, ru.{u(USER.USERNAME_FIELD)}) "
        f"ORDER BY i.{i('sequence')}), '[]')::text FROM {rows.table(ToolInvocation)} i "
        f"LEFT JOIN {rows.table(USER)} ru ON ru.{u('pk')} = i.{i('reverted_by')} "
        f"WHERE i.{i('campaign')} = t.{t('campaign')} AND i.{i('turn')} = t.{t('pk')} "
        f"AND i.{i('status')} IN (%s, %s)"
    )
    return (
        f"SELECT {rows.columns(Turn, 't')}, r.{u(USER.USERNAME_FIELD)}, ({messages}), "
        f"({calls}) FROM {rows.table(Turn)} t LEFT JOIN {rows.table(USER)} r "
        f"ON r.{u('pk')} = t.{t('reverted_by')} WHERE t.{t('campaign')} = %s "
        f"AND t.{t('pk')} <= %s ORDER BY t.{t('pk')} DESC LIMIT %s"
    )


def _speaker(username: str, characters: list[str]) -> str:
    """A member's name with the characters they play: how the GM addresses the table."""
    return f"{username} (plays {', '.join(characters)})" if characters else username


def _player_message(messages: list[Said]) -> str:
    return next((m.content for m in messages if m.role == ChatMessage.Role.PLAYER), "")


def _past_turn(turn, speaker, message, said, rows) -> PastTurn:
    reply = "\n\n".join(m.content for m in said if m.role == ChatMessage.Role.GM and not m.reverted)
    calls = [
        ToolCall(id=row.id, tool_name=row.tool_name, input=row.input, result=row.result)
        for row in rows
        if row.status == ToolInvocation.Status.COMMITTED
    ]
    return PastTurn(id=turn.pk, speaker=speaker, message=message, reply=reply, tool_calls=calls)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _why(reason: str) -> str:
    return f'reason: "{_quote(reason)}"' if reason else "no reason given"


def _who(username: str | None) -> str:
    return username or "someone"


def _turn_note(turn: Turn, undoer: str | None, speaker: str, message: str, rows: list[Call]) -> str:
    names = ", ".join(row.tool_name for row in rows) or "no tool calls"
    return (
        f'{_who(undoer)} undid the turn of {speaker} ("{_quote(message)}"; '
        f"{names}), {_why(turn.revert_reason)}. Everything it did was reverted: it never "
        "happened."
    )


def _call_note(row: Call, speaker: str, message: str) -> str:
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
