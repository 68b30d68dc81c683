"""Argument validation for tool calls, and the JSON Schema the LLM sees — both from one pydantic model per tool.

LLMs get arguments wrong in predictable ways: numbers as strings ("10"), missing fields, made-up enum values. The
first is accepted (pydantic's lax mode); the others become one short sentence naming the argument and what is
expected, so the model can fix the call on its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..protocol import JsonObject

__all__ = ["ChangeArgs", "ToolArgs", "change_args", "json_schema", "parse_args", "with_reasons"]

A = TypeVar("A", bound="ToolArgs")


class ToolArgs(BaseModel):
    """Base for tool argument models: unknown arguments are ignored (models add extras), values are not coerced
    to strings (a number where text is expected is a mistake worth reporting)."""

    model_config = ConfigDict(extra="ignore")


class ChangeArgs(ToolArgs):
    """The optional reasons a change-making tool asks of the model: they travel with the diff (``FileChangeDetails``)
    so a reviewer sees why, and how to check it, next to what."""

    rationale: str | None = Field(None, description="One sentence: why this change.")
    acceptance_criteria: list[str] | None = Field(
        None, description="How to verify the change (e.g. 'the login tests pass'), one check per item.")


_REASONS = ("rationale", "acceptance_criteria")


def change_args(args: ChangeArgs) -> JsonObject:
    """The arguments as a call shows them: the reasons only when the model gave them."""
    dumped = args.model_dump()
    for key in _REASONS:
        if dumped.get(key) is None:
            dumped.pop(key, None)
    return dumped


def with_reasons(details: JsonObject, args: Any) -> JsonObject:
    """*details* (a ``fileChange``) with the model's ``rationale`` / ``acceptanceCriteria`` when it gave them."""
    rationale = getattr(args, "rationale", None)
    criteria = getattr(args, "acceptance_criteria", None)
    if rationale:
        details["rationale"] = rationale
    if criteria:
        details["acceptanceCriteria"] = list(criteria)
    return details


def _show(value: Any) -> str:
    if value is None:
        return "null"
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
    kind = err.get("type", "")
    got = _show(err.get("input"))
    ctx = err.get("ctx") or {}
    if kind == "missing":
        return f"missing required argument '{loc}'"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"argument '{loc}' must be an integer (got {got})"
    if kind in ("bool_parsing", "bool_type"):
        return f"argument '{loc}' must be a boolean (got {got})"
    if kind == "string_type":
        return f"argument '{loc}' must be a string (got {got})"
    if kind == "literal_error":
        return f"argument '{loc}' must be one of {ctx.get('expected', '')} (got {got})"
    if kind == "string_too_short":
        return f"argument '{loc}' must not be empty"
    if kind == "greater_than_equal":
        return f"argument '{loc}' must be >= {ctx.get('ge')} (got {got})"
    if kind == "less_than_equal":
        return f"argument '{loc}' must be <= {ctx.get('le')} (got {got})"
    return f"argument '{loc}': {err.get('msg', 'invalid value')}"


def parse_args(tool: str, model: type[A], args: Any) -> tuple[A | None, str | None]:
    """Validate `args` (a dict, or a JSON object text) into `model`; on failure, a message for the LLM."""
    if args is None:
        args = {}
    if isinstance(args, (str, bytes)):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None, f"{tool}: arguments are not valid JSON"
    if not isinstance(args, dict):
        return None, f"{tool}: arguments must be a JSON object"
    try:
        return model.model_validate(args), None
    except ValidationError as exc:
        problems = [_describe(e) for e in exc.errors(include_url=False)]
        return None, f"{tool}: " + "; ".join(problems)


def _clean(node: Any) -> Any:
    if isinstance(node, dict):
        any_of = node.get("anyOf")
        if isinstance(any_of, list):  # Optional[X] -> X: "may be omitted" is what `required` already says
            non_null = [s for s in any_of if s.get("type") != "null"]
            if len(non_null) == 1:
                merged = {k: v for k, v in node.items() if k != "anyOf"}
                merged.update(non_null[0])
                node = merged
        return {k: _clean(v) for k, v in node.items() if k not in ("title", "default")}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def _inline(node: Any, defs: JsonObject, seen: tuple[str, ...] = ()) -> Any:
    """Replace ``{"$ref": "#/$defs/X"}`` by X itself: some providers (and small local models' grammars) do not
    resolve references. Recursive models are refused — tool arguments have no business being recursive."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.split("/")[-1]
            if name in seen:
                raise ValueError(f"recursive model {name} in tool arguments")
            return _inline(defs[name], defs, (*seen, name))
        return {k: _inline(v, defs, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs, seen) for v in node]
    return node


def json_schema(model: type[ToolArgs]) -> JsonObject:
    """A small, provider-friendly JSON Schema: type object, properties, required; no titles, defaults or $defs
    (nested models are inlined)."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    raw = _inline(raw, defs)
    props = _clean(raw.get("properties", {}))
    schema: JsonObject = {"type": "object", "properties": props, "required": list(raw.get("required", []))}
    return schema
