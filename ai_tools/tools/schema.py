"""Schema fragments shared by the tool declarations (bounded, so absurd numbers are refused)."""

from typing import Any

ID: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 2**53}
COORD: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 1000}
HP: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 100_000}
DELTA: dict[str, Any] = {"type": "integer", "minimum": -100_000, "maximum": 100_000}
NAME: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 100}
TEXT: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 4000}
CREATURE_IDS: dict[str, Any] = {  # creatures named for one call: some, each once
    "type": "array",
    "items": ID,
    "minItems": 1,
    "maxItems": 50,
    "uniqueItems": True,
}
CONDITIONS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 40},
    "maxItems": 20,
}


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
        **extra,
    }
