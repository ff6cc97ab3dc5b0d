"""The log's own background job: a held tool call that nobody answered expires on time, run by
the task workers (django-tasks), scheduled when the call paused, whether or not anyone looks."""

from django_tasks import task


@task()
def expire_held_call(invocation_id: str) -> str:
    from audit.services.approval import invocation_expire  # the service imports the dispatch,

    # which schedules this task: imported when the job runs, not when the module loads.
    return invocation_expire(invocation_id=invocation_id)
