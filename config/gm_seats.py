"""GM_PROVIDERS: the extra OpenAI-compatible seats a deployment offers its campaigns.

Parsed at start-up from JSON so a mistake refuses to start rather than failing a turn later.
A seat's key is named by the environment variable holding it (`api_key_env`); its value is read
here, kept in the settings in memory, and never written to the database, a page or a log.
"""

import json
import re
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
RESERVED = {"scripted", "anthropic", "openai"}
FIELDS = {"model", "base_url", "api_key_env", "label", "strict", "tool_choice"}


def gm_seats_from_env(raw: str, env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    if not raw.strip():
        return {}
    try:
        given = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"GM_PROVIDERS is not valid JSON: {exc}") from exc
    if not isinstance(given, dict):
        raise ImproperlyConfigured("GM_PROVIDERS must be a JSON object of named seats.")
    seats = {}
    for name, seat in given.items():
        if not NAME.match(name) or name in RESERVED:
            raise ImproperlyConfigured(
                f"GM_PROVIDERS: {name!r} must be lower-case letters, digits, _ or - (at most "
                f"40), and none of {sorted(RESERVED)}."
            )
        if (
            not isinstance(seat, dict)
            or not isinstance(seat.get("model"), str)
            or not seat["model"]
        ):
            raise ImproperlyConfigured(f"GM_PROVIDERS[{name!r}] needs a model.")
        unknown = sorted(set(seat) - FIELDS)
        if unknown:
            raise ImproperlyConfigured(f"GM_PROVIDERS[{name!r}]: unknown field {unknown[0]!r}.")
        if seat.get("strict", "auto") not in ("auto", "on", "off"):
            raise ImproperlyConfigured(f"GM_PROVIDERS[{name!r}]: strict must be auto, on or off.")
        key_env = seat.get("api_key_env", "")
        seats[name] = {
            "model": seat["model"],
            "base_url": seat.get("base_url", ""),
            "api_key": env.get(key_env, "") if key_env else "",
            "label": seat.get("label") or f"{name} ({seat['model']})",
            "strict": seat.get("strict", "auto"),
            "tool_choice": seat.get("tool_choice", ""),
        }
    return seats
