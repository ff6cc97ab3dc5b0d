"""The publisher's envelopes: a known source, and (under tests) only what JSON can carry."""

from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.events import StateChanged
from campaigns.models import ChatMessage, Source
from campaigns.realtime import event


@pytest.mark.parametrize("value", [timezone.now(), Decimal("1.5"), {1, 2}, b"bytes"])
def test_a_payload_json_cannot_carry_fails_where_the_event_is_made(value):
    with pytest.raises(TypeError, match="JSON serializable"):
        event(StateChanged(entity="x", id=1, fields={"value": value}), source=Source.SYSTEM)


def test_an_envelope_is_made_as_the_wire_carries_it():
    changed = StateChanged(entity="x", id=1, fields={"at": (1, 2), 3: "x"})
    made = event(changed, source=Source.USER, turn=4)
    assert made == {
        "type": "state_changed",
        "source": "user",
        "turn": 4,
        "invocation": None,
        "data": {"entity": "x", "id": 1, "fields": {"at": [1, 2], "3": "x"}},
    }
    assert type(made["source"]) is str


def test_an_unknown_event_source_is_refused():
    with pytest.raises(ValueError, match="Source"):
        event(StateChanged(entity="x", id=1, fields={}), source="api")


def test_a_chat_message_takes_its_source_from_the_events_vocabulary():
    assert ChatMessage._meta.get_field("source").choices == Source.choices
