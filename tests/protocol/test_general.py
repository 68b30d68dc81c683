from __future__ import annotations

import pytest
from pydantic import ValidationError

from eca_notebook.protocol import CancelRequestParams, EmptyParams, ProgressParams, ShowMessageParams


def test_show_message() -> None:
    wire = {"type": "warning", "message": "No models"}
    assert ShowMessageParams.model_validate(wire).dump() == wire
    with pytest.raises(ValidationError):
        ShowMessageParams.model_validate({"type": "debug", "message": "x"})


def test_progress() -> None:
    wire = {"type": "start", "taskId": "models", "title": "Syncing models"}
    assert ProgressParams.model_validate(wire).dump() == wire
    assert ProgressParams(type="finish", task_id="models").dump() == {"type": "finish", "taskId": "models"}


@pytest.mark.parametrize("request_id", [0, 17, "3f2a-uuid"])
def test_cancel_request_keeps_id_type(request_id: int | str) -> None:
    assert CancelRequestParams.model_validate({"id": request_id}).id == request_id


@pytest.mark.parametrize("raw", [None, {}, [], {"ignored": 1}])
def test_empty_params_accepts_nothing(raw: object) -> None:
    EmptyParams.model_validate(raw)


@pytest.mark.parametrize("raw", [[1], "x", 3])
def test_empty_params_rejects_positional_and_scalars(raw: object) -> None:
    with pytest.raises(ValidationError):
        EmptyParams.model_validate(raw)
