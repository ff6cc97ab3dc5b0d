"""The GM per campaign: the seats a deployment configures, the owner's choice from the page, the
runner answering with the campaign's seat, and keys that never leave the environment."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from audit.models import SecurityEvent, ToolInvocation
from campaigns.models import Campaign, Turn
from config.gm_seats import gm_seats_from_env
from core.errors import Forbidden, InvalidInput
from gm.providers import seat_of, seats
from gm.services import campaign_gm_set
from tests.conftest import World, signed_in
from tests.gm.fake_openai import VERSION, call

SECRET = "sk-local-secret-never-shown"


def gm_url(world: World) -> str:
    return f"/campaigns/{world.campaign.pk}/gm/"


def stored(world: World) -> str:
    return Campaign.objects.get(pk=world.campaign.pk).gm_provider


@pytest.fixture
def local_seat(settings, openai_server):
    """A named OpenAI-compatible seat ("local") at the fake, its key read from a variable."""
    settings.GM_PROVIDER = "scripted"
    settings.OPENAI_MODEL = ""  # only the named seat
    raw = (
        f'{{"local": {{"model": "llama-test", "base_url": "{openai_server.url}", '
        '"api_key_env": "LOCAL_KEY", "label": "Ollama on the GM\'s laptop"}}'
    )
    settings.GM_PROVIDERS = gm_seats_from_env(raw, {"LOCAL_KEY": SECRET})
    return openai_server


def test_only_configured_seats_are_offered(settings):
    settings.ANTHROPIC_API_KEY, settings.OPENAI_MODEL, settings.GM_PROVIDERS = "", "", {}
    assert list(seats()) == ["scripted"]
    settings.ANTHROPIC_API_KEY = "k"
    settings.OPENAI_MODEL = "gpt-4.1"
    settings.GM_PROVIDERS = gm_seats_from_env('{"ollama": {"model": "llama3.1"}}', {})
    assert [(s.name, s.label) for s in seats().values()] == [
        ("scripted", "Scripted GM"),
        ("anthropic", f"Claude ({settings.ANTHROPIC_MODEL})"),
        ("openai", "OpenAI-compatible (gpt-4.1)"),
        ("ollama", "ollama (llama3.1)"),
    ]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{not json", "not valid JSON"),
        ('{"openai": {"model": "m"}}', "none of"),
        ('{"x": {}}', "needs a model"),
        ('{"x": {"model": "m", "api_key": "sk-inline"}}', "unknown field 'api_key'"),
        ('{"x": {"model": "m", "strict": "yes"}}', "strict must be"),
    ],
)
def test_a_bad_gm_providers_setting_refuses_to_start(raw, says):
    with pytest.raises(ImproperlyConfigured, match=says):
        gm_seats_from_env(raw, {})


def test_the_owner_seats_a_configured_gm(world, local_seat):
    seat = campaign_gm_set(campaign=world.campaign, by=world.owner, provider="local")
    assert seat.label == "Ollama on the GM's laptop" and stored(world) == "local"
    with pytest.raises(InvalidInput, match="one of this server's GMs"):
        campaign_gm_set(campaign=world.campaign, by=world.owner, provider="anthropic")
    assert stored(world) == "local"


@pytest.mark.parametrize("who", ["player", "cogm"])
def test_members_who_do_not_own_it_are_refused_and_it_is_recorded(world, local_seat, who):
    user = getattr(world, who)
    with pytest.raises(Forbidden):
        campaign_gm_set(campaign=world.campaign, by=user, provider="local")
    event = SecurityEvent.objects.get()
    assert (event.user, event.target) == (user, "campaign_gm_set")
    assert stored(world) == ""


def test_the_campaigns_seat_answers_its_turns(world, local_seat, play):
    local_seat.reply("The goblin flinches. ", calls=[call("roll_dice", {"expression": "1d20"})])
    local_seat.reply("It hesitates.")
    campaign_gm_set(campaign=world.campaign, by=world.owner, provider="local")

    turn = play("I glare at the goblin.")

    assert turn.status == Turn.Status.COMPLETED
    assert len(local_seat.requests) == 2 and local_seat.requests[0]["model"] == "llama-test"
    assert not ToolInvocation.objects.filter(turn=turn).exists()  # roll_dice is a read tool
    world.campaign.refresh_from_db()
    assert seat_of(world.campaign).name == "local"


def test_the_seat_names_the_log_rows_model(world, local_seat, play):
    local_seat.reply(
        calls=[call("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1})]
    )
    local_seat.reply("Ow.")
    campaign_gm_set(campaign=world.campaign, by=world.owner, provider="local")
    turn = play("I poke the goblin.")
    assert ToolInvocation.objects.get(turn=turn).model == f"openai/{VERSION}"


def test_a_seat_no_longer_configured_fails_its_turns_saying_why(world, settings, play):
    Campaign.objects.filter(pk=world.campaign.pk).update(gm_provider="gone")
    world.campaign.refresh_from_db()
    assert seat_of(world.campaign).label == "gone (not configured on this server)"
    turn = play("Hello?")
    assert turn.status == Turn.Status.FAILED


# The page


def test_the_page_says_which_gm_sits_and_only_the_owner_may_change_it(world, local_seat):
    page = signed_in(world.player).get(f"/campaigns/{world.campaign.pk}/")
    text = page.content.decode()
    assert "Scripted GM</strong> — understands a few phrases; connect a model" in text
    assert 'href="/help/playing/"' in text
    assert gm_url(world) not in text
    owner = signed_in(world.owner).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert gm_url(world) in owner and "Ollama on the GM&#x27;s laptop" in owner
    assert SECRET not in owner and SECRET not in text

    response = signed_in(world.owner).post(gm_url(world), {"provider": "local"})
    assert response.status_code == 302 and stored(world) == "local"
    after = signed_in(world.player).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert "GM at this table: <strong>Ollama on the GM&#x27;s laptop</strong>" in after
    assert SECRET not in after


def test_the_page_refuses_members_strangers_and_forged_posts(world, local_seat):
    assert signed_in(world.player).post(gm_url(world), {"provider": "local"}).status_code == 403
    assert SecurityEvent.objects.get().target == "campaign_gm_set"
    assert signed_in(world.outsider).post(gm_url(world), {"provider": "local"}).status_code == 404
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(world.owner)
    assert forged.post(gm_url(world), {"provider": "local"}).status_code == 403
    assert signed_in(world.owner).post(gm_url(world), {"provider": "nope"}).status_code == 422
    assert stored(world) == ""


def test_the_help_page_shows_the_readmes_playing_section(client):
    text = client.get("/help/playing/").content.decode()
    assert "OPENAI_BASE_URL=http://127.0.0.1:11434/v1" in text
    assert "Undo this turn" in text and "## Several machines" not in text
