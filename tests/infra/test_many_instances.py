"""Many instances behave as one (PostgreSQL + Redis): two ASGI servers and two task workers. A
turn posted on server A is run by either worker, its events reach a websocket on server B, and
an undo on B racing the worker mid-turn leaves no committed tool call on the undone turn."""

import time

from django_tasks_db.models import DBTaskResult

from audit.models import ToolInvocation
from campaigns.models import Creature, Turn
from tests.conftest import World
from tests.servers import Feed, api_token, http


def test_a_turn_posted_on_one_server_streams_to_the_other_and_an_undo_there_wins(
    live_world: World, asgi_server: str, asgi_server_b: str, gm_workers
):
    world = live_world
    workers = [gm_workers(delay=0.5), gm_workers(delay=0.5)]
    player_a = api_token(asgi_server, world.player.username)
    other_b = api_token(asgi_server_b, world.other.username)
    player_b = api_token(asgi_server_b, world.player.username)
    turns = f"/api/campaigns/{world.campaign.pk}/turns/"

    feed = Feed(asgi_server_b, world.campaign.pk, other_b)
    try:
        status, _, body = http(
            "POST",
            asgi_server + turns,
            {"message": "I attack the goblin, then move me to 3,4"},
            player_a,
        )
        assert (status, body["status"]) == (201, "queued")
        turn_id = body["id"]
        queued = feed.wait_for("message_created", turn_id)
        assert queued["data"]["gm"] == "queued"
        feed.wait_for("gm_turn_started", turn_id)
        feed.wait_for("state_changed", turn_id)  # the first tool call has committed

        status, _, undone = http(
            "POST", f"{asgi_server_b}{turns}{turn_id}/undo/", {"reason": "not now"}, player_b
        )
        assert status == 200, undone
        reverted = feed.wait_for("interaction_reverted", turn_id)
        completed = feed.wait_for("gm_turn_completed", turn_id)
    finally:
        feed.close()

    assert reverted["data"]["reason"] == "not now"
    assert completed["data"]["status"] in ("cancelled", "completed")
    turn = Turn.objects.get(pk=turn_id)
    assert turn.reverted_at is not None and turn.status == completed["data"]["status"]
    rows = ToolInvocation.objects.filter(turn=turn)
    assert rows.exists()
    assert not rows.filter(status="committed").exists()  # nothing committed on an undone turn
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7
    hero = Creature.objects.get(pk=world.hero.pk)
    assert (hero.x, hero.y) == (world.hero.x, world.hero.y)
    # The worker stores its task's result just after the task returns, which is after the turn's
    # last event went out: wait for it rather than race it.
    jobs = DBTaskResult.objects.filter(
        task_path="gm.tasks.run_turn", return_value=f"turn {turn_id} {turn.status}"
    )
    deadline = time.monotonic() + 30
    while not jobs.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    [job] = jobs
    assert job.worker_ids[-1] in {w.name for w in workers}
    # Events of two processes (the worker's, server B's undo) may arrive out of commit order;
    # what the feed promises is that none is lost: the seqs it saw are gap-free.
    seqs = sorted(e["seq"] for e in feed.events if e["type"] != "hello")
    assert seqs == list(range(seqs[0], seqs[-1] + 1))
