"""GM fixtures: the local fake of the Messages API, and running a turn with events captured."""

from collections.abc import Iterator
from typing import Any

import pytest

from campaigns.models import Turn
from gm.base import GMProvider, Session
from gm.services import gm_turn_run, turn_submit
from tests.gm.fake_claude import FakeClaude
from tests.gm.fake_openai import FakeOpenAI


class Provider(GMProvider):
    """A provider whose behaviour each test writes as a function of the session."""

    name = "test"

    def __init__(self, behaviour) -> None:
        self.behaviour = behaviour

    @property
    def model(self) -> str:
        return "test/gm-1"

    def run(self, session: Session) -> None:
        self.behaviour(session)


@pytest.fixture
def claude(settings) -> Iterator[FakeClaude]:
    """The anthropic provider, configured against a strict fake Messages API on localhost.
    Whatever the test expects, the client must never have sent a request the API refuses."""
    fake = FakeClaude()
    fake.start()
    settings.GM_PROVIDER = "anthropic"
    settings.ANTHROPIC_API_KEY = "test-key"
    settings.ANTHROPIC_BASE_URL = fake.url
    settings.ANTHROPIC_MODEL = "claude-gm-test"
    settings.ANTHROPIC_MAX_RETRIES = 0
    yield fake
    fake.stop()
    assert fake.refusals == [], "the client sent requests the Messages API refuses"


@pytest.fixture
def openai_server(settings) -> Iterator[FakeOpenAI]:
    """The openai provider, configured against a strict fake Chat Completions server on
    localhost. Whatever the test expects, the client must never have sent a request the API
    refuses (a test of a refusing server empties `refusals` itself)."""
    fake = FakeOpenAI()
    fake.start()
    settings.GM_PROVIDER = "openai"
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_BASE_URL = fake.url
    settings.OPENAI_MODEL = "gpt-gm-test"
    settings.OPENAI_STRICT_TOOLS = "auto"
    settings.OPENAI_TOOL_CHOICE = ""
    settings.OPENAI_MAX_RETRIES = 0
    yield fake
    fake.stop()
    assert fake.refusals == [], "the client sent requests the Chat Completions API refuses"


@pytest.fixture
def play(world, events, django_capture_on_commit_callbacks):
    """Post a message as a new queued turn and let the configured GM (or `provider`) answer it
    here and now, events delivered."""

    def play(message: str, actor: Any = None, **kwargs: Any) -> Turn:
        with django_capture_on_commit_callbacks(execute=True):
            turn = turn_submit(
                campaign=world.campaign, actor=actor or world.player, message=message
            )
            return gm_turn_run(turn=turn, **kwargs)

    return play


def of_turn(events: list[dict[str, Any]], turn: Turn) -> list[dict[str, Any]]:
    return [e for e in events if e["turn"] == turn.pk]
