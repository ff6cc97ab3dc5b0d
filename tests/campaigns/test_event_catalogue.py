"""The event catalogue (`campaigns.events`) is the one list of realtime events: the publisher
sends nothing else, an event is made with exactly its class's fields, of their types, and the
documentation and the page's scripts name no event it lacks."""

import re
from pathlib import Path

import msgspec
import pytest

from audit.models import SkipReason
from campaigns.events import CATALOGUE, Event, GMTextDelta, MessageCreated, StateChanged
from campaigns.models import Campaign, Source
from campaigns.realtime import broadcast_on_commit, event
from tests.conftest import World

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {
    str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "static" / "js").rglob("*.js"))
}


def catalogued() -> dict[str, tuple[set[str], set[str]]]:
    """Each type's (required fields, fields left out when they do not apply)."""
    return {
        name: (
            {f.name for f in msgspec.structs.fields(cls) if f.required},
            {f.name for f in msgspec.structs.fields(cls) if not f.required},
        )
        for name, cls in CATALOGUE.items()
    }


def field_names(braced: str) -> tuple[set[str], set[str]]:
    """`{a, b?, c: [{d, e}]}` -> ({a, c}, {b}): the top-level names, `?` marking optional."""
    items, depth = [""], 0
    for char in braced[1:-1]:
        depth += (char in "[{(") - (char in "]})")
        if char == "," and depth == 0:
            items.append("")
        else:
            items[-1] += char
    names = [re.match(r"\s*(\w+)(\??)", item) for item in items if item.strip()]
    return {m[1] for m in names if not m[2]}, {m[1] for m in names if m[2]}


def documented() -> dict[str, tuple[set[str], set[str]]]:
    """docs/api.md's table of events, "The live feed (websocket)": type -> its data's fields."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("## The live feed (websocket)")[1].split("\n## ")[0]
    found = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        data = re.match(r"`(\{.*?\})`", cells[1])
        assert data, f"{cells[0]}: the row does not list its data's fields"
        for name in re.findall(r"`(\w+)`", cells[0]):
            found[name] = field_names(data[1])
    return found


def test_the_docs_list_exactly_the_catalogues_events_and_fields():
    assert documented() == catalogued()


def subscribed(name: str, script: str) -> set[str]:
    """The event types a script subscribes to on the bus: `on("type", …)`, or `on(type, …)`
    in a loop over a literal list of types (comments aside)."""
    code = re.sub(r"(?m)(^|\s)//.*", "", script)
    types = set()
    for literal, variable in re.findall(r"(?<!function )\bon\(\s*(?:\"(\w+)\"|(\w+))\s*,", code):
        if literal:
            types.add(literal)
            continue
        loop = re.search(rf"for \(const {variable} of \[([^\]]*)\]\)", code)
        assert loop, f"{name}: cannot tell which types on({variable}, …) subscribes to"
        types |= set(re.findall(r"\"(\w+)\"", loop[1]))
    return types


def test_the_page_subscribes_only_to_catalogue_events_and_its_own():
    """Besides the server's events, the page's bus carries the few the scripts emit
    themselves (the socket's `resynced`)."""
    own = {t for s in SCRIPTS.values() for t in re.findall(r"emit\(\{\s*type: \"(\w+)\"", s)}
    assert own.isdisjoint(CATALOGUE)
    unknown = {
        name: sorted(subscribed(name, script) - set(CATALOGUE) - own)
        for name, script in SCRIPTS.items()
    }
    assert {name: types for name, types in unknown.items() if types} == {}
    everything = set().union(*(subscribed(name, script) for name, script in SCRIPTS.items()))
    # the calls were read (the board's events need no subscription: the server sends the board)
    assert {"message_created", "gm_turn_completed", "dice_rolled"} <= everything


def test_the_scripts_compare_sources_and_skip_reasons_only_with_their_vocabularies():
    compared = {
        vocabulary: {
            value
            for script in SCRIPTS.values()
            for value in re.findall(rf"\b{key}\s*[!=]==\s*\"(\w+)\"", script)
        }
        for key, vocabulary in (("source", Source), ("skip_reason", SkipReason))
    }
    assert compared[Source] and compared[SkipReason]  # the scripts do compare both
    for vocabulary, values in compared.items():
        assert values <= {v.value for v in vocabulary}, vocabulary.__name__


@pytest.mark.parametrize("cls", CATALOGUE.values(), ids=list(CATALOGUE))
def test_an_event_made_with_a_field_it_does_not_have_is_refused(cls: type[Event]):
    with pytest.raises(TypeError, match="Unexpected keyword argument 'colour'"):
        cls(colour="red")


def test_data_read_from_the_wire_is_refused_with_a_field_unknown_missing_or_mistyped():
    said = {"id": 1, "role": "player", "content": "Hi", "author": "alice", "gm": None}
    assert MessageCreated.from_wire(said).data() == said
    with pytest.raises(TypeError, match="message_created: .* unknown field `colour`"):
        MessageCreated.from_wire({**said, "colour": "red"})
    with pytest.raises(TypeError, match="missing required field `gm`"):
        MessageCreated.from_wire({k: v for k, v in said.items() if k != "gm"})
    with pytest.raises(TypeError, match=r"Expected `int`, got `str` - at `\$.id`"):
        MessageCreated.from_wire({**said, "id": "1"})
    with pytest.raises(TypeError, match=r"Expected `str \| null`, got `int` - at `\$.author`"):
        MessageCreated.from_wire({**said, "author": 7})
    with pytest.raises(TypeError, match=r"Expected `int`, got `bool` - at `\$.id`"):
        MessageCreated.from_wire({**said, "id": True})


def test_a_value_of_the_wrong_type_fails_where_the_event_is_made():
    """Under the tests every event is read back as a client reads it (`ROUND_TRIP_JSON`)."""
    with pytest.raises(TypeError, match=r"gm_text_delta: Expected `str`, got `int` - at `\$.text`"):
        event(GMTextDelta(text=5), source=Source.SYSTEM)


def test_an_optional_field_not_given_is_left_out_of_the_data():
    assert StateChanged(entity="dungeon", id=3, fields={"name": "Sewers"}).data() == {
        "entity": "dungeon",
        "id": 3,
        "fields": {"name": "Sewers"},
    }
    written = StateChanged(entity="creature", id="7", facet="", fields=None, deleted=True)
    assert list(written.data()) == ["entity", "id", "fields", "facet", "deleted"]


class SceneChanged(Event):
    type = "scene_changed"
    scene: str


class Impostor(Event):
    type = "state_changed"
    scene: str


@pytest.mark.parametrize(
    "payload",
    ["scene_changed", {"type": "state_changed"}, SceneChanged(scene="A"), Impostor(scene="A")],
)
def test_the_publisher_makes_no_event_the_catalogue_lacks(payload):
    with pytest.raises(TypeError, match="not an event of the catalogue"):
        event(payload, source=Source.SYSTEM)


@pytest.mark.django_db
def test_the_publisher_sends_no_envelope_of_a_type_the_catalogue_lacks(world: World):
    made = event(GMTextDelta(text="A door creaks."), source=Source.SYSTEM)
    stranger = {**made, "type": "scene_changed"}
    with pytest.raises(TypeError, match=r"not events of the catalogue .*\['scene_changed'\]"):
        broadcast_on_commit(world.campaign.pk, [made, stranger])
    assert Campaign.objects.get(pk=world.campaign.pk).event_seq == world.campaign.event_seq
