"""Re-seal every campaign's log under the keyed chain (HMAC with AUDIT_CHAIN_KEY, canonical
numbers, status transitions as links). Rows already reverted get their revert transition,
appended after the campaign's last row in the order they were reverted. Only rows the old
unkeyed chain vouches for are re-sealed: a campaign whose old chain was already broken keeps
its old hashes, so verify_log goes on reporting it instead of this migration laundering it."""

import hashlib
import json
import uuid

from django.db import migrations

OLD_FIELDS = (
    "id", "campaign_id", "user_id", "turn_id", "sequence", "tool_name", "tool_tier", "input",
    "result", "error", "revertible", "revert_snapshot", "post_state", "write_set", "read_set",
    "model", "source", "created_at", "committed_at",
)


def _old_value(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _old_hash(row, prev_hash):
    payload = {name: _old_value(getattr(row, name)) for name in OLD_FIELDS}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((prev_hash + "\n" + text).encode()).hexdigest()


def _old_chain_intact(rows):
    previous = ""
    for expected, row in enumerate(rows, start=1):
        if row.sequence != expected or row.prev_hash != previous:
            return False
        if row.row_hash != _old_hash(row, previous):
            return False
        previous = row.row_hash
    return True


def reseal(apps, schema_editor):
    from audit.chain import row_hash, transition_hash

    Invocation = apps.get_model("audit", "ToolInvocation")
    Transition = apps.get_model("audit", "StatusTransition")
    for campaign_id in Invocation.objects.values_list("campaign_id", flat=True).distinct():
        rows = list(Invocation.objects.filter(campaign_id=campaign_id).order_by("sequence"))
        if not _old_chain_intact(rows):
            continue
        previous = ""
        for row in rows:
            sealed = "committed" if row.status == "reverted" else row.status
            row.prev_hash, row.row_hash = previous, row_hash(row, previous, status=sealed)
            previous = row.row_hash
        Invocation.objects.bulk_update(rows, ["prev_hash", "row_hash"])
        reverted = sorted((r for r in rows if r.status == "reverted"), key=lambda r: r.reverted_at or r.created_at)
        links = []
        for ordinal, row in enumerate(reverted, start=1):
            link = Transition(
                campaign_id=campaign_id, invocation_id=row.pk, after_sequence=rows[-1].sequence,
                ordinal=ordinal, from_status="committed", to_status="reverted",
                by_id=row.reverted_by_id, reason=row.revert_reason, at=row.reverted_at,
                prev_hash=previous,
            )
            link.row_hash = previous = transition_hash(link)
            links.append(link)
        Transition.objects.bulk_create(links)


class Migration(migrations.Migration):

    dependencies = [
        ("audit", "0008_status_transitions"),
    ]

    operations = [migrations.RunPython(reseal, migrations.RunPython.noop)]
