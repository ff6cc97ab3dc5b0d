"""Tamper evidence: the keyed chain survives normal use and reverts; every edit of a hashed
field, every inserted, deleted, forged or re-chained link and every status flipped without its
transition is reported, and a cut-off tail is caught against an anchored head."""

import importlib
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit import chain
from audit.chain import check, verify
from audit.models import StatusTransition, ToolInvocation
from audit.services import invocation_dispatch, invocation_revert, turn_undo
from tests.audit.test_hostile_rows import JSON
from tests.conftest import make_user

FORGER_KEY = "a-key-guessed-by-someone-without-the-real-one"


@pytest.fixture
def log(world):
    turn = world.turn(actor=world.owner)
    rows = [
        invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name="move_token",
            input={"creature_id": world.hero.pk, "x": i, "y": i},
            turn=turn,
        )
        for i in range(1, 4)
    ]
    rows.append(
        invocation_dispatch(
            campaign=world.campaign, actor=world.owner, tool_name="end_combat", input={}
        )
    )  # a failed row
    return rows


def revert(world, row, reason="oops"):
    return invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner, reason=reason
    )


def verify_log(*args: str, capsys) -> tuple[bool, str, str]:
    """Run the command: (passed, stdout, stderr)."""
    try:
        call_command("verify_log", *args)
        passed = True
    except CommandError:
        passed = False
    out, err = capsys.readouterr()
    return passed, out, err


def anchor(tmp_path, capsys) -> str:
    passed, out, _ = verify_log(capsys=capsys)
    assert passed
    path = tmp_path / "anchor.txt"
    path.write_text(out)
    return str(path)


def test_rows_link_to_their_predecessor(world, log):
    hashes = list(
        ToolInvocation.objects.filter(campaign=world.campaign)
        .order_by("sequence")
        .values_list("prev_hash", "row_hash")
    )
    assert hashes[0][0] == ""
    assert all(len(h) == 64 for _, h in hashes)
    assert [prev for prev, _ in hashes[1:]] == [h for _, h in hashes[:-1]]
    assert verify(world.campaign.pk) is None


def test_a_revert_is_chained_as_a_transition_and_the_chain_stays_intact(world, log, capsys):
    revert(world, log[2])
    link = StatusTransition.objects.get()
    assert (link.invocation_id, link.from_status, link.to_status) == (
        log[2].pk,
        "committed",
        "reverted",
    )
    assert (link.after_sequence, link.ordinal, link.reason) == (4, 1, "oops")
    assert link.prev_hash == log[3].row_hash
    later = invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="set_scene",
        input={"description": "Calm"},
    )
    assert later.prev_hash == link.row_hash  # the next row links to the transition
    passed, out, _ = verify_log(capsys=capsys)
    assert passed and "every link intact" in out
    assert f"HEAD campaign={world.campaign.pk} length=6 hash={later.row_hash}" in out


def test_an_undo_chains_one_transition_per_reverted_call(world, log):
    turn_undo(campaign_id=world.campaign.pk, turn_id=log[0].turn_id, user=world.owner)
    links = list(StatusTransition.objects.order_by("ordinal"))
    assert [link.invocation_id for link in links] == [log[2].pk, log[1].pk, log[0].pk]
    assert [link.ordinal for link in links] == [1, 2, 3]
    assert check(world.campaign.pk).length == 7
    assert verify(world.campaign.pk) is None


# --- the hashed field lists --------------------------------------------------------------


def concrete(model: Any) -> set[str]:
    return {f.attname for f in model._meta.concrete_fields}


def test_every_field_of_a_row_is_hashed_or_excluded_for_a_stated_reason():
    """A field added to the model without a decision fails here."""
    hashed, excluded = set(chain.HASHED_FIELDS), set(chain.UNHASHED_FIELDS)
    assert not hashed & excluded
    assert hashed | excluded == concrete(ToolInvocation)
    assert len(hashed) == len(chain.HASHED_FIELDS)


def test_every_field_of_a_transition_is_hashed_or_excluded_for_a_stated_reason():
    hashed, excluded = set(chain.TRANSITION_HASHED_FIELDS), set(chain.TRANSITION_UNHASHED_FIELDS)
    assert not hashed & excluded
    assert hashed | excluded == concrete(StatusTransition)


def other_value(world, row: ToolInvocation, name: str) -> Any:
    """A different value of the same type for `name`, as a tamperer would write it."""
    value = getattr(row, name)
    special = {
        "id": uuid.uuid4(),
        "campaign_id": world.foreign.campaign_id,
        "user_id": world.player.pk,
        "requested_by_id": world.cogm.pk,
        "turn_id": world.turn().pk,
        "approval_of_id": row.pk,  # an approval made up for a row that was never held
        "sequence": 99,
        "status": "failed",
        "tool_tier": "critical",
        "revertible": not value,
    }
    if name in special:
        return special[name]
    if hasattr(value, "isoformat"):
        return value - timedelta(seconds=1)
    if isinstance(value, str):
        return value + "!"
    if isinstance(value, list):
        return [*value, "creature:1"]
    return {"forged": True} if value != {"forged": True} else {}


@pytest.mark.parametrize("name", chain.HASHED_FIELDS)
def test_an_edit_to_any_hashed_field_is_reported(world, log, name):
    row = log[3] if name == "id" else log[1]  # the failed row: nothing refers to its id
    ToolInvocation.objects.filter(pk=row.pk).update(**{name: other_value(world, row, name)})
    assert verify(world.campaign.pk) is not None, name


@pytest.mark.parametrize("name", chain.TRANSITION_HASHED_FIELDS)
def test_an_edit_to_any_hashed_field_of_a_transition_is_reported(world, log, name):
    revert(world, log[2])
    link = StatusTransition.objects.get()
    value = getattr(link, name)
    changed = {
        "campaign_id": world.foreign.campaign_id,
        "invocation_id": log[1].pk,
        "after_sequence": 3,
        "ordinal": 2,
        "from_status": "failed",
        "to_status": "committed",
        "by_id": world.cogm.pk,
        "reason": "edited",
        "at": value - timedelta(seconds=1) if hasattr(value, "isoformat") else None,
    }[name]
    StatusTransition.objects.filter(pk=link.pk).update(**{name: changed})
    assert verify(world.campaign.pk) is not None, name


@pytest.mark.parametrize(
    "edit",
    [
        {"revert_reason": "a nicer reason"},
        {"reverted_by_id": "cogm"},
        {"reverted_at": None},
    ],
)
def test_an_edit_to_the_revert_fields_of_a_reverted_row_is_reported(world, log, edit):
    revert(world, log[2])
    if "reverted_by_id" in edit:
        edit = {"reverted_by_id": world.cogm.pk}
    ToolInvocation.objects.filter(pk=log[2].pk).update(**edit)
    assert "revert fields" in verify(world.campaign.pk).problem


# --- the five attacks --------------------------------------------------------------------


def test_deleting_the_last_row_is_caught_against_the_anchored_head(world, log, tmp_path, capsys):
    expect = anchor(tmp_path, capsys)
    ToolInvocation.objects.filter(pk=log[-1].pk).delete()
    passed, _, err = verify_log("--expect", expect, capsys=capsys)
    assert not passed
    assert "3 links, but 4 were anchored" in err


def test_a_forged_appended_row_sealed_without_the_key_is_reported(world, log):
    forged = ToolInvocation(
        campaign=world.campaign,
        user=world.owner,
        sequence=5,
        tool_name="modify_creature",
        tool_tier="critical",
        input={"creature_id": world.goblin.pk, "hp_delta": -7},
        status="committed",
        prev_hash=log[-1].row_hash,
    )
    forged.save()  # sealed as the dispatch seals: what was written, created_at included
    with override_settings(AUDIT_CHAIN_KEY=FORGER_KEY):
        chain.seal(forged)
    forged.save(update_fields=["row_hash"])
    broken = verify(world.campaign.pk)
    assert (broken.sequence, broken.invocation_id) == (5, forged.pk)
    assert "altered" in broken.problem


def test_an_edited_row_re_chained_without_the_key_is_reported(world, log):
    rows = list(ToolInvocation.objects.filter(campaign=world.campaign).order_by("sequence"))
    rows[1].input = {"creature_id": world.hero.pk, "x": 9, "y": 9}
    previous = rows[0].row_hash
    with override_settings(AUDIT_CHAIN_KEY=FORGER_KEY):
        for row in rows[1:]:
            row.prev_hash = previous
            chain.seal(row)
            previous = row.row_hash
    ToolInvocation.objects.bulk_update(rows, ["input", "prev_hash", "row_hash"])
    broken = verify(world.campaign.pk)
    assert (broken.sequence, broken.invocation_id) == (2, rows[1].pk)
    assert "altered" in broken.problem


def test_flipping_a_status_to_reverted_is_reported(world, log):
    ToolInvocation.objects.filter(pk=log[1].pk).update(
        status="reverted", reverted_by=world.owner, revert_reason="never happened"
    )
    broken = verify(world.campaign.pk)
    assert broken.sequence == 2 and "altered" in broken.problem


def test_flipping_a_reverted_status_back_is_reported(world, log):
    revert(world, log[1 + 1])
    ToolInvocation.objects.filter(pk=log[2].pk).update(
        status="committed", reverted_at=None, reverted_by=None, revert_reason=""
    )
    broken = verify(world.campaign.pk)
    assert broken.sequence == 3 and "transitions do not" in broken.problem


def test_flipping_back_and_deleting_the_transition_is_caught_against_the_anchor(
    world, log, tmp_path, capsys
):
    revert(world, log[2])
    expect = anchor(tmp_path, capsys)
    StatusTransition.objects.all().delete()
    ToolInvocation.objects.filter(pk=log[2].pk).update(
        status="committed", reverted_at=None, reverted_by=None, revert_reason=""
    )
    passed, _, err = verify_log("--expect", expect, capsys=capsys)
    assert not passed and "4 links, but 5 were anchored" in err


def test_a_deleted_middle_row_is_reported(world, log):
    ToolInvocation.objects.filter(pk=log[1].pk).delete()
    broken = verify(world.campaign.pk)
    assert broken.sequence == 3 and "missing" in broken.problem


def test_a_deleted_middle_transition_is_reported(world, log):
    revert(world, log[2])
    revert(world, log[1])
    StatusTransition.objects.filter(ordinal=1).delete()
    assert verify(world.campaign.pk) is not None


# --- anchors -----------------------------------------------------------------------------


def test_an_anchor_still_holds_after_the_log_grew(world, log, tmp_path, capsys):
    expect = anchor(tmp_path, capsys)
    revert(world, log[2])
    invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="set_scene",
        input={"description": "x"},
    )
    passed, out, err = verify_log("--expect", expect, capsys=capsys)
    assert passed, err
    assert f"HEAD campaign={world.campaign.pk} length=6 " in out


def test_a_log_rewritten_under_the_key_from_the_anchor_on_is_caught(world, log, tmp_path, capsys):
    """Even someone holding the key cannot rewrite what an outside anchor covers."""
    expect = anchor(tmp_path, capsys)
    rows = list(ToolInvocation.objects.filter(campaign=world.campaign).order_by("sequence"))
    rows[0].input = {"creature_id": world.hero.pk, "x": 7, "y": 7}
    previous = ""
    for row in rows:
        row.prev_hash = previous
        chain.seal(row)
        previous = row.row_hash
    ToolInvocation.objects.bulk_update(rows, ["input", "prev_hash", "row_hash"])
    assert verify(world.campaign.pk) is None
    passed, _, err = verify_log("--expect", expect, capsys=capsys)
    assert not passed and "link 4 no longer matches its anchor" in err


def test_an_anchored_campaign_that_is_gone_is_reported(world, log, tmp_path, capsys):
    expect = anchor(tmp_path, capsys)
    world.campaign.delete()
    passed, _, err = verify_log("--expect", expect, capsys=capsys)
    assert not passed and "no longer exists" in err


def test_a_broken_campaign_fails_the_command_and_is_named(world, log, capsys):
    ToolInvocation.objects.filter(pk=log[1].pk).update(input={"creature_id": 1, "x": 9, "y": 9})
    passed, out, err = verify_log("--campaign", str(world.campaign.pk), capsys=capsys)
    assert not passed
    assert f"BROKEN campaign {world.campaign.pk}: #2 ({log[1].pk}) was altered" in err
    assert f"HEAD campaign={world.campaign.pk} length=4 " in out


def test_a_user_who_reverted_cannot_be_deleted_from_under_the_chain(world, log):
    from django.db.models import ProtectedError

    reverter = make_user("reverter")
    link = StatusTransition.objects.create(
        campaign=world.campaign,
        invocation=log[0],
        after_sequence=4,
        ordinal=1,
        from_status="committed",
        to_status="reverted",
        by=reverter,
        at=log[0].created_at,
        prev_hash="",
        row_hash="",
    )
    with pytest.raises(ProtectedError):
        reverter.delete()
    assert StatusTransition.objects.filter(pk=link.pk).exists()


# --- the canonical stored form (numbers spelled differently by Python and PostgreSQL) -------


def test_one_number_has_one_canonical_spelling():
    assert chain.canonical(1e16) == chain.canonical(10**16) == "1e16"
    assert chain.canonical(-0.0) == chain.canonical(0) == chain.canonical(0.0) == "0"
    assert chain.canonical(6.0) == chain.canonical(6) == "6e0"
    assert chain.canonical(0.5) == "5e-1"
    assert chain.canonical(10**30 + 1) == "1000000000000000000000000000001e0"
    assert chain.canonical({"b": [1.5e300], "a": "1e16"}) == '{"a":"1e16","b":[15e299]}'
    assert chain.canonical(True) == "true" and chain.canonical(1) == "1e0"


ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=ANY_JSON | JSON)
def test_the_fast_canonical_writes_what_the_definition_writes(value):
    """`canonical` (the one the dispatch seals with: a recursive writer, or for deep values a
    walk) against `canonical_by_tokens` (the definition: sorted dump, numbers rewritten): every
    existing seal stays valid. Both of its writers, each on every value."""
    expected = chain.canonical_by_tokens(value)
    assert chain.canonical(value) == expected
    assert chain._canonical_walk(json.loads(json.dumps(value))) == expected


def test_the_fast_canonical_is_not_limited_by_depth():
    deep: Any = 0
    for _ in range(400):  # far deeper than the recursive writer goes: the walk writes it
        deep = {"a": [deep, 1.5, "x"]}
    assert chain.canonical(deep) == chain.canonical_by_tokens(deep)
    at_the_edge: Any = 0
    for _ in range(chain._MAX_DEPTH // 2):  # the writer's last level, then one too deep
        at_the_edge = {"a": [at_the_edge]}
    assert chain.canonical(at_the_edge) == chain.canonical_by_tokens(at_the_edge)
    assert chain.canonical([at_the_edge]) == chain.canonical_by_tokens([at_the_edge])


@pytest.mark.parametrize(
    "value", [1e16, 1e308, -0.0, 5e-324, 1e-7, 10**30 + 1, 0.1, 6.0, [1e16, {"a": -0.0}]]
)
def test_a_number_stored_in_another_spelling_does_not_cry_wolf(world, value, capsys):
    """The reported false alarm: a failed row keeps the input as sent, and PostgreSQL's jsonb
    hands back 1e16 as 10000000000000000 and -0.0 as 0.0."""
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        tool_name="modify_creature",
        input={"creature_id": world.hero.pk, "hp_delta": value},
    )
    assert row.status == "failed"
    assert verify(world.campaign.pk) is None
    assert verify_log(capsys=capsys)[0]


def seal_row(world, sequence: int, prev_hash: str, data: st.DataObject) -> ToolInvocation:
    row = ToolInvocation(
        campaign=world.campaign,
        user=world.owner,
        sequence=sequence,
        tool_name="set_scene",
        status="committed",
        input=data.draw(JSON, label="input"),
        result=data.draw(JSON, label="result"),
        revert_snapshot=data.draw(JSON, label="revert_snapshot"),
        post_state=data.draw(JSON, label="post_state"),
        broadcast_events=data.draw(st.lists(JSON, max_size=2), label="broadcast_events"),
        prev_hash=prev_hash,
    )
    row.save()  # created_at is set on save; seal what was written, as the dispatch does
    chain.seal(row)
    row.save(update_fields=["row_hash"])
    return row


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_row_holding_any_json_verifies_as_the_database_stores_it(world, data):
    """Sealed from the Python values before the write, verified from what the database hands
    back (`jsonb`): the same, whatever the JSON."""
    with transaction.atomic():
        previous = ""
        for sequence in (1, 2):
            previous = seal_row(world, sequence, previous, data).row_hash
        assert verify(world.campaign.pk) is None
        transaction.set_rollback(True)


# --- the migration that re-seals logs written under the old, unkeyed chain -----------------


def old_chain(world) -> Any:
    """Put the campaign's log back as the unkeyed chain left it: sha256 links, no transitions."""
    reseal = importlib.import_module("audit.migrations.0009_reseal_chains_keyed")
    StatusTransition.objects.all().delete()
    rows = list(ToolInvocation.objects.filter(campaign=world.campaign).order_by("sequence"))
    previous = ""
    for row in rows:
        row.prev_hash, row.row_hash = previous, reseal._old_hash(row, previous)
        previous = row.row_hash
    ToolInvocation.objects.bulk_update(rows, ["prev_hash", "row_hash"])
    return reseal


def test_the_migration_re_seals_an_intact_old_log_with_its_reverts(world, log):
    revert(world, log[2])
    reseal = old_chain(world)
    assert verify(world.campaign.pk) is not None
    reseal.reseal(django_apps, None)
    assert verify(world.campaign.pk) is None
    link = StatusTransition.objects.get()
    assert (link.invocation_id, link.to_status, link.reason) == (log[2].pk, "reverted", "oops")


def test_the_migration_leaves_a_broken_old_log_broken(world, log):
    reseal = old_chain(world)
    ToolInvocation.objects.filter(pk=log[1].pk).update(input={"creature_id": 1, "x": 9, "y": 9})
    reseal.reseal(django_apps, None)
    assert verify(world.campaign.pk) is not None
