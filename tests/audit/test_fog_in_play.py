"""The campaign lock tells the dispatch whether the fog is in play (`fog_in_play`, read in the
lock's own statement), which spares the read of what players may see while no cell is revealed
(tests/audit/test_statement_count.py counts it, tests/realtime/test_fog_events.py shows what it
keeps from players). The flag holds only until the lock's holder writes a fog cell itself."""

from django.db import transaction

from audit.services.common import campaign_lock
from audit.services.dispatch import _fog_after
from tests.conftest import World, fog_over_the_goblin


def test_the_lock_reads_whether_any_cell_is_revealed(world: World):
    with transaction.atomic():
        assert campaign_lock(world.campaign.pk).fog_in_play is False
    fog_over_the_goblin(world)
    with transaction.atomic():
        assert campaign_lock(world.campaign.pk).fog_in_play is True


def test_a_call_that_writes_the_fog_leaves_it_unknown_for_the_rest_of_the_transaction(
    world: World,
):
    with transaction.atomic():
        locked = campaign_lock(world.campaign.pk)
        assert _fog_after(locked, {f"creature:{world.goblin.pk}/vitals": {}}) is False
        assert _fog_after(locked, {"fog:7": {"x": 1, "y": 1}}) is None
        assert _fog_after(locked, {f"creature:{world.goblin.pk}/vitals": {}}) is None
