"""Tamper evidence: the hash chain survives normal use and reverts; edits, deletions and
insertions are reported at the first broken link."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.chain import verify
from audit.models import ToolInvocation
from audit.services import invocation_dispatch, invocation_revert


@pytest.fixture
def log(world):
    rows = [
        invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name="move_token",
            input={"creature_id": world.hero.pk, "x": i, "y": i},
        )
        for i in range(1, 4)
    ]
    rows.append(
        invocation_dispatch(
            campaign=world.campaign, actor=world.owner, tool_name="end_combat", input={}
        )
    )  # a failed row
    return rows


def test_rows_link_to_their_predecessor(world, log):
    hashes = list(
        ToolInvocation.objects.filter(campaign=world.campaign)
        .order_by("sequence")
        .values_list("prev_hash", "row_hash")
    )
    assert hashes[0][0] == ""
    assert all(len(h) == 64 for _, h in hashes)
    assert [prev for prev, _ in hashes[1:]] == [h for _, h in hashes[:-1]]
    assert verify(world.campaign.pk) is None


def test_reverting_does_not_break_the_chain(world, log, capsys):
    invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=log[2].pk, user=world.owner, reason="oops"
    )
    call_command("verify_log")
    assert "every link intact" in capsys.readouterr().out


def test_an_edited_row_is_reported(world, log):
    ToolInvocation.objects.filter(pk=log[1].pk).update(input={"creature_id": 1, "x": 9, "y": 9})
    broken = verify(world.campaign.pk)
    assert (broken.sequence, broken.invocation_id) == (2, log[1].pk)
    assert "altered" in broken.problem
    with pytest.raises(CommandError, match="1 campaign log"):
        call_command("verify_log", campaign=str(world.campaign.pk))


def test_a_deleted_row_is_reported(world, log):
    ToolInvocation.objects.filter(pk=log[1].pk).delete()
    broken = verify(world.campaign.pk)
    assert broken.sequence == 3 and "missing" in broken.problem


def test_a_forged_row_with_a_recomputed_hash_still_breaks_the_next_link(world, log):
    from audit.chain import seal

    forged = ToolInvocation.objects.get(pk=log[0].pk)
    forged.input = {"creature_id": world.hero.pk, "x": 0, "y": 0}
    seal(forged)
    forged.save()
    broken = verify(world.campaign.pk)
    assert broken.sequence == 2 and "previous row" in broken.problem
