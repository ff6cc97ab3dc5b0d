"""Tamper evidence: each log row carries a hash over its immutable fields and the previous row's
hash in the same campaign, so an edited, deleted or inserted row breaks the chain from there on.

The revert fields (status change, reverted_at/by, reason) are deliberately outside the hash:
reverting is the log's own business, not tampering.
"""

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from audit.models import ToolInvocation

HASHED_FIELDS = (
    "id",
    "campaign_id",
    "user_id",
    "turn_id",
    "sequence",
    "tool_name",
    "tool_tier",
    "input",
    "result",
    "error",
    "revertible",
    "revert_snapshot",
    "post_state",
    "write_set",
    "read_set",
    "model",
    "source",
    "created_at",
    "committed_at",
)


def _canonical(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def row_hash(row: ToolInvocation, prev_hash: str) -> str:
    payload = {name: _canonical(getattr(row, name)) for name in HASHED_FIELDS}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((prev_hash + "\n" + text).encode()).hexdigest()


def seal(row: ToolInvocation) -> None:
    """Set `row_hash` from the row's final contents. Called once, in the transaction that
    writes the row, under the campaign lock (so `prev_hash` is the true predecessor's)."""
    row.row_hash = row_hash(row, row.prev_hash)


@dataclass
class Break:
    campaign_id: Any
    sequence: int
    invocation_id: Any
    problem: str

    def __str__(self) -> str:
        return (
            f"campaign {self.campaign_id}: #{self.sequence} ({self.invocation_id}) {self.problem}"
        )


def verify(campaign_id: Any) -> Break | None:
    """The first broken link of one campaign's chain, or None when it is intact."""
    for found in _walk(campaign_id):
        return found
    return None


def _walk(campaign_id: Any) -> Iterator[Break]:
    previous_hash, expected_sequence = "", 1
    rows = ToolInvocation.objects.filter(campaign_id=campaign_id).order_by("sequence")
    for row in rows.iterator(chunk_size=2000):
        if row.sequence != expected_sequence:
            yield Break(
                campaign_id,
                row.sequence,
                row.pk,
                f"follows #{expected_sequence - 1}: a row is missing or inserted",
            )
        elif row.prev_hash != previous_hash:
            yield Break(
                campaign_id, row.sequence, row.pk, "does not link to the previous row's hash"
            )
        elif row.row_hash != row_hash(row, row.prev_hash):
            yield Break(
                campaign_id,
                row.sequence,
                row.pk,
                "was altered: its contents no longer match its hash",
            )
        previous_hash, expected_sequence = row.row_hash, row.sequence + 1
