from __future__ import annotations

import pytest
from pydantic import ValidationError

from eca_notebook.protocol import ClientCapabilities, InitializeParams, InitializeResult, WorkspaceFolder

SPEC_INITIALIZE = {
    "processId": 4242,
    "clientInfo": {"name": "emacs", "version": "30.1"},
    "initializationOptions": {"chatBehavior": "agent", "chatAgent": None},
    "capabilities": {"codeAssistant": {"chat": True, "editor": {"diagnostics": True}}},
    "workspaceFolders": [{"uri": "file:///home/u/project", "name": "project"}],
}


def test_spec_initialize_params() -> None:
    params = InitializeParams.model_validate(SPEC_INITIALIZE)
    assert params.process_id == 4242
    assert params.client_info is not None and params.client_info.name == "emacs"
    assert params.initialization_options == {"chatBehavior": "agent", "chatAgent": None}
    ca = params.capabilities.code_assistant
    assert ca is not None and ca.chat is True and ca.editor is not None and ca.editor.diagnostics is True
    assert params.workspace_folders == [WorkspaceFolder(uri="file:///home/u/project", name="project")]
    # initializationOptions is a plain dict: its null values survive the round trip.
    assert params.dump() == SPEC_INITIALIZE


def test_early_capabilities() -> None:
    params = InitializeParams.model_validate(
        {"processId": None, "capabilities": {"codeAssistant": {"chat": True, "doc": False, "edit": True, "fix": True}}}
    )
    ca = params.capabilities.code_assistant
    assert ca is not None and (ca.doc, ca.edit, ca.fix) == (False, True, True)


def test_minimal_and_null_fields() -> None:
    params = InitializeParams.model_validate({"workspaceFolders": None, "capabilities": None, "rootUri": "file:///r"})
    assert params.workspace_folders == []
    assert params.capabilities == ClientCapabilities()
    assert params.root_uri == "file:///r"
    assert InitializeParams.model_validate({}).workspace_folders == []


def test_workspace_folder_name_defaults() -> None:
    assert WorkspaceFolder.model_validate({"uri": "file:///x"}).name == ""


def test_bad_process_id() -> None:
    with pytest.raises(ValidationError) as info:
        InitializeParams.model_validate({"processId": "abc"})
    assert info.value.errors()[0]["loc"] == ("processId",)


def test_initialize_result_newer_is_empty_early_is_filled() -> None:
    assert InitializeResult().dump() == {}
    early = {
        "models": ["openai/gpt-5"],
        "chatDefaultModel": "openai/gpt-5",
        "chatBehaviors": ["agent", "plan"],
        "chatDefaultBehavior": "agent",
        "chatWelcomeMessage": "Welcome",
    }
    assert InitializeResult.model_validate(early).dump() == early
