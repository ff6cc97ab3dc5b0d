"""Invite links: made by the owner and shown once, stored only as a hash, joined with after
signing in or up, and refused with a page that says why once expired, revoked or used up."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from campaigns.models import Invite, Membership
from tests.conftest import World, make_user, signed_in


@pytest.fixture
def owner_client(world: World) -> Client:
    return signed_in(world.owner)


def make_link(world: World, client: Client, **form: str) -> str:
    """The owner makes a link on the page; its path, as the page shows it (once)."""
    response = client.post(f"/campaigns/{world.campaign.pk}/invites/", form)
    assert response.status_code == 201
    url = re.search(r'class="invite-url" readonly value="([^"]+)"', response.content.decode())[1]
    return url.removeprefix("http://testserver")


def join(path: str, username: str) -> tuple[int, str]:
    client = signed_in(make_user(username))
    response = client.post(path)
    return response.status_code, response.content.decode()


def members(world: World) -> set[str]:
    return set(
        Membership.objects.filter(campaign=world.campaign).values_list("user__username", flat=True)
    )


def test_the_link_is_stored_only_as_its_hash(world: World, owner_client: Client):
    path = make_link(world, owner_client, expires_in_hours="24", max_uses="1")
    token = path.split("/")[2]
    invite = Invite.objects.get()
    assert len(token) >= 40 and invite.token_hash == Invite.hash_token(token) != token
    stored = [str(value) for value in Invite.objects.values().get().values()]
    assert not any(token in value for value in stored)
    assert invite.expires_at - timezone.now() == pytest.approx(
        timedelta(hours=24), abs=timedelta(minutes=1)
    )
    assert owner_client.get(f"/campaigns/{world.campaign.pk}/").content.decode().count(token) == 0


def test_a_friend_signs_up_through_the_link_and_joins_as_a_player(
    world: World, owner_client: Client
):
    path = make_link(world, owner_client, expires_in_hours="72", max_uses="1")
    friend = Client()
    signed_out = friend.get(path)  # the campaign and who invites, before any account
    assert signed_out.status_code == 200
    invitation = signed_out.content.decode()
    assert "<h1>The Sunken Keep</h1>" in invitation
    assert "owner invites you to play The Sunken Keep." in invitation
    assert f'href="/accounts/signup/?next={path}">Sign up to join</a>' in invitation
    assert f'href="/accounts/login/?next={path}">Sign in</a>' in invitation
    assert 'method="post"' not in invitation  # joining takes an account
    to_login = friend.post(path)
    assert to_login.status_code == 302 and to_login["Location"] == f"/accounts/login/?next={path}"
    assert not Membership.objects.filter(user__username="friend").exists()
    login_page = friend.get(to_login["Location"]).content.decode()
    assert f'href="/accounts/signup/?next={path}"' in login_page
    signup = friend.post(
        "/accounts/signup/",
        {
            "username": "friend",
            "password1": "a-Long-pass-123",
            "password2": "a-Long-pass-123",
            "next": path,
        },
    )
    assert signup.status_code == 302 and signup["Location"] == path
    invite_page = friend.get(path).content.decode()
    assert "The Sunken Keep" in invite_page and "owner invites you to play" in invite_page
    joined = friend.post(path)
    assert joined["Location"] == f"/campaigns/{world.campaign.pk}/"
    membership = Membership.objects.get(campaign=world.campaign, user__username="friend")
    assert membership.role == "player"
    assert Invite.objects.get().uses == 1
    assert friend.get(joined["Location"]).status_code == 200


def test_looking_at_the_link_uses_nothing_up(world: World, owner_client: Client):
    path = make_link(world, owner_client, max_uses="1")
    signed_in(make_user("curious")).get(path)
    assert Invite.objects.get().uses == 0 and "curious" not in members(world)


def test_a_single_use_link_lets_in_one_person(world: World, owner_client: Client):
    path = make_link(world, owner_client, max_uses="1")
    assert join(path, "first")[0] == 302
    status, page = join(path, "second")
    assert status == 410
    assert "This invite link has been used as many times as it allows." in page
    assert "first" in members(world) and "second" not in members(world)


def test_a_multi_use_link_lets_in_as_many_as_it_says(world: World, owner_client: Client):
    path = make_link(world, owner_client, max_uses="3")
    assert [join(path, name)[0] for name in ("a1", "a2", "a3", "a4")] == [302, 302, 302, 410]
    unlimited = make_link(world, owner_client)  # left empty: any number of people
    assert [join(unlimited, f"b{i}")[0] for i in range(5)] == [302] * 5
    assert Invite.objects.get(max_uses=None).uses == 5


def test_a_member_following_the_link_again_uses_nothing_up(world: World, owner_client: Client):
    path = make_link(world, owner_client, max_uses="1")
    player = signed_in(world.player)
    assert player.post(path)["Location"] == f"/campaigns/{world.campaign.pk}/"
    assert "already have a seat" in player.get(path).content.decode()
    assert Invite.objects.get().uses == 0
    assert world.cogm.has_perm("campaigns.revert_any_turn", world.campaign)
    signed_in(world.cogm).post(path)
    assert world.cogm.has_perm("campaigns.revert_any_turn", world.campaign)


def test_an_expired_link_is_refused_with_a_page_that_says_so(world: World, owner_client: Client):
    path = make_link(world, owner_client, expires_in_hours="24")
    Invite.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    late = signed_in(make_user("late"))
    for response in (late.get(path), late.post(path)):
        assert response.status_code == 410
        assert "This invite link has expired." in response.content.decode()
    assert "late" not in members(world) and Invite.objects.get().uses == 0


def test_a_revoked_link_is_refused_and_its_members_stay(world: World, owner_client: Client):
    path = make_link(world, owner_client, max_uses="5")
    assert join(path, "early")[0] == 302
    invite = Invite.objects.get()
    revoked = owner_client.post(f"/campaigns/{world.campaign.pk}/invites/{invite.pk}/revoke/")
    assert revoked.status_code == 302
    status, page = join(path, "after")
    assert status == 410 and "This invite link has been revoked." in page
    assert "early" in members(world) and "after" not in members(world)


def test_only_the_owner_makes_or_revokes_links(world: World, owner_client: Client):
    make_link(world, owner_client)
    invite = Invite.objects.get()
    player = signed_in(world.player)
    assert player.post(f"/campaigns/{world.campaign.pk}/invites/", {}).status_code == 403
    revoke = f"/campaigns/{world.campaign.pk}/invites/{invite.pk}/revoke/"
    assert player.post(revoke).status_code == 403
    assert signed_in(world.outsider).post(revoke).status_code == 404
    assert Invite.objects.get().revoked_at is None and Invite.objects.count() == 1


def test_an_unknown_link_is_404_with_a_page(world: World):
    response = signed_in(world.outsider).get("/invites/not-a-real-token/")
    assert response.status_code == 404
    assert "This invite link does not exist." in response.content.decode()


def test_a_link_lasts_at_most_thirty_days(world: World, owner_client: Client):
    response = owner_client.post(
        f"/campaigns/{world.campaign.pk}/invites/", {"expires_in_hours": "721"}
    )
    assert response.status_code == 400
    assert (
        "expires_in_hours: Ensure this value is less than or equal to 720."
        in response.content.decode()
    )
    assert not Invite.objects.exists()


def test_a_signed_out_visitor_of_a_spent_or_unknown_link_is_told_so(
    world: World, owner_client: Client
):
    path = make_link(world, owner_client, expires_in_hours="24", max_uses="1")
    Invite.objects.update(revoked_at=timezone.now())
    spent = Client().get(path)
    assert spent.status_code == 410 and "The Sunken Keep" not in spent.content.decode()
    assert Client().get("/invites/nothing-here/").status_code == 404


def test_the_invite_form_keeps_its_choices_and_offers_to_copy_the_link(
    world: World, owner_client: Client
):
    response = owner_client.post(
        f"/campaigns/{world.campaign.pk}/invites/", {"expires_in_hours": "168", "max_uses": "5"}
    )
    html = response.content.decode()
    assert '<option value="168" selected>7 days</option>' in html
    assert 'name="max_uses" type="number" min="1" max="1000" value="5"' in html
    assert '<button type="button" class="secondary invite-copy">Copy link</button>' in html
    fresh = owner_client.get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert '<option value="72" selected>3 days</option>' in fresh and 'value="1"' in fresh
