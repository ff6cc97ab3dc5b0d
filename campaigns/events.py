"""The event catalogue: every type of realtime event the table sends, and the fields of its data.

An event type is a class here and its data the class's fields, so an event made with a field
it does not have, or without one it needs, fails where it is made; the one publisher
(`campaigns.realtime.event`) takes nothing else. docs/api.md#the-live-feed-websocket lists the
same types and fields, and the page's scripts subscribe to these types only
(tests/campaigns/test_event_catalogue.py holds the three together). A new event is a class
here, a row there, and an `event(...)` in the service that makes the change.
"""

from dataclasses import dataclass, fields
from functools import cache
from types import UnionType
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints


@dataclass(frozen=True, kw_only=True)
class Event:
    """The data of one event. `type` is the envelope's; the fields in `optional` are left out of
    the data when not given (None)."""

    type: ClassVar[str]
    optional: ClassVar[frozenset[str]] = frozenset()

    def data(self) -> dict[str, Any]:
        """The envelope's `data`, in the fields' order."""
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {n: v for n, v in values if v is not None or n not in self.optional}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        """The data as a client reads it (JSON), checked: a field unknown or missing, or a
        value its field's type does not take, raises TypeError."""
        payload = cls(**data)
        hints = _hints(cls)
        wrong = [f.name for f in fields(cls) if not _takes(hints[f.name], getattr(payload, f.name))]
        if wrong:
            raise TypeError(f"{cls.type}: {', '.join(wrong)} of the wrong type in {data!r}")
        return payload


@cache
def _hints(cls: type[Event]) -> dict[str, Any]:
    return get_type_hints(cls)


def _takes(hint: Any, value: Any) -> bool:
    """Whether `value` is of the type `hint` names (a container's items are not looked into)."""
    if hint is Any:
        return True
    if get_origin(hint) in (Union, UnionType):
        return any(_takes(arm, value) for arm in get_args(hint))
    kind = get_origin(hint) or hint
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


@dataclass(frozen=True, kw_only=True)
class Hello(Event):
    """The first event on every socket, for it alone: the envelope's `seq` is the campaign's
    last event when the socket joined."""

    type = "hello"


@dataclass(frozen=True, kw_only=True)
class MessageCreated(Event):
    """A chat message; `gm` is "queued" when the GM will answer it."""

    type = "message_created"
    id: int
    role: str
    content: str
    author: str | None
    gm: str | None


@dataclass(frozen=True, kw_only=True)
class GMTurnStarted(Event):
    type = "gm_turn_started"
    actor: str
    model: str
    attempt: int


@dataclass(frozen=True, kw_only=True)
class GMTextDelta(Event):
    type = "gm_text_delta"
    text: str


@dataclass(frozen=True, kw_only=True)
class GMTurnCompleted(Event):
    type = "gm_turn_completed"
    status: str
    model: str
    message: int | None
    content: str
    invocations: list[str]
    error: str
    cancelled_by: str | None


@dataclass(frozen=True, kw_only=True)
class StateChanged(Event):
    """An entity's fields now (absolute values; None once it is gone). A tool call's names the
    facet it wrote and whether the row was deleted; set-up by people sends a row of `/state/`
    whole, without either."""

    type = "state_changed"
    optional = frozenset({"facet", "deleted"})
    entity: str
    id: int | str
    facet: str | None = None
    fields: dict[str, Any] | None
    deleted: bool | None = None


@dataclass(frozen=True, kw_only=True)
class MemberAdded(Event):
    type = "member_added"
    user_id: int
    username: str
    role: str
    can_revert_any: bool


@dataclass(frozen=True, kw_only=True)
class InvocationReverted(Event):
    """One call reverted; `state`: the restored entities, as `state_changed` names them."""

    type = "invocation_reverted"
    invocation: str
    tool_name: str
    state: list[dict[str, Any]]
    reason: str


@dataclass(frozen=True, kw_only=True)
class InteractionReverted(Event):
    """A turn undone: the calls reverted, newest first, and the restored entities."""

    type = "interaction_reverted"
    turn: int
    invocations: list[str]
    tool_names: list[str]
    state: list[dict[str, Any]]
    reason: str


@dataclass(frozen=True, kw_only=True)
class ApprovalRequested(Event):
    """A call waits for a person: what the approval card shows."""

    type = "approval_requested"
    invocation: str
    tool_name: str
    tool_tier: str
    input: Any
    summary: str
    model: str
    actor: str
    reason: str
    preview: list[dict[str, Any]]
    expires_at: str


@dataclass(frozen=True, kw_only=True)
class ApprovalResolved(Event):
    """A held call answered (approved, rejected, expired), and how an approved one ran."""

    type = "approval_resolved"
    invocation: str
    tool_name: str
    status: str
    by: str | None
    reason: str
    ran_as: str | None
    ran_status: str | None
    result: Any
    error: str


@dataclass(frozen=True, kw_only=True)
class DiceRolled(Event):
    type = "dice_rolled"
    id: int
    formula: str
    mode: str
    dice: list[int]
    discarded: list[int]
    modifier: int
    total: int
    author: str | None
    by_gm: bool


# Every event type the table sends, by its name.
CATALOGUE: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        Hello,
        MessageCreated,
        GMTurnStarted,
        GMTextDelta,
        GMTurnCompleted,
        StateChanged,
        MemberAdded,
        InvocationReverted,
        InteractionReverted,
        ApprovalRequested,
        ApprovalResolved,
        DiceRolled,
    )
}
