"""Which GM answers a turn: `settings.GM_PROVIDER` names one of these."""

from collections.abc import Callable

from django.conf import settings

from gm.base import GMError, GMProvider
from gm.claude import AnthropicProvider
from gm.openai_compat import OpenAIProvider
from gm.scripted import ScriptedProvider

PROVIDERS: dict[str, Callable[[], GMProvider]] = {
    ScriptedProvider.name: ScriptedProvider,
    AnthropicProvider.name: AnthropicProvider.from_settings,
    OpenAIProvider.name: OpenAIProvider.from_settings,
}


def provider_for(name: str | None = None) -> GMProvider:
    """A fresh provider for one turn; a misconfiguration is a GMError the table can read."""
    name = name or settings.GM_PROVIDER
    if name not in PROVIDERS:
        raise GMError(
            f"unknown GM provider {name!r}; GM_PROVIDER must be one of {list(PROVIDERS)}."
        )
    return PROVIDERS[name]()
