"""GM turns as background work: the tasks the workers (`manage.py task_worker`) run, and the rules
for which turn runs when.

Per campaign, turns run one at a time, oldest first: a task claims its campaign's oldest queued
turn unless a turn of that campaign is running (a partial unique index on the turn table says so
too), and a turn that ends enqueues the next. Campaigns run in parallel, on as many workers as
there are. Tasks are stored by django-tasks-db in the same database, in the caller's
transaction: a turn and its task commit together, or neither does.

Every turn has a watchdog, a task that looks at it again when its lease (or, while it waits, its
deadline) runs out: a worker that died mid-turn leaves a lease nobody renews, and the watchdog
puts the turn back in the queue to resume from its transcript, or fails it once GM_MAX_ATTEMPTS
of its runs have died (a resume after an approval is a claim, not a death), within about
GM_LEASE_SECONDS of the death and without any request.
"""

import functools
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_tasks import task

from audit.models import ToolInvocation
from audit.services.common import campaign_lock
from campaigns.models import Turn
from campaigns.selectors import world_dump
from gm import rows
from gm.lease import WATCH_GRACE, lease_deadline, new_owner, turn_lock
from gm.runner import Claim, claim_run, turn_close
from gm.transcript import transcript_open, transcript_text

# Watchdogs go before turns waiting in the queue, so recovery stays bounded under a backlog.
WATCH_PRIORITY = 10
# A campaign's later turns wait while one of its turns runs or waits for an approval: the GM
# answers the table in order, never past a call a person has not yet allowed.
HOLDING = (Turn.Status.RUNNING, Turn.Status.AWAITING_APPROVAL)


@task()
def run_turn(turn_id: int) -> str:
    """Run the GM on the next turn of `turn_id`'s campaign (which may be an older one)."""
    campaign_id = Turn.objects.filter(pk=turn_id).values_list("campaign_id", flat=True).first()
    if campaign_id is None:
        return f"turn {turn_id} does not exist"
    claim = turn_claim(campaign_id=campaign_id)
    if claim is None:
        return "nothing to run: the campaign's turn is running, or none is queued"
    turn = claim_run(claim)
    turn_enqueue_next(campaign_id=campaign_id)
    return f"turn {turn.pk} {turn.status}"


@task(priority=WATCH_PRIORITY)
def watch_turn(turn_id: int, attempt: int) -> str:
    return turn_watch(turn_id=turn_id, attempt=attempt)


def turn_enqueue(turn: Turn) -> None:
    """Queue a new turn for the GM, with its watchdog. In the caller's transaction."""
    deadline = lease_deadline()
    Turn.objects.filter(pk=turn.pk).update(lease_expires_at=deadline)
    run_turn.enqueue(turn.pk)
    _watch_at(turn, deadline)


def _watch_at(turn: Turn, at: datetime) -> None:
    """One watchdog per attempt: a claim starts a new one, and the previous one then ends."""
    watch_turn.using(run_after=at + WATCH_GRACE).enqueue(turn.pk, turn.attempts)


def turn_claim(*, campaign_id: Any, turn_id: int | None = None) -> Claim | None:
    """Claim the campaign's oldest queued turn for this runner (`turn_id`: only if it is that
    turn), unless one of its turns is running. The first claim stores the state the turn's GM
    decides from."""
    with transaction.atomic(durable=True):
        campaign = campaign_lock(campaign_id)
        owner = new_owner()
        turn = _claim_oldest(campaign_id, owner=owner, only=turn_id)
        if turn is None:
            return None
        state = None
        if turn.attempts == 1:
            state = transcript_open(turn=turn, state=world_dump(campaign))
        _watch_at(turn, turn.lease_expires_at)
        return Claim(
            turn=turn,
            owner=owner,
            attempt=turn.attempts,
            seat=campaign.gm_provider,
            state=state,
        )


def _claim_oldest(campaign_id: Any, *, owner: str, only: int | None) -> Turn | None:
    """Under the campaign lock: cancel the campaign's queued turns that were undone while they
    waited (the GM never answers them), then, unless one of its turns holds its place, claim
    its oldest queued turn (`only`: if it is that turn) for `owner`; the claimed turn with its
    actor, or None."""
    campaign = rows.prep(Turn, "campaign", campaign_id)
    queued = Turn.Status.QUEUED
    params = [Turn.Status.CANCELLED, campaign, queued, campaign, queued, campaign, *HOLDING]
    params += [Turn.Status.RUNNING, owner, lease_deadline(), *([only] if only is not None else [])]
    # Raw SQL: UPDATE … RETURNING, which the ORM cannot say; as querysets this is five
    # statements (the cancellation, the look for a holding turn, the pick, the claim, the read
    # back) and a sixth for the actor, at every turn.
    values = rows.fetch_one(_claim_sql(only is not None), params)
    if values is None:
        return None
    turn = rows.instance(Turn, values[: rows.width(Turn)])
    turn.actor = rows.instance(ACTOR, values[rows.width(Turn) :])
    return turn


ACTOR = Turn._meta.get_field("actor").related_model


@functools.cache
def _claim_sql(only: bool) -> str:
    """`_claim_oldest`'s statement (`only`: with the turn it may claim). Its CTEs see the
    table as it was when it began, so the pick leaves out the undone turns it cancels."""
    t, c = rows.table(Turn), functools.partial(rows.column, Turn)
    pk, campaign, status, undone = c("pk"), c("campaign"), c("status"), c("reverted_at")
    expires, actor = c("lease_expires_at"), rows.column(ACTOR, "pk")
    return (
        f"WITH cancelled AS (UPDATE {t} SET {status} = %s, {expires} = NULL "
        f"WHERE {campaign} = %s AND {status} = %s AND {undone} IS NOT NULL), "
        f"oldest AS ({_oldest_sql(answerable=True)}) "
        f"UPDATE {t} AS turn SET {status} = %s, {c('lease_owner')} = %s, {expires} = %s, "
        f"{c('attempts')} = turn.{c('attempts')} + 1 "
        f"FROM oldest, {rows.table(ACTOR)} AS actor WHERE turn.{pk} = oldest.{pk} "
        f"AND actor.{actor} = turn.{c('actor')}"
        + (f" AND turn.{pk} = %s" if only else "")
        + f" RETURNING {rows.columns(Turn, 'turn')}, {rows.columns(ACTOR, 'actor')}"
    )


def turn_resume(*, invocation: Any, **_: Any) -> None:
    """A held call of a paused turn was answered (`audit.services.approval.approval_resolved`,
    in the answering transaction, under the campaign lock): once none of its calls waits, the
    turn goes back in the queue, first in its campaign's line, and any worker plays it on from
    its transcript, reading the answer as the call's result. A turn still running (it has not
    paused yet) finds the answer itself (`gm.runner.turn_pause`)."""
    if invocation.turn_id is None:
        return
    turn = Turn.objects.select_for_update().filter(pk=invocation.turn_id).first()
    if turn is None or turn.status != Turn.Status.AWAITING_APPROVAL:
        return
    waiting = ToolInvocation.objects.filter(
        campaign_id=turn.campaign_id, turn=turn, status=ToolInvocation.Status.AWAITING_APPROVAL
    )
    if waiting.exists():
        return
    Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.QUEUED)
    turn_enqueue(turn)


def turn_enqueue_next(*, campaign_id: Any) -> None:
    """After a turn ends: the campaign's next queued turn, if any, goes to a worker."""
    with transaction.atomic(durable=True):
        _enqueue_next(campaign_id)


def _enqueue_next(campaign_id: Any) -> None:
    following = _next_queued(campaign_id)
    if following is not None:
        run_turn.enqueue(following)


def _next_queued(campaign_id: Any) -> int | None:
    """The campaign's oldest queued turn, unless one of its turns holds its place (running, or
    paused on a call)."""
    campaign = rows.prep(Turn, "campaign", campaign_id)
    # Plain SQL: a hot read (every turn's end), one statement where the ORM's are two.
    params = [campaign, Turn.Status.QUEUED, campaign, *HOLDING]
    found = rows.fetch_one(_oldest_sql(answerable=False), params)
    return None if found is None else found[0]


@functools.cache
def _oldest_sql(*, answerable: bool) -> str:
    """The id of a campaign's oldest queued turn (`answerable`: of those not undone), unless one
    of its turns holds its place. Parameters: the campaign, QUEUED, the campaign, HOLDING."""
    t, c = rows.table(Turn), functools.partial(rows.column, Turn)
    pk, campaign, status = c("pk"), c("campaign"), c("status")
    return (
        f"SELECT {pk} FROM {t} WHERE {campaign} = %s AND {status} = %s "
        + (f"AND {c('reverted_at')} IS NULL " if answerable else "")
        + f"AND NOT EXISTS (SELECT 1 FROM {t} WHERE {campaign} = %s AND {status} IN (%s, %s)) "
        f"ORDER BY {pk} LIMIT 1"
    )


def turn_watch(*, turn_id: int, attempt: int) -> str:
    """Look at a turn whose lease (or wait) may have run out, and act: resume a turn whose
    worker died (fail it once GM_MAX_ATTEMPTS of its runs have died), hand a stranded queued
    turn to a worker. The watchdog of an earlier `attempt` than the turn's ends: the latest
    claim has its own."""
    turn = Turn.objects.filter(pk=turn_id).first()
    if turn is None:
        return "gone"
    with transaction.atomic(durable=True):
        turn = turn_lock(turn)
        if turn.attempts != attempt:
            return "superseded"
        if turn.status == Turn.Status.QUEUED:
            return _watch_queued(turn)
        if turn.status != Turn.Status.RUNNING:
            return "ended"
        if turn.lease_expires_at > timezone.now():
            _watch_at(turn, turn.lease_expires_at)
            return "alive"
        return _recover(turn)


def _watch_queued(turn: Turn) -> str:
    """A queued turn normally waits for a worker or for its campaign's running turn. One that
    is its campaign's next and has waited a whole lease with nothing running has lost its task
    (a worker died between taking the task and claiming the turn): it gets another."""
    now = timezone.now()
    if turn.lease_expires_at is not None and turn.lease_expires_at > now:
        _watch_at(turn, turn.lease_expires_at)
        return "waiting"
    turns = Turn.objects.filter(campaign_id=turn.campaign_id)
    stranded = (
        not turns.filter(status=Turn.Status.RUNNING).exists()
        and not turns.filter(status=Turn.Status.QUEUED, pk__lt=turn.pk).exists()
    )
    deadline = lease_deadline()
    Turn.objects.filter(pk=turn.pk).update(lease_expires_at=deadline)
    if stranded:
        run_turn.enqueue(turn.pk)
    _watch_at(turn, deadline)
    return "re-enqueued" if stranded else "waiting"


def _recover(turn: Turn) -> str:
    """The lease ran out: the runner died (or stalled past it). Assumes the turn's locks."""
    kept = transcript_text(turn=turn)
    if turn.cancel_requested_at is not None or turn.reverted_at is not None:
        turn_close(turn, status=Turn.Status.CANCELLED, text=kept)
        outcome = Turn.Status.CANCELLED
    elif (died := turn.recoveries + 1) >= settings.GM_MAX_ATTEMPTS:
        reason = f"the worker running it stopped responding ({died} attempts)."
        turn_close(turn, status=Turn.Status.FAILED, text=kept, reason=reason)
        outcome = Turn.Status.FAILED
    else:
        deadline = lease_deadline()
        Turn.objects.filter(pk=turn.pk).update(
            status=Turn.Status.QUEUED,
            lease_owner="",
            lease_expires_at=deadline,
            recoveries=F("recoveries") + 1,
        )
        run_turn.enqueue(turn.pk)
        _watch_at(turn, deadline)
        return "resumed"
    _enqueue_next(turn.campaign_id)
    return outcome


def turns_recover() -> dict[str, list[int]]:
    """Watch every turn whose lease or wait has run out now (`manage.py gm_recover_turns`: a
    backstop for a watchdog lost with its worker). Outcomes by kind, turn ids in order."""
    overdue = Turn.objects.filter(
        status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING],
        lease_expires_at__lte=timezone.now(),
    ).order_by("pk")
    outcomes: dict[str, list[int]] = {}
    for turn_id, attempt in overdue.values_list("pk", "attempts"):
        outcomes.setdefault(turn_watch(turn_id=turn_id, attempt=attempt), []).append(turn_id)
    return outcomes
