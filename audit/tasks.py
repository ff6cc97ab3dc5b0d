"""The log's own background job: a held tool call that nobody answered expires on time, run by
the task workers (django-tasks), scheduled when the call paused, whether or not anyone looks."""

from datetime import datetime
from typing import Any

from django_tasks import task

from audit.models import ToolInvocation
from audit.services.approval import invocation_expire


@task()
def expire_held_call(invocation_id: str) -> str:
    return invocation_expire(invocation_id=invocation_id)


def expiry_schedule(sender: Any, *, row: ToolInvocation, expires_at: datetime, **_: Any) -> None:
    """On `call_held` (the dispatch holding a call, in its transaction): the job that expires the
    call at its deadline, enqueued in the same transaction, so a call is never held without it."""
    expire_held_call.using(run_after=expires_at).enqueue(str(row.pk))
