"""Inline completion and rewrite: ``completion/inline``, ``rewrite/prompt`` and ``rewrite/contentReceived``.

The newer ECA revision's shapes (the reference server's ``docs/protocol.md``, "Completion" and "Rewrite"), which ECA
editor clients already send. Two facts of the wire worth knowing:

* Positions here are **1-based** (line and character), as the reference clients send them and the reference server
  reads them — unlike the 0-based LSP :class:`~.context.Position` of contexts. :class:`InlinePosition` says so.
* Some clients spell the document keys in kebab case (``doc-text``, ``doc-version``); both spellings are accepted.

A completion answers in the result — items, or an ``error`` with a ``type`` (``info`` for "no suggestion",
``warning`` for a failure) — never a JSON-RPC error for a model's failure, so an editor can show it quietly.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from ._base import EcaModel

__all__ = [
    "CompletionInlineError",
    "CompletionInlineItem",
    "CompletionInlineParams",
    "CompletionInlineResult",
    "InlinePosition",
    "InlineRange",
    "RewriteContent",
    "RewriteContentReceivedParams",
    "RewriteErrorContent",
    "RewriteFinishedContent",
    "RewritePromptParams",
    "RewritePromptResult",
    "RewriteReasoningContent",
    "RewriteReplaceContent",
    "RewriteStartedContent",
    "RewriteStopParams",
    "RewriteTextContent",
]

_KEBAB = {"doc-text": "docText", "doc-version": "docVersion"}


class InlinePosition(EcaModel):
    """A cursor position, **1-based** line and character (the reference clients' convention)."""

    line: int
    character: int


class InlineRange(EcaModel):
    """A range between two 1-based positions."""

    start: InlinePosition
    end: InlinePosition


class CompletionInlineParams(EcaModel):
    """``completion/inline``: the document as it is now and where the cursor is."""

    doc_text: str
    #: Incremented by the client on every change; the answer carries it back so a stale one can be dropped.
    doc_version: int
    position: InlinePosition
    #: The document's path, when the client knows it (the language and the neighbouring code come from it).
    path: str | None = None
    #: What else the client knows that the model should see before the document, never inserted (an eca-notebook
    #: extension): in a notebook, the preceding cells and the kernel's live variables (names, types, columns).
    context: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_kebab_case(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(key in data for key in _KEBAB):
            data = {_KEBAB.get(key, key): value for key, value in data.items()}
        return data


class CompletionInlineItem(EcaModel):
    """One suggestion: ``text`` to insert over ``range`` (an empty range at the cursor: a pure insertion)."""

    text: str
    range: InlineRange
    doc_version: int
    id: str | None = None


class CompletionInlineError(EcaModel):
    """Why there is no suggestion: ``info`` (nothing to suggest) or ``warning`` (the model failed, timed out…)."""

    type: Literal["info", "warning", "error"]
    message: str


class CompletionInlineResult(EcaModel):
    """Items, or an error (one of the two)."""

    items: list[CompletionInlineItem] | None = None
    error: CompletionInlineError | None = None


class RewritePromptParams(EcaModel):
    """``rewrite/prompt``: rewrite ``text`` (the user's selection at ``range``) as ``prompt`` asks."""

    #: Chosen by the client; names the rewrite in every ``rewrite/contentReceived``.
    id: str
    text: str
    prompt: str
    range: InlineRange
    path: str | None = None


class RewritePromptResult(EcaModel):
    """The rewrite started; its text streams as ``rewrite/contentReceived``."""

    status: Literal["prompting"] = "prompting"
    model: str


class RewriteStartedContent(EcaModel):
    """The rewrite began (the model was reached)."""

    type: Literal["started"] = "started"


class RewriteReasoningContent(EcaModel):
    """The model is reasoning (its text is not shown for a rewrite)."""

    type: Literal["reasoning"] = "reasoning"


class RewriteTextContent(EcaModel):
    """A chunk of the rewritten text; clients append."""

    type: Literal["text"] = "text"
    text: str


class RewriteReplaceContent(EcaModel):
    """The whole rewritten text, replacing what was streamed (sent when markdown fences were stripped)."""

    type: Literal["replace"] = "replace"
    text: str


class RewriteErrorContent(EcaModel):
    """The rewrite failed; ``message`` says why (the model's error, a timeout)."""

    type: Literal["error"] = "error"
    message: str


class RewriteFinishedContent(EcaModel):
    """The rewrite is over (also after an error or a stop)."""

    type: Literal["finished"] = "finished"
    total_time_ms: int


RewriteContent = (RewriteStartedContent | RewriteReasoningContent | RewriteTextContent | RewriteReplaceContent
                  | RewriteErrorContent | RewriteFinishedContent)


class RewriteContentReceivedParams(EcaModel):
    """``rewrite/contentReceived`` (server → client): the next content of rewrite ``rewriteId``."""

    rewrite_id: str
    content: RewriteContent


class RewriteStopParams(EcaModel):
    """``rewrite/stop`` (client → server, an eca-notebook extension): stop rewrite ``id``; it ends with ``finished``
    (the text streamed so far is what the client has)."""

    id: str
