"""Which GM answers a turn: the campaign's seat (`Campaign.gm_provider`), else the deployment's
default `settings.GM_PROVIDER`.

A seat is offered only when its settings are present: `scripted` always, `anthropic` with
ANTHROPIC_API_KEY, `openai` with OPENAI_MODEL, and each OpenAI-compatible seat GM_PROVIDERS
names. Seats carry names and labels only; keys stay in the settings, read from the environment.
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from gm.base import GMError, GMProvider
from gm.claude import AnthropicProvider
from gm.openai_compat import Endpoint, OpenAIProvider
from gm.scripted import ScriptedProvider

PROVIDERS: dict[str, Callable[[], GMProvider]] = {
    ScriptedProvider.name: ScriptedProvider,
    AnthropicProvider.name: AnthropicProvider.from_settings,
    OpenAIProvider.name: OpenAIProvider.from_settings,
}
SCRIPTED_NOTE = "understands a few phrases"


@dataclass(frozen=True)
class Seat:
    """A GM a campaign may choose: its name (what the campaign stores), what the page calls
    it, and the model behind it."""

    name: str
    label: str
    model: str = ""

    @property
    def scripted(self) -> bool:
        return self.name == ScriptedProvider.name


def seats() -> dict[str, Seat]:
    """The seats this deployment has configured, in the order the page lists them."""
    offered = {"scripted": Seat("scripted", "Scripted GM")}
    if settings.ANTHROPIC_API_KEY:
        model = settings.ANTHROPIC_MODEL
        offered["anthropic"] = Seat("anthropic", f"Claude ({model})", model)
    if settings.OPENAI_MODEL:
        model = settings.OPENAI_MODEL
        offered["openai"] = Seat("openai", f"OpenAI-compatible ({model})", model)
    for name, seat in settings.GM_PROVIDERS.items():
        offered[name] = Seat(name, seat["label"], seat["model"])
    return offered


def seat_of(campaign: Any) -> Seat:
    """The GM at this campaign's table; a seat this deployment no longer configures is named
    as it is (its turns then fail, saying why)."""
    name = campaign.gm_provider or settings.GM_PROVIDER
    return seats().get(name) or Seat(name, f"{name} (not configured on this server)")


def provider_for(name: str | None = None, *, model: str | None = None) -> GMProvider:
    """A fresh provider for one turn (with `model` instead of the configured one, for a
    replay); a misconfiguration is a GMError the table can read."""
    name = name or settings.GM_PROVIDER
    provider = _provider(name)
    if model:
        if isinstance(provider, OpenAIProvider):
            provider.endpoint = dataclasses.replace(provider.endpoint, model=model)
        elif isinstance(provider, AnthropicProvider):
            provider.requested_model = model
        else:
            raise GMError(f"the {name} GM has no model to choose.")
    return provider


def _provider(name: str) -> GMProvider:
    if name in settings.GM_PROVIDERS:
        seat = settings.GM_PROVIDERS[name]
        endpoint = Endpoint(
            base_url=seat["base_url"],
            api_key=seat["api_key"],
            model=seat["model"],
            strict=seat["strict"],
            tool_choice=seat["tool_choice"],
            max_retries=settings.OPENAI_MAX_RETRIES,
            timeout=settings.OPENAI_TIMEOUT,
        )
        return OpenAIProvider.for_endpoint(endpoint)
    if name not in PROVIDERS:
        choices = [*PROVIDERS, *settings.GM_PROVIDERS]
        raise GMError(f"unknown GM provider {name!r}; it must be one of {choices}.")
    return PROVIDERS[name]()
