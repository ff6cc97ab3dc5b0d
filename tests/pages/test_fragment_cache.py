"""The live fragments drawn once per event for each class of viewer (web/pages/fragments.py):
every viewer is sent exactly what drawing the fragment for them alone would give, the drawings
per event stay one per class however many people look, and what changes without an event (a
Stop asked for) is drawn anew."""

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext

from audit.models import InvocationOrigin, ToolInvocation
from audit.selectors import viewer_rights
from audit.services import turn_undo
from campaigns.models import Campaign, Membership, Turn
from campaigns.services import campaign_set_approval_timeout, creature_create, membership_add
from gm.services import turn_cancel, turn_submit
from tests.conftest import (
    World,
    call,
    commit,
    fog_over_the_goblin,
    held_hit,
    make_user,
    signed_in,
)
from web.pages import approvals, fragments, presenters


def members(world: World) -> dict[str, User]:
    return {
        name: getattr(world, name) for name in ("owner", "cogm", "player", "other", "spectator")
    }


@pytest.fixture
def spectator(world: World) -> User:
    """A member with no character: a player's sight, nothing of theirs on the board."""
    user = make_user("spectator")
    membership_add(campaign=world.campaign, by=world.owner, username=user.username)
    world.spectator = user
    return user


def alone(world: World, user: User, template: str, context: dict) -> str:
    """What the view drew for `user` before fragments were shared: its template, its request."""
    request = RequestFactory().get("/")
    request.user = user
    return render_to_string(template, context, request=request)


def board_alone(world: World, user: User) -> str:
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    rights = viewer_rights(campaign=campaign, user=user)
    context = presenters.board_parts(campaign=campaign, rights=rights)
    return alone(world, user, "campaigns/_board.html", context)


def turn_alone(world: World, user: User, turn: Turn) -> str:
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    rights = viewer_rights(campaign=campaign, user=user)
    cards = presenters.feed(campaign=campaign, rights=rights, turn_id=turn.pk)
    return alone(world, user, "campaigns/_turn.html", {"turn": cards[0], "seq": campaign.drawn_seq})


def fetch(client: Client, world: World, query: str = "") -> str:
    path = f"/campaigns/{world.campaign.pk}/{'feed/' + query if query else 'board/'}"
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.content.decode()


def player_moves_the_hero(world: World, turn: Turn, x: int, y: int) -> None:
    """The player's own call, into their turn: the hero to (x, y)."""
    commit(
        world,
        "move_token",
        {"creature_id": world.hero.pk, "x": x, "y": y},
        actor=world.player,
        turn=turn,
        source=InvocationOrigin.USER,
    )


def each_sent_as_if_alone(world: World, turns: list[Turn]) -> None:
    """Every member fetches the board and each turn (the first of a class draws, the others are
    sent its drawing); each answer equals the drawing for them alone."""
    clients = {name: signed_in(user) for name, user in members(world).items()}
    sent = {
        name: (fetch(client, world), [fetch(client, world, f"?turn={t.pk}") for t in turns])
        for name, client in clients.items()
    }
    for name, user in members(world).items():
        board, drawn_turns = sent[name]
        assert board == board_alone(world, user), name
        for turn, drawn in zip(turns, drawn_turns, strict=True):
            assert drawn == turn_alone(world, user, turn), (name, turn.pk)


@pytest.mark.usefixtures("spectator")
def test_a_shared_board_names_each_viewers_own_characters_for_them(world: World):
    second = creature_create(
        campaign=world.campaign,
        by=world.owner,
        name="Bram",
        kind="pc",
        hp=9,
        max_hp=12,
        controlled_by=world.player,
        x=1,
        y=1,  # on Thorin's cell: a stack, whose picker names both
    )
    creature_create(  # a character nobody plays yet: nobody's to drag, nobody's "yours"
        campaign=world.campaign, by=world.owner, name="Wren", kind="pc", hp=8, max_hp=8, x=4, y=4
    )
    commit(world, "start_combat", {"creature_ids": [world.hero.pk, world.goblin.pk, second.pk]})
    fog_over_the_goblin(world)
    each_sent_as_if_alone(world, [])
    html = fetch(signed_in(world.player), world)
    assert html.count("your character") == 2 and "Bram</strong>" in html
    assert "your character" not in fetch(signed_in(world.other), world).split("Lia at")[0][-300:]


@pytest.mark.usefixtures("spectator")
def test_a_shared_turn_is_what_each_viewer_would_be_drawn(world: World):
    mine = world.turn(world.player, "I swing.")
    player_moves_the_hero(world, mine, 3, 3)
    theirs = world.turn(world.other, "I hide.")
    fog_over_the_goblin(world)
    goblin_hit = world.turn(world.owner, "The goblin strikes.")
    commit(
        world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -2}, turn=goblin_hit
    )
    undone = world.turn(world.player, "I take it back.")
    player_moves_the_hero(world, undone, 1, 1)
    turn_undo(campaign_id=world.campaign.pk, turn_id=undone.pk, user=world.player)
    held = held_hit(world, world.other).turn
    each_sent_as_if_alone(world, [mine, theirs, goblin_hit, undone, held])


def test_renders_per_event_stay_one_per_class_however_many_look(world: World):
    """After each event every viewer fetches the board and the turn: the drawings are one per
    class of viewer (the owner, the GM's sight, a player's, and for the turn whether it is
    theirs to undo), not one per viewer."""
    counts = {}
    for players in (2, 4, 8):
        extra = [make_user(f"p{players}-{n}") for n in range(players - 2)]
        for user in extra:
            membership_add(campaign=world.campaign, by=world.owner, username=user.username)
        viewers = [world.owner, world.cogm, world.player, world.other, *extra]
        turn = world.turn(world.player, "I move.")
        player_moves_the_hero(
            world, turn, players, 2
        )  # an event: a new number, nothing drawn for it yet
        clients = [signed_in(user) for user in viewers]
        fragments.renders.clear()
        for client in clients:
            fetch(client, world)
            fetch(client, world, f"?turn={turn.pk}")
        counts[len(viewers)] = dict(fragments.renders)
        Membership.objects.filter(user__in=extra).delete()
    # the board: the owner, the GM's sight (the co-GM), a player's; the turn: the GM's sight
    # (owner and co-GM alike), its player's, and the players' who may not undo it
    assert counts == {n: {"board": 3, "turn": 3} for n in (4, 6, 10)}


class CountedCache:
    """The fragments cache, counting the lookups made of it."""

    def __init__(self, cache: Any) -> None:
        self.cache, self.calls = cache, 0

    def __getattr__(self, name: str) -> Any:
        self.calls += 1
        return getattr(self.cache, name)


def test_a_push_reads_once_for_every_viewer(world: World, monkeypatch):
    """What a feed sends its pages after an event (`pushed_fragments`) reads the campaign, each
    turn and each class's drawing once: a viewer more costs no statement and no cache lookup,
    whether the drawings are made in this push or were made already."""
    turn = world.turn(world.player, "I move.")
    player_moves_the_hero(world, turn, 3, 2)
    changed = {"board": 0, turn.pk: 0}
    counted = CountedCache(fragments._cache())
    monkeypatch.setattr(fragments, "_cache", lambda: counted)
    everyone = [world.owner, world.cogm, world.player, world.other]
    for n in range(6):
        user = make_user(f"watcher-{n}")
        membership_add(campaign=world.campaign, by=world.owner, username=user.username)
        everyone.append(user)
    wanted = frozenset({"board", "turn"})
    costs = {}
    for viewers in (4, 6, 10):  # each class among the first four; then more of a player's
        rights = [viewer_rights(campaign=world.campaign, user=user) for user in everyone[:viewers]]
        assert len({r.sight for r in rights}) == 2  # asked once, when a socket connects
        rights = [(r, wanted) for r in rights]
        for drawing in ("drawn", "kept"):
            if drawing == "drawn":  # a new event number: nothing of it in the cache yet
                player_moves_the_hero(world, turn, viewers, 2)
            counted.calls = 0
            with CaptureQueriesContext(connection) as queries:
                seq, sent = fragments.pushed_fragments(
                    campaign_id=world.campaign.pk, viewers=rights, changed=changed
                )
            assert [len(messages) for messages in sent] == [2] * viewers
            costs[viewers, drawing] = (len(queries), counted.calls)
    assert costs[4, "drawn"][0] > costs[4, "kept"][0] > 0
    for drawing in ("drawn", "kept"):
        assert costs[4, drawing] == costs[6, drawing] == costs[10, drawing], costs


# What a push of the board, a turn and the approval card to the owner's page and a player's
# reads when it draws them (the drawings of a new event number): the campaign, its held calls,
# the turn with its later turns' actors; the board's dump with the members and the background,
# in one statement, and the owner's invites; in the turn's snapshot (a savepoint and its release
# in a test's transaction; BEGIN, its isolation level and COMMIT outside one) the turn, its
# messages, its calls, the creatures' names with the chapters' and dungeons', its rolls, the
# players' fog. When every drawing is kept: the first three alone.
PUSH_DRAWN, PUSH_KEPT = 13, 3


def test_a_push_of_the_board_a_turn_and_the_card_costs_a_fixed_number_of_statements(world):
    turn = world.turn(world.player, "I move.")
    rights = [viewer_rights(campaign=world.campaign, user=u) for u in (world.owner, world.player)]
    assert [r.sight for r in rights] == ["gm", "player"]  # asked once, when a socket connects
    viewers = [(r, frozenset({"board", "turn", "approvals"})) for r in rights]
    changed = {"board": 0, turn.pk: 0, "approvals": 0}
    costs = []
    for x in (2, 3):
        player_moves_the_hero(world, turn, x, 2)  # a new event number: nothing drawn for it yet
        for _ in ("drawn", "kept"):
            with CaptureQueriesContext(connection) as queries:
                _, sent = fragments.pushed_fragments(
                    campaign_id=world.campaign.pk, viewers=viewers, changed=changed
                )
            assert [len(messages) for messages in sent] == [3, 3]
            costs.append(len(queries))
    assert costs == [PUSH_DRAWN, PUSH_KEPT] * 2, costs


def test_a_stop_asked_without_an_event_is_drawn_at_once(world: World):
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I open the door.")
    Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.RUNNING)
    client = signed_in(world.player)
    stop = f'<button type="button" class="stop" data-stop="{turn.pk}">'
    assert stop in fetch(client, world, f"?turn={turn.pk}")
    seq = Campaign.objects.get(pk=world.campaign.pk).event_seq
    turn_cancel(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    assert Campaign.objects.get(pk=world.campaign.pk).event_seq == seq  # no event for it
    html = fetch(client, world, f"?turn={turn.pk}")
    assert "Stopping the GM…" in html and stop not in html


def test_a_new_event_is_drawn_anew(world: World):
    client = signed_in(world.player)
    assert "Thorin at 1,1" in fetch(client, world)
    commit(world, "move_token", {"creature_id": world.hero.pk, "x": 6, "y": 2})
    html = fetch(client, world)
    assert "Thorin at 6,2" in html and "Thorin at 1,1" not in html


def a_players_roll(world: World) -> Any:
    """The player rolls a d20 from the page: a roll outside any turn."""
    from campaigns.services import dice_roll_record

    return dice_roll_record(
        campaign=world.campaign,
        author=world.player,
        formula="d20",
        mode="normal",
        dice=[12],
        discarded=[],
        modifier=0,
        total=12,
    )


@pytest.mark.usefixtures("spectator")
def test_entries_outside_turns_are_drawn_once_for_each_sight(world: World):
    """A token dragged and a creature added are drawn once for the GM's sight and once for a
    player's; a player's roll once for everyone: each as drawing it alone would."""
    from audit.services.hand import token_move

    fog_over_the_goblin(world)
    dragged = token_move(campaign=world.campaign, creature=world.hero, by=world.player, x=2, y=2)
    roll = a_players_roll(world)
    fragments.renders.clear()
    queries = [f"?change={dragged.pk}", f"?added={world.orc.pk}", f"?roll={roll.pk}"]
    sent = {
        name: [fetch(signed_in(user), world, query) for query in queries]
        for name, user in members(world).items()
    }
    assert dict(fragments.renders) == {"change": 2, "added": 2, "roll": 1}
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    for name, user in members(world).items():
        rights = viewer_rights(campaign=campaign, user=user)
        change = presenters.changes_outside_turns(
            campaign=campaign, rights=rights, invocation_id=dragged.pk
        )[0]
        added = presenters.creature_additions(
            campaign=campaign, rights=rights, creature_id=world.orc.pk
        )[0]
        alone_too = [
            alone(world, user, "campaigns/_change_entry.html", {"change": change}),
            alone(world, user, "campaigns/_change_entry.html", {"change": added}),
            alone(
                world,
                user,
                "campaigns/_roll_entry.html",
                {"roll": presenters.roll_entry(campaign=campaign, roll_id=roll.pk)},
            ),
        ]
        assert sent[name] == alone_too, name
    goblin = signed_in(world.player).get(
        f"/campaigns/{world.campaign.pk}/feed/?added={world.goblin.pk}"
    )
    assert goblin.status_code == 404  # in the fog: not drawn for a player's sight


def test_the_gms_streamed_words_do_not_make_the_table_draw_again(world: World):
    """`gm_text_delta` changes no drawing (the page's script writes the words): the campaign's
    event number moves with it, the fragments' version (`drawn_seq`) does not; any other event
    moves both."""
    from campaigns.events import GMTextDelta, MessageCreated
    from campaigns.models import Source
    from campaigns.realtime import broadcast_on_commit, event

    turn = world.turn(world.player, "I listen.")
    client = signed_in(world.player)
    fetch(client, world)
    fetch(client, world, f"?turn={turn.pk}")
    before = Campaign.objects.get(pk=world.campaign.pk)
    fragments.renders.clear()
    for word in ("The ", "door ", "creaks."):
        broadcast_on_commit(
            world.campaign.pk,
            [event(GMTextDelta(text=word), source=Source.AI_TOOL_EXECUTION, turn=turn.pk)],
        )
    fetch(client, world)
    fetch(client, world, f"?turn={turn.pk}")
    after = Campaign.objects.get(pk=world.campaign.pk)
    assert (after.event_seq, after.drawn_seq) == (before.event_seq + 3, before.drawn_seq)
    assert dict(fragments.renders) == {}
    said = MessageCreated(id=0, role="gm", content="The door creaks.", author=None, gm=None)
    broadcast_on_commit(
        world.campaign.pk, [event(said, source=Source.AI_TOOL_EXECUTION, turn=turn.pk)]
    )
    fetch(client, world)
    assert Campaign.objects.get(pk=world.campaign.pk).drawn_seq == after.event_seq + 1
    assert dict(fragments.renders) == {"board": 1}


def watched_lookups(monkeypatch) -> tuple[threading.Condition, list[str]]:
    """The keys the fragments cache is asked for, in order, and a condition notified at each."""
    looked = threading.Condition()
    lookups: list[str] = []
    cache = fragments._cache()
    real_get = cache.get

    def get(key, *args, **kwargs):
        with looked:
            lookups.append(key)
            looked.notify_all()
        return real_get(key, *args, **kwargs)

    monkeypatch.setattr(cache, "get", get)
    monkeypatch.setattr(fragments, "_cache", lambda: cache)
    return looked, lookups


def test_pages_asking_at_once_wait_for_one_drawing(monkeypatch):
    """Each request has a thread of its own and a table's pages ask at the same moment: every
    one of them has missed the cache before the first drawing is done, and still it is drawn
    once, the others waiting for it."""
    asking = 5
    looked, lookups = watched_lookups(monkeypatch)

    def draw() -> str:
        with looked:  # every page has looked and missed before this drawing ends
            assert looked.wait_for(lambda: len(lookups) >= asking, timeout=10)
        return "<div>drawn</div>"

    campaign = SimpleNamespace(pk="same-table", drawn_seq=1)
    fragments.renders.clear()
    answers = []
    pages = [
        threading.Thread(
            target=lambda: answers.append(
                fragments.drawn(campaign=campaign, fragment="board", viewer="player", draw=draw)
            )
        )
        for _ in range(asking)
    ]
    for page in pages:
        page.start()
    for page in pages:
        page.join(timeout=20)
    assert answers == ["<div>drawn</div>"] * asking
    assert fragments.renders == {"board": 1}


def test_a_drawing_another_process_has_claimed_is_waited_for(monkeypatch):
    """Another web process missed first and is drawing (its claim is in the shared cache): this
    request waits for its drawing rather than draw the same once more."""
    campaign = SimpleNamespace(pk="claimed-table", drawn_seq=7)
    key = f"fragment:{campaign.pk}:{campaign.drawn_seq}:board:player"
    cache = fragments._cache()
    assert cache.add(f"{key}:drawing", 1, 30)  # the other process's claim
    looked, lookups = watched_lookups(monkeypatch)

    def the_other_process_finishes():
        with looked:  # missed twice (first, then under this process's lock), then waited once
            looked.wait_for(lambda: lookups.count(key) >= 3, timeout=10)
        cache.set(key, "<div>drawn there</div>", 30)

    other = threading.Thread(target=the_other_process_finishes)
    other.start()
    fragments.renders.clear()
    html = fragments.drawn(
        campaign=campaign, fragment="board", viewer="player", draw=lambda: "<div>drawn here</div>"
    )
    other.join(timeout=10)
    assert html == "<div>drawn there</div>"
    assert fragments.renders == {}


def test_a_push_draws_what_nobody_is_drawing_before_it_waits():
    """Both web processes push an event to their pages: while the other draws the owner's
    board, this one draws the players' first, and then takes the owner's from the cache
    (rather than wait for it, and have the other wait for the players' after)."""
    owners, players = (f"fragment:pushed-table:5:board:{viewer}" for viewer in ("owner", "player"))
    cache = fragments._cache()
    assert cache.add(f"{owners}:drawing", 1, 30)  # the other process is drawing the owner's
    drawn_here = threading.Event()

    def the_other_process_finishes():
        drawn_here.wait(timeout=10)  # it is slower: this one has drawn the players' by then
        cache.set(owners, "<div>owner's, drawn there</div>", 30)

    other = threading.Thread(target=the_other_process_finishes)
    other.start()

    def players_board() -> str:
        drawn_here.set()
        return "<div>players', drawn here</div>"

    fragments.renders.clear()
    kept = fragments._kept_all(
        {
            owners: fragments._counted("board", lambda: "<div>owner's, drawn here</div>"),
            players: fragments._counted("board", players_board),
        }
    )
    other.join(timeout=10)
    assert kept == {
        owners: "<div>owner's, drawn there</div>",
        players: "<div>players', drawn here</div>",
    }
    assert fragments.renders == {"board": 1}
    assert cache.get(players) == "<div>players', drawn here</div>"  # kept: found before a claim


def test_a_claim_nobody_keeps_is_drawn_here_after_the_wait(monkeypatch):
    """The process that claimed the drawing died or failed without a word: after DRAW_WAIT the
    request draws it itself, and the page is answered."""
    monkeypatch.setattr(fragments, "DRAW_WAIT", 0.05)
    campaign = SimpleNamespace(pk="abandoned-table", drawn_seq=3)
    key = f"fragment:{campaign.pk}:{campaign.drawn_seq}:board:player"
    assert fragments._cache().add(f"{key}:drawing", 1, 30)
    fragments.renders.clear()
    html = fragments.drawn(
        campaign=campaign, fragment="board", viewer="player", draw=lambda: "<div>drawn here</div>"
    )
    assert html == "<div>drawn here</div>"
    assert fragments.renders == {"board": 1}
    assert fragments._cache().get(key) == html  # kept: the next request finds it, not the claim


def test_a_failed_drawing_leaves_no_claim_behind():
    campaign = SimpleNamespace(pk="failing-table", drawn_seq=4)
    key = f"fragment:{campaign.pk}:{campaign.drawn_seq}:board:player"

    def draw() -> str:
        raise RuntimeError("the template broke")

    with pytest.raises(RuntimeError):
        fragments.drawn(campaign=campaign, fragment="board", viewer="player", draw=draw)
    assert fragments._cache().get(f"{key}:drawing") is None


def test_a_kept_drawing_is_found_by_the_next_request_despite_its_claim(monkeypatch):
    """A kept drawing's claim is left to lapse (a Redis command less per drawing): a request
    after it finds the drawing, and neither draws nor waits for the claim."""
    campaign = SimpleNamespace(pk="kept-table", drawn_seq=5)
    key = f"fragment:{campaign.pk}:{campaign.drawn_seq}:board:player"
    fragments.renders.clear()
    first = fragments.drawn(
        campaign=campaign, fragment="board", viewer="player", draw=lambda: "<div>first</div>"
    )
    assert fragments._cache().get(f"{key}:drawing") is not None  # left to lapse

    def waited(key: str) -> None:
        raise AssertionError(f"waited on the claim of {key}")

    monkeypatch.setattr(fragments, "_made_elsewhere", waited)
    again = fragments.drawn(
        campaign=campaign, fragment="board", viewer="player", draw=lambda: "<div>again</div>"
    )
    assert first == again == "<div>first</div>"
    assert fragments.renders == {"board": 1}


def test_the_board_is_drawn_without_formatting_each_number(world: World, monkeypatch):
    """The board's numbers are coordinates, sizes and counts, a few hundred of them with fog in
    play, and formatting each for the locale was a good part of a drawing: the board's
    templates draw them as they are (`{% localize off %}`), which en-us writes the same."""
    from django.utils import formats

    fog_over_the_goblin(world)
    formatted = []
    real = formats.number_format
    monkeypatch.setattr(
        formats, "number_format", lambda *a, **k: formatted.append(a) or real(*a, **k)
    )
    for user in (world.owner, world.player):
        fragments.board(
            campaign=world.campaign, rights=viewer_rights(campaign=world.campaign, user=user)
        )
    assert formatted == []


def approvals_alone(world: World, user: User) -> str:
    """The approval card as the view drew it for `user` alone, before it was shared."""
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    rights = viewer_rights(campaign=campaign, user=user)
    held = approvals.held_calls(campaign=campaign)
    shown = approvals.approval_cards(campaign=campaign, rights=rights, held=held)
    context = {"approvals": shown, "campaign": campaign, "seq": campaign.drawn_seq}
    return alone(world, user, "campaigns/_approval.html", context)


def fetch_approvals(client: Client, world: World) -> str:
    response = client.get(f"/campaigns/{world.campaign.pk}/approvals/")
    assert response.status_code == 200, response.content
    return response.content.decode()


def two_held_calls(world: World) -> tuple[ToolInvocation, ToolInvocation]:
    """In `other`'s turn, the GM's hit on the goblin and one on the player's hero, both held:
    the second is the player's to object to."""
    goblin = held_hit(world, world.other)
    hero = call(
        world,
        "modify_creature",
        {"creature_id": world.hero.pk, "hp_delta": -3},
        actor=world.other,
        turn=goblin.turn,
    )
    assert hero.status == ToolInvocation.Status.AWAITING_APPROVAL, hero.error
    return goblin, hero


@pytest.mark.usefixtures("spectator")
def test_the_approval_card_is_drawn_once_for_each_set_of_buttons(world: World):
    """Eight viewers fetch the card after its event: four drawings (the GM's sight with Approve
    and Reject, the calls' own player with Withdraw, the hero's player with Object, everyone
    else waiting), each what the view drew for them alone."""
    two_held_calls(world)
    extra = [make_user(f"watcher-{n}") for n in range(3)]
    for user in extra:
        membership_add(campaign=world.campaign, by=world.owner, username=user.username)
    viewers = {**members(world), **{user.username: user for user in extra}}
    fragments.renders.clear()
    sent = {name: fetch_approvals(signed_in(user), world) for name, user in viewers.items()}
    assert dict(fragments.renders) == {"approvals": 4}
    for name, user in viewers.items():
        assert sent[name] == approvals_alone(world, user), name
    assert sent["owner"].count('value="approve"') == 2 and "Withdraw" in sent["other"]
    assert "objection" in sent["player"] and "objection" not in sent["spectator"]


def test_a_card_changed_without_an_event_is_drawn_anew(world: World):
    """An approve that could not run refreshes the held call's preview, and the owner may change
    the approval timeout: neither is an event, and the card shows both at once."""
    goblin = held_hit(world, world.other)
    owner = signed_in(world.owner)
    fetch_approvals(owner, world)
    preview = {**goblin.preview, "reason": "The goblin is already fleeing."}
    ToolInvocation.objects.filter(pk=goblin.pk).update(preview=preview)
    assert "The goblin is already fleeing." in fetch_approvals(owner, world)
    campaign_set_approval_timeout(campaign=world.campaign, by=world.owner, seconds=7200, via="page")
    assert fetch_approvals(owner, world) == approvals_alone(world, world.owner)


def test_a_turn_pushed_to_several_classes_is_read_once_for_all(world: World):
    """A push that draws a turn for each class of its pages reads the turn once for all of them
    (`presenters.feed_read`): a class more costs no statement, but for a player's sight beside
    the GM's (the fog it reads the calls through)."""
    turn = world.turn(world.player, "I move.")
    wanted = frozenset({"turn"})

    def push(users: list[User], x: int) -> tuple[int, int]:
        player_moves_the_hero(world, turn, x, 2)  # a new event number: nothing drawn for it yet
        rights = [viewer_rights(campaign=world.campaign, user=user) for user in users]
        assert len({r.sight for r in rights}) <= 2  # asked once, when a socket connects
        rights = [(r, wanted) for r in rights]
        fragments.renders.clear()
        with CaptureQueriesContext(connection) as queries:
            _, sent = fragments.pushed_fragments(
                campaign_id=world.campaign.pk, viewers=rights, changed={turn.pk: 0}
            )
        assert [len(messages) for messages in sent] == [1] * len(users)
        return len(queries), fragments.renders["turn"]

    gm = push([world.owner], 1)  # one class: the GM's sight
    two = push([world.owner, world.other], 2)  # and a player's who may not undo it
    three = push([world.owner, world.player, world.other], 3)  # and its own player's
    assert (gm[1], two[1], three[1]) == (1, 2, 3)
    assert two[0] == gm[0] + 1  # the players' fog
    assert three[0] == two[0]


def test_a_turn_fetched_repeats_no_statement(world: World):
    """`/feed/?turn=`'s drawing reads the turn's later actors once: `turn_read` read them for
    the class's key, and the drawing takes them from it."""
    turn = world.turn(world.player, "I move.")
    player_moves_the_hero(world, turn, 1, 2)
    rights = viewer_rights(campaign=world.campaign, user=world.owner)
    fragments.renders.clear()
    with CaptureQueriesContext(connection) as queries:
        assert fragments.turn(campaign=world.campaign, rights=rights, turn_id=turn.pk)
    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert fragments.renders["turn"] == 1  # drawn, not taken from the cache
    assert len(statements) == len(set(statements)), statements
