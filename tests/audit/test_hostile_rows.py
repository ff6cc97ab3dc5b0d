"""Hostile input: no number that is not an integer gets into an integer field, and no log row,
whatever it holds (old rows, edited rows, rows of tools since removed), breaks a reader: the
campaign page and feed, revert plans (service, API, admin), the admin's list, change and revert
pages, or the context of the next GM turn."""

from typing import Any

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from ai_tools import registry
from ai_tools.base import StrictValidator
from audit.models import ToolInvocation
from audit.services import (
    invocation_revert,
    invocation_revert_plan,
    turn_undo_plan,
)
from campaigns.models import Creature, Turn
from core.errors import AppError
from gm import claude
from gm.context import gm_context
from tests.conftest import World, call, dump, rolled_back, signed_in

TOOLS = sorted(tool.name for tool in registry.write_tools())
STATUSES = [choice for choice, _ in ToolInvocation.Status.choices]
BOUNDED = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Any JSON value a client or a database could hand back: every number (huge, tiny, -0.0, 1e308),
# text without NUL or lone surrogates (the API's parser refuses those), nested a few levels.
JSON_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=8)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | JSON_TEXT
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_TEXT, inner, max_size=3),
    max_leaves=10,
)


def creature_ids(world: World) -> list[int]:
    return sorted(Creature.objects.filter(campaign=world.campaign).values_list("pk", flat=True))


def tool_input(data: st.DataObject, world: World, name: str) -> Any:
    """Mostly objects with the tool's own keys (so some calls get past the schema and into the
    tool) holding real ids, small numbers or any JSON; sometimes any JSON at all."""
    keys = sorted(registry.write_tool(name).schema.get("properties", {})) + ["extra"]
    value = st.sampled_from(creature_ids(world)) | st.integers(-3, 30) | JSON
    return data.draw(
        st.dictionaries(st.sampled_from(keys), value, max_size=4) | JSON, label=f"{name} input"
    )


@pytest.mark.parametrize(
    "data",
    [
        {"hp_delta": -1.0},
        {"hp_delta": 1e16},
        {"hp_delta": True},
        {"set_hp": 6.0},
        {"temp_hp": False},
        {"hp_delta": -1, "creature_id": 4.0},
    ],
)
def test_a_float_or_a_bool_for_an_integer_field_is_refused_and_changes_nothing(world, data):
    data = {"creature_id": world.goblin.pk, **data}
    row = call(world, "modify_creature", data)
    assert row.status == "failed" and "is not of type 'integer'" in row.error
    world.goblin.refresh_from_db()
    assert (world.goblin.hp, world.goblin.temp_hp) == (7, 0)


def integer_specs(schema: Any) -> list[dict[str, Any]]:
    """Every `"type": "integer"` in a schema, however deep (items, patternProperties, ...)."""
    if isinstance(schema, list):
        return [spec for item in schema for spec in integer_specs(item)]
    if not isinstance(schema, dict):
        return []
    own = [schema] if schema.get("type") == "integer" else []
    return own + [spec for value in schema.values() for spec in integer_specs(value)]


def test_every_integer_field_of_every_tool_refuses_its_float_twin():
    """Every tool validates through the one shared validator."""
    specs = [
        spec
        for tool in registry.write_tools() + registry.read_tools()
        for spec in integer_specs(tool.schema)
    ]
    assert len(specs) > 10
    for spec in specs:
        value = max(spec.get("minimum", 1), 1) if spec.get("maximum", 1) >= 1 else spec["maximum"]
        assert StrictValidator(spec).is_valid(value), spec
        assert not StrictValidator(spec).is_valid(float(value)), spec
        assert not StrictValidator(spec).is_valid(True), spec


def render_every_reader(world: World, owner: Any, staff: Any) -> None:
    """Every reader of the log, as the people who use it see it: no exception, no 500."""
    campaign = world.campaign
    page = signed_in(world.player)
    for url in (f"/campaigns/{campaign.pk}/", f"/campaigns/{campaign.pk}/feed/"):
        assert page.get(url).status_code == 200, url
    api = APIClient()
    api.force_authenticate(owner)
    admin = signed_in(staff)
    assert admin.get(reverse("admin:audit_toolinvocation_changelist")).status_code == 200
    for row in ToolInvocation.objects.filter(campaign=campaign):
        invocation_revert_plan(
            campaign_id=campaign.pk, user=owner, invocation_id=row.pk, cascade=True
        )
        base = f"/api/campaigns/{campaign.pk}/invocations/{row.pk}/"
        for url in (base, base + "revert-plan/", base + "revert-plan/?cascade=true"):
            assert api.get(url).status_code == 200, url
        for name in ("change", "revert"):
            url = reverse(f"admin:audit_toolinvocation_{name}", args=[row.pk])
            assert admin.get(url).status_code == 200, url
    for turn in Turn.objects.filter(campaign=campaign):
        turn_undo_plan(campaign_id=campaign.pk, user=owner, turn_id=turn.pk, cascade=True)
        assert admin.get(reverse("admin:campaigns_turn_change", args=[turn.pk])).status_code == 200
    assert api.get(f"/api/campaigns/{campaign.pk}/invocations/").status_code == 200
    context = gm_context(turn=world.turn(message="What happened?"))
    assert claude.system_prompt(context) and claude.conversation(context)


def test_an_integer_field_given_a_float_leaves_every_reader_working(world, staff):
    """The reported attack: `hp_delta: -1.0` used to set HP to 6.0 and 500 every page."""
    turn = world.turn(message="I hit it, a little.")
    call(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1.0}, turn=turn)
    render_every_reader(world, world.owner, staff)


@BOUNDED
@given(data=st.data())
def test_any_json_fed_to_any_tool_leaves_every_reader_working(world, staff, data):
    with rolled_back():  # each example starts from the same world
        turn = world.turn(actor=world.owner, message="Anything goes.")
        for _ in range(data.draw(st.integers(1, 4), label="calls")):
            name = data.draw(st.sampled_from(TOOLS), label="tool")
            row = call(world, name, tool_input(data, world, name), turn=turn)
            assert row.status in ("committed", "failed")
        render_every_reader(world, world.owner, staff)


def logged_keys(data: st.DataObject, world: World) -> list[str]:
    real = [f"creature:{pk}/vitals" for pk in creature_ids(world)] + [
        f"creature:{pk}" for pk in creature_ids(world)
    ]
    junk = st.sampled_from(["creature:abc", "nothing:1", "campaign:x/scene", "", "item:-1"])
    return data.draw(st.lists(st.sampled_from(real) | junk, max_size=3), label="write_set")


@BOUNDED
@given(data=st.data())
def test_rows_holding_any_json_leave_every_reader_working(world, staff, data):
    """Rows written straight into the table, as an older version, a future tool or an edit
    might have left them."""
    with rolled_back():  # each example starts from the same world
        turn = world.turn(actor=world.owner, message="Something odd was logged.")
        for sequence in range(1, data.draw(st.integers(1, 3), label="rows") + 1):
            ToolInvocation.objects.create(
                campaign=world.campaign,
                user=world.owner,
                turn=turn,
                sequence=sequence,
                tool_name=data.draw(st.sampled_from([*TOOLS, "retired_tool"]), label="tool"),
                status=data.draw(st.sampled_from(["committed", *STATUSES]), label="status"),
                input=data.draw(JSON, label="input"),
                result=data.draw(JSON, label="result"),
                revert_snapshot=data.draw(
                    JSON | st.fixed_dictionaries({"entities": JSON}), label="snapshot"
                ),
                post_state=data.draw(JSON, label="post_state"),
                write_set=logged_keys(data, world),
            )
        render_every_reader(world, world.owner, staff)
        for row in ToolInvocation.objects.filter(campaign=world.campaign, status="committed"):
            revert_or_refuse(world, row)


def revert_or_refuse(world: World, row: ToolInvocation) -> None:
    """A revert of any row either happens or is refused with an application error (a 4xx
    through the API), all or nothing."""
    before = dump(world.campaign)
    try:
        invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    except AppError:
        assert dump(world.campaign) == before
        row.refresh_from_db()
        assert row.status == "committed"


@pytest.mark.parametrize(
    "snapshot",
    [
        None,
        [1],
        {"entities": []},
        {"entities": {"nothing:1": {}}},
        {"entities": {"creature:abc/vitals": {"hp": 1}}},
        "VITALS",
        {"entities": "VITALS"},
        {"entities": {"VITALS": {"hp": "many"}}},
        {"entities": {"VITALS": {"no_such_field": 1}}},
        {"entities": {"VITALS": {"hp": 10**30}}},
    ],
)
def test_a_snapshot_that_does_not_fit_is_refused_and_changes_nothing(world, snapshot):
    key = f"creature:{world.goblin.pk}/vitals"
    snapshot = json_replace(snapshot, "VITALS", key)
    row = ToolInvocation.objects.create(
        campaign=world.campaign,
        user=world.owner,
        sequence=1,
        tool_name="modify_creature",
        status="committed",
        input={"creature_id": world.goblin.pk, "hp_delta": -1},
        revert_snapshot=snapshot,
        post_state={key: None},
        write_set=[key],
    )
    revert_or_refuse(world, row)
    row.refresh_from_db()
    assert row.status == "committed"


def json_replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {(new if k == old else k): json_replace(v, old, new) for k, v in value.items()}
    return new if value == old else value
