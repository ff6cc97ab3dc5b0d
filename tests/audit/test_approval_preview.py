"""The preview of a held call: it never changes the database, in any state the tools can reach,
and it says exactly what the call then does when it runs."""

from datetime import datetime

from django.db import transaction
from hypothesis import given
from hypothesis import strategies as st

from ai_tools import entities, registry
from ai_tools.base import Powers, ToolContext
from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch
from audit.services.common import ToolFailed, campaign_lock
from audit.services.preview import call_preview
from tests.audit.test_properties import PROPERTY_SETTINGS, drawn_input, play, write_tool_names
from tests.conftest import build_world, dump, rolled_back


def preview_now(world, tool_name, data, actor):
    with transaction.atomic():
        locked = campaign_lock(world.campaign.pk)
        ctx = ToolContext(campaign=locked, actor=actor, powers=Powers(gm=True))
        try:
            return call_preview(registry.write_tool(tool_name), ctx, data, reason="test")
        except ToolFailed:
            return None


@PROPERTY_SETTINGS
@given(data=st.data())
def test_previewing_any_call_in_any_state_changes_nothing(db, data):
    with rolled_back():
        world = build_world()
        play(data, world, write_tool_names())
        name = data.draw(st.sampled_from(write_tool_names()), label="previewed")
        actor = data.draw(st.sampled_from([world.owner, world.player]), label="actor")
        payload = drawn_input(data, world, name)
        before = dump(world.campaign)
        preview = preview_now(world, name, payload, actor)
        assert dump(world.campaign) == before
        row = invocation_dispatch(
            campaign=world.campaign,
            actor=actor,
            tool_name=name,
            input=payload,
            source=InvocationOrigin.GM,
        )
        assert (preview is None) == (row.status == ToolInvocation.Status.FAILED)
        if preview is not None:
            assert_preview_says_what_ran(world, preview, row)


def assert_preview_says_what_ran(world, preview, row) -> None:
    """Of the entities that existed, the fields the call changed are exactly those the preview
    named, each now holding the preview's `after` (created rows may get other ids)."""
    existing = [k for k, v in preview["before"].items() if v is not None]
    ids = {entities.parse(k)[:2] for k in existing}
    expected = {
        (d["entity"], d["id"], d["field"]): d["after"]
        for d in preview["diff"]
        if (d["entity"], d["id"]) in ids
    }
    changed = {}
    for k in existing:
        kind, pk, _ = entities.parse(k)
        was, now = preview["before"][k], entities.capture(world.campaign, k) or {}
        for field in set(was) | set(now):
            if was.get(field) != now.get(field):
                changed[(kind, pk, field)] = now.get(field)
    assert timeless(changed) == timeless(expected), row.tool_name


def timeless(values: dict) -> dict:
    """A moment the call stamps (`completed_at`, `ended_at`) is now, whenever it runs: the
    preview promises that one is set, not the microsecond."""
    return {k: "<now>" if _is_moment(v) else v for k, v in values.items()}


def _is_moment(value) -> bool:
    try:
        return isinstance(value, str) and datetime.fromisoformat(value) is not None
    except ValueError:
        return False
