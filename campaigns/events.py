"""The event catalogue: every type of realtime event the table sends, and the fields of its data.

An event type is a class here and its data the class's fields, so an event made with a field
it does not have, or without one it needs, fails where it is made; the one publisher
(`campaigns.realtime.event`) takes nothing else. docs/api.md#the-live-feed-websocket lists the
same types and fields, and the page's scripts subscribe to these types only
(tests/campaigns/test_event_catalogue.py holds the three together). A new event is a class
here, a row there, and an `event(...)` in the service that makes the change.
"""

from functools import cache
from typing import Any, ClassVar, Self

import msgspec

_fields = cache(msgspec.structs.fields)


class Event(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The data of one event. `type` is the envelope's; a field with a default (None) is left
    out of the data while it holds it."""

    type: ClassVar[str]

    def data(self) -> dict[str, Any]:
        """The envelope's `data`, in the fields' order, its values as given: a value JSON cannot
        carry fails where the envelope is encoded instead of being turned into another here."""
        values = ((f.name, f.required, getattr(self, f.name)) for f in _fields(type(self)))
        return {name: value for name, required, value in values if required or value is not None}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        """The data as a client reads it (JSON), checked by msgspec's strict rules (a bool is
        not an int, a string not a number): a field unknown, missing or mistyped raises
        TypeError, as making the event with it would."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as error:
            raise TypeError(f"{cls.type}: {error}") from error


class Hello(Event):
    """The first event on every socket, for it alone: the envelope's `seq` is the campaign's
    last event when the socket joined."""

    type = "hello"


class MessageCreated(Event):
    """A chat message; `gm` is "queued" when the GM will answer it."""

    type = "message_created"
    id: int
    role: str
    content: str
    author: str | None
    gm: str | None


class GMTurnStarted(Event):
    type = "gm_turn_started"
    actor: str
    model: str
    attempt: int


class GMTextDelta(Event):
    type = "gm_text_delta"
    text: str


class GMTurnCompleted(Event):
    type = "gm_turn_completed"
    status: str
    model: str
    message: int | None
    content: str
    invocations: list[str]
    error: str
    cancelled_by: str | None


class StateChanged(Event):
    """An entity's fields now (absolute values; None once it is gone). A tool call's names the
    facet it wrote and whether the row was deleted; set-up by people sends a row of `/state/`
    whole, without either."""

    type = "state_changed"
    entity: str
    id: int | str
    fields: dict[str, Any] | None
    facet: str | None = None
    deleted: bool | None = None


class MemberAdded(Event):
    type = "member_added"
    user_id: int
    username: str
    role: str
    can_revert_any: bool


class InvocationReverted(Event):
    """One call reverted; `state`: the restored entities, as `state_changed` names them."""

    type = "invocation_reverted"
    invocation: str
    tool_name: str
    state: list[dict[str, Any]]
    reason: str


class InteractionReverted(Event):
    """A turn undone: the calls reverted, newest first, and the restored entities."""

    type = "interaction_reverted"
    turn: int
    invocations: list[str]
    tool_names: list[str]
    state: list[dict[str, Any]]
    reason: str


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
