"""The write the benchmarks measure: a monster in a fresh campaign, hit for one HP through the
audited dispatch or bare (lock the campaign row, read the creature, lower its HP)."""

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


def bare_hit(campaign: Any, model: type, pk: Any) -> None:
    """The same write done bare, inside the caller's transaction: lock the campaign row, read
    the creature (of `model`), lower its HP."""
    from campaigns.models import Campaign

    Campaign.objects.select_for_update().get(pk=campaign.pk)
    creature = model.objects.get(campaign=campaign, pk=pk)
    creature.hp = max(0, creature.hp - 1)
    creature.save(update_fields=["hp"])
