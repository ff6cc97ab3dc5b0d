"""`POST /api/campaigns/{id}/rolls/`: members roll for the table to see; `GET` lists the rolls."""

import pytest

from audit.models import SecurityEvent
from campaigns.models import DiceRoll
from tests.api.conftest import campaign_url, client_for
from tests.conftest import World


def roll(client, world: World, body: dict):
    return client.post(campaign_url(world, "rolls/"), body, format="json")


def test_a_member_rolls_and_gets_the_dice_and_total(
    world: World, as_player, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = roll(as_player, world, {"formula": "2d6+3"})
    assert response.status_code == 201, response.json()
    body = response.json()
    row = DiceRoll.objects.get()
    assert body["id"] == row.pk and row.campaign == world.campaign
    assert body["formula"] == "2d6+3" and body["mode"] == "normal"
    assert len(body["dice"]) == 2 and all(1 <= die <= 6 for die in body["dice"])
    assert body["total"] == sum(body["dice"]) + 3 == row.total
    assert body["discarded"] == [] and body["modifier"] == 3
    assert (body["author"], body["by_gm"], body["turn"]) == ("player", False, None)
    assert [(e["type"], e["source"], e["data"]["id"]) for e in events] == [
        ("dice_rolled", "user", row.pk)
    ]


def test_advantage_rolls_twice_and_keeps_the_higher(world: World, as_player):
    for _ in range(20):
        body = roll(as_player, world, {"formula": "d20", "mode": "advantage"}).json()
        assert len(body["dice"]) == len(body["discarded"]) == 1
        assert body["total"] == body["dice"][0] >= body["discarded"][0]
        body = roll(as_player, world, {"formula": "d20", "mode": "disadvantage"}).json()
        assert body["total"] == body["dice"][0] <= body["discarded"][0]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"formula": "fireball"}, "formula: Cannot read dice expression 'fireball'"),
        ({"formula": "51d6"}, "formula: Dice must be 1-50 dice of 2-100 sides."),
        ({"formula": "2d1000"}, "formula: Dice must be 1-50 dice of 2-100 sides."),  # too big
        ({"formula": "１d２０"}, "formula: Cannot read dice expression '１d２０'"),
        ({"formula": "٢d٦+٣"}, "formula: Cannot read dice expression '٢d٦+٣'"),
        ({"formula": "1d6+1" + "0" * 20}, "formula: Ensure this field has no more than 20"),
        ({"formula": ""}, "formula: This field may not be blank."),
        ({}, "formula: This field is required."),
        ({"formula": 20}, "formula: Must be a string."),
        ({"formula": "d20", "mode": "lucky"}, 'mode: "lucky" is not a valid choice.'),
        ({"formula": "d20", "dice": [20]}, "dice: Unknown field."),
    ],
)
def test_a_roll_the_dice_cannot_make_is_400_with_what_is_wrong_and_nothing_kept(
    world: World, as_player, events, django_capture_on_commit_callbacks, body, detail
):
    with django_capture_on_commit_callbacks(execute=True):
        response = roll(as_player, world, body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(detail), response.json()
    assert not DiceRoll.objects.exists()
    assert events == []


def test_a_non_member_gets_404_and_rolls_nothing(world: World):
    for user in (world.outsider, None):
        response = roll(client_for(user), world, {"formula": "d20"})
        assert response.status_code == (404 if user else 401)
    assert not DiceRoll.objects.exists()


def test_staff_who_may_see_the_table_but_do_not_play_get_403_and_a_security_event(
    world: World, staff
):
    response = roll(client_for(staff), world, {"formula": "d20"})
    assert response.status_code == 403
    assert not DiceRoll.objects.exists()
    event = SecurityEvent.objects.get()
    assert (event.user, event.campaign, event.target) == (staff, world.campaign, "dice_roll")


def test_rolls_are_listed_newest_first_to_members_only(world: World, as_player):
    first = roll(as_player, world, {"formula": "d4"}).json()
    second = roll(client_for(world.owner), world, {"formula": "d8"}).json()
    listed = client_for(world.other).get(campaign_url(world, "rolls/"))
    assert listed.status_code == 200
    assert listed.json()["results"] == [second, first]
    assert client_for(world.outsider).get(campaign_url(world, "rolls/")).status_code == 404


def test_rolling_past_the_rate_is_429_per_user(world: World, as_player, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"signup": "10/hour", "dice": "3/minute"},
    }
    codes = [roll(as_player, world, {"formula": "d6"}).status_code for _ in range(4)]
    assert codes == [201, 201, 201, 429]
    assert DiceRoll.objects.count() == 3
    assert as_player.get(campaign_url(world, "rolls/")).status_code == 200  # reading is free
    assert roll(client_for(world.other), world, {"formula": "d6"}).status_code == 201
