"""The admin reads as the product's: its own header, one "#" number per call (a turn is "Turn
9"), a held call that was approved says which row it ran as instead of a "pending" for ever, and
the analytics chart of one day labels its date once."""

import re
from datetime import date

from audit.models import ToolInvocation
from tests.admin.conftest import CHANGELIST
from tests.admin.test_approval_queue import act, held
from web.admin.charts import time_chart


def row_of(html: str, row: ToolInvocation) -> str:
    return re.search(rf"<tr>(?:(?!</tr>).)*{row.pk}(?:(?!</tr>).)*</tr>", html, re.S)[0]


def test_the_header_names_the_product(staff_client):
    html = staff_client.get("/admin/").content.decode()
    assert "Undoable GM · admin console" in html
    assert "Django administration" not in html


def test_an_approved_held_call_says_what_it_ran_as_and_a_turn_is_not_a_hash_number(
    staff_client, world
):
    waiting = held(world, world.goblin)
    act(staff_client, "approve_selected", [waiting])
    ran = ToolInvocation.objects.get(approval_of=waiting)
    html = staff_client.get(CHANGELIST).content.decode()
    held_row, ran_row = row_of(html, waiting), row_of(html, ran)
    assert f'<td class="field-state">approved: ran as #{ran.sequence}</td>' in held_row
    assert '<td class="field-state">Committed</td>' in ran_row
    assert 'field-state">Pending' not in html
    assert f">Turn {waiting.turn_id}</a>" in held_row and f">#{waiting.turn_id}<" not in held_row


def test_a_chart_of_one_day_labels_its_date_once():
    one = time_chart([(date(2026, 12, 1), 0.5, 4)])
    assert (one.first, one.last) == ("2026-12-01", "")
    two = time_chart([(date(2026, 12, 1), 0.5, 4), (date(2026, 12, 2), 0.0, 1)])
    assert (two.first, two.last) == ("2026-12-01", "2026-12-02")
