"""The invocation log over HTTP: newest first, filters, cursor pages, the detail contract."""

import pytest

from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from tests.api.conftest import campaign_url, client_for, play_turn

pytestmark = pytest.mark.django_db

# The keys of GET …/invocations/{iid}/ as docs/api.md writes them (with `preview`), plus
# `requested_by` (provenance, docs/architecture.md#the-log-row) and the approval's answer: additive
# to the documented keys.
SPEC_DETAIL = (
    "id, sequence, turn, user, tool_name, tool_tier, input, result, status, error, revertible, "
    "model, source, created_at, committed_at, reverted_at, reverted_by, revert_reason, preview"
)
DETAIL_KEYS = {
    *SPEC_DETAIL.split(", "),
    "requested_by",
    "expires_at",
    "approval",
    "approval_of",
    "concealed",
}


def mixed_log(world):
    """A small log with every filter dimension varied: two turns, tiers, a failure."""
    first = play_turn(world, moves=2)
    second = world.turn(world.owner)
    for tool, data in [
        ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1}),
        ("set_scene", {"description": "Fog rolls in."}),
        ("move_token", {"creature_id": world.goblin.pk, "x": "nowhere", "y": 0}),
    ]:
        invocation_dispatch(
            campaign=world.campaign, actor=world.owner, turn=second, tool_name=tool, input=data
        )
    return first.turn, second


def ids(response) -> list[str]:
    return [row["id"] for row in response.json()["results"]]


def test_the_log_is_newest_first(world, as_player):
    mixed_log(world)
    response = as_player.get(campaign_url(world, "invocations/"))
    assert response.status_code == 200
    sequences = [row["sequence"] for row in response.json()["results"]]
    assert sequences == [5, 4, 3, 2, 1]
    assert response.json()["next"] is None


def test_filters_by_status_tier_tool_and_turn(world, as_player):
    first, second = mixed_log(world)
    url = campaign_url(world, "invocations/")
    expected = {
        "status=failed": ToolInvocation.objects.filter(status="failed"),
        "tier=critical": ToolInvocation.objects.filter(tool_tier="critical"),
        "tool=move_token": ToolInvocation.objects.filter(tool_name="move_token"),
        f"turn={first.pk}": ToolInvocation.objects.filter(turn=first),
        f"turn={second.pk}&tier=low": ToolInvocation.objects.filter(turn=second, tool_tier="low"),
    }
    for query, rows in expected.items():
        wanted = [str(pk) for pk in rows.order_by("-sequence").values_list("pk", flat=True)]
        assert wanted, query
        assert ids(as_player.get(f"{url}?{query}")) == wanted, query


@pytest.mark.parametrize(
    "query", ["status=exploded", "tier=epic", "turn=abc", "turn=0", f"turn={2**70}"]
)
def test_an_invalid_filter_is_400_with_a_detail(world, as_player, query):
    response = as_player.get(campaign_url(world, f"invocations/?{query}"))
    assert response.status_code == 400
    assert response.json()["detail"]


def test_cursor_pages_cover_the_log_once_in_order(world, as_player):
    play_turn(world, moves=7)
    url = campaign_url(world, "invocations/?page_size=3")
    seen, pages = [], 0
    while url:
        body = as_player.get(url).json()
        seen += [row["sequence"] for row in body["results"]]
        url, pages = body["next"], pages + 1
    assert seen == [7, 6, 5, 4, 3, 2, 1]
    assert pages == 3


def test_a_page_after_new_rows_arrive_neither_repeats_nor_skips(world, as_player):
    play_turn(world, moves=4)
    first = as_player.get(campaign_url(world, "invocations/?page_size=2")).json()
    play_turn(world, moves=1)
    second = as_player.get(first["next"]).json()
    assert [r["sequence"] for r in first["results"] + second["results"]] == [4, 3, 2, 1]


@pytest.mark.parametrize("size", ["０", "５", "٥", "2²"])
def test_a_page_size_in_digits_other_than_ascii_is_400(world, as_player, size):
    response = as_player.get(campaign_url(world, f"invocations/?page_size={size}"))
    assert response.status_code == 400
    assert response.json()["detail"] == "page_size: A valid integer is required."


@pytest.mark.parametrize("cursor", ["garbage", "cD1hYmM=", "cD0xZTk5OTk5OTk5OTk5OTk5OTk5OQ=="])
def test_a_forged_cursor_is_a_json_404(world, as_player, cursor):
    response = as_player.get(campaign_url(world, f"invocations/?cursor={cursor}"))
    assert response.status_code == 404
    assert response.json() == {"detail": "Invalid cursor"}


def test_detail_has_exactly_the_contract_keys(world, as_player, played):
    row = played.rows[0]
    response = as_player.get(campaign_url(world, f"invocations/{row.pk}/"))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == DETAIL_KEYS
    assert body["id"] == str(row.pk) and body["turn"] == played.turn.pk
    assert (body["user"], body["status"], body["tool_tier"]) == ("player", "committed", "low")
    assert body["input"] == row.input and body["result"] == row.result
    assert body["revertible"] is True and body["reverted_by"] is None
    assert body["requested_by"] is None  # the actor made the call


def test_a_call_the_owner_made_into_a_players_turn_names_both(world, as_owner, as_player):
    turn = world.turn(world.player)
    posted = as_owner.post(
        campaign_url(world, f"turns/{turn.pk}/tool-calls/"),
        {"tool": "set_scene", "input": {"description": "Rain."}},
        format="json",
    )
    assert posted.status_code == 201
    detail = as_player.get(campaign_url(world, f"invocations/{posted.json()['invocation']}/"))
    assert (detail.json()["user"], detail.json()["requested_by"]) == ("player", "owner")
    listed = as_player.get(campaign_url(world, "invocations/")).json()["results"][0]
    assert (listed["user"], listed["requested_by"]) == ("player", "owner")


def test_list_rows_have_the_detail_keys(world, as_player, played):
    row = as_player.get(campaign_url(world, "invocations/")).json()["results"][0]
    assert set(row) == DETAIL_KEYS


def test_an_invocation_of_another_campaign_is_404(world, as_owner):
    foreign = invocation_dispatch(
        campaign=world.foreign.campaign,
        actor=world.outsider,
        tool_name="set_scene",
        input={"description": "Elsewhere."},
    )
    assert as_owner.get(campaign_url(world, f"invocations/{foreign.pk}/")).status_code == 404
    mine = client_for(world.outsider).get(
        f"/api/campaigns/{world.foreign.campaign.pk}/invocations/{foreign.pk}/"
    )
    assert mine.status_code == 200


def test_the_log_offers_no_way_to_edit_or_delete_a_row(world, as_owner, played):
    url = campaign_url(world, f"invocations/{played.rows[0].pk}/")
    for method in ("put", "patch", "delete"):
        response = getattr(as_owner, method)(url, {"status": "failed"}, format="json")
        assert response.status_code == 405, method
    assert ToolInvocation.objects.get().status == ToolInvocation.Status.COMMITTED
