"""Against PostgreSQL: people racing through one invite link get in no more often than it allows
(the invite row is locked while a use is counted)."""

from datetime import timedelta

import pytest

from campaigns.models import Invite, Membership
from campaigns.services import invite_accept, invite_create
from core.errors import Gone
from tests.conftest import all_at_once, build_world, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("max_uses", [1, 3])
def test_eight_people_racing_through_a_link_get_in_as_often_as_it_allows(max_uses: int):
    world = build_world()
    _invite, token = invite_create(
        campaign=world.campaign,
        by=world.owner,
        expires_in=timedelta(hours=1),
        max_uses=max_uses,
    )
    racers = [make_user(f"racer{i}") for i in range(8)]
    outcomes = all_at_once(*[lambda u=u: invite_accept(token=token, user=u) for u in racers])
    joined = [o for o in outcomes if isinstance(o, Membership)]
    refused = [o for o in outcomes if isinstance(o, Gone)]
    assert (len(joined), len(refused)) == (max_uses, 8 - max_uses), outcomes
    assert Invite.objects.get().uses == max_uses
    assert Membership.objects.filter(campaign=world.campaign, user__in=racers).count() == max_uses
