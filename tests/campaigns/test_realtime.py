"""The publisher's envelopes: a known source, and (under tests) only what JSON can carry."""

from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.models import ChatMessage
from campaigns.realtime import EventSource, event


@pytest.mark.parametrize("value", [timezone.now(), Decimal("1.5"), {1, 2}, b"bytes"])
def test_a_payload_json_cannot_carry_fails_where_the_event_is_made(value):
    with pytest.raises(TypeError, match="JSON serializable"):
        event("state_changed", {"value": value}, source=EventSource.SYSTEM)


def test_an_envelope_is_made_as_the_wire_carries_it():
    made = event("state_changed", {"at": (1, 2), 3: "x"}, source=EventSource.USER, turn=4)
    assert made == {
        "type": "state_changed",
        "source": "user",
        "turn": 4,
        "invocation": None,
        "data": {"at": [1, 2], "3": "x"},
    }
    assert type(made["source"]) is str


def test_an_unknown_event_source_is_refused():
    with pytest.raises(ValueError, match="EventSource"):
        event("state_changed", {}, source="api")


def test_a_chat_message_source_names_an_event_source():
    assert {EventSource(s).value for s in ChatMessage.Source} == set(ChatMessage.Source)
