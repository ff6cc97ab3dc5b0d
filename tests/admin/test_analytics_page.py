"""The admin's analytics page: revert rates by model, by tool and by day as server-drawn SVG,
the figures a count of the log gives, for staff holding the audit permission only."""

from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from audit.models import ToolInvocation
from tests.api.test_analytics import SCRIPTED, SONNET, build_log
from tests.conftest import World, make_user, signed_in

URL = reverse("admin:audit_toolinvocation_analytics")


@pytest.fixture
def log(world: World) -> World:
    build_log(world)
    return world


def rates_by(rows, index: int) -> dict[str, str]:
    """name → "25% of 4", counted from (model, tool_name, status) triples."""
    reverted, ran = Counter(), Counter()
    for row in rows:
        if row[2] in ("committed", "reverted"):
            ran[row[index]] += 1
            reverted[row[index]] += row[2] == "reverted"
    shown = {}
    for name, n in ran.items():
        rate = round(100 * reverted[name] / n, 1)
        shown[name] = f"{rate:.0f}% of {n}" if rate == int(rate) else f"{rate}% of {n}"
    return shown


def test_the_charts_show_what_a_count_of_the_log_gives(log: World, staff_client):
    response = staff_client.get(URL)
    assert response.status_code == 200
    triples = list(ToolInvocation.objects.values_list("model", "tool_name", "status"))
    by_model = {bar.label: bar.value for bar in response.context["by_model"].bars}
    by_tool = {bar.label: bar.value for bar in response.context["by_tool"].bars}
    assert by_model == rates_by(triples, 0)
    assert by_tool == rates_by(triples, 1)
    assert by_model[SCRIPTED] == "100% of 3" and by_model[SONNET] == "28.6% of 7"
    html = response.content.decode()
    assert html.count('<svg class="audit-chart"') == 3
    assert "100% of 3" in html and "cdn" not in html.lower()


def test_the_day_chart_has_a_column_per_day_with_its_rate(log: World, staff_client):
    two_days_ago = timezone.now() - timedelta(days=2)
    ToolInvocation.objects.filter(model=SCRIPTED).update(created_at=two_days_ago)
    chart = staff_client.get(URL).context["by_day"]
    titles = [column.title for column in chart.columns]
    assert titles == [
        f"{two_days_ago.date().isoformat()}: 100% of 3 undone",
        f"{timezone.now().date().isoformat()}: 28.6% of 7 undone",
    ]
    assert chart.columns[0].height == chart.plot_height and chart.columns[0].y == 0


def test_days_and_campaign_narrow_what_is_counted(log: World, staff_client):
    ToolInvocation.objects.filter(model=SCRIPTED).update(
        created_at=timezone.now() - timedelta(days=10)
    )
    recent = staff_client.get(URL, {"days": 7, "campaign": str(log.campaign.pk)})
    assert recent.status_code == 200
    assert {bar.label for bar in recent.context["by_model"].bars} == {SONNET}
    assert {row["tool_name"] for row in recent.context["rows"]} == {"modify_creature", "move_token"}
    assert (
        sum(row["calls"] for row in recent.context["rows"])
        == ToolInvocation.objects.filter(campaign=log.campaign, model=SONNET).count()
    )


@pytest.mark.parametrize(
    "query", [{"days": "0"}, {"days": "x"}, {"campaign": "nope"}, {"days": "３０"}, {"days": "٧"}]
)
def test_a_bad_filter_is_a_400_that_says_why(log: World, staff_client, query):
    response = staff_client.get(URL, query)
    assert response.status_code == 400
    assert 'class="errornote"' in response.content.decode()


def test_only_staff_holding_the_audit_permission_see_it(log: World):
    clerk = signed_in(make_user("clerk", is_staff=True))
    assert clerk.get(URL).status_code == 403
    player = signed_in(log.player).get(URL)
    assert player.status_code == 302 and "/admin/login/" in player["Location"]


def test_the_index_links_to_it_for_staff_who_read_the_log(staff_client):
    html = staff_client.get(reverse("admin:index")).content.decode()
    assert f'href="{URL}"' in html
    clerk = signed_in(make_user("clerk", is_staff=True))
    assert f'href="{URL}"' not in clerk.get(reverse("admin:index")).content.decode()
