"""Split ``<think>…</think>`` reasoning out of streamed text.

Open-weight reasoning models served through Chat Completions (llama.cpp, vLLM without a reasoning parser, LM Studio)
inline their reasoning in ``content`` between tags. The tags arrive split across chunks at arbitrary places
(``"<thi"`` + ``"nk>"``), so the splitter holds back any chunk suffix that could still become a tag and decides
once the next chunk arrives.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["text", "reasoning"]


class ThinkTagSplitter:
    def __init__(self, start: str = "<think>", end: str = "</think>") -> None:
        self.start = start
        self.end = end
        self.in_reasoning = False
        self._pending = ""

    def feed(self, text: str) -> list[tuple[Kind, str]]:
        """The pieces of ``text`` that are certain now, each tagged text or reasoning, in order."""
        tag = self.end if self.in_reasoning else self.start
        if not self._pending and tag and tag[0] not in text:  # the common chunk: no tag, nothing held back
            return [("reasoning" if self.in_reasoning else "text", text)] if text else []
        out: list[tuple[Kind, str]] = []
        buf = self._pending + text
        self._pending = ""
        while buf:
            tag = self.end if self.in_reasoning else self.start
            kind: Kind = "reasoning" if self.in_reasoning else "text"
            pos = buf.find(tag) if tag else -1
            if pos >= 0:
                if pos:
                    out.append((kind, buf[:pos]))
                buf = buf[pos + len(tag) :]
                self.in_reasoning = not self.in_reasoning
                continue
            keep = _partial_suffix(buf, tag)
            if keep < len(buf):
                out.append((kind, buf[: len(buf) - keep]))
            self._pending = buf[len(buf) - keep :]
            break
        return out

    def flush(self) -> list[tuple[Kind, str]]:
        """End of stream: whatever was held back is plain content after all."""
        pending, self._pending = self._pending, ""
        if not pending:
            return []
        return [("reasoning" if self.in_reasoning else "text", pending)]


def _partial_suffix(buf: str, tag: str) -> int:
    """Length of the longest suffix of ``buf`` that is a proper prefix of ``tag``."""
    if not tag or tag[0] not in buf[-(len(tag) - 1) :]:
        return 0
    for n in range(min(len(tag) - 1, len(buf)), 0, -1):
        if buf.endswith(tag[:n]):
            return n
    return 0
