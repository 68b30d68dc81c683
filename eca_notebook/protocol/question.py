"""``chat/askQuestion``: the server asks the user a question during a turn (the model's ``ask_user`` tool).

Same shape as the reference ECA server: the question, optional choices (the user may always type an answer unless
``allowFreeform`` is false), and the tool call that asked, so a client can show the question in place of its card.
A client declares it can answer with ``capabilities.codeAssistant.chatCapabilities.askQuestion``.
"""

from __future__ import annotations

from pydantic import Field

from ._base import ChatId, EcaModel

__all__ = ["ChatAskQuestionOption", "ChatAskQuestionParams", "ChatAskQuestionResult", "ChatCapabilities"]


class ChatCapabilities(EcaModel):
    """Chat features beyond the basic ``chat`` flag."""

    #: The client answers ``chat/askQuestion``.
    ask_question: bool | None = None


class ChatAskQuestionOption(EcaModel):
    """One choice offered with a question."""

    label: str
    description: str | None = None


class ChatAskQuestionParams(EcaModel):
    """``chat/askQuestion`` (server → client): ask the user, wait for the answer."""

    chat_id: ChatId
    question: str
    options: list[ChatAskQuestionOption] | None = None
    #: The ``ask_user`` call that asked: a client may show the question in place of that call's card.
    tool_call_id: str | None = None
    #: False: only one of ``options`` (or cancel) is a valid answer.
    allow_freeform: bool = True


class ChatAskQuestionResult(EcaModel):
    """The user's answer: an option's label or typed text; ``answer`` is None when the user cancelled."""

    answer: str | None = None
    cancelled: bool = Field(default=False)
