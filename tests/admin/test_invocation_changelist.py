"""The invocation list: every column, every filter, search, and a fixed query count."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from tests.admin.conftest import CHANGELIST, call, listed, move


@pytest.fixture
def log(world):
    """Calls of two campaigns: models, sources, tiers and statuses all differ somewhere."""
    elsewhere = world.foreign.campaign
    rows = {
        "move": move(world, 3, model="claude-sonnet-4-5", source="gm"),
        "hit": call(
            world,
            "modify_creature",
            {"creature_id": world.goblin.pk, "hp_delta": -2},
            model="scripted",
            source="api",
        ),
        "failed": call(world, "consume_resource", {"creature_id": world.hero.pk}, source="api"),
        "scene": invocation_dispatch(
            campaign=elsewhere,
            actor=world.outsider,
            tool_name="set_scene",
            input={"description": "Fog."},
            model="scripted",
        ),
    }
    old = timezone.now() - timedelta(days=400)
    ToolInvocation.objects.filter(pk=rows["scene"].pk).update(created_at=old)
    assert rows["failed"].status == "failed"
    return rows


def ids(log, *names):
    return {log[name].pk for name in names}


def test_list_shows_every_column_newest_first(staff_client, world, log):
    response = staff_client.get(CHANGELIST)
    assert response.status_code == 200
    rows = list(response.context["cl"].result_list)
    assert [r.pk for r in rows] == [log[n].pk for n in ("failed", "hit", "move", "scene")]
    html = response.content.decode()
    for text in (
        "The Sunken Keep",
        "owner",
        "modify_creature",
        "claude-sonnet-4-5",
        "failed",
        'class="audit-tier" style="background:#ba2121">critical</span>',
        f"?campaign={world.campaign.pk}",
        "audit/admin.css",
    ):
        assert text in html
    assert response.context["cl"].list_display == [
        "action_checkbox",
        "when",
        "campaign_link",
        "by",
        "turn_link",
        "tool_name",
        "tier",
        "state",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status__exact=failed", ("failed",)),
        ("status__exact=committed", ("move", "hit", "scene")),
        ("tool_tier__exact=critical", ("hit",)),
        ("tool_tier__exact=low", ("move", "scene")),
        ("tool=modify_creature", ("hit",)),
        ("model=scripted", ("hit", "scene")),
        ("model=-", ("failed",)),
        ("source=gm", ("move",)),
        ("source=api", ("hit", "failed", "scene")),
    ],
)
def test_each_filter_narrows_the_list(staff_client, log, query, expected):
    response = staff_client.get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200
    assert listed(response) == ids(log, *expected)


def test_status_filter_offers_every_status_the_queue_included(staff_client, log):
    spec = next(
        f for f in staff_client.get(CHANGELIST).context["cl"].filter_specs if f.title == "status"
    )
    assert [value for value, _ in spec.lookup_choices] == [
        "pending",
        "committed",
        "failed",
        "reverted",
        "awaiting_approval",
        "rejected",
        "expired",
    ]


def test_campaign_filter(staff_client, world, log):
    response = staff_client.get(f"{CHANGELIST}?campaign={world.foreign.campaign_id}")
    assert listed(response) == ids(log, "scene")
    response = staff_client.get(f"{CHANGELIST}?campaign={world.campaign.pk}")
    assert listed(response) == ids(log, "move", "hit", "failed")


def test_a_malformed_campaign_filter_is_an_error_not_a_crash(staff_client, log):
    response = staff_client.get(f"{CHANGELIST}?campaign=not-a-uuid")
    assert response.status_code == 302 and response.url.endswith("?e=1")


def fullwidth(text: str) -> str:
    """`text` with its digits written fullwidth ("１２…"), which uuid.UUID reads as ASCII ones."""
    return text.translate({ord("0") + n: 0xFF10 + n for n in range(10)})


def test_an_id_in_digits_other_than_ascii_finds_nothing(staff_client, world, log):
    response = staff_client.get(f"{CHANGELIST}?campaign={fullwidth(str(world.campaign.pk))}")
    assert response.status_code == 302 and response.url.endswith("?e=1")
    assert listed(staff_client.get(CHANGELIST, {"q": fullwidth(str(log["hit"].pk))})) == set()


def test_filters_list_only_what_the_log_holds(staff_client, world, log):
    response = staff_client.get(CHANGELIST)
    choices = {
        spec.title: [c["display"] for c in spec.choices(response.context["cl"])]
        for spec in response.context["cl"].filter_specs
    }
    assert choices["tool"] == [
        "All",
        "consume_resource",
        "modify_creature",
        "move_token",
        "set_scene",
    ]
    assert choices["model"] == ["All", "(none)", "claude-sonnet-4-5", "scripted"]
    assert choices["source"] == ["All", "api", "gm"]
    assert set(choices["campaign"]) == {"All", "The Sunken Keep", "Elsewhere"}


def test_date_filters(staff_client, log):
    response = staff_client.get(CHANGELIST)
    (dates,) = [f for f in response.context["cl"].filter_specs if f.title == "created at"]
    (past_week,) = [
        c for c in dates.choices(response.context["cl"]) if c["display"] == "Past 7 days"
    ]
    assert listed(staff_client.get(CHANGELIST + past_week["query_string"])) == ids(
        log, "move", "hit", "failed"
    )
    year = ToolInvocation.objects.get(pk=log["scene"].pk).created_at.year
    old = staff_client.get(f"{CHANGELIST}?created_at__year={year}")
    assert listed(old) == ids(log, "scene")


def test_date_hierarchy_offers_the_years_of_the_log(staff_client, log):
    response = staff_client.get(CHANGELIST)
    years = {str(timezone.now().year), str(timezone.now().year - 1)}
    assert all(f"created_at__year={year}" in response.content.decode() for year in years)


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("Elsewhere", ("scene",)),
        ("sunken", ("move", "hit", "failed")),
        ("outsider", ("scene",)),
        ("modify", ("hit",)),
        ("scene", ("scene",)),
        ("sunken move", ("move",)),
    ],
)
def test_search_by_campaign_actor_and_tool(staff_client, log, term, expected):
    assert listed(staff_client.get(CHANGELIST, {"q": term})) == ids(log, *expected)


def test_search_by_invocation_id_and_campaign_id(staff_client, world, log):
    assert listed(staff_client.get(CHANGELIST, {"q": str(log["hit"].pk)})) == ids(log, "hit")
    by_campaign = staff_client.get(CHANGELIST, {"q": str(world.foreign.campaign_id)})
    assert listed(by_campaign) == ids(log, "scene")


def test_a_staff_member_without_any_audit_permission_sees_nothing(client, world, log):
    world.other.is_staff = True
    world.other.save()
    client.force_login(world.other)
    assert client.get(CHANGELIST).status_code == 403


def test_changelist_of_100_rows_runs_a_fixed_number_of_queries(
    staff_client, world, django_assert_num_queries
):
    def render():
        response = staff_client.get(CHANGELIST)
        assert response.status_code == 200
        return len(response.context["cl"].result_list)

    turn = world.turn()
    for i in range(10):
        move(world, i, turn=turn, model=f"model-{i % 3}")
    # session, user, user and group permissions (4); tool, model and source skip scans and the
    # campaign list (4); the count (1, plus the statistics estimate: 1); the page (1, campaign
    # and actor joined); the date range twice: level and calendar (2)
    expected = 13
    with django_assert_num_queries(expected):
        assert render() == 10
    for i in range(90):
        move(world, i, turn=turn, model=f"model-{i % 3}")
    with django_assert_num_queries(expected):
        assert render() == 100
