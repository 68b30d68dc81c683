"""Layer rule: the protocol package is layer 0 and pulls in nothing but pydantic."""

from __future__ import annotations

import subprocess
import sys

import eca_notebook.protocol as protocol


def test_import_does_not_pull_in_upper_layers_or_http() -> None:
    code = (
        "import sys, eca_notebook.protocol\n"
        "banned = ['httpx', 'IPython', 'ipywidgets', 'tornado', 'jupyter_server', 'eca_notebook.rpc',"
        " 'eca_notebook.transports', 'eca_notebook.providers', 'eca_notebook.engine']\n"
        "print(','.join(m for m in banned if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_all_is_explicit_and_resolvable() -> None:
    assert len(protocol.__all__) == len(set(protocol.__all__))
    for name in protocol.__all__:
        assert hasattr(protocol, name), name


def test_json_schema_can_be_generated_for_every_model() -> None:
    # The TypeScript types are generated from these schemas; a model that can't produce one breaks that build.
    from pydantic import BaseModel, TypeAdapter

    for name in protocol.__all__:
        obj = getattr(protocol, name)
        if isinstance(obj, type) and issubclass(obj, BaseModel):
            assert obj.model_json_schema()["type"] == "object", name
    for union in (protocol.ChatContent, protocol.ChatContext, protocol.ToolServerUpdatedParams):
        assert TypeAdapter(union).json_schema()
