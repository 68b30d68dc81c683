"""A cost estimate before a batch starts, from the models' prices and the engine's real request size.

What every request of an item carries besides the prompt — the system prompt (rules included) and the schemas of
the tools offered — is measured from the engine the workers will build, for each model and behavior in the batch;
only when no engine can be asked is a fixed guess used. What cannot be known before the answer is assumed and said
so in :attr:`CostEstimate.assumptions`: tokens are characters ÷ 4, one model request per item (an agent that calls
tools sends the conversation again each round), and ``output_tokens`` per answer. It answers "is this $2 or
$200?"; the progress line shows it next to the real cost as results come in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._models import EngineSpec, WorkItem
from ._structured import schema_instructions

if TYPE_CHECKING:
    from ..engine.config import ModelInfo

__all__ = ["CostEstimate", "estimate_cost"]

#: the guess for the system prompt and tool schemas of a request when no engine can be asked
SYSTEM_OVERHEAD = 1500
#: characters per token (the engine's own estimate uses the same: there is no tokenizer for every provider)
CHARS_PER_TOKEN = 4.0
#: tokens per message (role, separators) and per tool offered (besides its name, description and schema)
_MESSAGE_TOKENS = 4
_TOOL_TOKENS = 8


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


@dataclass
class RequestOverhead:
    """What one request of a model and behavior carries besides the prompt (measured from the engine)."""

    model: str
    behavior: str
    system_tokens: int
    tool_tokens: int
    tools: int
    #: a small model (``compact``) is offered only the tools a prompt asks for: all were counted
    compact: bool = False

    @property
    def tokens(self) -> int:
        return self.system_tokens + self.tool_tokens


@dataclass
class CostEstimate:
    """The estimate: tokens and USD (``cost`` is None when no model in the batch has a price), and what it
    assumed (``assumptions``, also in ``str()``)."""

    items: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    unpriced_models: list[str] = field(default_factory=list)
    #: per model and behavior: the system prompt and tool schemas sent with every request (empty: not measured)
    overheads: list[RequestOverhead] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        cost = f"${self.cost:.4f}" if self.cost is not None else "unknown cost"
        extra = f" (no price for {', '.join(self.unpriced_models)})" if self.unpriced_models else ""
        line = (f"{self.items} items · ~{self.input_tokens:,} input + ~{self.output_tokens:,} output tokens · "
                f"~{cost}{extra}")
        if self.assumptions:
            line += "\nassumed: " + "; ".join(self.assumptions)
        return line


def estimate_cost(items: Sequence[WorkItem], spec: EngineSpec, *, output_tokens: int = 300) -> CostEstimate:
    """Estimate what sending ``items`` costs with the engine ``spec`` describes (its default model and behavior
    for items that name none): each item's prompt plus the system prompt and tool schemas the engine really sends
    for its model and behavior, and ``output_tokens`` of answer."""
    from ._runtime import runtime

    rt = runtime()
    wanted = {(item.model, item.behavior) for item in items}

    async def measure() -> tuple[str | None, dict[str, tuple[float | None, float | None]],
                                 dict[tuple[str | None, str | None], RequestOverhead | None]]:
        client = await rt.client(spec, _folder(spec), shared=True)
        engine = client.engine
        if engine is None:
            return client.default_model, {}, {}
        infos = engine.registry.model_infos()
        table = {k: (v.input_cost, v.output_cost) for k, v in infos.items()}
        overheads = {key: _overhead(engine, infos, key[0] or client.default_model, key[1]) for key in wanted}
        return client.default_model, table, overheads

    default, table, overheads = rt.call(measure())
    total_in = total_out = 0
    cost = 0.0
    priced = False
    unpriced: set[str] = set()
    guessed = 0
    for item in items:
        message = item.message
        if item.output_schema is not None:
            message = f"{message}\n\n{schema_instructions(item.output_schema)}"
        overhead = overheads.get((item.model, item.behavior))
        if overhead is None:
            guessed += 1
        tokens_in = _tokens(message) + _MESSAGE_TOKENS + (overhead.tokens if overhead is not None else SYSTEM_OVERHEAD)
        total_in += tokens_in
        total_out += output_tokens
        model = item.model or default or "?"
        price_in, price_out = table.get(model, (None, None))
        if price_in is None and price_out is None:
            unpriced.add(model)
            continue
        priced = True
        cost += (tokens_in * (price_in or 0.0) + output_tokens * (price_out or 0.0)) / 1_000_000
    measured = sorted({o.model + o.behavior: o for o in overheads.values() if o is not None}.values(),
                      key=lambda o: (o.model, o.behavior))
    assumptions = [f"system prompt + {o.tools} tool schemas ≈ {o.tokens:,} tokens a request ({o.model}, "
                   f"{o.behavior}; from the engine{'; a small model is offered fewer' if o.compact else ''})"
                   for o in measured]
    if guessed:
        assumptions.append(f"system prompt + tools ≈ {SYSTEM_OVERHEAD:,} tokens a request for {guessed} item(s) "
                           "(a guess: the engine could not tell)")
    assumptions.append("one model request per item (an agent that calls tools sends the conversation again each "
                       "round: such items cost more)")
    assumptions.append(f"{output_tokens:,} output tokens an answer")
    assumptions.append("tokens ≈ characters ÷ 4")
    if any(item.contexts for item in items):
        assumptions.append("attached contexts not counted")
    if any(item.workspace for item in items):
        assumptions.append("items with a workspace of their own have its rules in the system prompt (not counted)")
    return CostEstimate(len(items), total_in, total_out, cost if priced else None, sorted(unpriced), measured,
                        assumptions)


def _overhead(engine: Any, infos: dict[str, ModelInfo], model: str | None,
              behavior: str | None) -> RequestOverhead | None:
    """The system prompt and tool schemas the engine sends with a request of ``model`` in ``behavior``; None when
    the engine does not know the model or the behavior."""
    info = infos.get(model) if model else None
    behavior = behavior or engine.selected_behavior
    behavior = engine.agents.canonical(behavior) or behavior  # (the deprecated ``agent`` is ``code``)
    if info is None or behavior not in engine.behaviors():
        return None
    try:
        tools = engine.offered_tools(behavior)
        if info.compact:
            system = engine.compact_system_prompt(behavior, tools=bool(tools), info=info)
        else:
            system = engine.system_prompt(behavior)
        tool_tokens = sum(_tokens(name + str(tool.description) + json.dumps(tool.parameters)) + _TOOL_TOKENS
                          for name, tool in tools.items())
    except Exception:  # an estimate never stops a batch: the fixed guess is used instead
        return None
    return RequestOverhead(str(model), behavior, _tokens(system), tool_tokens, len(tools), bool(info.compact))


def _folder(spec: EngineSpec) -> Path:
    path = Path(spec.workspace).expanduser().resolve()
    return path.parent if path.is_file() else path
