"""The worlds the benchmarks play in: a monster in a fresh campaign, hit for one HP through the
audited dispatch; and a table of five as the capacity bench seats it."""

import uuid
from typing import Any


def table(name: str) -> tuple[Any, Any, Any]:
    """A new campaign, its owner and a monster with HP to spare: (campaign, owner, monster)."""
    from django.contrib.auth.models import User

    from campaigns.services import campaign_create, creature_create

    owner = User.objects.create_user(f"{name}-{uuid.uuid4().hex[:8]}")
    campaign = campaign_create(owner=owner, name=name, approval_policy="none")
    monster = creature_create(
        campaign=campaign, by=owner, name="Dummy", kind="monster", hp=10**6, max_hp=10**6
    )
    return campaign, owner, monster


def table_of_five(
    name: str, owner: Any, players: list[Any], heroes: list[str], goblin: str, **policy: Any
) -> tuple[Any, list[dict[str, Any]]]:
    """A campaign of `owner`'s (`policy`: its approval policy, else the default) with a
    goblin of HP to spare, and `players` as members, each playing one of `heroes` on the
    map's first row: (campaign, each hero's {id, name, player})."""
    from campaigns.models import Membership
    from campaigns.services import campaign_create, creature_create

    campaign = campaign_create(owner=owner, name=name, **policy)
    creature_create(
        campaign=campaign, by=owner, name=goblin, kind="monster", hp=10**6, max_hp=10**6
    )
    Membership.objects.bulk_create(Membership(campaign=campaign, user=p) for p in players)
    return campaign, [
        {
            "id": creature_create(
                campaign=campaign,
                by=owner,
                name=hero,
                kind="pc",
                hp=10**6,
                max_hp=10**6,
                x=i,
                y=0,
                controlled_by=player,
            ).pk,
            "name": hero,
            "player": player.username,
        }
        for i, (hero, player) in enumerate(zip(heroes, players, strict=True))
    ]


def audited_hit(campaign: Any, owner: Any, monster: Any, turn: Any = None) -> Any:
    """`modify_creature` by one HP through the audited dispatch, which must commit; its row."""
    from audit.services import invocation_dispatch

    row = invocation_dispatch(
        campaign=campaign,
        actor=owner,
        tool_name="modify_creature",
        input={"creature_id": monster.pk, "hp_delta": -1},
        turn=turn,
    )
    assert row.status == row.Status.COMMITTED, row.error
    return row
