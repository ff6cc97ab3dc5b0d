"""The SQL cost of the hot paths is fixed: listing the log and reverting do not grow with N."""

import pytest

from tests.api.conftest import campaign_url, play_turn
from tests.conftest import fill_log

pytestmark = pytest.mark.django_db

# The campaign (visibility), one page of rows with actor and reverter joined, then what the
# fog hides from this reader (a player): whether they run the table (their own and their groups'
# grants on the campaign, one statement: `campaigns.permissions.runs_table`) and the fog over the
# page's creatures and cells, one.
LIST_QUERIES = 4
# The campaign (visibility, in the view), then in the service's transaction: savepoint, the
# campaign again (visibility and row lock in one query), the invocation row lock, the later
# writers of its write set (conflicts), the turn for the tool context, the restore, the row's
# status, the restored state, the chain's tip (last row and last transition after it, in one
# statement), the transition link and the campaign's log head, the event sequence, what players
# may see of the restored state (it names the moved creature: `campaigns.visibility`), release.
REVERT_QUERIES = 15
# A turn's undo (one call in the turn): the campaign (visibility, in the view), then in the
# service's transaction: savepoint, the campaign again (visibility and row lock), the turn's row
# lock, all the turn's calls at once (locked, the held ones among them), the later writers of
# what they wrote, the restore and the row's status (each call of the turn: two more a call), the
# chain's tip, the transition link, the campaign's log head, the restored state, the turn's
# status, its messages, the event sequence, what players may see of the state, release.
UNDO_QUERIES = 17


@pytest.mark.parametrize("rows", [5, 50])
def test_listing_the_log_costs_the_same_for_5_or_50_rows(
    world, as_player, django_assert_num_queries, rows
):
    play_turn(world, moves=rows)
    url = campaign_url(world, "invocations/?page_size=50")
    with django_assert_num_queries(LIST_QUERIES):
        response = as_player.get(url)
    assert len(response.json()["results"]) == rows


@pytest.mark.parametrize("later_rows", [0, 30])
def test_a_revert_costs_a_fixed_number_of_queries_however_long_the_log(
    world, as_player, played, django_assert_num_queries, later_rows
):
    fill_log(world, later_rows)
    url = campaign_url(world, f"invocations/{played.rows[0].pk}/revert/")
    with django_assert_num_queries(REVERT_QUERIES):
        response = as_player.post(url, {"reason": "typo"}, format="json")
    assert response.json()["reverted"] is True


@pytest.mark.parametrize("later_rows", [0, 30])
def test_a_turns_undo_costs_a_fixed_number_of_queries_however_long_the_log(
    world, as_player, played, django_assert_num_queries, later_rows
):
    fill_log(world, later_rows)
    url = campaign_url(world, f"turns/{played.turn.pk}/undo/")
    with django_assert_num_queries(UNDO_QUERIES):
        response = as_player.post(url, {}, format="json")
    assert response.json()["reverted"] == [str(played.rows[0].pk)]
