"""How each model and tool fares at the table: counts that equal a count of the invocation log.

A row counts where it stands now (a call later undone counts as reverted); `approved` counts the
rows with a chained status transition out of `awaiting_approval` to anything but a refusal,
since an approved call's row moves on to its outcome and keeps no status that says it was
approved. The figures are summed from the rollup's day cells (audit/rollup.py: folded in by
the reader from the log and its transitions, never by the dispatch), so their cost follows the
number of (model, tool, day) cells in scope, not the length of the log; a `since` inside a day
counts the rest of that day from the log rows (`inv_created_idx`, `inv_campaign_created_idx`).
An approved call runs as a row of its own (`approval_of`); the held row it ran for (`pending`
from then on) is not counted again among the calls.
"""

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from statistics import median
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from audit.models import StatusTransition, ToolCounts, ToolDay, ToolDayAll, ToolInvocation
from audit.permissions import authorize_analytics
from audit.rollup import COUNT_COLUMNS, approvals, rollup_refresh
from audit.selectors import reads_every_campaign
from campaigns.models import Campaign, Turn
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible

Status = ToolInvocation.Status
# The calls that ran and stood at some point: the base of a revert rate.
RAN = (Status.COMMITTED, Status.REVERTED)
# The statuses counted from the log rows themselves, by their columns' names.
COUNTED = {
    ToolCounts.STATUS_COLUMNS[status]: status
    for status in (
        Status.FAILED,
        Status.REVERTED,
        Status.COMMITTED,
        Status.AWAITING_APPROVAL,
        Status.REJECTED,
        Status.EXPIRED,
    )
}


def analytics_scope(
    *, user: Any, campaign_id: Any = None, ip: str | None = None
) -> Iterable[Any] | None:
    """The campaigns whose figures `user` may read (None: all of them). A campaign's figures are
    its owner's business: another member is refused (Forbidden, recorded from `ip`), a stranger
    is told it does not exist (NotFound). Without a campaign, an owner reads the campaigns they
    own, together."""
    if campaign_id is None:
        if reads_every_campaign(user):
            return None
        return Campaign.objects.filter(owner_id=user.pk).values("pk")
    campaign = campaign_get_visible(campaign_id=campaign_id, user=user)
    with recording_denials(user=user, ip=ip):
        authorize_analytics(user=user, campaign=campaign)
    return [campaign.pk]


def revert_rate(reverted: int, committed: int) -> float:
    """Of the calls that ran (committed, or committed and later reverted), the share undone;
    0 when none ran."""
    ran = reverted + committed
    return round(reverted / ran, 4) if ran else 0.0


def _log(
    *, campaign_ids: Iterable[Any] | None, since: datetime | None, until: datetime | None = None
) -> QuerySet:
    rows = ToolInvocation.objects.all()
    if campaign_ids is not None:
        rows = rows.filter(campaign_id__in=campaign_ids)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    return rows


def _status_counts() -> dict[str, Count]:
    return {name: Count("status", filter=Q(status=status)) for name, status in COUNTED.items()}


def _approvals(
    *, campaign_ids: Iterable[Any] | None, since: datetime | None, until: datetime | None = None
) -> dict:
    """(model, tool_name) → how many of its calls a person approved."""
    links = approvals()
    if campaign_ids is not None:
        links = links.filter(campaign_id__in=campaign_ids)
    if since is not None:
        links = links.filter(invocation__created_at__gte=since)
    if until is not None:
        links = links.filter(invocation__created_at__lt=until)
    grouped = links.values("invocation__model", "invocation__tool_name").annotate(
        n=Count("invocation_id", distinct=True)
    )
    return {(g["invocation__model"], g["invocation__tool_name"]): g["n"] for g in grouped}


def _midnight_after(since: datetime) -> datetime:
    """The first UTC midnight at or after `since`: from there on whole days of cells answer."""
    utc = since.astimezone(UTC)
    midnight = datetime.combine(utc.date(), time(), tzinfo=UTC)
    return midnight if midnight == utc else midnight + timedelta(days=1)


def _cells(*, campaign_ids: Iterable[Any] | None, since: datetime | None) -> QuerySet:
    """The rollup's cells of the scope (folded up to date first), from `since`'s next midnight."""
    rollup_refresh(campaign_ids)
    if campaign_ids is None:
        cells = ToolDayAll.objects.all()
    else:
        cells = ToolDay.objects.filter(campaign_id__in=campaign_ids)
    if since is not None:
        cells = cells.filter(day__gte=_midnight_after(since).date())
    return cells


def _raw_stats(
    *, campaign_ids: Iterable[Any] | None, since: datetime, until: datetime
) -> dict[tuple[str, str], Counter]:
    """The counts of the rows made in [since, until), from the log itself."""
    grouped = (
        _log(campaign_ids=campaign_ids, since=since, until=until)
        .values("model", "tool_name")
        .annotate(calls=Count("status", filter=~Q(status=Status.PENDING)), **_status_counts())
        .order_by()
    )
    found: dict[tuple[str, str], Counter] = {}
    for g in grouped:
        found[(g.pop("model"), g.pop("tool_name"))] = Counter(g)
    for pair, n in _approvals(campaign_ids=campaign_ids, since=since, until=until).items():
        found.setdefault(pair, Counter())["approved"] += n
    return found


def tool_stats(
    *, campaign_ids: Iterable[Any] | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    """Per model version and tool: calls, failed, reverted, revert_rate, awaiting, approved,
    rejected, expired (the API's keys), and `ran` (committed or reverted: the base of the rate,
    for the charts); `campaign_ids` None means every campaign. Ordered by model, then tool.

    Summed from the rollup's day cells (audit/rollup.py), with the part of `since`'s day after
    it counted from the log rows themselves (an index range of at most one day's rows)."""
    totals: dict[tuple[str, str], Counter] = {}
    cells = (
        _cells(campaign_ids=campaign_ids, since=since)
        .values("model", "tool_name")
        .annotate(**{c: Sum(c) for c in COUNT_COLUMNS})
        .order_by()
    )
    for g in cells:
        totals[(g.pop("model"), g.pop("tool_name"))] = Counter(g)
    if since is not None and since < _midnight_after(since):
        raw = _raw_stats(campaign_ids=campaign_ids, since=since, until=_midnight_after(since))
        for pair, counts in raw.items():
            totals.setdefault(pair, Counter()).update(counts)
    return [
        {
            "model": model,
            "tool_name": tool_name,
            "calls": n["calls"] - n["pending"],
            "failed": n["failed"],
            "reverted": n["reverted"],
            "revert_rate": revert_rate(n["reverted"], n["committed"]),
            "awaiting": n["awaiting"],
            "approved": n["approved"],
            "rejected": n["rejected"],
            "expired": n["expired"],
            "ran": n["reverted"] + n["committed"],
        }
        for (model, tool_name), n in sorted(totals.items())
        if n["calls"] - n["pending"]
    ]


def revert_rate_by(rows: list[dict[str, Any]], key: str) -> list[tuple[str, float, int]]:
    """Fold `tool_stats` rows by "model" or "tool_name": (name, revert rate, calls that ran),
    leaving out names none of whose calls ran (a rate of nothing)."""
    totals: dict[str, list[int]] = {}
    for row in rows:
        reverted_ran = totals.setdefault(row[key], [0, 0])
        reverted_ran[0] += row["reverted"]
        reverted_ran[1] += row["ran"]
    return [
        (name, revert_rate(reverted, ran - reverted), ran)
        for name, (reverted, ran) in sorted(totals.items())
        if ran
    ]


def revert_rate_by_day(
    *, campaign_ids: Iterable[Any] | None = None, since: datetime | None = None
) -> list[tuple[date, float, int]]:
    """Per day (UTC) of the calls' creation: (day, revert rate, calls that ran), oldest first;
    from the rollup's cells, `since`'s own day from the log rows after it."""
    days: dict[date, list[int]] = {}
    cells = (
        _cells(campaign_ids=campaign_ids, since=since)
        .values("day")
        .annotate(reverted=Sum("reverted"), committed=Sum("committed"))
        .order_by()
    )
    for d in cells:
        days[d["day"]] = [d["reverted"], d["committed"]]
    if since is not None and since < _midnight_after(since):
        partial = (
            _log(campaign_ids=campaign_ids, since=since, until=_midnight_after(since))
            .filter(status__in=RAN)
            .aggregate(
                reverted=Count("status", filter=Q(status=Status.REVERTED)),
                committed=Count("status", filter=Q(status=Status.COMMITTED)),
            )
        )
        days[since.astimezone(UTC).date()] = [partial["reverted"], partial["committed"]]
    return [
        (day, revert_rate(reverted, committed), reverted + committed)
        for day, (reverted, committed) in sorted(days.items())
        if reverted + committed
    ]


def model_stats(
    *, campaign_ids: Iterable[Any] | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    """Models side by side, one row each, for choosing the GM: of the GM turns each answered,
    how many the table undid (`undo_rate`: undone turns / turns); of its calls, the failed
    ones whose input the tool refused (`failed_input_rate`), and the approval outcomes; the
    median milliseconds to its first word and per turn (its own time, not a held call's wait
    for a person); the tokens in and out where its server reported them (None where none
    did). Turns count by when they were posted, calls by when they were made (`tool_stats`).
    Ordered by model."""
    per_model: dict[str, dict[str, Any]] = {}

    def row(model: str) -> dict[str, Any]:
        return per_model.setdefault(
            model,
            {
                "model": model,
                "turns": 0,
                "undone_turns": 0,
                "calls": 0,
                "failed": 0,
                "failed_input": 0,
                "reverted": 0,
                "ran": 0,
                "approved": 0,
                "rejected": 0,
                "expired": 0,
                "_first": [],
                "_answer": [],
                "tokens_in": None,
                "tokens_out": None,
            },
        )

    for tool in tool_stats(campaign_ids=campaign_ids, since=since):
        r = row(tool["model"])
        for key in ("calls", "failed", "reverted", "ran", "approved", "rejected", "expired"):
            r[key] += tool[key]
    invalid = (
        _log(campaign_ids=campaign_ids, since=since)
        .filter(status=Status.FAILED, error__startswith="Invalid input")
        .values("model")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for g in invalid:
        row(g["model"])["failed_input"] += g["n"]
    turns = Turn.objects.exclude(gm_model="")
    if campaign_ids is not None:
        turns = turns.filter(campaign_id__in=campaign_ids)
    if since is not None:
        turns = turns.filter(created_at__gte=since)
    for t in turns.values(
        "gm_model", "reverted_at", "first_word_ms", "answer_ms", "tokens_in", "tokens_out"
    ):
        r = row(t["gm_model"])
        r["turns"] += 1
        r["undone_turns"] += t["reverted_at"] is not None
        if t["first_word_ms"] is not None:
            r["_first"].append(t["first_word_ms"])
        if t["answer_ms"] is not None:
            r["_answer"].append(t["answer_ms"])
        for key in ("tokens_in", "tokens_out"):
            if t[key] is not None:
                r[key] = (r[key] or 0) + t[key]
    out = []
    for model in sorted(per_model):
        r = per_model[model]
        first, answer = r.pop("_first"), r.pop("_answer")
        r["undo_rate"] = round(r["undone_turns"] / r["turns"], 4) if r["turns"] else 0.0
        r["failed_input_rate"] = round(r["failed_input"] / r["calls"], 4) if r["calls"] else 0.0
        r["revert_rate"] = revert_rate(r["reverted"], r["ran"] - r["reverted"])
        r["median_first_word_ms"] = int(median(first)) if first else None
        r["median_turn_ms"] = int(median(answer)) if answer else None
        out.append(r)
    return out


# Approval fatigue (docs/architecture.md#approval-fatigue): how many prompts a table's policy
# asks, and how each person answers them. Prompts a human answers blindly are the risk the
# default policy is chosen against: an approver who approves everything, fast, is not reviewing.


def approval_fatigue(
    *, campaign_ids: Iterable[Any] | None = None, since: datetime | None = None
) -> dict[str, Any]:
    """{prompts, awaiting, expired, turns, prompts_per_turn, approvers: [{approver, answered,
    approved, rejected, approve_rate, median_seconds, mean_seconds}]} over the campaigns in
    scope (None: every campaign), for the calls held at or after `since`. A prompt is a call
    that was held: answered (its chained transition out of `awaiting_approval`: by whom, when,
    read through the answers' partial index `transition_approval_idx`) or still waiting. The
    time to decide runs from the call being held to its answer; an expiry is nobody's answer.
    `turns` counts the turns the GM was asked to answer, the base of `prompts_per_turn`."""
    links = StatusTransition.objects.filter(from_status=Status.AWAITING_APPROVAL)
    waiting = ToolInvocation.objects.filter(status=Status.AWAITING_APPROVAL)
    turns = Turn.objects.exclude(status=Turn.Status.OPEN)
    if campaign_ids is not None:
        links, waiting, turns = (
            q.filter(campaign_id__in=campaign_ids) for q in (links, waiting, turns)
        )
    if since is not None:
        links = links.filter(invocation__created_at__gte=since)
        waiting = waiting.filter(created_at__gte=since)
        turns = turns.filter(created_at__gte=since)
    per: dict[str, dict[str, Any]] = {}
    answered = expired = 0
    for by, to_status, at, held_at in links.values_list(
        "by__username", "to_status", "at", "invocation__created_at"
    ):
        answered += 1
        if by is None:
            expired += to_status == Status.EXPIRED
            continue
        person = per.setdefault(by, {"approved": 0, "rejected": 0, "seconds": []})
        person["approved" if to_status == Status.PENDING else "rejected"] += 1
        person["seconds"].append(max(0.0, (at - held_at).total_seconds()))
    awaiting, n_turns = waiting.count(), turns.count()
    prompts = answered + awaiting
    return {
        "prompts": prompts,
        "awaiting": awaiting,
        "expired": expired,
        "turns": n_turns,
        "prompts_per_turn": round(prompts / n_turns, 4) if n_turns else 0.0,
        "approvers": [_approver_row(name, person) for name, person in sorted(per.items())],
    }


def _approver_row(name: str, person: dict[str, Any]) -> dict[str, Any]:
    seconds = sorted(person["seconds"])
    answered = len(seconds)
    middle = answered // 2
    median = seconds[middle] if answered % 2 else (seconds[middle - 1] + seconds[middle]) / 2
    return {
        "approver": name,
        "answered": answered,
        "approved": person["approved"],
        "rejected": person["rejected"],
        "approve_rate": round(person["approved"] / answered, 4),
        "median_seconds": round(median, 1),
        "mean_seconds": round(sum(seconds) / answered, 1),
    }
