"""Models compared on the same table: two GMs (the scripted one and a model behind the
OpenAI-compatible fake) answer turns of one campaign; the per-model figures count exactly what
happened to their turns and calls, in audit.analytics, the API's `?by=model` and the admin's
side-by-side table."""

import pytest

from audit.analytics import model_stats
from audit.models import ToolInvocation
from audit.services import turn_undo
from audit.services.approval import invocation_reject
from campaigns.models import Campaign, Turn
from tests.api.conftest import client_for
from tests.conftest import signed_in
from tests.gm.fake_openai import VERSION, call

OPENAI = f"openai/{VERSION}"


@pytest.fixture
def two_models(
    world, openai_server, play, settings, run_gm_tasks, django_capture_on_commit_callbacks
):
    """Three turns by the model, one undone, one with input the tool refused, one held and
    rejected; two by the scripted GM, one undone."""
    fake = openai_server
    hit = call("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1})
    fake.reply("You strike. ", calls=[hit])
    fake.reply("The goblin reels.")
    undone = play("I attack the goblin.")
    turn_undo(campaign_id=world.campaign.pk, turn_id=undone.pk, user=world.owner)
    fake.reply(calls=[call("modify_creature", {"creature_id": world.goblin.pk, "hp": 1})])
    fake.reply("Hm.")
    play("I attack it again.")
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    fake.reply("You swing. ", calls=[hit])
    fake.reply("It ducks.")
    held = play("And again.")
    row = ToolInvocation.objects.get(turn=held, status="awaiting_approval")
    with django_capture_on_commit_callbacks(execute=True):
        invocation_reject(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    run_gm_tasks()  # the held turn reads the refusal and ends
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="none")
    settings.GM_PROVIDER = "scripted"
    play("I attack the goblin")
    rest = play("we take a long rest")
    turn_undo(campaign_id=world.campaign.pk, turn_id=rest.pk, user=world.owner)
    return world


def by_model(rows):
    return {r["model"]: r for r in rows}


def test_each_model_gets_its_own_figures(two_models):
    rows = by_model(model_stats(campaign_ids=[two_models.campaign.pk]))
    model, scripted = rows[OPENAI], rows["scripted/1"]
    assert (model["turns"], model["undone_turns"], model["undo_rate"]) == (3, 1, 0.3333)
    assert (model["calls"], model["failed_input"], model["failed_input_rate"]) == (3, 1, 0.3333)
    assert (model["rejected"], model["expired"], model["approved"]) == (1, 0, 0)
    # The fake reports 50 in / 20 out for each of the 6 rounds it answered.
    assert (model["tokens_in"], model["tokens_out"]) == (300, 120)
    assert model["median_first_word_ms"] is not None and model["median_turn_ms"] is not None
    assert (scripted["turns"], scripted["undone_turns"], scripted["undo_rate"]) == (2, 1, 0.5)
    assert (scripted["tokens_in"], scripted["tokens_out"]) == (None, None)
    assert scripted["failed_input"] == 0


def test_the_turns_record_who_answered_and_how_long_it_took(two_models):
    turns = Turn.objects.filter(campaign=two_models.campaign).order_by("pk")
    assert [t.gm_model for t in turns] == [OPENAI] * 3 + ["scripted/1"] * 2
    assert all(t.answer_ms is not None for t in turns)
    assert all(t.first_word_ms is not None for t in turns)


def test_the_api_serves_the_comparison_to_the_owner_only(two_models):
    world = two_models
    url = f"/api/analytics/tools/?by=model&campaign={world.campaign.pk}"
    response = client_for(world.owner).get(url)
    assert response.status_code == 200
    assert [r["model"] for r in response.json()] == [OPENAI, "scripted/1"]
    assert response.json()[0]["undo_rate"] == 0.3333
    assert client_for(world.player).get(url).status_code == 403
    assert client_for(world.outsider).get(url).status_code == 404
    default = client_for(world.owner).get(f"/api/analytics/tools/?campaign={world.campaign.pk}")
    assert "tool_name" in default.json()[0]  # the per-tool rows stay the default


def test_the_admin_shows_both_models_side_by_side_with_a_local_chart(two_models, staff):
    page = signed_in(staff).get("/admin/audit/toolinvocation/analytics/").content.decode()
    table = page[page.index('class="audit-analytics-table audit-models"') :]
    table = table[: table.index("</table>")]
    assert OPENAI in table and "scripted/1" in table
    assert "300 / 120" in table and "not reported" in table
    assert 'aria-label="Revert rate of GM turns, by model"' in page
    assert "https://" not in page.split("<body", 1)[1].split("</svg>")[0]  # nothing fetched
