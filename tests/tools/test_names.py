"""Provider-safe tool names (``tools/_names.py``): valid names untouched, others cleaned, unique, stable, short."""

from __future__ import annotations

import re

import pytest

from eca_notebook.tools.base import llm_name, provider_tool_name

VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@pytest.mark.parametrize("server, name", [("eca", "read_file"), ("github", "create_issue"), ("a-b", "c-d_e")])
def test_a_valid_name_is_left_alone(server: str, name: str):
    assert provider_tool_name(server, name) == f"{server}__{name}"


@pytest.mark.parametrize("server, name, readable", [
    ("Jupyter MCP Server", "insert_cell", r"Jupyter_MCP_Server_[0-9a-f]{8}__insert_cell"),
    ("my.server", "read", r"my_server_[0-9a-f]{8}__read"),
    ("team/tools", "search/all", r"team_tools_[0-9a-f]{8}__search_all"),
    ("données", "été", r"donnees_[0-9a-f]{8}__ete"),  # accents folded
    ("数据", "查询", r"mcp_[0-9a-f]{8}__tool"),  # nothing ASCII left: placeholders, the hash tells them apart
    ("srv", "text.upper", r"srv_[0-9a-f]{8}__text_upper"),
    ("a  b", "__x__", r"a_b_[0-9a-f]{8}__x"),  # no "__" inside a part: it is the separator
])
def test_other_names_are_cleaned_with_a_hash(server: str, name: str, readable: str):
    made = provider_tool_name(server, name)
    assert VALID.fullmatch(made) and re.fullmatch(readable, made), made
    assert made.count("__") == 1


def test_names_that_clean_alike_stay_apart_and_are_stable():
    names = {provider_tool_name(server, "run") for server in ("a b", "a.b", "a/b", "a_b ", "a:b", "数据", "查询")}
    assert len(names) == 7
    assert provider_tool_name("a b", "run") == provider_tool_name("a b", "run")  # the same in every turn
    # pinned: a name must not change between releases either (saved chats name their calls)
    assert provider_tool_name("Jupyter MCP Server", "insert_cell") == "Jupyter_MCP_Server_f80b7928__insert_cell"


@pytest.mark.parametrize("server, name", [
    ("s" * 100, "t"), ("s", "t" * 100), ("Jupyter MCP Server " * 5, "a very long tool name " * 5),
    ("ok", "x" * 62),  # valid characters, too long together
])
def test_long_names_fit_in_64(server: str, name: str):
    made = provider_tool_name(server, name)
    assert VALID.fullmatch(made), made
    assert made.count("__") == 1 and made.split("__")[1]


def test_llm_name_uses_it_for_every_origin():
    class Tool:
        def __init__(self, name: str, server: str | None = None) -> None:
            self.name = name
            if server is not None:
                self.server = server

    assert llm_name(Tool("read_file")) == "eca__read_file"  # native: no server attribute
    assert llm_name(Tool("insert_cell", "Jupyter MCP Server")) == provider_tool_name("Jupyter MCP Server",
                                                                                    "insert_cell")
    assert VALID.fullmatch(llm_name(Tool("plug in tool", "my plug-in")))
