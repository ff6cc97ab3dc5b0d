"""The analytics rollup: counts per (campaign, model, tool, day), kept current by the readers.

Nothing on the write path maintains it (the dispatch and the revert stay as they are, statement
for statement). It rests on two facts of the log:

* a campaign's rows are appended in `sequence` order and its status changes are appended as
  chained `StatusTransition` links in chain-position order (`after_sequence`, `ordinal`), both
  under the campaign lock, so what a reader sees of a campaign's log is always a prefix of it,
  and it grows only at the end;
* a row is written with its first status, and every later change of status is a link saying
  from what to what.

So a row counts where it stands now if the rollup adds each row once with its FIRST status (the
`from_status` of its first link, or its status if it has none) and each link once (its
`from_status` minus one, its `to_status` plus one), and a row counts as approved if the rollup
adds each link out of `awaiting_approval` to anything but a refusal that is the first such link
of its row (`audit/analytics.py` counts those rows, distinct).

A reader folds in what lies past each campaign's `AnalyticsMark`: the campaigns' tips (last row,
last link) are read in one statement, the marks of the campaigns that moved are locked in
campaign order (FOR UPDATE; two readers fold one after the other, the second finds less or
nothing left), and the rows and links between mark and tip are grouped, added to the cells with
one upsert (`ToolDay` per campaign, `ToolDayAll` for the whole log, both in key order) and the
marks moved to the tips, in one transaction. A campaign that goes takes its cells with it and
subtracts them from the whole log's (`campaign_leaving`).

Days are UTC. A `since` inside a day is answered from the raw log for the rest of that day
(`audit/analytics.py`), the whole days after it from the cells.
"""

import string
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import UTC, date
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import BooleanField, Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, TruncDate

from audit.models import (
    AnalyticsMark,
    StatusTransition,
    ToolCounts,
    ToolDay,
    ToolDayAll,
    ToolInvocation,
)
from campaigns.models import Campaign

Status = ToolInvocation.Status
STATUS_COLUMNS = ToolCounts.STATUS_COLUMNS
COUNT_COLUMNS = ("calls", *STATUS_COLUMNS.values(), "approved")
# A link out of awaiting_approval to one of these is not an approval (audit/analytics.py).
REFUSED = (Status.REJECTED, Status.EXPIRED, Status.AWAITING_APPROVAL)
# Campaigns folded per statement: the ranges are spelled out, one OR term each.
BATCH = 200

Cell = tuple[Any, str, str, date]  # campaign, model, tool_name, day


def rollup_refresh(campaign_ids: Iterable[Any] | None = None) -> int:
    """Fold into the cells what the log of these campaigns (None: every campaign) holds past
    their marks; how many campaigns had moved."""
    for attempt in range(3):
        moved = _moved(campaign_ids)
        try:
            for start in range(0, len(moved), BATCH):
                _fold(moved[start : start + BATCH])
        except IntegrityError:  # a campaign deleted between its tip and its new mark
            if attempt == 2 or connection.in_atomic_block:
                raise
            continue
        return len(moved)
    return 0


def _moved(campaign_ids: Iterable[Any] | None) -> list[tuple[Any, int, tuple[int, int]]]:
    """(campaign, last row's sequence, last link's position) of each campaign whose log ended
    past its mark when read, in campaign order: one statement, so the tips are of one moment
    (every link read then belongs to a row read then)."""
    campaigns = Campaign.objects.all()
    if campaign_ids is not None:
        campaigns = campaigns.filter(pk__in=campaign_ids)
    rows = ToolInvocation.objects.filter(campaign_id=OuterRef("pk")).order_by("-sequence")
    links = StatusTransition.objects.filter(campaign_id=OuterRef("pk")).order_by(
        "-after_sequence", "-ordinal"
    )
    tips = campaigns.annotate(
        seq_tip=Coalesce(Subquery(rows.values("sequence")[:1]), Value(0)),
        after_tip=Coalesce(Subquery(links.values("after_sequence")[:1]), Value(0)),
        ordinal_tip=Coalesce(Subquery(links.values("ordinal")[:1]), Value(0)),
        seq_mark=Coalesce(F("analytics_mark__sequence"), Value(0)),
        after_mark=Coalesce(F("analytics_mark__after_sequence"), Value(0)),
        ordinal_mark=Coalesce(F("analytics_mark__ordinal"), Value(0)),
    ).filter(
        Q(seq_tip__gt=F("seq_mark"))
        | Q(after_tip__gt=F("after_mark"))
        | Q(after_tip=F("after_mark"), ordinal_tip__gt=F("ordinal_mark"))
    )
    return [
        (pk, seq, (after, ordinal))
        for pk, seq, after, ordinal in tips.order_by("pk").values_list(
            "pk", "seq_tip", "after_tip", "ordinal_tip"
        )
    ]


def _fold(moved: list[tuple[Any, int, tuple[int, int]]]) -> None:
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            # Derived data: a crash may lose the fold, mark and cells together, never one of
            # them (the next read folds again), so its commit need not wait for the disk.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit = off")
        ids = [pk for pk, _, _ in moved]
        # The marks exist before they are locked (a first fold of a campaign races another's).
        AnalyticsMark.objects.bulk_create(
            [AnalyticsMark(campaign_id=pk) for pk in ids], ignore_conflicts=True
        )
        marks = {
            mark.campaign_id: mark
            for mark in AnalyticsMark.objects.select_for_update()
            .filter(campaign_id__in=ids)
            .order_by("campaign_id")
        }
        row_ranges, link_ranges, moving = [], [], []
        for pk, seq_tip, link_tip in moved:
            mark = marks.get(pk)
            if mark is None:  # the campaign went meanwhile
                continue
            # Another reader may have folded past these tips meanwhile: then less, or nothing.
            link_mark = (mark.after_sequence, mark.ordinal)
            rows_moved, links_moved = seq_tip > mark.sequence, link_tip > link_mark
            if rows_moved:
                row_ranges.append((pk, mark.sequence, seq_tip))
                mark.sequence = seq_tip
            if links_moved:
                link_ranges.append((pk, link_mark, link_tip))
                mark.after_sequence, mark.ordinal = link_tip
            if rows_moved or links_moved:
                moving.append(mark)
        if not moving:
            return
        deltas: dict[Cell, Counter] = defaultdict(Counter)
        _add_links(deltas, link_ranges)
        _add_rows(deltas, row_ranges)
        _upsert(ToolDay, ["campaign_id", "model", "tool_name", "day"], deltas)
        overall: dict[Cell, Counter] = defaultdict(Counter)
        for (_, model, tool, day), counts in deltas.items():
            overall[(model, tool, day)].update(counts)
        _upsert(ToolDayAll, ["model", "tool_name", "day"], overall)
        _marks_move(moving)


def _add_rows(deltas: dict[Cell, Counter], ranges: list[tuple[Any, int, int]]) -> None:
    """Each row in the ranges once, under its first status."""
    if not ranges:
        return
    within = _ranges(
        ToolInvocation,
        "({campaign} = %s AND {sequence} > %s AND {sequence} <= %s)",
        [(pk, low, high) for pk, low, high in ranges],
    )
    first_link = StatusTransition.objects.filter(invocation_id=OuterRef("pk")).order_by(
        "after_sequence", "ordinal"
    )
    grouped = (
        ToolInvocation.objects.filter(within)
        .annotate(
            day=TruncDate("created_at", tzinfo=UTC),
            first_status=Coalesce(Subquery(first_link.values("from_status")[:1]), F("status")),
        )
        .values_list("campaign_id", "model", "tool_name", "day", "first_status")
        .annotate(n=_count())
        .order_by()
    )
    for campaign_id, model, tool, day, status, n in grouped:
        cell = deltas[(campaign_id, model, tool, day)]
        cell["calls"] += n
        if status in STATUS_COLUMNS:
            cell[STATUS_COLUMNS[status]] += n


def _add_links(
    deltas: dict[Cell, Counter], ranges: list[tuple[Any, tuple[int, int], tuple[int, int]]]
) -> None:
    """Each link in the ranges once: its row moves from one status to another, in the cell of
    the row's day; the first approval of a row counts it approved."""
    if not ranges:
        return
    within = _ranges(
        StatusTransition,
        "({campaign} = %s"
        " AND ({after_sequence} > %s OR ({after_sequence} = %s AND {ordinal} > %s))"
        " AND ({after_sequence} < %s OR ({after_sequence} = %s AND {ordinal} <= %s)))",
        [(pk, la, la, lo, ha, ha, ho) for pk, (la, lo), (ha, ho) in ranges],
    )
    earlier_approval = approvals().filter(
        Q(after_sequence__lt=OuterRef("after_sequence"))
        | Q(after_sequence=OuterRef("after_sequence"), ordinal__lt=OuterRef("ordinal")),
        invocation_id=OuterRef("invocation_id"),
    )
    grouped = (
        StatusTransition.objects.filter(within)
        .annotate(
            day=TruncDate("invocation__created_at", tzinfo=UTC),
            again=Exists(earlier_approval),
        )
        .values_list(
            "campaign_id",
            "invocation__model",
            "invocation__tool_name",
            "day",
            "from_status",
            "to_status",
            "again",
        )
        .annotate(n=_count())
        .order_by()
    )
    for campaign_id, model, tool, day, before, after, again, n in grouped:
        cell = deltas[(campaign_id, model, tool, day)]
        if before in STATUS_COLUMNS:
            cell[STATUS_COLUMNS[before]] -= n
        if after in STATUS_COLUMNS:
            cell[STATUS_COLUMNS[after]] += n
        if before == Status.AWAITING_APPROVAL and after not in REFUSED and not again:
            cell["approved"] += n


def _ranges(model: type, one: str, ranges: list[tuple]) -> RawSQL:
    """A WHERE condition on `model`'s table: any of the ranges, each `one` with its parameters,
    `{name}` in it standing for the column of that field. Spelled as SQL: a few hundred ranges
    would cost the ORM more to build than the database to answer."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = {name for _, name, _, _ in string.Formatter().parse(one) if name}
    text = one.format(
        **{
            name: f"{table}.{connection.ops.quote_name(model._meta.get_field(name).column)}"
            for name in names
        }
    )
    campaign = Campaign._meta.pk
    params = [
        campaign.get_db_prep_value(value, connection) if i == 0 else value
        for r in ranges
        for i, value in enumerate(r)
    ]
    return RawSQL(" OR ".join([text] * len(ranges)), params, output_field=BooleanField())


def approvals() -> QuerySet:
    """The links that are a person's approval: out of awaiting_approval, not to a refusal."""
    return StatusTransition.objects.filter(from_status=Status.AWAITING_APPROVAL).exclude(
        to_status__in=REFUSED
    )


def _count() -> Any:
    return Count("*")


def _upsert(model: type, key: list[str], deltas: dict[tuple, Counter]) -> None:
    """Add the deltas to the cells, creating the missing ones: one statement per batch, rows in
    key order (two folds lock shared cells in the same order, so they never deadlock)."""
    rows = [
        (*cell, *(counts[c] for c in COUNT_COLUMNS))
        for cell, counts in sorted(deltas.items(), key=lambda item: _sortable(item[0]))
        if any(counts.values())
    ]
    if not rows:
        return
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = [model._meta.get_field(name).column for name in key] + list(COUNT_COLUMNS)
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    added = ", ".join(
        f"{quote(c)} = {table}.{quote(c)} + excluded.{quote(c)}" for c in COUNT_COLUMNS
    )
    conflict = ", ".join(quote(c) for c in columns[: len(key)])
    fields = [model._meta.get_field(name) for name in key]
    preps = [lambda v, f=f: f.get_db_prep_value(v, connection) for f in fields]
    preps += [lambda v: v] * len(COUNT_COLUMNS)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):
            batch = rows[start : start + 500]
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(quote(c) for c in columns)}) "
                f"VALUES {', '.join([one] * len(batch))} "
                f"ON CONFLICT ({conflict}) DO UPDATE SET {added}",
                [prep(value) for row in batch for prep, value in zip(preps, row, strict=True)],
            )


def _marks_move(marks: list[AnalyticsMark]) -> None:
    """Write the marks' new positions: one statement (the rows exist, and are locked)."""
    quote = connection.ops.quote_name
    table = quote(AnalyticsMark._meta.db_table)
    names = ["campaign", "sequence", "after_sequence", "ordinal"]
    fields = [AnalyticsMark._meta.get_field(n) for n in names]
    columns = [quote(f.column) for f in fields]
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([one] * len(marks))} "
            f"ON CONFLICT ({columns[0]}) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in columns[1:]),
            [
                f.get_db_prep_value(getattr(mark, f.attname), connection)
                for mark in marks
                for f in fields
            ],
        )


def _sortable(cell: tuple) -> tuple:
    return tuple(str(part) for part in cell)


def campaign_leaving(sender: Any, instance: Campaign, **kwargs: Any) -> None:
    """A campaign being deleted takes its log and its cells with it: take its cells out of the
    whole log's too, under its mark's lock (a fold of it in progress finishes first)."""
    with transaction.atomic():
        # The campaign row first: a fold creating this campaign's mark (whose key check shares
        # the row) finishes before, or fails after (the campaign gone) and folds nothing.
        list(Campaign.objects.select_for_update().filter(pk=instance.pk).values_list("pk"))
        list(AnalyticsMark.objects.select_for_update().filter(campaign_id=instance.pk))
        gone: dict[tuple, Counter] = {}
        for cell in ToolDay.objects.filter(campaign_id=instance.pk).values(
            "model", "tool_name", "day", *COUNT_COLUMNS
        ):
            gone[(cell["model"], cell["tool_name"], cell["day"])] = Counter(
                {c: -cell[c] for c in COUNT_COLUMNS}
            )
        _upsert(ToolDayAll, ["model", "tool_name", "day"], gone)
        ToolDay.objects.filter(campaign_id=instance.pk).delete()  # folded after the cascade looked
