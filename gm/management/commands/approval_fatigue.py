"""Count the approval prompts a scripted 30-turn session asks under each policy: the
approval-fatigue measure the default policy was chosen from (docs/architecture.md#approval-fatigue).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/fatigue .venv/bin/python manage.py migrate
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/fatigue .venv/bin/python manage.py \
        approval_fatigue

Deterministic: the same session, call for call, under every policy — the tool calls a GM makes
in an evening of two fights (scene, moves, fog, initiative, blows to goblins and to the party,
turns, rests, an item, a chapter, a spawn, a memory, the ending) — each through the audited
dispatch as the GM's own (source `gm`), in a fresh campaign of its own with a model name of its
own (so no record of another run or table weighs on `adaptive`). A held call is a prompt: the
owner approves it, except the GM's two misreads (a blow at the wrong character), which they
reject; a misread that was not held ran, and the table undoes its turn, which is what the
adaptive record learns from. The log is append-only, so what it plays stays: it refuses a
database that holds any campaign already (run it on a scratch one, as above).
"""

import uuid
from collections import Counter
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch, turn_undo
from audit.services.approval import invocation_approve, invocation_reject
from campaigns.models import Campaign
from campaigns.services import (
    campaign_create,
    chapter_create,
    creature_create,
    membership_add,
    resource_create,
    turn_create,
)

Status = ToolInvocation.Status
PARTY = (("alice", "Osric", 24), ("bob", "Wren", 18))
FOES = (("Goblin", 7), ("Goblin Archer", 6), ("Ogre", 30))


def session() -> list[tuple[str, str, Any, bool]]:
    """The 30 turns: (whose turn, tool, input with creature names for ids, misread). Names are
    resolved in each run's campaign."""
    hit = lambda who, n: {"creature_id": who, "hp_delta": -n}  # noqa: E731
    fight = {
        "creature_ids": ["Osric", "Wren", "Goblin", "Goblin Archer", "Ogre"],
        "initiative": {"Osric": 17, "Wren": 12, "Goblin": 14, "Goblin Archer": 9, "Ogre": 5},
    }
    rematch = {
        "creature_ids": ["Osric", "Wren", "Ogre"],
        "initiative": {"Osric": 11, "Wren": 15, "Ogre": 8},
    }
    return [
        ("alice", "set_scene", {"description": "A ruined watchtower at dusk."}, False),
        ("bob", "move_token", {"creature_id": "Wren", "x": 3, "y": 4}, False),
        ("alice", "reveal_fog", {"cells": [[3, 4], [4, 4], [5, 4]]}, False),
        ("bob", "start_combat", fight, False),
        ("alice", "modify_creature", hit("Goblin", 4), False),
        ("bob", "advance_turn", {}, False),
        ("alice", "modify_creature", hit("Osric", 3), False),  # the goblin hits back
        ("bob", "modify_creature", hit("Goblin Archer", 5), False),
        ("alice", "modify_creature", hit("Wren", 2), True),  # misread: the archer missed
        ("bob", "modify_creature", hit("Goblin", 3), False),
        ("alice", "advance_turn", {}, False),
        ("bob", "modify_creature", hit("Ogre", 8), False),
        ("alice", "modify_creature", hit("Osric", 6), False),  # the ogre's club
        ("bob", "modify_creature", hit("Ogre", 9), False),
        ("alice", "end_combat", {}, False),
        ("bob", "rest", {"kind": "short"}, False),
        (
            "alice",
            "consume_resource",
            {"creature_id": "Osric", "resource": "ki", "amount": 1},
            False,
        ),
        (
            "bob",
            "give_item",
            {"creature_id": "Wren", "item": "healing potion", "quantity": 1},
            False,
        ),
        ("alice", "advance_chapter", {}, False),
        ("bob", "spawn_creature", {"name": "Cultist", "kind": "monster", "hp": 9}, False),
        ("alice", "start_combat", rematch, False),
        ("bob", "modify_creature", hit("Ogre", 7), False),
        ("alice", "modify_creature", hit("Wren", 5), False),
        ("bob", "advance_turn", {}, False),
        ("alice", "modify_creature", hit("Osric", 12), True),  # misread: a round counted twice
        ("bob", "modify_creature", hit("Ogre", 6), False),
        ("alice", "modify_creature", hit("Wren", 4), False),
        ("bob", "end_combat", {}, False),
        ("alice", "write_memory", {"content": "The cult serves the drowned god."}, False),
        ("bob", "end_adventure", {"summary": "The watchtower is cleared."}, False),
    ]


def _ids(value: Any, names: dict[str, int]) -> Any:
    if isinstance(value, str) and value in names:
        return names[value]
    if isinstance(value, list):
        return [_ids(v, names) for v in value]
    if isinstance(value, dict):
        return {str(_ids(k, names)): _ids(v, names) for k, v in value.items()}
    return value


def run_policy(policy: str, tag: str) -> dict[str, Any]:
    """Play the session under `policy` in a campaign of its own: its figures."""
    User = get_user_model()
    owner = User.objects.create_user(f"fatigue-gm-{tag}")
    campaign = campaign_create(owner=owner, name=f"Fatigue {policy}", approval_policy=policy)
    people, names = {}, {}
    for username, pc, hp in PARTY:
        person = User.objects.create_user(f"fatigue-{username}-{tag}")
        membership_add(campaign=campaign, by=owner, username=person.username)
        people[username] = person
        made = creature_create(
            campaign=campaign,
            by=owner,
            name=pc,
            kind="pc",
            hp=hp,
            max_hp=hp,
            controlled_by=person,
        )
        names[pc] = made.pk
        resource_create(
            campaign=campaign,
            creature=made,
            by=owner,
            name="ki",
            current=2,
            maximum=2,
            recharge="short_rest",
        )
    for foe, hp in FOES:
        names[foe] = creature_create(
            campaign=campaign, by=owner, name=foe, kind="monster", hp=hp, max_hp=hp
        ).pk
    for title in ("The Watchtower", "The Drowned Crypt"):
        chapter_create(campaign=campaign, by=owner, title=title)
    model = f"fatigue-{tag}/scripted"
    prompts: Counter[str] = Counter()
    ran_misreads = 0
    for n, (who, tool, data, misread) in enumerate(session(), start=1):
        turn = turn_create(campaign=campaign, actor=people[who], message=f"Turn {n}.")
        row = invocation_dispatch(
            campaign=campaign,
            actor=people[who],
            tool_name=tool,
            input=_ids(data, names),
            turn=turn,
            model=model,
            source=InvocationOrigin.GM,
        )
        if row.status == Status.AWAITING_APPROVAL:
            prompts[tool] += 1
            answer = invocation_reject if misread else invocation_approve
            answer(campaign_id=campaign.pk, invocation_id=row.pk, user=owner)
        elif row.status == Status.COMMITTED and misread:
            ran_misreads += 1
            turn_undo(campaign_id=campaign.pk, turn_id=turn.pk, user=owner, reason="misread")
        elif row.status == Status.FAILED:
            raise RuntimeError(f"turn {n} ({tool}) failed: {row.error}")
    figures = {
        "policy": policy,
        "prompts": sum(prompts.values()),
        "by_tool": dict(sorted(prompts.items())),
        "approved": sum(prompts.values()) - (2 - ran_misreads),
        "misreads_caught": 2 - ran_misreads,
        "misreads_undone": ran_misreads,
    }
    return figures


class Command(BaseCommand):
    help = "Count the approval prompts a scripted 30-turn session asks under each policy."

    def handle(self, *args: Any, **options: Any) -> None:
        if Campaign.objects.exists():
            raise CommandError(
                "This database holds campaigns, and the session's log would stay beside them "
                "(the log is append-only): run it on a scratch database, e.g. "
                "DATABASE_URL=postgres://…/fatigue (created and migrated first)."
            )
        tag = uuid.uuid4().hex[:8]
        turns = len(session())
        self.stdout.write(f"A scripted session of {turns} GM turns, one tool call each.")
        self.stdout.write(
            f"{'policy':<18} {'prompts':>7} {'per turn':>8} {'approved':>8} "
            f"{'misreads':>16}  prompts by tool"
        )
        for policy in Campaign.ApprovalPolicy.values:
            f = run_policy(policy, f"{tag}-{policy}")
            caught = f"{f['misreads_caught']} held, {f['misreads_undone']} undone"
            tools = ", ".join(f"{t} {n}" for t, n in f["by_tool"].items()) or "—"
            self.stdout.write(
                f"{policy:<18} {f['prompts']:>7} {f['prompts'] / turns:>8.2f} "
                f"{f['approved']:>8} {caught:>16}  {tools}"
            )
        self.stdout.write(
            "Default for new campaigns: watchful (docs/architecture.md#approval-fatigue)."
        )
