"""Structured output without provider support: the schema goes into the prompt, the answer is parsed and checked.

Why in the prompt: every provider (and the embedded model) can follow "answer with one JSON object of this shape",
while native structured-output switches differ per API and model. The check here is a small, dependency-free
subset of JSON Schema (object properties, required keys, primitive types, enums) — enough to refuse an answer that
would put garbage into a DataFrame column; an answer that fails it is an item error, which the retries can redo.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..protocol import JsonObject

__all__ = ["parse_structured", "schema_instructions"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,),
    "object": (dict,), "null": (type(None),),
}


def schema_instructions(schema: JsonObject) -> str:
    """The sentence appended to a prompt that asks for structured output."""
    return ("Answer with only one JSON object, no other text, that matches this JSON schema:\n"
            + json.dumps(schema, sort_keys=True))


def _candidates(text: str) -> list[str]:
    found = [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        found.append(text[start:end + 1])
    return found or [text.strip()]


def _type_ok(value: Any, expected: Any) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    for name in names:
        kinds = _TYPES.get(str(name))
        if kinds is None:
            return True  # a type this checker does not know: accept
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, kinds):
            return True
    return False


def parse_structured(text: str, schema: JsonObject) -> tuple[JsonObject | None, str | None]:
    """``(data, None)`` for an answer holding a JSON object that fits ``schema``; ``(None, problem)`` otherwise."""
    data: Any = None
    for candidate in _candidates(text or ""):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            break
    if not isinstance(data, dict):
        return None, "the answer is not a JSON object (structured output was asked for)"
    given, required = schema.get("properties"), schema.get("required")
    properties: JsonObject = given if isinstance(given, dict) else {}
    for key in required if isinstance(required, list) else []:
        if key not in data:
            return None, f"the answer's JSON lacks the required key {key!r}"
    for key, rule in properties.items():
        if key not in data or not isinstance(rule, dict):
            continue
        if "type" in rule and not _type_ok(data[key], rule["type"]):
            return None, f"the answer's {key!r} is not of type {rule['type']}"
        if isinstance(enum := rule.get("enum"), list) and data[key] not in enum:
            return None, f"the answer's {key!r} is not one of {enum}"
    return data, None
