"""Tamper evidence (docs/operations.md#backups-and-the-chain-anchor): each campaign's log is one
chain of keyed links.

A link is an invocation row, sealed once in the transaction that writes it, or a status
transition of a row (a revert now, approvals later), appended in the transaction that changes
the status. Each link carries an HMAC, under `settings.AUDIT_CHAIN_KEY` (never stored in the
database), of its canonical stored form and the previous link's hash. Without the key nobody
can edit, insert, re-chain or forge a link unnoticed; flipping a status without its transition
breaks the row's seal or its agreement with its transitions. Cutting the tail off is visible
only against a head kept outside the database: `verify_log` prints each head, and checks one
with `--expect`.

Canonical form: JSON with sorted keys, ASCII only, and every number written by its exact
decimal value (`1e16`, `10000000000000000` and `1E+16` are one number; `-0.0` is `0`), so the
hash is the same whether computed before the write or from what PostgreSQL's `jsonb` hands
back, which spells numbers its own way.
"""

import functools
import hashlib
import hmac
import json
import math
import re
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, Subquery

from audit.models import StatusTransition, ToolInvocation
from campaigns.models import Campaign

# The invocation row's fields under its seal. `status` is sealed as it was when the row was
# written; every later status is a transition link of its own.
HASHED_FIELDS = (
    "id",
    "campaign_id",
    "user_id",
    "requested_by_id",
    "turn_id",
    "sequence",
    *ToolInvocation.CALL,
    "tool_use_id",
    "approval_of_id",
    "revert_snapshot",
    "post_state",
    "write_set",
    "read_set",
    "broadcast_events",
    "model",
    "source",
    "created_at",
    "committed_at",
)
# Fields of the row outside its seal, and why each may stay out.
UNHASHED_FIELDS = {
    "prev_hash": "the chain itself: the link's place, checked against the previous link",
    "row_hash": "the chain itself: the seal",
    "reverted_at": "restates the revert transition's `at`; checked against it",
    "reverted_by_id": "restates the revert transition's `by`; checked against it",
    "revert_reason": "restates the revert transition's `reason`; checked against it",
    "preview": "what a held call would change, shown to its approvers and recomputed when it is "
    "stale; what the call did when it ran is sealed in the row it ran as",
}
TRANSITION_HASHED_FIELDS = (
    "campaign_id",
    "invocation_id",
    "after_sequence",
    "ordinal",
    "from_status",
    "to_status",
    "by_id",
    "reason",
    "at",
)
TRANSITION_UNHASHED_FIELDS = {
    "id": "assigned by the database on insert; the link's place is (after_sequence, ordinal)",
    "prev_hash": "the chain itself: the link's place, checked against the previous link",
    "row_hash": "the chain itself: the seal",
}

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')


@functools.lru_cache(maxsize=4096)
def _number(token: str) -> str:
    """The exact decimal value of a JSON number, one spelling per value."""
    value = Decimal(token)
    if value == 0:
        return "0"
    sign, digits, exponent = value.as_tuple()
    text = "".join(map(str, digits))
    significant = text.rstrip("0")
    return f"{'-' if sign else ''}{significant}e{exponent + len(text) - len(significant)}"


def _scalar(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def canonical(value: Any) -> str:
    """The canonical text of a JSON value, as stored. The round trip does what storing does to
    Python values (keys become strings, tuples lists); the walk then writes what
    `json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=True)` writes, every
    number rewritten by `_number`, without recursion however deep the value. (It is
    `canonical_by_tokens`, several times faster: the dispatch seals a row per call.)"""
    stored = json.loads(json.dumps(value, default=_scalar))
    out: list[str] = []
    try:
        _write(stored, out.append, 0)
    except _TooDeep:
        return _canonical_walk(stored)
    return "".join(out)


class _TooDeep(Exception):
    pass


_MAX_DEPTH = 64  # deeper values are written by `_canonical_walk` (no recursion at all)


def _write(item: Any, out: Callable[[str], None], depth: int) -> None:
    """`canonical`'s writer for values nested at most _MAX_DEPTH deep (every real row): plain
    recursion, about twice as fast as the walk."""
    kind = type(item)
    if kind is str:
        out(_quote(item))
    elif kind is dict:
        if depth == _MAX_DEPTH:
            raise _TooDeep
        if not item:
            out("{}")
            return
        separator = "{"
        for key in sorted(item):
            out(separator + _quote(key) + ":")
            _write(item[key], out, depth + 1)
            separator = ","
        out("}")
    elif kind is list:
        if depth == _MAX_DEPTH:
            raise _TooDeep
        if not item:
            out("[]")
            return
        separator = "["
        for element in item:
            out(separator)
            _write(element, out, depth + 1)
            separator = ","
        out("]")
    elif item is True:
        out("true")
    elif item is False:
        out("false")
    elif item is None:
        out("null")
    elif kind is int:
        out(_number(int.__repr__(item)))
    elif math.isfinite(item):
        out(_number(float.__repr__(item)))
    else:
        out(_float_text(item))


def _canonical_walk(stored: Any) -> str:
    """`canonical`'s text of a stored value of any depth, without recursion."""
    out: list[str] = []
    # The stack holds values still to write and, as plain strings, text to write as it is.
    stack: list[Any] = [stored]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is _Text:
            out.append(item)
        elif kind is str:
            out.append(_quote(item))
        elif kind is dict:
            if not item:
                out.append("{}")
                continue
            out.append("{")
            pending: list[Any] = [_Text("}")]
            for i, key in enumerate(sorted(item, reverse=True)):
                pending.append(item[key])
                pending.append(
                    _Text(_quote(key) + ":" if i == len(item) - 1 else "," + _quote(key) + ":")
                )
            stack.extend(pending)
        elif kind is list:
            if not item:
                out.append("[]")
                continue
            out.append("[")
            pending = [_Text("]")]
            for i, element in enumerate(reversed(item)):
                pending.append(element)
                if i != len(item) - 1:
                    pending.append(_Text(","))
            stack.extend(pending)
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif item is None:
            out.append("null")
        elif kind is int:
            out.append(_number(int.__repr__(item)))
        elif math.isfinite(item):  # a float, written as json writes it, then as a number
            out.append(_number(float.__repr__(item)))
        else:  # NaN and the infinities, as json writes them; no number token matches them
            out.append(_float_text(item))
    return "".join(out)


def canonical_by_tokens(value: Any) -> str:
    """The canonical text by its definition: the stored form dumped with sorted keys, then every
    number token outside strings rewritten. `canonical` writes the same text faster."""
    stored = json.loads(json.dumps(value, default=_scalar))
    text = json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return _TOKEN.sub(lambda m: m[0] if m[0][0] == '"' else _number(m[0]), text)


class _Text(str):
    """Text `canonical` writes as it is (punctuation, a key with its colon)."""


_quote = json.encoder.encode_basestring_ascii
_float_text = json.encoder.JSONEncoder(allow_nan=True).encode


def _hmac(kind: str, prev_hash: str, payload: dict[str, Any]) -> str:
    message = f"{kind}\n{prev_hash}\n{canonical(payload)}".encode()
    return hmac.new(settings.AUDIT_CHAIN_KEY.encode(), message, hashlib.sha256).hexdigest()


def row_hash(row: Any, prev_hash: str, *, status: str | None = None) -> str:
    """The seal of an invocation row, `status` being its status when it was sealed."""
    payload = {name: getattr(row, name) for name in HASHED_FIELDS}
    payload["status"] = row.status if status is None else status
    if not payload["tool_use_id"]:
        # Rows sealed before the column existed keep their seal: an empty id is left out.
        del payload["tool_use_id"]
    if payload["approval_of_id"] is None:
        del payload["approval_of_id"]  # likewise: only an approved call's row names one
    return _hmac("invocation", prev_hash, payload)


def transition_hash(link: Any) -> str:
    payload = {name: getattr(link, name) for name in TRANSITION_HASHED_FIELDS}
    return _hmac("transition", link.prev_hash, payload)


def seal(row: ToolInvocation) -> None:
    """Set `row_hash` from the row's final contents. Called once, in the transaction that
    writes the row, under the campaign lock (so `prev_hash` is the true predecessor's)."""
    row.row_hash = row_hash(row, row.prev_hash)


@dataclass(frozen=True)
class Tip:
    """Where a campaign's chain ends: the last invocation, how many transitions follow it, and
    the last link's hash ("" for an empty chain)."""

    sequence: int
    ordinal: int
    hash: str


def _tip_read(campaign_id: Any) -> tuple[Any, ...] | None:
    """The log's last row, with the last transition chained after it (None, None if none): one
    statement, read by every status change (a revert, an approval's answer)."""
    after = StatusTransition.objects.filter(
        campaign_id=OuterRef("campaign_id"), after_sequence=OuterRef("sequence")
    ).order_by("-ordinal")
    return (
        ToolInvocation.objects.filter(campaign_id=campaign_id)
        .order_by("-sequence")
        .annotate(
            after_ordinal=Subquery(after.values("ordinal")[:1]),
            after_hash=Subquery(after.values("row_hash")[:1]),
        )
        .values_list("sequence", "row_hash", "after_ordinal", "after_hash")
        .first()
    )


def chain_tip(campaign_id: Any) -> Tip:
    """The chain's last link: the log's last row, or the last transition chained after it.
    Assumes the campaign lock, which every writer of the log takes first."""
    found = _tip_read(campaign_id)
    if found is None:
        return Tip(0, 0, "")
    sequence, row_hash, ordinal, after_hash = found
    return Tip(sequence, 0, row_hash) if ordinal is None else Tip(sequence, ordinal, after_hash)


def transitions_append(
    *, campaign_id: Any, changes: list[tuple[ToolInvocation, str]], by: Any, reason: str, at: Any
) -> list[StatusTransition]:
    """Chain status changes: each row already holds its new status, paired with the one it
    left. Call in the transaction that saves the rows, under the campaign lock."""
    tip = chain_tip(campaign_id)
    links, prev_hash = [], tip.hash
    for ordinal, (row, before) in enumerate(changes, start=tip.ordinal + 1):
        link = StatusTransition(
            campaign_id=campaign_id,
            invocation_id=row.pk,
            after_sequence=tip.sequence,
            ordinal=ordinal,
            from_status=before,
            to_status=row.status,
            by_id=getattr(by, "pk", None),
            reason=reason,
            at=at,
            prev_hash=prev_hash,
        )
        link.row_hash = prev_hash = transition_hash(link)
        links.append(link)
    created = StatusTransition.objects.bulk_create(links)
    Campaign.objects.filter(pk=campaign_id).update(log_head=prev_hash)  # the log head moves
    return created


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


@dataclass
class Report:
    """One chain walked: its head (length in links, last hash), the first break if any, and
    the hash at the `at` link asked for (None when the chain is shorter)."""

    campaign_id: Any
    length: int
    head: str
    broken: Break | None
    hash_at: str | None


def verify(campaign_id: Any) -> Break | None:
    """The first broken link of one campaign's chain, or None when it is intact."""
    return check(campaign_id).broken


def check(campaign_id: Any, *, at: int | None = None) -> Report:
    """Walk one campaign's chain from its start."""
    length, head, broken, hash_at = 0, "", None, None
    for link_hash, problem in _walk(campaign_id):
        length += 1
        if broken is None and problem is not None:
            broken = problem
        head = link_hash
        if length == at:
            hash_at = link_hash
    return Report(campaign_id, length, head, broken, hash_at)


def _walk(campaign_id: Any) -> Iterator[tuple[str, Break | None]]:
    """Every link in chain order, with what is wrong with it (None: nothing)."""
    transitions: dict[Any, list[StatusTransition]] = defaultdict(list)
    pending = list(
        StatusTransition.objects.filter(campaign_id=campaign_id).order_by(
            "after_sequence", "ordinal"
        )
    )
    for link in pending:
        transitions[link.invocation_id].append(link)
    rows = ToolInvocation.objects.filter(campaign_id=campaign_id).order_by("sequence")
    previous, sequence = "", 0
    for row in rows.iterator(chunk_size=2000):
        while pending and pending[0].after_sequence < row.sequence:
            previous = yield from _transition_link(pending.pop(0), previous, sequence)
        expected, sequence = sequence + 1, row.sequence
        problem = _row_problem(row, previous, expected, transitions[row.pk])
        yield row.row_hash, problem and Break(campaign_id, row.sequence, row.pk, problem)
        previous = row.row_hash
    while pending:
        previous = yield from _transition_link(pending.pop(0), previous, sequence)


def _transition_link(
    link: StatusTransition, previous: str, sequence: int
) -> Iterator[tuple[str, Break | None]]:
    problem = None
    if link.after_sequence != sequence:
        problem = f"has a transition after #{link.after_sequence}, which is not in the log"
    elif link.prev_hash != previous:
        problem = f"transition {link.ordinal} does not link to the previous link's hash"
    elif link.row_hash != transition_hash(link):
        problem = f"transition {link.ordinal} was altered: it no longer matches its hash"
    yield (
        link.row_hash,
        problem and Break(link.campaign_id, link.after_sequence, link.invocation_id, problem),
    )
    return link.row_hash


def _row_problem(
    row: ToolInvocation, previous: str, expected: int, changes: list[StatusTransition]
) -> str | None:
    if row.sequence != expected:
        return f"follows #{expected - 1}: a row is missing or inserted"
    if row.prev_hash != previous:
        return "does not link to the previous link's hash"
    sealed = changes[0].from_status if changes else row.status
    if row.row_hash != row_hash(row, row.prev_hash, status=sealed):
        return "was altered: its contents no longer match its hash"
    return _status_problem(row, sealed, changes)


def _status_problem(
    row: ToolInvocation, sealed: str, changes: list[StatusTransition]
) -> str | None:
    """The row's status and revert fields must be what its chained transitions say."""
    status = sealed
    for link in changes:
        if link.from_status != status:
            return f"transition {link.ordinal} leaves {link.from_status}, not {status}"
        status = link.to_status
    last = changes[-1] if changes and status == ToolInvocation.Status.REVERTED else None
    chained = (
        status,
        last and last.at,
        last and last.by_id,
        last.reason if last else "",
    )
    held = (row.status, row.reverted_at, row.reverted_by_id, row.revert_reason)
    if held != chained:
        return f"holds status {row.status} and revert fields its chained transitions do not"
    return None
