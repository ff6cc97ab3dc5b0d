"""Provenance in the admin: a call someone else made into a turn names who made it."""

import pytest

from tests.admin.conftest import CHANGELIST, change_url, move

pytestmark = pytest.mark.django_db


def test_the_changelist_names_who_made_a_call_for_the_actor(staff_client, world):
    move(world, 3, actor=world.player, requested_by=world.owner, turn=world.turn(world.player))
    html = staff_client.get(CHANGELIST).content.decode()
    assert '<td class="field-by">owner for player</td><td class="field-turn_link">' in html


def test_the_detail_page_shows_who_requested_the_call(staff_client, world):
    row = move(world, 3, actor=world.player, requested_by=world.owner)
    html = staff_client.get(change_url(row)).content.decode()
    section = html[html.index('<div class="form-row field-requested_by">') :]
    assert "<label>Requested by:</label>" in section
    assert (
        f'<div class="readonly"><a href="/admin/auth/user/{world.owner.pk}/change/">owner</a>'
        in section
    )


def test_a_call_the_actor_made_leaves_requested_by_empty(staff_client, world):
    row = move(world, 3, actor=world.player, requested_by=world.player)
    assert row.requested_by is None
    html = staff_client.get(CHANGELIST).content.decode()
    assert '<td class="field-by">player</td>' in html
