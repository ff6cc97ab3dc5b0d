"""Our tools' input schemas in the forms OpenAI-compatible servers take.

The registry's schemas (ai_tools) are the rule, and the audited dispatch validates every call
against them, whatever a server was sent. Servers accept less than JSON Schema, so what they
are sent is derived from them:

- `compatible`: what the Chat Completions API takes without strict mode. An `array` must have
  `items`, so a `prefixItems`-only tuple (`reveal_fog`'s `[x, y]` cells) is sent as an array of
  its members' schema (with its min/max length); our validation still holds the exact tuple.
- `strict`: what strict mode takes (Structured Outputs' subset): every object closed
  (`additionalProperties: false`), every property required, an optional one nullable (the
  model writes null for "not given"; `strip_nulls` removes those before the dispatch), and
  keywords outside the subset (`minLength`, `uniqueItems`, `not`, ...) dropped: they only
  narrow what is valid, and the dispatch checks them. A schema strict mode cannot express at
  all (an object keyed by `patternProperties`, as `start_combat`'s initiative map) has no
  strict form: its tool is sent non-strict.
"""

import copy
from typing import Any

# Keywords strict mode takes (Structured Outputs, "Supported schemas").
STRICT_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "description",
    "title",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "format",
    "minItems",
    "maxItems",
}


class NoStrictForm(Exception):
    """The schema means something strict mode cannot say."""


def compatible(schema: dict[str, Any]) -> dict[str, Any]:
    return _compatible(copy.deepcopy(schema))


def _compatible(node: Any) -> Any:
    if isinstance(node, list):
        return [_compatible(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _compatible(value) for key, value in node.items()}
    if "prefixItems" in node and "items" not in node:
        members = node.pop("prefixItems")
        first = members[0] if members else {}
        node["items"] = first if all(m == first for m in members) else {"anyOf": members}
    return node


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The strict form of an object schema, or NoStrictForm."""
    return _strict(compatible(schema), optional=False)


def _strict(node: Any, *, optional: bool) -> Any:
    if not isinstance(node, dict):
        return node
    if "patternProperties" in node or "prefixItems" in node:
        raise NoStrictForm()
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in STRICT_KEYWORDS:
            continue  # validation-only: the dispatch checks it against the registry's schema
        if key == "properties":
            required = set(node.get("required", []))
            out[key] = {
                name: _strict(sub, optional=name not in required) for name, sub in value.items()
            }
        elif key == "items":
            out[key] = _strict(value, optional=False)
        elif key == "anyOf":
            out[key] = [_strict(sub, optional=False) for sub in value]
        else:
            out[key] = value
    if out.get("type") == "object":
        if node.get("additionalProperties", False) is not False:
            raise NoStrictForm()
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return _nullable(out) if optional else out


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    kind = node.get("type")
    if isinstance(kind, str):
        nullable = {**node, "type": [kind, "null"]}
        if "enum" in nullable:
            nullable["enum"] = [*nullable["enum"], None]
        return nullable
    if "enum" in node:
        return {**node, "enum": [*node["enum"], None]}
    return {"anyOf": [node, {"type": "null"}]}


def strip_nulls(schema: dict[str, Any], arguments: Any) -> Any:
    """A strict call's arguments as our schema reads them: an optional property the model set
    to null was not given (a required one keeps its null, and fails validation)."""
    if not isinstance(arguments, dict):
        return arguments
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})
    out = {}
    for key, value in arguments.items():
        if value is None and key not in required:
            continue
        sub = properties.get(key)
        out[key] = strip_nulls(sub, value) if isinstance(sub, dict) else value
    return out
