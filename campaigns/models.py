"""The game world. `campaign_id` is on every table and leads its indexes: it is the shard key."""

import hashlib
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

User = settings.AUTH_USER_MODEL


def user_reference(*, on_delete: Any) -> models.ForeignKey:
    """A person a row names (who reverted it, who asked) without a reverse accessor on the user,
    and without requiring one: null when nobody, or once the user is gone (SET_NULL)."""
    return models.ForeignKey(User, null=True, blank=True, on_delete=on_delete, related_name="+")


class Source(models.TextChoices):
    """What caused a chat message or a realtime event (the envelope's `source`): a person, the
    AI's tool calls and narration, or the table itself (reverts, undos, a failed turn, the
    hello). A message's event takes its source from the message. Not a log row's origin
    (`audit.models.InvocationOrigin`)."""

    USER = "user"
    AI_TOOL_EXECUTION = "ai_tool_execution"
    SYSTEM = "system"


class Campaign(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        COMPLETED = "completed"

    class ApprovalPolicy(models.TextChoices):
        NONE = "none"
        CRITICAL = "critical"
        CRITICAL_AND_HIGH = "critical_and_high"
        # Critical calls, and any (model, tool) pair whose recent calls keep being undone
        # (audit.policy.adaptive_approval_reason).
        ADAPTIVE = "adaptive"
        # The default for new campaigns, chosen from the approval-fatigue count (docs/
        # architecture.md#approval-fatigue): the ending always, a critical call on a player's
        # character (whose player may object), and what the adaptive record holds.
        WATCHFUL = "watchful"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(User, on_delete=models.PROTECT, related_name="owned_campaigns")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    completed_at = models.DateTimeField(null=True, blank=True)
    current_chapter = models.ForeignKey(
        "Chapter", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    active_dungeon = models.ForeignKey(
        "Dungeon", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    active_encounter = models.ForeignKey(
        "Encounter", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    scene = models.TextField(blank=True, default="")
    location = models.CharField(max_length=200, blank=True, default="")
    # Which tool calls wait for a human (docs/architecture.md#human-in-the-loop); changed only by
    # `campaign_set_approval_policy`, which logs each change (ApprovalPolicyChange).
    approval_policy = models.CharField(
        max_length=24, choices=ApprovalPolicy.choices, default=ApprovalPolicy.WATCHFUL
    )
    # Which GM sits at this table: one of the deployment's configured seats
    # (`gm.providers.seats`, settings GM_PROVIDERS), or blank for the deployment's default
    # (GM_PROVIDER). A name only: keys stay in the environment. Changed by the owner only,
    # through `gm.services.campaign_gm_set`.
    gm_provider = models.CharField(max_length=40, blank=True, default="")
    # How long a held call waits for an answer before it expires, in seconds; empty: the site's
    # APPROVAL_TIMEOUT. Written only by `campaign_set_approval_timeout` (the owner).
    approval_timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    # Last realtime event number handed out (docs/api.md#the-live-feed-websocket); advanced under
    # the campaign row lock.
    event_seq = models.BigIntegerField(default=0, editable=False)
    # The number of the last event that may change what the page draws: every event but the
    # GM's streamed words (`gm_text_delta`), which only the page's script writes. Advanced with
    # `event_seq`, in the same statement; the page's fragments are kept under it
    # (web/pages/fragments.py), so a turn's narration streaming does not make them drawn anew.
    drawn_seq = models.BigIntegerField(default=0, editable=False)
    # The head of the campaign's invocation log (audit/chain.py): the last row's sequence number
    # and the last link's hash (a row's, or a status transition's after it). Written by every
    # writer of the log in the transaction that appends, under this row's lock, so the dispatch
    # reads its place in the chain with the lock itself; `verify_log` checks them against the
    # chain it walks.
    log_sequence = models.BigIntegerField(default=0, editable=False)
    log_head = models.CharField(max_length=64, blank=True, default="", editable=False)
    # The battle map's grid (docs/architecture.md#the-battle-map): fixed until the GM sets it
    # (`campaign_map_set`); tokens never make it grow.
    map_cols = models.PositiveSmallIntegerField(default=16)
    map_rows = models.PositiveSmallIntegerField(default=10)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        permissions = [("revert_any_turn", "Can revert any turn in the campaign")]

    def __str__(self) -> str:
        return self.name

    @property
    def approval_timeout(self) -> float:
        """Seconds a held call of this campaign waits before it expires: its own setting, else
        the site's APPROVAL_TIMEOUT."""
        return self.approval_timeout_seconds or settings.APPROVAL_TIMEOUT


def campaign_key(related_name: str = "+", *, db_index: bool = True) -> models.ForeignKey:
    """The campaign a row belongs to: on every table of the world, first in its indexes (the
    shard key); the row goes when its campaign does. `db_index=False` for a table whose other
    indexes all start with the campaign (its own index on the column alone would be one more
    entry per row that no query needs)."""
    return models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name=related_name, db_index=db_index
    )


class Revertible(models.Model):
    """Who undid it, when and why: a turn undone, a log row reverted. Set once, by the revert
    services, in the transaction that reverts."""

    reverted_at = models.DateTimeField(null=True, blank=True)
    reverted_by = user_reference(on_delete=models.SET_NULL)
    revert_reason = models.TextField(blank=True, default="")

    REVERT_FIELDS = ("reverted_at", "reverted_by", "revert_reason")

    class Meta:
        abstract = True


class ApprovalPolicyChange(models.Model):
    """Who changed a campaign's approval policy, from what to what, when, and through which
    surface: how much a table trusts its AI is a decision people look back on."""

    class Via(models.TextChoices):
        API = "api"
        ADMIN = "admin"
        PAGE = "page"

    campaign = campaign_key("policy_changes")
    by = user_reference(on_delete=models.SET_NULL)
    from_policy = models.CharField(max_length=24, choices=Campaign.ApprovalPolicy.choices)
    to_policy = models.CharField(max_length=24, choices=Campaign.ApprovalPolicy.choices)
    via = models.CharField(max_length=8, choices=Via.choices)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["campaign", "-at"], name="policy_change_campaign_idx")]

    def __str__(self) -> str:
        return f"{self.from_policy} → {self.to_policy}"


class CampaignUserObjectPermission(UserObjectPermissionBase):
    """Direct-FK guardian table: object permission checks are index lookups, not generic joins."""

    content_object = models.ForeignKey(Campaign, on_delete=models.CASCADE)


class CampaignGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Campaign, on_delete=models.CASCADE)


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        PLAYER = "player"

    campaign = campaign_key("memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.PLAYER)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user"], name="membership_unique")
        ]
        indexes = [models.Index(fields=["user", "campaign"], name="membership_user_idx")]

    def __str__(self) -> str:
        return f"{self.user} in {self.campaign} ({self.role})"


class Creature(models.Model):
    class Kind(models.TextChoices):
        PC = "pc", "PC"
        NPC = "npc", "NPC"
        MONSTER = "monster", "Monster"

    campaign = campaign_key("creatures")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    hp = models.IntegerField()
    max_hp = models.IntegerField()
    temp_hp = models.IntegerField(default=0)
    conditions = models.JSONField(default=list, blank=True)
    death_save_successes = models.PositiveSmallIntegerField(default=0)
    death_save_failures = models.PositiveSmallIntegerField(default=0)
    x = models.IntegerField(default=0)
    y = models.IntegerField(default=0)
    controlled_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="characters"
    )
    # Who put it on the table through the set-up (`campaigns.services.creature_create`), and
    # when: the feed tells of it. Empty for one a tool call made (the log tells of that).
    added_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_at = models.DateTimeField(null=True, blank=True)

    # What a creature's health is made of (tools write them together: entity `creature:N/vitals`)
    # and what every surface shows of a creature; one list each, so a new field is added once.
    VITALS = (
        "hp",
        "max_hp",
        "temp_hp",
        "conditions",
        "death_save_successes",
        "death_save_failures",
    )
    SHOWN = ("name", "kind", *VITALS, "x", "y", "controlled_by")

    class Meta:
        indexes = [models.Index(fields=["campaign", "kind"], name="creature_campaign_idx")]

    def __str__(self) -> str:
        return self.name


class MapBackground(models.Model):
    """The battle map's background image, uploaded by the GM (`campaign_map_set`): the bytes
    in the database (no process keeps files of its own) as Pillow wrote them again, and the
    content type the content proved (`campaigns.images.checked_image`), served to members
    only."""

    campaign = models.OneToOneField(
        Campaign, primary_key=True, on_delete=models.CASCADE, related_name="map_background"
    )
    content_type = models.CharField(max_length=32)
    data = models.BinaryField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    version = models.PositiveIntegerField(default=1)
    uploaded_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    uploaded_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.content_type} {self.width}×{self.height}"


class Resource(models.Model):
    class Recharge(models.TextChoices):
        SHORT_REST = "short_rest"
        LONG_REST = "long_rest"
        NONE = "none"

    campaign = campaign_key("resources")
    creature = models.ForeignKey(Creature, on_delete=models.CASCADE, related_name="resources")
    name = models.CharField(max_length=100)
    current = models.IntegerField()
    maximum = models.IntegerField()
    recharge = models.CharField(max_length=16, choices=Recharge.choices, default=Recharge.NONE)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["creature", "name"], name="resource_unique_name")
        ]
        indexes = [models.Index(fields=["campaign", "creature"], name="resource_campaign_idx")]

    def __str__(self) -> str:
        return f"{self.name} {self.current}/{self.maximum}"


class ResourceEvent(models.Model):
    campaign = campaign_key()
    resource = models.ForeignKey(Resource, on_delete=models.CASCADE, related_name="events")
    delta = models.IntegerField()
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["campaign", "resource"], name="resevent_campaign_idx")]

    def __str__(self) -> str:
        return f"{self.delta:+d} {self.reason}"


class InventoryItem(models.Model):
    campaign = campaign_key()
    creature = models.ForeignKey(Creature, on_delete=models.CASCADE, related_name="items")
    name = models.CharField(max_length=100)
    quantity = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["creature", "name"], name="item_unique_name")
        ]
        indexes = [models.Index(fields=["campaign", "creature"], name="item_campaign_idx")]

    def __str__(self) -> str:
        return f"{self.quantity} × {self.name}"


class Chapter(models.Model):
    campaign = campaign_key("chapters")
    title = models.CharField(max_length=200)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["position", "id"]
        indexes = [models.Index(fields=["campaign", "position"], name="chapter_campaign_idx")]

    def __str__(self) -> str:
        return self.title


class Dungeon(models.Model):
    campaign = campaign_key("dungeons")
    name = models.CharField(max_length=200)

    class Meta:
        indexes = [models.Index(fields=["campaign"], name="dungeon_campaign_idx")]

    def __str__(self) -> str:
        return self.name


class Encounter(models.Model):
    campaign = campaign_key("encounters")
    active = models.BooleanField(default=True)
    round = models.PositiveIntegerField(default=1)
    turn_index = models.PositiveIntegerField(default=0)
    # [{"creature_id": int, "initiative": int}, ...] in turn order.
    order = models.JSONField(default=list)

    class Meta:
        indexes = [models.Index(fields=["campaign", "active"], name="encounter_campaign_idx")]

    def __str__(self) -> str:
        return f"Encounter {self.pk} round {self.round}"


class FogCell(models.Model):
    campaign = campaign_key()
    x = models.IntegerField()
    y = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "x", "y"], name="fogcell_unique")
        ]

    def __str__(self) -> str:
        return f"{self.x},{self.y}"


class GMMemory(models.Model):
    campaign = campaign_key("memories")
    key = models.CharField(max_length=100, blank=True, default="")
    content = models.TextField()

    class Meta:
        indexes = [models.Index(fields=["campaign", "key"], name="memory_campaign_idx")]

    def __str__(self) -> str:
        return self.key or self.content[:40]


class Achievement(models.Model):
    campaign = campaign_key("achievements")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="achievements")
    code = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user", "code"], name="achievement_unique")
        ]

    def __str__(self) -> str:
        return self.code


class Episode(models.Model):
    """The current play session; end_adventure ends it."""

    campaign = campaign_key("episodes")
    number = models.PositiveIntegerField()
    active = models.BooleanField(default=True)
    summary = models.TextField(blank=True, default="")
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "number"], name="episode_unique_number")
        ]

    def __str__(self) -> str:
        return f"Episode {self.number}"


class Turn(Revertible):
    """One interaction: a player's message, the GM's reply and the tool calls it made.

    A turn the GM answers is `queued` until a worker claims it, `running` while a worker holds
    its lease (`lease_owner` until `lease_expires_at`, renewed by the worker's heartbeat), then
    `completed`, `failed` or `cancelled`. A turn posted without the GM stays `open`.
    """

    class Status(models.TextChoices):
        OPEN = "open"
        QUEUED = "queued"
        RUNNING = "running"
        AWAITING_APPROVAL = "awaiting_approval"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    campaign = campaign_key("turns")
    actor = models.ForeignKey(User, on_delete=models.PROTECT, related_name="turns")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    # The GM's lease: which runner holds the turn (host:pid:nonce) and until when. A queued
    # turn's expiry is when its watchdog looks whether a worker has picked it up.
    lease_owner = models.CharField(max_length=100, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Claims of the turn by a worker: its first run, every resume after a worker died, and every
    # resume after a held call was answered (approval). The watchdog tells its claims apart by it.
    attempts = models.PositiveIntegerField(default=0)
    # Runs that died (the watchdog found their lease run out): what GM_MAX_ATTEMPTS bounds, so a
    # turn paused for approval any number of times still gets every retry after a crash.
    recoveries = models.PositiveIntegerField(default=0)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The undone turn this one runs the GM again on; a turn is retried at most once.
    retry_of = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retry"
    )
    # How the GM answered (docs/architecture.md#approval-policy-and-analytics), written by the
    # runner as each attempt ends or pauses: the model that answered (as its log rows name it),
    # milliseconds from the start of the attempt that spoke first to its first narrated word,
    # GM time summed over attempts (not the time a held call waited for a person), tokens as
    # the server reported them (null when it reported none).
    gm_model = models.CharField(max_length=120, blank=True, default="")
    first_word_ms = models.PositiveIntegerField(null=True, blank=True)
    answer_ms = models.PositiveIntegerField(null=True, blank=True)
    tokens_in = models.PositiveIntegerField(null=True, blank=True)
    tokens_out = models.PositiveIntegerField(null=True, blank=True)
    # The undone turn this one puts back exactly (audit/services/redo.py); redone at most once.
    redo_of = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="redo"
    )

    class Meta:
        indexes = [
            models.Index(fields=["campaign", "-created_at"], name="turn_campaign_idx"),
            models.Index(fields=["campaign", "status", "id"], name="turn_campaign_status_idx"),
            models.Index(fields=["status", "lease_expires_at"], name="turn_lease_idx"),
        ]
        constraints = [
            # Two turns of one campaign never run their GM at once (docs/architecture.md).
            models.UniqueConstraint(
                fields=["campaign"],
                condition=models.Q(status="running"),
                name="turn_one_running_per_campaign",
            )
        ]

    def __str__(self) -> str:
        return f"Turn {self.pk} by {self.actor}"


class ChatMessage(models.Model):
    class Role(models.TextChoices):
        PLAYER = "player"
        GM = "gm"
        SYSTEM = "system"

    Source = Source  # the one vocabulary, also read as a message's own (`ChatMessage.Source`)

    campaign = campaign_key("messages")
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="messages"
    )
    author = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL)
    role = models.CharField(max_length=16, choices=Role.choices)
    source = models.CharField(max_length=24, choices=Source.choices)
    content = models.TextField()
    reverted = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["campaign", "created_at"], name="message_campaign_idx")]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class DiceRoll(models.Model):
    """A roll shown in the feed: a player's from the page, or the GM's `roll_dice` during a
    turn (`by_gm`). A record of what the dice said, not game state: nothing reverts it, and a
    GM's roll leaves the feed with its turn when the turn is undone. `dice` are the kept roll's
    dice; under advantage or disadvantage the formula was rolled twice and `discarded` holds
    the other roll's."""

    class Mode(models.TextChoices):
        NORMAL = "normal"
        ADVANTAGE = "advantage"
        DISADVANTAGE = "disadvantage"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="rolls")
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="rolls"
    )
    author = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL)
    by_gm = models.BooleanField(default=False)
    formula = models.CharField(max_length=20)
    mode = models.CharField(max_length=12, choices=Mode.choices, default=Mode.NORMAL)
    dice = models.JSONField()
    discarded = models.JSONField(default=list, blank=True)
    modifier = models.IntegerField(default=0)
    total = models.IntegerField()
    # The GM's `roll_dice` call that made it: a round re-run after a crash finds its roll here
    # and reuses it, so the table never sees the dice rolled twice for one call.
    tool_use_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["campaign", "created_at"], name="roll_campaign_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["turn", "tool_use_id"],
                condition=~models.Q(tool_use_id=""),
                name="roll_once_per_tool_use",
            )
        ]

    def __str__(self) -> str:
        return f"{self.formula} = {self.total}"


class Invite(models.Model):
    """A link that lets whoever holds it join the campaign as a player. Only the token's SHA-256
    is stored, so a database dump hands nobody a way in; the link is shown once, when made."""

    campaign = campaign_key("invites")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = user_reference(on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    max_uses = models.PositiveIntegerField(null=True, blank=True)  # None: any number of people
    uses = models.PositiveIntegerField(default=0)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["campaign", "created_at"], name="invite_campaign_idx")]

    def __str__(self) -> str:
        return f"Invite to {self.campaign} ({self.uses}/{self.max_uses or '∞'} used)"

    @staticmethod
    def hash_token(token: str) -> str:
        """Tokens are 256 random bits, so one unsalted SHA-256 is as safe as a password hash
        here, and it lets a link be looked up by an index."""
        return hashlib.sha256(token.encode()).hexdigest()

    def unusable_because(self, now: Any) -> str:
        """Why nobody can join with it any more, or "" while it works."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at <= now:
            return "expired"
        if self.max_uses is not None and self.uses >= self.max_uses:
            return "used up"
        return ""


class SecurityEvent(models.Model):
    """A refused attempt by a signed-in member: who, what, when, from where.

    A model of the `audit` app (its table, migrations and admin pages are the log's), declared
    here because every layer's services record their own refusals (`campaigns.security`), the
    world's included, which may not import the log."""

    class Kind(models.TextChoices):
        REVERT_DENIED = "revert_denied"
        TOOL_CALL_DENIED = "tool_call_denied"
        ADMIN_DENIED = "admin_denied"
        WEBSOCKET_DENIED = "websocket_denied"
        APPROVAL_DENIED = "approval_denied"

    kind = models.CharField(max_length=32, choices=Kind.choices)
    user = user_reference(on_delete=models.SET_NULL)
    campaign = models.ForeignKey(
        Campaign, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    target = models.CharField(max_length=100, blank=True, default="")
    ip = models.GenericIPAddressField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "audit"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["campaign", "-created_at"], name="secevent_campaign_idx"),
            models.Index(fields=["kind", "-created_at"], name="secevent_kind_idx"),
            models.Index(fields=["user", "-created_at"], name="secevent_user_idx"),
            models.Index(fields=["-created_at"], name="secevent_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} by {self.user if self.user_id else 'a deleted user'}"
