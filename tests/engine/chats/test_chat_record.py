"""A chat's record of what clients were shown (engine/chats/_chat.py): streamed chunks merged into one content."""

from __future__ import annotations

import dataclasses

from eca_notebook.engine.chats import Chat


def text_of(item: dict) -> str:
    return item["content"]["text"]


def test_streamed_chunks_read_as_one_text_whenever_the_contents_are_read():
    """Chunks are kept as parts while they stream; every reader (mid-stream too) gets the text so far joined."""
    chat = Chat(id="c")
    chat.record_content("user", {"type": "text", "text": "hi\n"})
    chat.record_content("user", {"type": "text", "text": "again\n"})  # a user's texts never merge
    for i in range(1000):
        chat.record_content("assistant", {"type": "text", "text": f"{i} "})
        if i == 499:
            assert text_of(chat.contents[-1]) == "".join(f"{n} " for n in range(500))
    held = chat.contents  # e.g. a parent's subagent_contents holds the list itself
    chat.record_content("assistant", {"type": "text", "text": "end"})
    assert [c["role"] for c in chat.contents] == ["user", "user", "assistant"]
    assert text_of(held[-1]) == "".join(f"{n} " for n in range(1000)) + "end"
    assert chat.to_record()["contents"][-1]["content"]["text"] == text_of(held[-1])


def test_another_content_ends_the_merge_and_reasoning_merges_per_id():
    chat = Chat(id="c")
    chat.record_content("assistant", {"type": "reasonText", "id": "r1", "text": "a"})
    chat.record_content("assistant", {"type": "reasonText", "id": "r1", "text": "b"})
    chat.record_content("assistant", {"type": "reasonText", "id": "r2", "text": "c"})
    chat.record_content("assistant", {"type": "text", "text": "d"})
    chat.record_content("system", {"type": "progress", "state": "finished", "text": ""})
    chat.record_content("assistant", {"type": "text", "text": "e"})
    chat.record_content("assistant", {"type": "text", "text": "f"})
    assert [(c["content"]["type"], c["content"].get("text")) for c in chat.contents] == [
        ("reasonText", "ab"), ("reasonText", "c"), ("text", "d"), ("progress", ""), ("text", "ef")]


def test_replacing_or_copying_the_contents_keeps_every_text():
    chat = Chat(id="c")
    for piece in "abc":
        chat.record_content("assistant", {"type": "text", "text": piece})
    old = chat.__dict__["contents"]
    chat.contents = []  # (rewind) the list replaced: what was streamed into the old one is joined into it first
    assert text_of(old[0]) == "abc" and chat.contents == []
    for piece in "xyz":
        chat.record_content("assistant", {"type": "text", "text": piece})
    copy = dataclasses.replace(chat)
    assert copy == chat and text_of(copy.contents[0]) == "xyz"
    assert Chat.from_record(chat.to_record()).contents == chat.contents
