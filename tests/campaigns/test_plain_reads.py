"""The world's reads made in plain SQL for the page's push (`campaigns.selectors`): each returns
what the ORM's read of the same rows returns, and nothing of another campaign."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from campaigns.models import Campaign, DiceRoll, Invite, MapBackground, Membership
from campaigns.selectors import (
    board_world,
    campaign_fresh,
    campaign_get_for_member,
    campaign_get_visible,
    campaign_members,
    campaign_state,
    invite_list,
    turn_rolls,
    world_labels,
    world_names,
)
from campaigns.services import dice_roll_record, invite_create
from core.errors import NotFound
from tests.conftest import World

pytestmark = pytest.mark.django_db


def fields(row) -> list:
    return [getattr(row, f.attname) for f in type(row)._meta.concrete_fields]


def test_campaign_fresh_reads_the_row_as_the_orm_does(world: World):
    Campaign.objects.filter(pk=world.campaign.pk).update(scene="Rain", event_seq=41)
    fresh = campaign_fresh(campaign_id=str(world.campaign.pk))
    assert fields(fresh) == fields(Campaign.objects.get(pk=world.campaign.pk))
    assert (fresh.scene, fresh.event_seq, fresh._state.adding) == ("Rain", 41, False)
    with pytest.raises(Campaign.DoesNotExist):
        campaign_fresh(campaign_id="00000000-0000-0000-0000-000000000000")
    with pytest.raises(ValidationError):
        campaign_fresh(campaign_id="not-a-uuid")


def test_the_boards_one_read_is_the_dump_the_members_and_the_background(world: World):
    MapBackground.objects.create(
        campaign=world.campaign, content_type="image/png", data=b"x", width=1, height=1, version=3
    )
    read = board_world(campaign_fresh(campaign_id=world.campaign.pk))
    assert read.seq == world.campaign.event_seq
    assert read.dump == campaign_state(world.campaign)
    joined = Membership.objects.filter(campaign=world.campaign).order_by("joined_at", "pk")
    assert read.people == {m.user_id: m.user.username for m in joined}
    cogm = {"username": world.cogm.username, "role": "player", "can_revert_any": True}
    assert cogm in read.member_list and len(read.member_list) == 4  # the owner is one
    assert [m["can_revert_any"] for m in read.member_list].count(True) == 2  # owner, co-GM
    assert read.member_list == campaign_members(campaign=world.campaign)
    assert read.background == 3
    elsewhere = Campaign.objects.get(name="Elsewhere")
    assert board_world(elsewhere).background is None
    assert set(board_world(elsewhere).people) == {world.outsider.pk}


def test_world_names_are_the_creatures_and_the_labels_of_the_campaign(world: World):
    names, labels = world_names(campaign_id=world.campaign.pk)
    assert labels == world_labels(campaign_id=world.campaign.pk)
    assert names == {c.pk: c.name for c in world.campaign.creatures.all()}
    assert world.foreign.pk not in names and len(labels) == 4


def test_turn_rolls_are_those_of_the_turns_asked_oldest_first_with_who_rolled(world: World):
    turn, other = world.turn(), world.turn(world.other)

    def roll(turn, total, author=None):
        return dice_roll_record(
            campaign=world.campaign,
            author=author,
            formula="1d20",
            mode="normal",
            dice=[total],
            discarded=[],
            modifier=0,
            total=total,
            turn=turn,
            by_gm=author is None,
        )

    first, second = roll(turn, 3), roll(turn, 17, world.player)
    roll(other, 9)
    roll(None, 11, world.player)  # outside any turn
    rolls = turn_rolls(campaign=world.campaign, turn_ids=[turn.pk])
    assert list(rolls) == [turn.pk]
    assert [fields(r) for r in rolls[turn.pk]] == [fields(first), fields(second)]
    assert rolls[turn.pk][0].author is None and rolls[turn.pk][1].author == world.player
    assert rolls[turn.pk][1].dice == [17]  # JSON, decoded as the ORM decodes it
    assert turn_rolls(campaign=world.campaign, turn_ids=[]) == {}
    assert DiceRoll.objects.count() == 4


def test_invite_list_is_the_campaigns_links_newest_first(world: World):
    for days in (1, 2):
        invite_create(
            campaign=world.campaign, by=world.owner, expires_in=timedelta(days=days), max_uses=2
        )
    elsewhere = Campaign.objects.get(name="Elsewhere")
    invite_create(campaign=elsewhere, by=world.outsider, expires_in=timedelta(days=1), max_uses=1)
    listed = invite_list(campaign=world.campaign)
    expected = Invite.objects.filter(campaign=world.campaign).order_by("-created_at")
    assert [fields(i) for i in listed] == [fields(i) for i in expected] and len(listed) == 2


def test_a_campaign_is_read_for_its_members_and_staff_alone(world: World, staff):
    found = campaign_get_for_member(campaign_id=str(world.campaign.pk), user=world.player)
    assert fields(found) == fields(Campaign.objects.get(pk=world.campaign.pk))
    assert found.owner == world.owner
    elsewhere = Campaign.objects.get(name="Elsewhere")
    for user, campaign_id in (
        (world.outsider, world.campaign.pk),  # not a member
        (world.player, elsewhere.pk),  # a member of another campaign
        (world.player, "not-a-uuid"),
        (world.player, "00000000-0000-0000-0000-000000000000"),
    ):
        with pytest.raises(NotFound):
            campaign_get_for_member(campaign_id=campaign_id, user=user)
    seen = campaign_get_visible(campaign_id=elsewhere.pk, user=staff)  # staff police every table
    assert (seen.pk, seen.owner) == (elsewhere.pk, world.outsider)
    with pytest.raises(NotFound):
        campaign_get_visible(campaign_id=elsewhere.pk, user=world.player)
