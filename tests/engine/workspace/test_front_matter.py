"""Front matter of commands, skills and agents: real YAML (lists, block scalars, quotes), clear errors."""

from __future__ import annotations

import pytest

from eca_notebook.engine.workspace._front_matter import FrontMatterError, parse_front_matter, split_front_matter


def test_yaml_lists_block_scalars_and_quotes():
    text = ("\ufeff---\nname: 'review'\ndescription: |\n  Reviews code.\n  Carefully.\ntools:\n  - read_file\n"
            "  - grep\narguments:\n  - name: path\n    required: true\n---\n\nBody here.\n")
    meta, body = parse_front_matter(text)
    assert meta == {"name": "review", "description": "Reviews code.\nCarefully.\n", "tools": ["read_file", "grep"],
                    "arguments": [{"name": "path", "required": True}]}
    assert body == "Body here.\n"


def test_no_block_or_an_unclosed_one_leaves_the_text_as_body():
    assert parse_front_matter("# Title\ntext\n") == ({}, "# Title\ntext\n")
    assert split_front_matter("---\nname: x\nno end\n") is None
    assert parse_front_matter("---\nname: x\n") == ({}, "---\nname: x\n")
    assert parse_front_matter("---\n---\nbody") == ({}, "body")


def test_invalid_yaml_and_non_maps_are_errors_that_say_where():
    with pytest.raises(FrontMatterError, match=r"not valid YAML \(line 3\)"):
        parse_front_matter("---\nname: x\ndescription: a: b\n---\nbody")
    with pytest.raises(FrontMatterError, match="must be a map"):
        parse_front_matter("---\n- a\n- b\n---\nbody")
