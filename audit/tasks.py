"""The log's own background job: a held tool call that nobody answered expires on time, run by
the task workers (django-tasks), scheduled when the call paused, whether or not anyone looks."""

from datetime import datetime
from typing import Any

from django_tasks import task

from audit.models import ToolInvocation
from audit.services.approval import invocation_expire
from audit.services.dispatch import approval_deadline


@task()
def expire_held_call(invocation_id: str) -> str:
    return invocation_expire(invocation_id=invocation_id)


def expiry_schedule(sender: Any, *, row: ToolInvocation, expires_at: datetime, **_: Any) -> None:
    """On `call_held` (the dispatch holding a call, in its transaction): the job that expires the
    call at its deadline, enqueued in the same transaction, so a call is never held without it."""
    expire_held_call.using(run_after=expires_at).enqueue(str(row.pk))


def expiry_reschedule(sender: Any, *, campaign: Any, **_: Any) -> None:
    """On `campaigns.services.approval_timeout_changed` (in the changing transaction): each call
    of the campaign still waiting gets its expiry job at its new deadline. A job that comes too
    early (the timeout was lengthened) schedules itself again; one that finds the call answered
    does nothing, so the older jobs left behind are harmless."""
    held = ToolInvocation.objects.filter(
        campaign=campaign, status=ToolInvocation.Status.AWAITING_APPROVAL
    )
    for row in held:
        expire_held_call.using(run_after=approval_deadline(row, campaign)).enqueue(str(row.pk))
