"""How each model and tool fares at the table: counts read from the invocation log.

One grouped query per question, each an index-only scan of the rows it counts (the log's
`inv_analytics_idx` leads with the campaign, `inv_analytics_all_idx` serves the whole log), so a
campaign's or a window's cost follows the rows asked about, not the length of the log. A row
counts where it stands now (a call later undone counts as reverted); `approved` counts the
chained status transitions out of `awaiting_approval` to anything but a refusal, since an
approved call's row moves on to its outcome and keeps no status that says it was approved.
An approved call runs as a row of its own (`approval_of`), and the held row it ran for
(`pending` from then on) is not counted again among the calls.
"""

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate

from audit.models import SecurityEvent, StatusTransition, ToolInvocation
from campaigns.models import Campaign
from campaigns.selectors import campaign_get_visible
from core.errors import Forbidden

Status = ToolInvocation.Status
# The calls that ran and stood at some point: the base of a revert rate.
RAN = (Status.COMMITTED, Status.REVERTED)
REFUSED = (Status.REJECTED, Status.EXPIRED, Status.AWAITING_APPROVAL)
COUNTED = {
    "failed": Status.FAILED,
    "reverted": Status.REVERTED,
    "committed": Status.COMMITTED,
    "awaiting": Status.AWAITING_APPROVAL,
    "rejected": Status.REJECTED,
    "expired": Status.EXPIRED,
}


def reads_every_campaign(user: Any) -> bool:
    """Staff holding the audit permission police every table, so they see every campaign's
    figures (as they see every campaign, `campaign_get_visible`)."""
    return bool(user.is_active and user.is_staff and user.has_perm("audit.revert_toolinvocation"))


def analytics_scope(*, user: Any, campaign_id: Any = None) -> Iterable[Any] | None:
    """The campaigns whose figures `user` may read (None: all of them). A campaign's figures are
    its owner's business: another member is refused (Forbidden, for the security log), a
    stranger is told it does not exist (NotFound). Without a campaign, an owner reads the
    campaigns they own, together."""
    if campaign_id is None:
        if reads_every_campaign(user):
            return None
        return Campaign.objects.filter(owner_id=user.pk).values("pk")
    campaign = campaign_get_visible(campaign_id=campaign_id, user=user)
    if campaign.owner_id != user.pk and not reads_every_campaign(user):
        raise Forbidden(
            "Only the campaign owner (or staff) may read its analytics.",
            kind=SecurityEvent.Kind.ADMIN_DENIED,
            campaign=campaign,
            target="analytics",
        )
    return [campaign.pk]


def revert_rate(reverted: int, committed: int) -> float:
    """Of the calls that ran (committed, or committed and later reverted), the share undone;
    0 when none ran."""
    ran = reverted + committed
    return round(reverted / ran, 4) if ran else 0.0


def _log(*, campaign_ids: Iterable[Any] | None, since: datetime | None) -> QuerySet:
    rows = ToolInvocation.objects.all()
    if campaign_ids is not None:
        rows = rows.filter(campaign_id__in=campaign_ids)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    return rows


def _status_counts() -> dict[str, Count]:
    return {name: Count("status", filter=Q(status=status)) for name, status in COUNTED.items()}


def _approvals(*, campaign_ids: Iterable[Any] | None, since: datetime | None) -> dict:
    """(model, tool_name) → how many of its calls a person approved."""
    links = StatusTransition.objects.filter(from_status=Status.AWAITING_APPROVAL).exclude(
        to_status__in=REFUSED
    )
    if campaign_ids is not None:
        links = links.filter(campaign_id__in=campaign_ids)
    if since is not None:
        links = links.filter(invocation__created_at__gte=since)
    grouped = links.values("invocation__model", "invocation__tool_name").annotate(
        n=Count("invocation_id", distinct=True)
    )
    return {(g["invocation__model"], g["invocation__tool_name"]): g["n"] for g in grouped}


def tool_stats(
    *, campaign_ids: Iterable[Any] | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    """Per model version and tool: calls, failed, reverted, revert_rate, awaiting, approved,
    rejected, expired (the API's keys), and `ran` (committed or reverted: the base of the rate,
    for the charts); `campaign_ids` None means every campaign. Ordered by model, then tool."""
    grouped = (
        _log(campaign_ids=campaign_ids, since=since)
        .values("model", "tool_name")
        .annotate(calls=Count("status", filter=~Q(status=Status.PENDING)), **_status_counts())
        .order_by("model", "tool_name")
    )
    approved = _approvals(campaign_ids=campaign_ids, since=since)
    return [
        {
            "model": g["model"],
            "tool_name": g["tool_name"],
            "calls": g["calls"],
            "failed": g["failed"],
            "reverted": g["reverted"],
            "revert_rate": revert_rate(g["reverted"], g["committed"]),
            "awaiting": g["awaiting"],
            "approved": approved.get((g["model"], g["tool_name"]), 0),
            "rejected": g["rejected"],
            "expired": g["expired"],
            "ran": g["reverted"] + g["committed"],
        }
        for g in grouped
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
    """Per day (UTC) of the calls' creation: (day, revert rate, calls that ran), oldest first."""
    days = (
        _log(campaign_ids=campaign_ids, since=since)
        .filter(status__in=RAN)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(ran=Count("status"), reverted=Count("status", filter=Q(status=Status.REVERTED)))
        .order_by("day")
    )
    return [
        (d["day"], revert_rate(d["reverted"], d["ran"] - d["reverted"]), d["ran"]) for d in days
    ]
