"""A GM turn posted over HTTP, then run by a worker, streams to a member's websocket event by
event, in seq order."""

import pytest
from channels.db import database_sync_to_async
from rest_framework.test import APIClient

from tests.conftest import run_due_tasks
from tests.realtime.conftest import browser, receive_until

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_a_gm_turn_reaches_the_table_live_and_in_order(world):
    socket = await browser(world.campaign.pk, world.other)

    @database_sync_to_async
    def post_turn():
        client = APIClient()
        client.force_authenticate(world.player)
        url = f"/api/campaigns/{world.campaign.pk}/turns/"
        return client.post(
            url, {"message": "Roll initiative and I attack the goblin"}, format="json"
        )

    response = await post_turn()
    assert response.status_code == 201
    assert response.json()["status"] == "queued"
    await database_sync_to_async(run_due_tasks)()
    events = await receive_until(socket, "gm_turn_completed")
    await socket.disconnect()

    types = [e["type"] for e in events]
    assert types[:2] == ["message_created", "gm_turn_started"]
    assert events[0]["data"]["gm"] == "queued"
    assert types[-2:] == ["message_created", "gm_turn_completed"]
    assert types.count("gm_text_delta") >= 2
    assert types.index("state_changed") < len(types) - 2
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    narration = "".join(e["data"]["text"] for e in events if e["type"] == "gm_text_delta")
    assert narration.strip() == events[-2]["data"]["content"]
    assert events[-2]["data"]["role"] == "gm" and events[-2]["source"] == "ai_tool_execution"
    assert events[-1]["data"]["status"] == "completed"
    assert len(events[-1]["data"]["invocations"]) == 2
