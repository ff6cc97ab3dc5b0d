"""The write-ahead invocation log. Rows are appended by the audited dispatch and moved to
`reverted` by the revert service; nothing else edits or deletes them."""

import uuid
from enum import StrEnum

from django.conf import settings
from django.db import models

from ai_tools.base import Tier
from campaigns.models import Campaign, Revertible, Turn, campaign_key, user_reference

# The security log is this app's model (its table, migrations and admin pages), declared in the
# world's layer, whose services record their own refusals (`campaigns.security`).
from campaigns.models import SecurityEvent as SecurityEvent


class InvocationOrigin(models.TextChoices):
    """Who wrote a log row (`ToolInvocation.source`): the REST tool-call endpoint, the GM
    runner, a person's own hand or an MCP client. Not the source of a realtime event or a chat
    message (`campaigns.models.Source`). A new way in is a member here (and a migration of the
    field's choices). The labels are the stored words, which the admin shows as they are."""

    API = "api", "api"
    GM = "gm", "gm"
    # A person's own hand at the table (the GM adjusting HP, a player dragging a token): logged
    # and undoable like the AI's calls; its events carry the source `user`.
    USER = "user", "user"
    # An outside agent through the MCP endpoint (docs/mcp.md): its events carry the source
    # `ai_tool_execution`, its row's `model` names the client.
    MCP = "mcp", "mcp"


class SkipReason(StrEnum):
    """Why a revert or an undo leaves a log row as it is (`audit.services.revert.skip_reason`);
    each surface words it for its readers."""

    ALREADY_REVERTED = "already_reverted"
    NOT_COMMITTED = "not_committed"
    NOT_REVERTIBLE = "not_revertible"


class ApprovalAnswer(StrEnum):
    """How a held call was answered (`audit.services.approval`): the held row moves to
    `pending` when approved, so its status alone does not say it."""

    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class ToolInvocation(Revertible):
    class Status(models.TextChoices):
        PENDING = "pending"
        COMMITTED = "committed"
        FAILED = "failed"
        REVERTED = "reverted"
        AWAITING_APPROVAL = "awaiting_approval"
        REJECTED = "rejected"
        EXPIRED = "expired"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Every query by campaign uses an index that starts with it (`invocation_seq_unique` at
    # least): no index on the column alone (one entry less per row written).
    campaign = campaign_key("invocations", db_index=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="invocations"
    )
    # Provenance: `user` is the actor whose turn it is; `requested_by` is who made the call when
    # that was someone else (the owner posting into a player's turn, an external agent).
    requested_by = user_reference(on_delete=models.PROTECT)
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="invocations"
    )
    sequence = models.BigIntegerField()
    tool_name = models.CharField(max_length=64)
    # The model's id for this call (a GM turn's tool_use block): a turn resumed after a crash
    # runs the same tool_use again, and finds it here instead of applying it twice.
    tool_use_id = models.CharField(max_length=100, blank=True, default="")
    tool_tier = models.CharField(max_length=16, choices=Tier.choices, blank=True, default="")
    # Null only when the caller sent JSON null: a failed row keeps what was sent, whatever it is.
    input = models.JSONField(null=True)
    result = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True, default="")
    revertible = models.BooleanField(default=True)
    revert_snapshot = models.JSONField(null=True, blank=True)
    post_state = models.JSONField(null=True, blank=True)
    write_set = models.JSONField(default=list, blank=True)
    read_set = models.JSONField(default=list, blank=True)
    broadcast_events = models.JSONField(default=list, blank=True)
    model = models.CharField(max_length=100, blank=True, default="")
    source = models.CharField(
        max_length=32, blank=True, default="", choices=InvocationOrigin.choices
    )
    created_at = models.DateTimeField(auto_now_add=True)
    committed_at = models.DateTimeField(null=True, blank=True)
    # Human in the loop (audit/services/approval.py). A call held for approval is a row of its
    # own (`awaiting_approval`) whose `preview` says what it would change and why it waits;
    # approved, it runs as a new row at the log's tip (`approval_of` points back), so the log's
    # order stays the order the world changed in, which undo and conflict detection rely on.
    preview = models.JSONField(null=True, blank=True)
    approval_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="approved_runs"
    )
    # Tamper evidence (audit/chain.py): an HMAC over the row as sealed and the previous link's.
    prev_hash = models.CharField(max_length=64, blank=True, default="")
    row_hash = models.CharField(max_length=64, blank=True, default="")

    # The call itself (docs/architecture.md#the-log-row): which tool, what it was given, how it
    # ended. The API shows these and the chain seals them (a field added here is sealed from then
    # on).
    CALL = ("tool_name", "tool_tier", "input", "result", "status", "error", "revertible")

    class Meta:
        ordering = ["-sequence"]
        permissions = [("revert_toolinvocation", "Can revert any tool invocation")]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "sequence"], name="invocation_seq_unique"),
            models.UniqueConstraint(
                fields=["campaign", "turn", "tool_use_id"],
                condition=~models.Q(tool_use_id=""),
                name="invocation_tool_use_once",
            ),
        ]
        indexes = [
            models.Index(
                fields=["campaign", "status", "-sequence"], name="inv_campaign_status_idx"
            ),
            models.Index(fields=["campaign", "turn", "-sequence"], name="inv_campaign_turn_idx"),
            models.Index(
                fields=["campaign", "tool_name", "-sequence"], name="inv_campaign_tool_idx"
            ),
            models.Index(
                fields=["campaign", "tool_tier", "-sequence"], name="inv_campaign_tier_idx"
            ),
            models.Index(fields=["-created_at"], name="inv_created_idx"),
            # The admin lists the whole log newest first; one index behind each of its filters.
            models.Index(fields=["campaign", "-created_at"], name="inv_campaign_created_idx"),
            models.Index(fields=["status", "-created_at"], name="inv_status_created_idx"),
            models.Index(fields=["tool_tier", "-created_at"], name="inv_tier_created_idx"),
            models.Index(fields=["tool_name", "-created_at"], name="inv_tool_created_idx"),
            models.Index(fields=["model", "-created_at"], name="inv_model_created_idx"),
            models.Index(fields=["source", "-created_at"], name="inv_source_created_idx"),
            # Analytics (audit/analytics.py): the grouped counts read only these columns, in
            # group order, so they are index-only scans of the rows asked about, per campaign
            # or over the whole log.
            models.Index(
                fields=["campaign", "model", "tool_name", "status", "created_at"],
                name="inv_analytics_idx",
            ),
            models.Index(
                fields=["model", "tool_name", "status", "created_at"], name="inv_analytics_all_idx"
            ),
            # Adaptive approval (audit/approval.py): a (model, tool) pair's last N calls that
            # ran, in the campaign (by sequence) and across campaigns (by commit time).
            models.Index(
                fields=["campaign", "model", "tool_name", "-sequence"],
                condition=models.Q(status__in=["committed", "reverted"]),
                name="inv_adaptive_idx",
            ),
            models.Index(
                fields=["model", "tool_name", "-committed_at"],
                condition=models.Q(status__in=["committed", "reverted"]),
                name="inv_adaptive_global_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.tool_name} ({self.status})"


class StatusTransition(models.Model):
    """A status change of a log row (a revert; approvals later), chained after the invocation
    that was last when it happened, so a status flipped in the table alone is detected."""

    campaign = campaign_key()
    invocation = models.ForeignKey(
        ToolInvocation, on_delete=models.CASCADE, related_name="transitions"
    )
    # The link's place in the campaign's chain: the `ordinal`-th transition after the
    # invocation of this sequence number.
    after_sequence = models.BigIntegerField()
    ordinal = models.PositiveIntegerField()
    from_status = models.CharField(max_length=20, choices=ToolInvocation.Status.choices)
    to_status = models.CharField(max_length=20, choices=ToolInvocation.Status.choices)
    # PROTECT: a user deleted from under a chained link would change what the link says.
    by = user_reference(on_delete=models.PROTECT)
    reason = models.TextField(blank=True, default="")
    at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    row_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["after_sequence", "ordinal"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "after_sequence", "ordinal"], name="transition_link_unique"
            )
        ]
        indexes = [
            # The approvals the analytics count: few links among many reverts.
            models.Index(
                fields=["campaign"],
                condition=models.Q(from_status=ToolInvocation.Status.AWAITING_APPROVAL),
                name="transition_approval_idx",
            )
        ]

    def __str__(self) -> str:
        return f"#{self.after_sequence}.{self.ordinal} {self.from_status} → {self.to_status}"


class WriteSetEntry(models.Model):
    """One entity key an invocation wrote or read, indexed by (campaign, root, sequence) so
    conflict detection is an index range scan however long the log grows."""

    class Mode(models.TextChoices):
        WRITE = "w"
        READ = "r"

    campaign = campaign_key(db_index=False)  # `writeset_lookup_idx` starts with it
    invocation = models.ForeignKey(ToolInvocation, on_delete=models.CASCADE, related_name="entries")
    sequence = models.BigIntegerField()
    root = models.CharField(max_length=120)
    key = models.CharField(max_length=160)
    mode = models.CharField(max_length=1, choices=Mode.choices)

    class Meta:
        indexes = [
            models.Index(fields=["campaign", "root", "sequence"], name="writeset_lookup_idx")
        ]

    def __str__(self) -> str:
        return f"{self.mode} {self.key}"


class AnalyticsMark(models.Model):
    """How far the analytics rollup (audit/rollup.py) has read one campaign's log: every row up to
    `sequence` and every status transition up to the chain position (`after_sequence`,
    `ordinal`) is in its `ToolDay` cells. Locked (FOR UPDATE) by the reader folding newer links
    in, so two readers never fold the same link twice."""

    campaign = models.OneToOneField(
        Campaign, primary_key=True, on_delete=models.CASCADE, related_name="analytics_mark"
    )
    sequence = models.BigIntegerField(default=0)
    after_sequence = models.BigIntegerField(default=0)
    ordinal = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"#{self.sequence}, #{self.after_sequence}.{self.ordinal}"


class ToolCounts(models.Model):
    """One cell of the rollup: of the calls made that day (UTC) by a model with a tool, how many
    there are and where each stands now (one column per status), and how many a person
    approved. Written only by audit/rollup.py."""

    model = models.CharField(max_length=100)
    tool_name = models.CharField(max_length=64)
    day = models.DateField()
    calls = models.BigIntegerField(default=0)
    pending = models.BigIntegerField(default=0)
    committed = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)
    reverted = models.BigIntegerField(default=0)
    awaiting = models.BigIntegerField(default=0)
    rejected = models.BigIntegerField(default=0)
    expired = models.BigIntegerField(default=0)
    approved = models.BigIntegerField(default=0)

    # The column counting the rows that stand in each status: the API's key (`awaiting` for
    # `awaiting_approval`, docs/api.md#analytics).
    STATUS_COLUMNS = {
        ToolInvocation.Status.PENDING: "pending",
        ToolInvocation.Status.COMMITTED: "committed",
        ToolInvocation.Status.FAILED: "failed",
        ToolInvocation.Status.REVERTED: "reverted",
        ToolInvocation.Status.AWAITING_APPROVAL: "awaiting",
        ToolInvocation.Status.REJECTED: "rejected",
        ToolInvocation.Status.EXPIRED: "expired",
    }

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.day} {self.model} {self.tool_name}: {self.calls}"


class ToolDay(ToolCounts):
    """A campaign's cell: what one campaign's, or an owner's, figures are summed from.

    No foreign key constraint in the database: a new cell's check would take a share lock on
    the campaign row, which the dispatch locks for update, so a reader folding would wait for,
    and hold up, the table's calls. The cells go with their campaign all the same
    (`audit.rollup.campaign_leaving`, then Django's cascade)."""

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "model", "tool_name", "day"], name="toolday_cell_unique"
            )
        ]


class ToolDayAll(ToolCounts):
    """The same cell over every campaign: what the whole log's figures are summed from."""

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["model", "tool_name", "day"], name="tooldayall_cell_unique"
            )
        ]
