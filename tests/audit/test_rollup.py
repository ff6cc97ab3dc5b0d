"""The analytics rollup (audit/rollup.py) answers exactly what a count of the log gives: after any
interleaving of calls, failures, reverts, calls held for approval and their outcomes, read at
any moment, for any scope and any `since` (across day edges); when two readers fold at once
(PostgreSQL); and after a campaign is deleted."""

import contextlib
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.analytics import revert_rate, revert_rate_by_day, tool_stats
from audit.chain import transitions_append
from audit.models import AnalyticsMark, StatusTransition, ToolDay, ToolDayAll, ToolInvocation
from audit.rollup import COUNT_COLUMNS, rollup_refresh
from audit.services import invocation_dispatch, invocation_revert
from audit.services.common import campaign_lock
from audit.services.dispatch import _append, _new_row
from campaigns.models import Campaign
from core.errors import Conflict
from tests.conftest import World, all_at_once, build_world, rolled_back

MODELS = ("claude-sonnet-4-5", "scripted")
AWAITING = ToolInvocation.Status.AWAITING_APPROVAL
OUTCOMES = ("committed", "failed", "rejected", "expired")
START = datetime(2026, 3, 1, 21, 30, tzinfo=UTC)  # days turn soon after


# --- the log, written as the services write it -----------------------------------------------


def call(world: World, campaign: Campaign, model: str, *, fails: bool, step: int) -> None:
    elsewhere = campaign.pk != world.campaign.pk
    creature = world.foreign if elsewhere else world.hero
    actor = world.outsider if elsewhere else world.owner
    data = {"creature_id": 999_999 if fails else creature.pk, "x": step % 9, "y": step % 7}
    invocation_dispatch(
        campaign=campaign, actor=actor, tool_name="move_token", input=data, model=model
    )


def hold(world: World, campaign: Campaign, model: str) -> None:
    """A call written awaiting approval, as the dispatch will write one: next in the chain,
    sealed, under the campaign lock."""
    elsewhere = campaign.pk != world.campaign.pk
    with transaction.atomic():
        locked = campaign_lock(campaign.pk)
        row = _new_row(
            {
                "campaign_id": campaign.pk,
                "user_id": (world.outsider if elsewhere else world.owner).pk,
                "requested_by_id": None,
                "turn": None,
                "tool_name": "modify_creature",
                "tool_use_id": "",
                "tool_tier": "critical",
                "input": {"creature_id": 1, "hp_delta": -5},
                "model": model,
                "source": "gm",
            },
            locked,
            status=AWAITING,
        )
        _append(row, locked, event_seq=locked.event_seq, check_turn=False)


def resolve(row: ToolInvocation, outcome: str, by: Any) -> None:
    """An approval's outcome as the approval service records it: the row's new status and a
    chained transition out of awaiting_approval, in one transaction under the campaign lock."""
    with transaction.atomic():
        campaign_lock(row.campaign_id)
        row.status = outcome
        row.save(update_fields=["status"])
        transitions_append(
            campaign_id=row.campaign_id,
            changes=[(row, AWAITING)],
            by=by,
            reason="",
            at=timezone.now(),
        )


# --- what a count of the log gives ---------------------------------------------------------


def counted(campaign_ids: list | None, since: datetime | None) -> list[dict[str, Any]]:
    """`tool_stats`'s answer, counted row by row in Python from the log and its transitions."""
    rows = ToolInvocation.objects.all()
    links = StatusTransition.objects.all()
    if campaign_ids is not None:
        rows = rows.filter(campaign_id__in=campaign_ids)
        links = links.filter(campaign_id__in=campaign_ids)
    statuses: dict[tuple[str, str], Counter] = {}
    for model, tool, status, created in rows.values_list(
        "model", "tool_name", "status", "created_at"
    ):
        if since is None or created >= since:
            statuses.setdefault((model, tool), Counter())[status] += 1
    approved: dict[tuple[str, str], set] = {}
    for invocation, before, after, model, tool, created in links.values_list(
        "invocation_id",
        "from_status",
        "to_status",
        "invocation__model",
        "invocation__tool_name",
        "invocation__created_at",
    ):
        approval = before == AWAITING and after in ("committed", "failed", "reverted", "pending")
        if approval and (since is None or created >= since):
            approved.setdefault((model, tool), set()).add(invocation)
    return [
        {
            "model": model,
            "tool_name": tool,
            "calls": sum(n.values()),
            "failed": n["failed"],
            "reverted": n["reverted"],
            "revert_rate": revert_rate(n["reverted"], n["committed"]),
            "awaiting": n[AWAITING],
            "approved": len(approved.get((model, tool), ())),
            "rejected": n["rejected"],
            "expired": n["expired"],
            "ran": n["reverted"] + n["committed"],
        }
        for (model, tool), n in sorted(statuses.items())
    ]


def counted_days(campaign_ids: list | None, since: datetime | None) -> list[tuple]:
    rows = ToolInvocation.objects.filter(status__in=["committed", "reverted"])
    if campaign_ids is not None:
        rows = rows.filter(campaign_id__in=campaign_ids)
    days: dict[Any, Counter] = {}
    for status, created in rows.values_list("status", "created_at"):
        if since is None or created >= since:
            days.setdefault(created.astimezone(UTC).date(), Counter())[status] += 1
    return [
        (day, revert_rate(n["reverted"], n["committed"]), n["reverted"] + n["committed"])
        for day, n in sorted(days.items())
    ]


def assert_cells_exact() -> None:
    """Every cell, per campaign and over the whole log, equals its count from the log."""
    rollup_refresh()
    for campaign_ids, cells in (
        (None, ToolDayAll.objects.all()),
        *(
            ([pk], ToolDay.objects.filter(campaign_id=pk))
            for pk in Campaign.objects.values_list("pk", flat=True)
        ),
    ):
        summed: dict[tuple, Counter] = {}
        for cell in cells.values("model", "tool_name", *COUNT_COLUMNS):
            pair = (cell["model"], cell["tool_name"])
            summed.setdefault(pair, Counter()).update({c: cell[c] for c in COUNT_COLUMNS})
        expected = {(r["model"], r["tool_name"]): r for r in counted(campaign_ids, None)}
        assert {p for p, n in summed.items() if n["calls"]} == set(expected)
        for pair, row in expected.items():
            n = summed[pair]
            assert (n["calls"], n["reverted"], n["failed"], n["awaiting"], n["approved"]) == (
                row["calls"],
                row["reverted"],
                row["failed"],
                row["awaiting"],
                row["approved"],
            ), pair


# --- the property -----------------------------------------------------------------------------

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("call"), st.booleans(), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("hold"), st.booleans(), st.integers(0, 1)),
        st.tuples(st.just("resolve"), st.integers(0, 50), st.sampled_from(OUTCOMES)),
        st.tuples(st.just("revert"), st.integers(0, 50)),
        st.tuples(st.just("tick"), st.integers(1, 20 * 60)),
        st.tuples(
            st.just("read"),
            st.sampled_from(["all", "main", "elsewhere", "both"]),
            st.one_of(
                st.none(),
                st.integers(-120, 4 * 24 * 60).map(lambda m: ("minutes", m)),
                st.integers(-1, 4).map(lambda d: ("midnight", d)),
            ),
        ),
    ),
    min_size=1,
    max_size=40,
)


def since_of(drawn: Any) -> datetime | None:
    if drawn is None:
        return None
    kind, n = drawn
    if kind == "minutes":
        return START + timedelta(minutes=n)
    return datetime.combine(START.date() + timedelta(days=n), datetime.min.time(), tzinfo=UTC)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_the_figures_equal_a_count_of_the_log_after_any_interleaving(db, steps):
    clock = [START]
    with rolled_back(), mock.patch("django.utils.timezone.now", lambda: clock[0]):
        world = build_world()
        elsewhere = Campaign.objects.get(owner=world.outsider)
        scopes = {
            "all": None,
            "main": [world.campaign.pk],
            "elsewhere": [elsewhere.pk],
            "both": [world.campaign.pk, elsewhere.pk],
        }
        for i, step in enumerate(steps):
            kind = step[0]
            if kind == "call":
                _, there, model, fails = step
                call(
                    world,
                    elsewhere if there else world.campaign,
                    MODELS[model],
                    fails=fails,
                    step=i,
                )
            elif kind == "hold":
                hold(world, elsewhere if step[1] else world.campaign, MODELS[step[2]])
            elif kind == "resolve":
                held = list(
                    ToolInvocation.objects.filter(status=AWAITING).order_by(
                        "created_at", "sequence"
                    )
                )
                if held:
                    resolve(held[step[1] % len(held)], step[2], world.owner)
            elif kind == "revert":
                ran = list(
                    ToolInvocation.objects.filter(
                        status="committed", revert_snapshot__isnull=False
                    ).order_by("created_at", "sequence")
                )
                if ran:
                    row = ran[step[1] % len(ran)]
                    owner = world.owner if row.campaign_id == world.campaign.pk else world.outsider
                    with contextlib.suppress(Conflict):
                        invocation_revert(
                            campaign_id=row.campaign_id, invocation_id=row.pk, user=owner
                        )
            elif kind == "tick":
                clock[0] += timedelta(minutes=step[1])
            else:
                _, scope, drawn = step
                since = since_of(drawn)
                assert tool_stats(campaign_ids=scopes[scope], since=since) == counted(
                    scopes[scope], since
                )
                assert revert_rate_by_day(campaign_ids=scopes[scope], since=since) == counted_days(
                    scopes[scope], since
                )
        for scope in scopes.values():
            for since in (None, START + timedelta(minutes=45), since_of(("midnight", 1))):
                assert tool_stats(campaign_ids=scope, since=since) == counted(scope, since)
        assert_cells_exact()


def test_an_approval_twice_over_counts_its_call_once(world: World):
    """`approved` counts calls, not links: a call approved, somehow back to awaiting and
    approved again is one approved call, whether both links are folded at once or apart."""
    hold(world, world.campaign, MODELS[0])
    row = ToolInvocation.objects.get(status=AWAITING)
    resolve(row, "committed", world.owner)
    assert tool_stats()[0]["approved"] == 1
    with transaction.atomic():
        campaign_lock(world.campaign.pk)
        row.status = AWAITING
        row.save(update_fields=["status"])
        transitions_append(
            campaign_id=world.campaign.pk,
            changes=[(row, "committed")],
            by=world.owner,
            reason="",
            at=timezone.now(),
        )
    resolve(row, "committed", world.owner)
    assert tool_stats() == counted(None, None)
    assert tool_stats()[0]["approved"] == 1
    ToolDay.objects.all().delete()
    ToolDayAll.objects.all().delete()
    AnalyticsMark.objects.all().delete()
    assert tool_stats() == counted(None, None)


def test_a_deleted_campaign_leaves_the_whole_logs_figures(world: World):
    elsewhere = Campaign.objects.get(owner=world.outsider)
    for i in range(3):
        call(world, world.campaign, MODELS[i % 2], fails=i == 2, step=i)
        call(world, elsewhere, MODELS[0], fails=False, step=i)
    assert tool_stats() == counted(None, None)
    elsewhere.delete()
    assert tool_stats() == counted(None, None)
    assert sum(row["calls"] for row in tool_stats()) == 3
    assert_cells_exact()


def test_a_read_with_nothing_new_writes_nothing(world: World, django_assert_num_queries):
    call(world, world.campaign, MODELS[0], fails=False, step=1)
    tool_stats()
    with django_assert_num_queries(2):  # the tips, the cells
        tool_stats()


# --- two readers at once (PostgreSQL) ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_readers_folding_at_once_count_each_row_and_link_once():
    world = build_world("fold")
    elsewhere = Campaign.objects.get(owner=world.outsider)
    for round_ in range(4):
        for i in range(6):
            call(world, world.campaign, MODELS[i % 2], fails=i % 3 == 0, step=round_ * 10 + i)
            call(world, elsewhere, MODELS[1], fails=False, step=i)
        hold(world, world.campaign, MODELS[0])
        held = ToolInvocation.objects.filter(status=AWAITING).order_by("sequence").first()
        resolve(held, OUTCOMES[round_], world.owner)
        ran = ToolInvocation.objects.filter(status="committed", revert_snapshot__isnull=False)
        with contextlib.suppress(Conflict):
            invocation_revert(
                campaign_id=world.campaign.pk,
                invocation_id=ran.filter(campaign=world.campaign).order_by("-sequence").first().pk,
                user=world.owner,
            )
        scopes = [None, [world.campaign.pk], None, [world.campaign.pk, elsewhere.pk]] * 2
        answers = all_at_once(*[lambda s=s: tool_stats(campaign_ids=s) for s in scopes])
        for scope, answer in zip(scopes, answers, strict=True):
            assert answer == counted(scope, None), round_
        assert_cells_exact()


@pytest.mark.django_db(transaction=True)
def test_readers_racing_writers_end_exact():
    world = build_world("race")
    elsewhere = Campaign.objects.get(owner=world.outsider)
    call(world, world.campaign, MODELS[0], fails=False, step=0)
    tool_stats()
    writers = [
        lambda i=i: call(
            world, world.campaign if i % 2 else elsewhere, MODELS[i % 2], fails=i % 5 == 0, step=i
        )
        for i in range(8)
    ]
    readers = [lambda: tool_stats()] * 6
    outcomes = all_at_once(
        *[job for pair in zip(writers, readers + readers, strict=False) for job in pair]
    )
    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert tool_stats() == counted(None, None)
    assert_cells_exact()


def test_rebuild_after_a_repair_by_hand_agrees_with_the_log(world: World):
    """A change made to the log other than by appending (here a status flipped by hand) is not
    seen by the fold; `analytics_rollup --rebuild` folds the log again from the start."""
    from io import StringIO

    from django.core.management import call_command

    for i in range(3):
        call(world, world.campaign, MODELS[0], fails=False, step=i)
    assert tool_stats() == counted(None, None)
    ToolInvocation.objects.filter(pk=ToolInvocation.objects.first().pk).update(status="failed")
    assert tool_stats() != counted(None, None)
    out = StringIO()
    call_command("analytics_rollup", "--rebuild", stdout=out)
    assert out.getvalue().startswith("rebuilt: ")
    assert tool_stats() == counted(None, None)
    assert_cells_exact()
