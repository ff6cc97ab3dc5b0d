"""The transcript's writes: a round's results go to that round of that turn, and nowhere else."""

import pytest

from gm.base import Round
from gm.models import GMRound
from gm.services import turn_submit
from gm.tasks import turn_claim
from gm.transcript import round_complete

RESULTS = [{"type": "tool_result", "tool_use_id": "use-1", "content": "The goblin: HP 3/7."}]


def stored(turn, index: int) -> GMRound:
    content = [{"type": "text", "text": f"{turn.pk}/{index}"}]
    return GMRound.objects.create(
        campaign_id=turn.campaign_id,
        turn=turn,
        index=index,
        attempt=1,
        model="test/gm-1",
        content=content,
        stop_reason="tool_use",
        text=f"round {index}",
    )


def test_a_round_completes_with_its_results_and_no_other_round_changes(world):
    turn_submit(campaign=world.campaign, actor=world.player, message="I attack the goblin")
    claim = turn_claim(campaign_id=world.campaign.pk)
    other = world.turn(message="I watch.")
    for turn in (claim.turn, other):
        stored(turn, 0), stored(turn, 1)

    done = round_complete(turn=claim.turn, owner=claim.owner, index=1, results=RESULTS)

    content = [{"type": "text", "text": f"{claim.turn.pk}/1"}]
    assert done == Round(1, content, "tool_use", "test/gm-1", "round 1", RESULTS)
    written = {(r.turn_id, r.index): r.results for r in GMRound.objects.all()}
    assert written == {
        (claim.turn.pk, 0): None,
        (claim.turn.pk, 1): RESULTS,
        (other.pk, 0): None,
        (other.pk, 1): None,
    }
    assert GMRound.objects.get(turn=claim.turn, index=1).completed_at is not None
    with pytest.raises(GMRound.DoesNotExist):
        round_complete(turn=claim.turn, owner=claim.owner, index=2, results=RESULTS)
