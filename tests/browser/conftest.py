"""Fixtures the browser tests share: the OpenAI-compatible seat, offered by the server and
answered by a worker, against the strict local fake of the Chat Completions API
(tests/gm/fake_openai.py)."""

from collections.abc import Iterator

import pytest

from tests.gm.fake_openai import FakeOpenAI
from tests.processes import worker_start
from tests.servers import WorkerProcess


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.start()
    yield fake
    fake.stop()
    assert fake.refusals == [], "the client sent requests the Chat Completions API refuses"


@pytest.fixture
def openai_configured(settings, fake_openai: FakeOpenAI) -> FakeOpenAI:
    """The server (forked after this, so it inherits these settings) offers the seat."""
    settings.OPENAI_MODEL = "gpt-gm-test"
    settings.OPENAI_BASE_URL = fake_openai.url
    settings.OPENAI_API_KEY = "test-key"
    settings.GM_PROVIDER = "scripted"
    return fake_openai


@pytest.fixture
def openai_worker(
    transactional_db, tmp_path, openai_configured: FakeOpenAI
) -> Iterator[WorkerProcess]:
    started = worker_start(
        "test-openai-worker",
        tmp_path / "test-openai-worker.log",
        GM_PROVIDER="scripted",
        OPENAI_MODEL="gpt-gm-test",
        OPENAI_BASE_URL=openai_configured.url,
        OPENAI_API_KEY="test-key",
        OPENAI_MAX_RETRIES="0",
    )
    yield started
    started.stop()
