"""Loading the embedded model before the first question, when it will be the one answering.

Why: with no key configured, the first prompt in JupyterLab's panel would otherwise wait for the model to load (a
second or more on a two-core machine, longer on a cold disk) on top of its own answer. The server extension calls
:func:`preload_default_model` in the background as Jupyter starts; it decides from the same configuration and model
discovery an engine uses, without creating an engine (a workspace's engine stays "stopped" until a client uses it).

It loads nothing when a real provider is the default, when ``localModel`` is off, or when the model isn't
installed. The runtime is process-wide, so the engine that later answers finds it running (or still loading: the
chat then shows the load's progress as usual).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...providers import local as _local
from ...providers import make_http_client
from ..config import load_config
from ._registry import ModelRegistry

__all__ = ["preload_default_model"]

log = logging.getLogger(__name__)


async def preload_default_model(
    folders: Sequence[Path], *, config_file: Path | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """Start the embedded model's runtime if it is the default model for ``folders``; return the model id loaded
    (``None`` when nothing was loaded). Never raises for a failed load: it is logged, and the first prompt retries."""
    loaded = load_config(workspace_folders=list(folders), config_file=config_file, env=env)
    config = loaded.config
    if not config.local_model.enabled:
        return None
    http = make_http_client()
    try:
        registry = ModelRegistry(config, env if env is not None else os.environ, http)
        await registry.discover()
        if registry.default_model() != _local.MODEL_ID:
            return None
        status = registry.local_status
        if status is None or not status.available:
            return None
        runtime = _local.get_local_runtime(status.model_path)
        try:
            await runtime.ensure_started()
        except _local.LocalRuntimeError as exc:
            log.warning("preloading the local model failed: %s", exc)
            return None
        log.info("local model %s loaded in the background (%.1f s)", _local.MODEL_ID, runtime.start_seconds or 0)
        return _local.MODEL_ID
    finally:
        await http.aclose()
