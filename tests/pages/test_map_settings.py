"""A map that plays (docs/architecture.md#the-battle-map): new tokens on the nearest free cell,
the grid fixed and set by the GM, a background image checked and served to members only, a
stack's picker drawn by the server, the GM's combat buttons through the audited tools as their
own hand, and the character form that gives way to "your character"."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from audit.models import SecurityEvent, ToolInvocation
from campaigns.models import Campaign, Creature, Encounter, MapBackground
from campaigns.selectors import nearest_free
from tests.conftest import World, commit, dump, recorded_denial, signed_in
from tests.images import picture, png

JSON = {"HTTP_ACCEPT": "application/json"}


def url(world: World, tail: str = "") -> str:
    return f"/campaigns/{world.campaign.pk}/{tail}"


def page(world: World, user) -> str:
    response = signed_in(user).get(url(world))
    assert response.status_code == 200
    return response.content.decode()


def set_map(client: Client, world: World, **fields):
    return client.post(url(world, "map/"), fields, **JSON)


# ---- the nearest free cell ------------------------------------------------------------------


def test_the_nearest_free_cell_is_the_closest_ring_then_row_then_column():
    assert nearest_free(set(), near=(0, 0), cols=4, rows=4) == (0, 0)
    assert nearest_free({(0, 0)}, near=(0, 0), cols=4, rows=4) == (1, 0)
    assert nearest_free({(0, 0), (1, 0), (0, 1), (1, 1)}, near=(0, 0), cols=4, rows=4) == (2, 0)
    assert nearest_free({(2, 2)}, near=(2, 2), cols=5, rows=5) == (1, 1)
    full = {(x, y) for x in range(2) for y in range(2)}
    assert nearest_free(full, near=(1, 1), cols=2, rows=2) == (1, 1)  # nowhere free: as asked


def test_new_characters_and_creatures_land_on_free_cells_never_stacked(world: World):
    """The world: the orc on 0,0, Thorin 1,1, Lia 2,1; the goblin far off."""
    client = signed_in(world.outsider)
    world.campaign.memberships.create(user=world.outsider)
    for name in ("Ash", "Bram"):
        response = client.post(
            url(world, "creatures/"), {"kind": "pc", "name": name, "hp": "5", "max_hp": "5"}, **JSON
        )
        assert response.status_code == 201, response.content
    commit(world, "spawn_creature", {"name": "Rat", "kind": "monster", "hp": 2})
    cells = {
        n: xy
        for n, *xy in Creature.objects.filter(campaign=world.campaign).values_list("name", "x", "y")
    }
    assert (cells["Ash"], cells["Bram"], cells["Rat"]) == ([1, 0], [0, 1], [2, 0])
    assert len(set(map(tuple, cells.values()))) == len(cells)  # one token a cell


def test_a_spawn_told_where_stands_there(world: World):
    commit(world, "spawn_creature", {"name": "Rat", "kind": "monster", "hp": 2, "x": 0, "y": 0})
    assert Creature.objects.values_list("x", "y").get(name="Rat") == (0, 0)


# ---- the grid, set by the GM ------------------------------------------------------------------


def grid(html: str) -> tuple[str, str]:
    return re.search(r'data-cols="(\d+)" data-rows="(\d+)"', html).groups()


@pytest.mark.parametrize("who", ["owner", "cogm"])
def test_the_gm_sets_the_grid_and_it_stays_as_set(
    world: World, who: str, events, django_capture_on_commit_callbacks
):
    assert grid(page(world, world.player)) == ("16", "10")
    with django_capture_on_commit_callbacks(execute=True):
        response = set_map(signed_in(getattr(world, who)), world, cols="20", rows="12")
    assert response.status_code == 201, response.content
    assert response.json() == {"cols": 20, "rows": 12}
    assert Campaign.objects.values_list("map_cols", "map_rows").get(pk=world.campaign.pk) == (
        20,
        12,
    )
    assert [(e["type"], e["data"]) for e in events] == [
        (
            "state_changed",
            {
                "entity": "map",
                "id": str(world.campaign.pk),
                "fields": {"cols": 20, "rows": 12, "background": None},
            },
        )
    ]
    commit(world, "move_token", {"creature_id": world.hero.pk, "x": 3, "y": 2})
    assert grid(page(world, world.player)) == ("20", "12")  # a move does not resize it


def test_a_player_may_not_set_the_map_and_the_refusal_is_recorded(world: World):
    before = dump(world.campaign)
    response = set_map(signed_in(world.player), world, cols="30", rows="30")
    assert response.status_code == 403
    assert response.json()["detail"] == "Only the campaign owner or a co-GM may do this."
    assert recorded_denial()[:4] == (
        SecurityEvent.Kind.ADMIN_DENIED,
        world.player,
        world.campaign,
        "campaign_map_set",
    )
    assert dump(world.campaign) == before
    assert Campaign.objects.values_list("map_cols").get(pk=world.campaign.pk) == (16,)


def test_a_stranger_gets_404_for_the_map_form_and_the_background(world: World):
    stranger = signed_in(world.outsider)
    assert set_map(stranger, world, cols="8").status_code == 404
    MapBackground.objects.create(
        campaign=world.campaign, content_type="image/png", data=png(), width=4, height=4
    )
    assert stranger.get(url(world, "map/background/")).status_code == 404
    assert not SecurityEvent.objects.exists() and not ToolInvocation.objects.exists()


@pytest.mark.parametrize(
    ("cols", "rows", "status", "detail"),
    [
        ("3", "10", 422, "cols must be 4 to 100; got 3."),
        ("16", "101", 422, "rows must be 4 to 100; got 101."),
        ("x", "10", 400, "cols: Must be an integer."),
    ],
)
def test_a_grid_out_of_bounds_is_refused(
    world: World, cols: str, rows: str, status: int, detail: str
):
    response = set_map(signed_in(world.owner), world, cols=cols, rows=rows)
    assert (response.status_code, response.json()["detail"]) == (status, detail)
    assert Campaign.objects.values_list("map_cols", "map_rows").get(pk=world.campaign.pk) == (
        16,
        10,
    )


def test_a_persons_move_off_the_grid_is_refused_with_the_grids_size(world: World):
    api = signed_in(world.player)
    path = f"/api/campaigns/{world.campaign.pk}/creatures/{world.hero.pk}/move/"
    response = api.post(path, {"x": 16, "y": 0}, content_type="application/json")
    assert response.status_code == 422
    assert response.json()["detail"] == (
        "16,0 is off the map: it is 16 columns by 10 rows (0,0 to 15,9)."
    )
    assert not ToolInvocation.objects.exists()
    assert api.post(path, {"x": 15, "y": 9}, content_type="application/json").status_code == 201


# ---- the background image ---------------------------------------------------------------------


def upload(name: str, data: bytes, content_type: str = "image/png") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=content_type)


def test_the_gm_uploads_a_background_members_see_it_with_a_safe_type(world: World):
    response = set_map(signed_in(world.owner), world, background=upload("crypt.png", png(8, 5)))
    assert response.status_code == 201, response.content
    stored = MapBackground.objects.get(campaign=world.campaign)
    assert (stored.content_type, stored.width, stored.height, stored.version) == (
        "image/png",
        8,
        5,
        1,
    )
    address = url(world, "map/background/")
    assert f'<image class="map-background" href="{address}?v=1"' in page(world, world.player)
    served = signed_in(world.other).get(address + "?v=1")
    assert served.status_code == 200 and served.content == bytes(stored.data)  # Pillow's writing
    assert served["Content-Type"] == "image/png"
    assert served["X-Content-Type-Options"] == "nosniff"
    assert served["Content-Security-Policy"] == "default-src 'none'; sandbox"
    set_map(signed_in(world.owner), world, background=upload("b.png", png(2, 2)))
    assert f'href="{address}?v=2"' in page(world, world.player)  # a new image, a new address
    assert Client().get(address).status_code == 302  # signed out: to the sign-in page


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        ("map.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script/></svg>', "image/svg+xml"),
        ("map.png", b"<html><script>alert(1)</script></html>", "image/png"),
        ("map.png", picture("GIF"), "image/png"),
    ],
)
def test_anything_but_an_image_is_refused_whatever_it_is_called(
    world: World, name: str, data: bytes, said: str
):
    response = set_map(signed_in(world.owner), world, background=upload(name, data, said))
    assert response.status_code == 422
    assert response.json()["detail"] == "That file is not a PNG, JPEG or WebP image."
    assert not MapBackground.objects.exists()


def test_an_image_is_stored_and_served_as_what_it_is_whatever_it_is_called(world: World):
    jpeg = picture("JPEG", 6, 4)
    response = set_map(signed_in(world.owner), world, background=upload("map.png", jpeg))
    assert response.status_code == 201, response.content
    assert MapBackground.objects.get(campaign=world.campaign).content_type == "image/jpeg"
    served = signed_in(world.player).get(url(world, "map/background/"))
    assert served["Content-Type"] == "image/jpeg"


def test_a_plain_post_of_a_bad_image_shows_the_page_with_the_refusal(world: World):
    response = signed_in(world.owner).post(
        url(world, "map/"), {"background": upload("x.png", b"nope")}
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert '<details class="setup-block" id="map-settings" open>' in html  # the refusal shows
    assert "That file is not a PNG, JPEG or WebP image." in html


def test_the_gm_takes_the_background_away(world: World):
    owner = signed_in(world.owner)
    set_map(owner, world, background=upload("crypt.png", png()))
    assert set_map(owner, world, remove_background="on").status_code == 201
    assert not MapBackground.objects.exists()
    assert 'class="map-background"' not in page(world, world.owner)
    assert owner.get(url(world, "map/background/")).status_code == 404


# ---- a stack and its picker -------------------------------------------------------------------


def test_a_stack_is_counted_and_its_picker_drawn_by_the_server(world: World):
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 1, "y": 1})
    html = page(world, world.player)
    thorin = re.search(r'<g class="map-token [^>]*data-name="Thorin"[^>]*>', html)[0]
    assert 'data-stack="2"' in thorin
    stacks = re.search(r'<div class="map-stacks" data-part="map-stacks" hidden>.*?</div>\n', html)
    assert stacks and '<div class="map-stack" data-cell="1,1">' in stacks[0]
    assert "2 tokens on 1,1: pick one" in stacks[0]
    buttons = re.findall(
        r'<button type="button" class="secondary" data-creature="(\d+)">(.*?)</button>', stacks[0]
    )
    assert buttons == [
        (str(world.hero.pk), "Thorin"),
        (str(world.goblin.pk), 'Goblin <span class="quiet">(Only the GM can move Goblin.)</span>'),
    ]


# ---- the GM's combat buttons ------------------------------------------------------------------


def test_the_gm_has_next_turn_and_end_combat_buttons_players_do_not(world: World):
    commit(world, "start_combat", {"creature_ids": [world.hero.pk, world.goblin.pk]})
    gm_page = page(world, world.owner)
    assert 'data-hand="advance_turn"' in gm_page and ">Next turn</button>" in gm_page
    assert 'data-hand="end_combat"' in gm_page and ">End combat</button>" in gm_page
    assert "Next turn" not in page(world, world.player)


def test_next_turn_and_end_combat_run_the_tools_as_the_gms_own_hand(world: World):
    commit(world, "start_combat", {"creature_ids": [world.hero.pk, world.goblin.pk]})
    owner = signed_in(world.owner)
    hand = url(world, "hand/")
    assert owner.post(hand, {"tool": "advance_turn"}, **JSON).status_code == 201
    encounter = Encounter.objects.get(active=True)
    assert encounter.turn_index == 1
    assert owner.post(hand, {"tool": "end_combat"}, **JSON).status_code == 201
    world.campaign.refresh_from_db()
    assert world.campaign.active_encounter is None
    rows = ToolInvocation.objects.filter(source="user").order_by("sequence")
    assert [(r.tool_name, r.user, r.status, r.turn.actor) for r in rows] == [
        ("advance_turn", world.owner, "committed", world.owner),
        ("end_combat", world.owner, "committed", world.owner),
    ]


# ---- the character form gives way to "your character" ------------------------------------------


def character_panel(html: str) -> str:
    return re.search(r'<section class="panel setup-panel" id="character".*?</section>', html, re.S)[
        0
    ]


def test_a_player_without_a_character_is_offered_the_form_open(world: World):
    world.campaign.memberships.create(user=world.outsider)
    panel = character_panel(page(world, world.outsider))
    assert '<div class="my-characters" data-part="character" data-mine="0"></div>' in panel
    assert '<details class="setup-block character-new" open>' in panel
    assert ">Create my character</button>" in panel


def test_a_player_with_a_character_sees_it_and_a_second_is_an_explicit_choice(world: World):
    panel = character_panel(page(world, world.player))
    assert 'data-part="character" data-mine="1"><ul><li><strong>Thorin</strong>' in panel
    assert '<details class="setup-block character-new">' in panel  # folded: asked for
    assert "<summary>Make another character</summary>" in panel
    assert ">Create a second character</button>" in panel
    assert panel.index('data-part="character"') < panel.index("<details") < panel.index("<form")


def test_the_board_fragment_redraws_the_players_characters_not_their_form(world: World):
    fragment = signed_in(world.player).get(url(world, "board/")).content.decode()
    assert 'data-part="character" data-mine="1"><ul><li><strong>Thorin</strong>' in fragment
    assert 'data-form="creatures"' not in fragment
    owners = signed_in(world.owner).get(url(world, "board/")).content.decode()
    assert 'data-part="character"' not in owners


def test_the_owners_creature_form_leaves_the_place_to_the_free_cell(world: World):
    html = page(world, world.owner)
    assert '<input name="x" type="number" min="0" placeholder="free cell">' in html
    owner = signed_in(world.owner)
    for name in ("Bat", "Rat"):
        form = {"kind": "monster", "name": name, "hp": "3", "max_hp": "3", "x": "", "y": ""}
        assert owner.post(url(world, "creatures/"), form, **JSON).status_code == 201
    cells = dict(
        (n, (x, y))
        for n, x, y in Creature.objects.filter(name__in=["Bat", "Rat"]).values_list(
            "name", "x", "y"
        )
    )
    assert cells == {"Bat": (1, 0), "Rat": (0, 1)}


def test_kinds_read_pc_npc_and_monster(world: World):
    html = page(world, world.owner)
    for value, label in (("pc", "PC"), ("npc", "NPC"), ("monster", "Monster")):
        assert f'<option value="{value}"' in html and f">{label}</option>" in html
    assert ">Pc<" not in html and ">Npc<" not in html
