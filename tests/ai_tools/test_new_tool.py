"""A 16th tool is one file. A module written into the tools package, declaring on its class its
examples, its statement count and its words for people, is picked up by discovery, and from
there by the registry, the system check, the round-trip, bad-input and write-set tests, the
property test, the statement-count test, the schemas the model and the GM's hand are given, and
the words of the feed, the undo dialog, the approval card and the admin, with no other file
touched."""

import re
import sys
import textwrap

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ai_tools.tools
from ai_tools import registry
from ai_tools.checks import check_write_tools
from audit.models import ToolInvocation
from campaigns.models import Campaign
from gm.claude import tool_specs
from tests.ai_tools.contract import record_apply_changes
from tests.ai_tools.examples import example_cases
from tests.ai_tools.test_tools import (
    assert_apply_keeps_its_write_set,
    assert_bad_inputs_refused,
    assert_round_trip,
)
from tests.audit.test_properties import play_and_rewind
from tests.audit.test_statement_count import (
    assert_every_tool_runs_its_declared_statements,
    fill_log,
)
from tests.conftest import World, call, commit, signed_in
from tests.gm.messages_api import check_tools, tool_problems
from tests.pages.test_history_on_page import fragment, gm_turn, plan, summaries
from web.pages.forms import HandInput

MODULE = "ai_tools.tools.lantern"
LANTERN = textwrap.dedent(
    '''
    """A tool nobody else knows about: one file, nothing else edited."""

    from typing import Any

    from ai_tools import entities
    from ai_tools.base import EntityMap, Names, Ref, Tier, ToolContext, WriteTool
    from ai_tools.registry import register
    from ai_tools.tools.schema import ID, NAME, obj


    @register
    class LightLantern(WriteTool):
        name = "light_lantern"
        tier = Tier.HIGH
        description = "Light a lantern next to a creature: the location says where the light is."
        schema = obj({"creature_id": ID, "place": NAME}, ("creature_id", "place"))
        examples = ({"creature_id": Ref("goblin"), "place": "Lit cellar"},)
        example_statements = 2  # the creature, the campaign's UPDATE

        def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
            ctx.creature(data["creature_id"])
            return [entities.key("campaign", ctx.campaign.pk, "scene")]

        def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
            ctx.campaign.location = data["place"]
            ctx.save(ctx.campaign, ["location"])
            return {"location": ctx.campaign.location}

        def summarize(self, data: dict[str, Any]) -> str:
            return f"light a lantern by creature {data['creature_id']} at {data['place']}"

        def describe(
            self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
        ) -> list[str]:
            ((scene, was),) = before.items()
            now = after[scene]["location"]
            return [f"{name(data['creature_id'])} lights a lantern: {was['location']} → {now}"]
    '''
)
# The lantern's example, and its words as the feed and the undo dialog say them (before → after,
# from the logged row) and as the approval card and the admin summarise them.
LIT = {"place": "Lit cellar"}
DESCRIBED = "Goblin lights a lantern: Crypt → Lit cellar"
SUMMARY = "light a lantern by Goblin at Lit cellar"


@pytest.fixture
def lantern(tmp_path, monkeypatch):
    """The file, written into a directory the tools package spans for this test only; the
    registry is a copy, so the tool is gone again afterwards."""
    (tmp_path / "lantern.py").write_text(LANTERN)
    monkeypatch.setattr(ai_tools.tools, "__path__", [*ai_tools.tools.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_write_tools", dict(registry._write_tools))
    registry.discover()
    yield registry.write_tool("light_lantern")
    sys.modules.pop(MODULE, None)


def test_discovery_registers_the_new_tool_and_the_model_is_offered_it(lantern):
    assert type(lantern).__module__ == MODULE
    assert "light_lantern" in [tool.name for tool in registry.write_tools()]
    assert "light_lantern" in [spec["name"] for spec in tool_specs()]
    assert [case.values for case in example_cases() if case.values[0] == "light_lantern"] == [
        ("light_lantern", 0)
    ]


def test_the_system_check_passes_it_and_refuses_it_without_examples(lantern, monkeypatch):
    assert check_write_tools() == []
    monkeypatch.setattr(type(lantern), "examples", ())
    assert [error.msg for error in check_write_tools()] == [
        "Write tool 'light_lantern' has no examples."
    ]


def test_the_round_trip_bad_input_and_write_set_tests_run_it(lantern, world, monkeypatch):
    assert_round_trip(world, "light_lantern", 0)
    assert_bad_inputs_refused(world, "light_lantern")
    assert_apply_keeps_its_write_set(world, monkeypatch, "light_lantern", 0)


def test_the_property_test_plays_it(lantern, db, monkeypatch):
    played = set()

    @settings(
        max_examples=5,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(data=st.data())
    def replay(data):
        changes = record_apply_changes(monkeypatch)  # and holds it to its write set
        rows = play_and_rewind(data, ["light_lantern", "set_scene"], changes)
        played.update(row.tool_name for row in rows if row.status == "committed")

    replay()
    assert "light_lantern" in played


def test_without_the_file_the_registry_holds_the_spec_tools_only():
    assert MODULE not in sys.modules
    assert "light_lantern" not in [tool.name for tool in registry.write_tools()]


@pytest.mark.parametrize("prior_rows", [1, 200])
def test_the_statement_count_test_holds_it_to_its_declared_count(lantern, world, prior_rows):
    fill_log(world, prior_rows)
    assert_every_tool_runs_its_declared_statements(world)  # the lantern among them


def test_the_schemas_sent_to_the_model_and_the_gms_hand_include_it(lantern, world):
    specs = tool_specs()
    spec = next(spec for spec in specs if spec["name"] == "light_lantern")
    assert spec == {
        "name": "light_lantern",
        "description": lantern.description,
        "input_schema": lantern.schema,
    }
    assert tool_problems(spec, specs.index(spec)) == []
    check_tools(specs)
    form = HandInput(data={"tool": "light_lantern"})
    assert form.is_valid(), form.errors
    fields = {"creature_id": f" {world.goblin.pk} ", "place": "Lit cellar"}
    assert HandInput.tool_input("light_lantern", fields) == {
        "creature_id": world.goblin.pk,
        **LIT,
    }


def test_the_feed_and_the_undo_dialog_say_it_in_its_own_words(lantern, world):
    commit(world, "set_scene", {"description": "Water drips in the dark.", "location": "Crypt"})
    turn = gm_turn(world, "Light the way")
    commit(world, "light_lantern", {"creature_id": world.goblin.pk, **LIT}, turn=turn)
    owner = signed_in(world.owner)
    assert summaries(fragment(owner, world, turn)) == [DESCRIBED]
    html = plan(owner, world, turn).content.decode()
    assert re.findall(r"<li>(.*?) <code", html.split('class="undo-calls"')[1]) == [DESCRIBED]


def test_the_approval_card_gives_its_words_and_the_admin_its_summary(lantern, world, staff):
    """The card reads the held call in its tool's own words, from the preview's before and
    after (the numbers it would write); the admin's list gives its summary."""
    commit(world, "set_scene", {"description": "Water drips in the dark.", "location": "Crypt"})
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical_and_high")
    world.campaign.refresh_from_db()
    held = call(world, "light_lantern", {"creature_id": world.goblin.pk, **LIT})
    assert held.status == ToolInvocation.Status.AWAITING_APPROVAL, held.error
    card = signed_in(world.owner).get(f"/campaigns/{world.campaign.pk}/approvals/")
    assert f"{DESCRIBED}</" in card.content.decode()
    page = signed_in(staff).get(reverse("admin:audit_toolinvocation_change", args=[held.pk]))
    assert page.status_code == 200 and SUMMARY in page.content.decode()


def test_a_row_its_describer_cannot_read_gets_its_summary(lantern, world: World):
    """A held call wrote nothing yet: the describer finds no before, and the feed falls back on
    the summary, creatures named."""
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical_and_high")
    world.campaign.refresh_from_db()
    turn = gm_turn(world, "Light the way")
    call(world, "light_lantern", {"creature_id": world.goblin.pk, **LIT}, turn=turn)
    assert summaries(fragment(signed_in(world.owner), world, turn)) == [SUMMARY]
