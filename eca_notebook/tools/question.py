"""``ask_user``: the model asks the user a question (with optional choices) and gets the answer as the call's result.

A client that declared ``chatCapabilities.askQuestion`` (the panel, the notebook widget, editor clients of the
reference server) is asked with a ``chat/askQuestion`` request, and the turn waits for the answer — bounded by a
timeout, and ended at once by the chat's Stop (cancelling the call cancels the request, which tells the client to
drop its question). A client without it cannot answer in the middle of a turn, so the question is published in the
chat as text and the model is told to end its turn: the user answers with their next message.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import Field, field_validator

from ..protocol import ChatAskQuestionOption, ChatAskQuestionParams, TextContent
from ..protocol.errors import RpcError
from ._args import ToolArgs
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult

__all__ = ["QUESTION_TIMEOUT", "AskUserArgs", "AskUserOption", "AskUserTool", "question_text"]

#: How long a turn waits for the user's answer before the model is told nobody answered (seconds).
QUESTION_TIMEOUT = 1800.0
_SUMMARY_QUESTION = 47  # characters of the question in the call's summary (as the reference: "Q: " + 47)

DESCRIPTION = """Ask the user a question to gather information, clarify ambiguity, understand preferences, or offer
choices.

Use it to gather preferences or requirements, clarify ambiguous instructions, get decisions on implementation choices,
or offer choices about the direction to take. Do not use it for trivial decisions you can make yourself, when the
answer is clear from context, or to confirm every small step.

- Keep questions concise and specific, ending with a question mark; ask one question at a time.
- Provide 2-4 `options` when applicable, each with a brief description; put a recommended option first with
  "(Recommended)" in its label.
- Set `allowFreeform` to false when only the options are valid; when true (the default) the user can type an answer,
  so do not add an "Other" option."""


class AskUserOption(ToolArgs):
    label: str = Field(min_length=1, description="Short label for the option.")
    description: str | None = Field(None, description="Brief explanation of what this option means.")


class AskUserArgs(ToolArgs):
    question: str = Field(min_length=1, description="The question to ask the user.")
    options: list[AskUserOption] | None = Field(
        None, description="Optional predefined options for the user to choose from.")
    allowFreeform: bool = Field(  # noqa: N815 — the reference server's argument name
        True, description="Whether the user can type a custom answer instead of selecting an option. Defaults to true.")

    @field_validator("options", mode="before")
    @classmethod
    def _lenient_options(cls, value: Any) -> Any:
        """Models send options as plain strings, or the whole list JSON-encoded: both are read, blanks dropped."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if not isinstance(value, list):
            return value
        options = []
        for item in value:
            if isinstance(item, str):
                item = {"label": item}
            if isinstance(item, dict) and isinstance(item.get("label"), str) and item["label"].strip():
                options.append(item)
        return options or None


def question_text(params: ChatAskQuestionParams) -> str:
    """The question as Markdown, for clients that cannot answer ``chat/askQuestion`` (and for transcripts)."""
    lines = [f"**Question:** {params.question.strip()}"]
    for index, option in enumerate(params.options or (), 1):
        lines.append(f"{index}. **{option.label}**" + (f" — {option.description}" if option.description else ""))
    if params.options and params.allow_freeform:
        lines.append("\nPick an option or answer in your own words.")
    return "\n".join(lines)


class AskUserTool(NativeTool[AskUserArgs]):
    name = "ask_user"
    description = DESCRIPTION
    Args = AskUserArgs
    generic_summary = "Preparing question"

    def __init__(self, *, timeout: float = QUESTION_TIMEOUT) -> None:
        super().__init__()
        self.timeout = timeout

    def _prepare(self, args: AskUserArgs, ctx: ToolContext) -> Prepared:
        question = " ".join(args.question.split())
        if not question:
            raise self.fail("`question` is required and must not be blank")
        summary = "Q: " + (question if len(question) <= _SUMMARY_QUESTION else question[:_SUMMARY_QUESTION - 3] + "...")
        return Prepared(args=args.model_dump(exclude_none=True), summary=summary)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        args = AskUserArgs.model_validate(prepared.args)
        params = ChatAskQuestionParams(
            chat_id=ctx.chat_id or "", question=args.question.strip(),
            options=[ChatAskQuestionOption(label=o.label, description=o.description) for o in args.options or ()]
            or None,
            tool_call_id=ctx.tool_call_id, allow_freeform=args.allowFreeform)
        if ctx.ask_question is None:  # nobody can answer now: the question goes in the chat, the answer comes next
            return ToolResult(
                output="This client cannot answer questions during a turn: the question was shown to the user in the "
                       "chat. End your turn now; the user will answer in their next message.",
                contents=[TextContent(text=question_text(params))])
        if ctx.progress is not None:
            ctx.progress("Waiting for the user's answer")
        try:
            result = await asyncio.wait_for(ctx.ask_question(params), self.timeout)
        except TimeoutError:
            raise self.fail(f"the user did not answer within {self.timeout / 60:g} minutes") from None
        except RpcError as exc:
            raise self.fail(f"the client could not ask the question: {exc.describe()}") from None
        if result.cancelled or result.answer is None:
            return ToolResult(output="The user cancelled the question without answering.", error=True)
        return ToolResult(output=f"User answered: {result.answer}")
