"""The MCP endpoint through Daphne, driven by the SDK's own client over real HTTP: who gets in,
what it lists, and every write's path through the log, approval and undo (docs/mcp.md)."""

import json
import urllib.error
import urllib.request

import pytest

from ai_tools import registry
from ai_tools.base import Tier
from audit.models import InvocationOrigin, ToolInvocation
from campaigns.models import Campaign, SecurityEvent, Turn
from campaigns.visibility import HIDDEN_CHANGE
from tests.conftest import commit, dump, fog_over_the_goblin
from tests.mcp.client import mcp_client, mcp_url
from tests.mcp.conftest import called, run, wait_for_event
from tests.servers import Feed, http

pytestmark = pytest.mark.django_db(transaction=True)

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
READS = {"get_state", "recent_log", "pending_approvals", "get_invocation"}
CRITICAL = {"end_adventure", "start_combat", "modify_creature"}


def raw(
    url, token="", scheme="Bearer", body=LIST, origin="", path_suffix="", method="POST", version=""
):
    """A plain request as a hand-written client sends it: (status, headers, body); the headers
    are looked up by name whatever its case (uvicorn sends names in lower case)."""
    data = json.dumps(body).encode() if method == "POST" else None
    request = urllib.request.Request(url + path_suffix, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    request.add_header("MCP-Protocol-Version", version or "2025-11-25")
    if token:
        request.add_header("Authorization", f"{scheme} {token}")
    if origin:
        request.add_header("Origin", origin)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, headers, data = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, data = error.code, error.headers, error.read()
    return status, headers, json.loads(data) if data.strip() else None


# ---- who gets in ------------------------------------------------------------------------------


def test_no_token_bad_token_and_revoked_token_are_401_with_a_challenge(url, token, asgi_server):
    status, headers, body = raw(url)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer ")
    assert body["error"]["code"] == -32600 and body["id"] is None

    status, headers, _ = raw(url, token="not-a-token")
    assert status == 401 and 'error="invalid_token"' in headers["WWW-Authenticate"]

    key = token("player")
    assert raw(url, token=key)[0] == 200
    assert raw(url, token=key, scheme="Token")[0] == 200  # the REST API's keyword, too
    assert http("DELETE", f"{asgi_server}/api/auth/token/", token=key)[0] == 204
    status, headers, _ = raw(url, token=key)
    assert status == 401 and 'error="invalid_token"' in headers["WWW-Authenticate"]


def test_a_token_in_the_query_string_is_refused_even_a_valid_one(url, token):
    key = token("player")
    status, headers, body = raw(url, path_suffix=f"?access_token={key}")
    assert status == 400 and 'error="invalid_request"' in headers["WWW-Authenticate"]
    # With the header too: the URL's credential is refused, not ignored.
    assert raw(url, token=key, path_suffix=f"?token={key}")[0] == 400


def test_another_campaigns_member_gets_404_exactly_as_a_campaign_that_does_not_exist(
    url, token, asgi_server, live_world
):
    outsider = token("outsider")  # the owner of "Elsewhere", no member of the Keep
    status, _, body = raw(url, token=outsider)
    missing = raw(mcp_url(asgi_server, "00000000-0000-4000-8000-000000000000"), token=outsider)
    assert status == 404 and missing[0] == 404
    assert body == missing[2]  # no existence leak
    assert raw(mcp_url(asgi_server, "not-a-uuid"), token=outsider)[0] == 404
    own = mcp_url(asgi_server, Campaign.objects.get(name="Elsewhere").pk)
    assert raw(own, token=outsider)[0] == 200


def test_a_foreign_origin_is_403_the_sites_own_origin_passes(url, token, asgi_server):
    key = token("player")
    assert raw(url, token=key, origin="http://evil.example")[0] == 403
    port = asgi_server.rsplit(":", 1)[1]
    assert raw(url, token=key, origin=f"http://127.0.0.1:{port}")[0] == 200
    # Scheme and port count: the same host on another port or scheme is foreign.
    assert raw(url, token=key, origin=f"http://127.0.0.1:{int(port) + 1}")[0] == 403
    assert raw(url, token=key, origin=f"https://127.0.0.1:{port}")[0] == 403


def test_requests_of_another_era_or_shape_get_json_rpc_errors_never_a_500(url, token):
    key = token("player")
    for body in ({"jsonrpc": "2.0", "id": 1, "method": "no/such"}, {"nonsense": True}, [1, 2]):
        status, _, answer = raw(url, token=key, body=body)
        assert 400 <= status < 500 or (status == 200 and "error" in answer), (body, status)
        assert "error" in (answer[0] if isinstance(answer, list) else answer)
    status, _, answer = raw(
        url, token=key, body={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}
    )
    assert status < 500 and "error" in answer
    status, _, answer = raw(url, token=key, version="1999-01-01")  # an era nobody speaks
    assert 400 <= status < 500 and "error" in answer
    for method in ("GET", "DELETE"):  # no stream, no session: a stateless server keeps none
        status, _, answer = raw(url, token=key, method=method)
        assert 400 <= status < 500, (method, status, answer)


# ---- what a client lists ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_tools_list_names_schemas_annotations_and_the_undoable_meta(url, token, mode):
    async def listed():
        async with mcp_client(url, token("player"), mode=mode) as client:
            return client.protocol_version, (await client.list_tools()).tools

    version, tools = run(listed)
    assert (version == "2025-11-25") == (mode == "legacy"), version
    by_name = {tool.name: tool for tool in tools}
    writes = registry.write_tools()
    assert len(writes) == 15
    for tool in writes:
        listed_tool = by_name[tool.name]
        hints = listed_tool.annotations
        assert listed_tool.input_schema == tool.schema
        assert hints.read_only_hint is False
        assert hints.destructive_hint is (tool.name in CRITICAL)
        assert hints.idempotent_hint is tool.idempotent
        assert hints.title
        assert listed_tool.meta["undoable.gm/tier"] == tool.tier
        assert listed_tool.meta["undoable.gm/undoable"] is True
    assert {t.name for t in writes if t.tier == Tier.CRITICAL} == CRITICAL
    for name in READS:
        assert by_name[name].annotations.read_only_hint is True
    for name in ("undo_invocation", "undo_turn", "begin_turn"):
        assert by_name[name].annotations.read_only_hint is False
    assert by_name["undo_turn"].annotations.idempotent_hint is True


# ---- writes: committed, refused, undone -------------------------------------------------------


def test_a_committed_call_is_logged_as_mcp_then_reverted_over_rest(
    url, token, asgi_server, live_world
):
    before = dump(live_world.campaign)
    answer = called(
        url, token("player"), "move_token", {"creature_id": live_world.hero.pk, "x": 3, "y": 4}
    )
    content = answer.structured_content
    assert answer.is_error is False and content["status"] == "committed"
    assert content["summary"] == "Thorin moves from 1,1 to 3,4"
    assert content["result"]["to"] == [3, 4]
    row = ToolInvocation.objects.get(pk=content["invocation"])
    assert row.source == InvocationOrigin.MCP and row.model == "mcp:table-agent 0.3"
    assert row.user == live_world.player and row.turn_id == content["turn"]
    assert Turn.objects.get(pk=content["turn"]).actor == live_world.player
    assert dump(live_world.campaign) != before

    status, _, body = http(
        "POST",
        f"{asgi_server}/api/campaigns/{live_world.campaign.pk}/invocations/{row.pk}/revert/",
        {},
        token=token("player"),
    )
    assert status == 200 and body["reverted"] is True
    assert dump(live_world.campaign) == before


def test_a_model_named_in_meta_is_the_rows_model(url, token, live_world):
    async def go():
        async with mcp_client(url, token("owner")) as client:
            return await client.call_tool(
                "set_scene", {"description": "Fog rolls in."}, meta={"undoable.gm/model": "m-7"}
            )

    row = ToolInvocation.objects.get(pk=run(go).structured_content["invocation"])
    assert row.model == "m-7"


def test_a_refused_call_changes_nothing_and_says_why(url, token, live_world):
    before = dump(live_world.campaign)
    answer = called(
        url,
        token("player"),
        "modify_creature",
        {"creature_id": live_world.goblin.pk, "hp_delta": -5},
    )
    assert answer.is_error is True
    assert "not your character" in answer.content[0].text
    assert answer.structured_content["status"] == "failed"
    row = ToolInvocation.objects.get(pk=answer.structured_content["invocation"])
    assert row.status == ToolInvocation.Status.FAILED and row.source == InvocationOrigin.MCP
    assert SecurityEvent.objects.filter(
        kind=SecurityEvent.Kind.TOOL_CALL_DENIED, user=live_world.player
    ).exists()
    assert dump(live_world.campaign) == before
    # Invalid input: a failed row too, nothing changed.
    bad = called(url, token("player"), "move_token", {"creature_id": live_world.hero.pk, "x": -9})
    assert bad.is_error is True and "Invalid input" in bad.content[0].text
    assert dump(live_world.campaign) == before


@pytest.mark.parametrize("undoer", ["player", "owner", "cogm"])
def test_undo_invocation_by_the_actor_the_owner_and_a_co_gm(url, token, live_world, undoer):
    before = dump(live_world.campaign)
    done = called(
        url, token("player"), "move_token", {"creature_id": live_world.hero.pk, "x": 7, "y": 7}
    )
    invocation = done.structured_content["invocation"]
    undone = called(url, token(undoer), "undo_invocation", {"invocation_id": invocation})
    assert undone.is_error is False and undone.structured_content["reverted"] is True
    assert dump(live_world.campaign) == before
    again = called(url, token(undoer), "undo_invocation", {"invocation_id": invocation})
    assert again.structured_content == {"reverted": False, "skip_reason": "already_reverted"}


def test_undo_invocation_is_refused_for_another_player(url, token, live_world):
    done = called(
        url, token("player"), "move_token", {"creature_id": live_world.hero.pk, "x": 7, "y": 7}
    )
    after = dump(live_world.campaign)
    refused = called(
        url,
        token("other"),
        "undo_invocation",
        {"invocation_id": done.structured_content["invocation"]},
    )
    assert refused.is_error is True and refused.structured_content["code"] == 403
    assert dump(live_world.campaign) == after
    assert SecurityEvent.objects.filter(
        kind=SecurityEvent.Kind.REVERT_DENIED, user=live_world.other
    ).exists()


def test_calls_join_the_agents_turn_and_undo_turn_undoes_its_work(url, token, live_world):
    before = dump(live_world.campaign)

    async def work():
        async with mcp_client(url, token("player")) as client:
            turn = (
                await client.call_tool("begin_turn", {"message": "I scout."})
            ).structured_content["turn"]
            first = await client.call_tool(
                "move_token", {"creature_id": live_world.hero.pk, "x": 2, "y": 2}
            )
            second = await client.call_tool(
                "move_token", {"creature_id": live_world.hero.pk, "x": 3, "y": 3}
            )
            undone = await client.call_tool("undo_turn", {"turn_id": turn})
            after = await client.call_tool(
                "move_token", {"creature_id": live_world.hero.pk, "x": 4, "y": 4}
            )
            return turn, first, second, undone, after

    turn, first, second, undone, after = run(work)
    assert first.structured_content["turn"] == second.structured_content["turn"] == turn
    assert undone.is_error is False and len(undone.structured_content["reverted"]) == 2
    # The undone turn takes no more calls: the next opens a new one.
    assert after.structured_content["status"] == "committed"
    assert after.structured_content["turn"] != turn
    assert Turn.objects.get(pk=turn).actor == live_world.player
    called(
        url,
        token("player"),
        "undo_invocation",
        {"invocation_id": after.structured_content["invocation"]},
    )
    assert dump(live_world.campaign) == before


def test_a_player_may_not_post_into_another_players_turn(url, token, live_world):
    theirs = live_world.turn(actor=live_world.other)

    async def go():
        async with mcp_client(url, token("player")) as client:
            return await client.call_tool(
                "move_token",
                {"creature_id": live_world.hero.pk, "x": 5, "y": 1},
                meta={"undoable.gm/turn": theirs.pk},
            )

    answer = run(go)
    assert answer.is_error is True and answer.structured_content["code"] == 403


# ---- human in the loop ------------------------------------------------------------------------


def test_a_held_call_awaits_approval_then_runs_once_approved_over_rest(
    url, token, asgi_server, live_world
):
    Campaign.objects.filter(pk=live_world.campaign.pk).update(approval_policy="critical")
    before = dump(live_world.campaign)
    feed = Feed(asgi_server, live_world.campaign.pk, token("owner"))
    try:
        held = called(
            url,
            token("player"),
            "modify_creature",
            {"creature_id": live_world.hero.pk, "hp_delta": -4},
        )
        content = held.structured_content
        # The approvers' card, as for the GM's own calls, names the client.
        card = wait_for_event(feed, "approval_requested", content["invocation"])
    finally:
        feed.close()
    assert card["data"]["model"] == "mcp:table-agent 0.3"
    assert held.is_error is False and content["status"] == "awaiting_approval"
    assert content["preview"]["diff"] and content["preview"]["reason"]
    assert dump(live_world.campaign) == before
    pending = called(url, token("player"), "pending_approvals", {}).structured_content["pending"]
    assert [p["id"] for p in pending] == [content["invocation"]]

    # The agent cannot approve its own call: no tool does, and the player may not approve.
    base = (
        f"{asgi_server}/api/campaigns/{live_world.campaign.pk}/invocations/{content['invocation']}"
    )
    assert http("POST", f"{base}/approve/", {}, token=token("player"))[0] == 403
    status, _, body = http("POST", f"{base}/approve/", {}, token=token("owner"))
    assert status == 200 and body["status"] == "committed"
    live_world.hero.refresh_from_db()
    assert live_world.hero.hp == 16

    told = called(url, token("player"), "get_invocation", {"invocation_id": content["invocation"]})
    assert told.structured_content["invocation"]["approval"]["status"] == "approved"
    assert "approval: approved" in told.content[0].text


# ---- the table sees it ------------------------------------------------------------------------


def test_the_tables_websocket_sees_the_agents_call_and_its_undo(
    url, token, asgi_server, live_world
):
    feed = Feed(asgi_server, live_world.campaign.pk, token("owner"))
    try:
        done = called(
            url, token("player"), "move_token", {"creature_id": live_world.hero.pk, "x": 6, "y": 2}
        )
        invocation = done.structured_content["invocation"]
        changed = wait_for_event(feed, "state_changed", invocation)
        assert changed["source"] == "ai_tool_execution"
        assert changed["data"]["entity"] == "creature"
        assert changed["data"]["fields"]["x"] == 6
        called(url, token("player"), "undo_invocation", {"invocation_id": invocation})
        reverted = wait_for_event(feed, "invocation_reverted", invocation)
        assert reverted["data"]["tool_name"] == "move_token"
    finally:
        feed.close()


# ---- the fog ----------------------------------------------------------------------------------


def test_a_players_agent_reads_the_log_through_the_fog_as_the_api_shows_it(url, token, live_world):
    """The GM moves the goblin in the fog: the player's agent learns a call ran, not where the
    goblin went; the GM's agent reads it whole."""
    fog_over_the_goblin(live_world)
    moved = commit(live_world, "move_token", {"creature_id": live_world.goblin.pk, "x": 9, "y": 9})
    seen = called(url, token("player"), "recent_log", {"limit": 5}).structured_content
    row = next(r for r in seen["invocations"] if r["id"] == str(moved.pk))
    assert row["concealed"] is True and row["input"] == {} and row["result"] is None
    assert row["summary"] == HIDDEN_CHANGE
    one = called(url, token("player"), "get_invocation", {"invocation_id": str(moved.pk)})
    assert one.structured_content["invocation"]["input"] == {}
    assert "9" not in one.content[0].text
    gm = called(url, token("owner"), "recent_log", {"limit": 5}).structured_content
    whole = next(r for r in gm["invocations"] if r["id"] == str(moved.pk))
    assert whole["concealed"] is False and whole["input"]["x"] == 9
