"""Which models exist, which one is the default, and the provider instance that serves each.

Model ids are ``provider/model`` (``openai/gpt-4.1``, ``my-vllm/qwen3``). A provider's models are offered only when
it is usable (has a key, or needs none); Ollama's models are discovered from the running daemon so a user with
Ollama installed sees their local models without configuring anything.

The embedded model (``local/smollm2-135m``) is offered whenever its optional packages are installed, and is the
default only when nothing else is usable: real work goes to a configured provider as soon as its key is present.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypedDict, cast

import httpx

from ...providers import ProviderSettings, Timeouts, create_provider, list_ollama_models
from ...providers import local as _local
from ...providers.base import Provider
from ..config import Config, ModelInfo, ResolvedProvider, builtin_variants, resolve_providers, sees_images

log = logging.getLogger(__name__)

# Preferred default when several providers are usable and the user named none.
_DEFAULT_PREFERENCE = ("anthropic", "openai")


class UnknownModel(LookupError):
    """A model id no usable provider offers: the door answers it as the user's error, not a crash."""
    pass


class ModelRegistry:
    """The models a config makes available, and one provider instance per provider, made on first use."""

    def __init__(
        self, config: Config, env: Mapping[str, str], http: httpx.AsyncClient, problems: list[str] | None = None
    ) -> None:
        self._config = config
        self._http = http
        self.providers: dict[str, ResolvedProvider] = resolve_providers(config, env, problems=problems)
        self._instances: dict[str, Provider] = {}
        self._discovered: dict[str, list[str]] = {}
        self.local_status = _local.local_model_status() if config.local_model.enabled else None
        # set by the engine: async callback for "Loading local model…"
        self.local_progress: Callable[[Any], Awaitable[None]] | None = None

    def adopt(self, previous: ModelRegistry) -> None:
        """Take over what *previous* (the registry of the config before a reload) knows and still holds: the
        Ollama models discovered for a provider at the same URL, and the embedded model's provider, so the
        runtime it started is still stopped when the engine closes."""
        for provider_id, names in previous._discovered.items():
            old, new = previous.providers.get(provider_id), self.providers.get(provider_id)
            if old is not None and new is not None and old.url == new.url:
                self._discovered[provider_id] = names
        local = previous._instances.get(_local.PROVIDER_ID)
        if local is not None:
            self._instances[_local.PROVIDER_ID] = local

    # -- discovery -----------------------------------------------------------------------------------------------

    async def discover(self) -> None:
        """Ask Ollama which models it has (fast: connection refused is immediate; capped at 2 s)."""
        for provider in self.providers.values():
            if provider.api != "ollama" or provider.models:
                continue
            names = await list_ollama_models(provider.url, self._http)
            if names:
                self._discovered[provider.id] = names
                log.info("discovered %d Ollama model(s) at %s", len(names), provider.url)

    # -- queries -------------------------------------------------------------------------------------------------

    def usable(self, provider: ResolvedProvider) -> bool:
        """The provider can serve now: it has models (configured or, for Ollama, discovered)."""
        if provider.api == "ollama":
            return bool(provider.models) or bool(self._discovered.get(provider.id))
        return provider.authenticated

    def model_infos(self) -> dict[str, ModelInfo]:
        """Every offered model id and what is known of it, from the usable providers."""
        infos: dict[str, ModelInfo] = {}
        for provider in self.providers.values():
            if not self.usable(provider):
                continue
            for info in provider.models.values():
                infos[info.id] = info
            for name in self._discovered.get(provider.id, []):
                model_id = f"{provider.id}/{name}"
                infos.setdefault(model_id, _plain_model(provider.id, name, provider.api))
        if self.local_status is not None and self.local_status.available:
            info = _plain_model(_local.PROVIDER_ID, _local.MODEL_NAME)
            info.context_limit = _local.CONTEXT_TOKENS
            info.input_cost = info.output_cost = 0.0  # runs on this machine: free
            info.output_limit = _local.LocalOptions().max_tokens
            info.compact = True  # a 135M model: compact prompt, tools only when asked for (engine/turn/_small_model.py)
            info.system_prompt = _local.SYSTEM_PROMPT
            infos[info.id] = info
        return infos

    def models(self) -> list[str]:
        """The offered model ids, in the providers' order."""
        return list(self.model_infos())

    def default_model(self) -> str | None:
        """The configured default if offered, else the first usable provider's; None when nothing is usable."""
        infos = self.model_infos()
        wanted = self._config.default_model
        if wanted and wanted in infos:
            return wanted
        for provider_id in _DEFAULT_PREFERENCE:
            for model_id, info in infos.items():
                if info.provider == provider_id:
                    return model_id
        return next(iter(infos), None)

    def missing_key_hint(self) -> str:
        """What to tell a user with no usable model: which keys or daemons would make one appear."""
        hint = (
            "No model is available. Set an API key (e.g. OPENAI_API_KEY or ANTHROPIC_API_KEY), start Ollama, or "
            "configure a provider in ~/.config/eca/config.json."
        )
        if self.local_status is not None and not self.local_status.available:
            hint += f" For the offline model: {self.local_status.message}"
        return hint

    def resolve(self, model_id: str) -> tuple[Provider, ModelInfo]:
        """The provider instance (made once, kept) and the info for *model_id*; UnknownModel if not offered."""
        info = self.model_infos().get(model_id)
        if info is None:
            raise UnknownModel(model_id)
        if info.provider == _local.PROVIDER_ID:
            return self._instance(_LOCAL_PROVIDER), info
        return self._instance(self.providers[info.provider]), info

    def _instance(self, provider: ResolvedProvider) -> Provider:
        instance = self._instances.get(provider.id)
        if instance is None and provider.api == "local":
            instance = _local.create_local_provider(self._http, progress=self.local_progress)
            self._instances[provider.id] = instance
            return instance
        if instance is None:
            timeouts = Timeouts()
            # stream idle timeout: the longest silence tolerated inside a stream (null in config turns it off)
            idle = self._config.stream_idle_timeout_seconds
            timeouts.read = float(idle) if idle else None  # type: ignore[assignment]
            settings = ProviderSettings(
                id=provider.id,
                api=cast(Any, provider.api),
                url=provider.url,
                key=provider.key,
                completion_path=provider.completion_path,
                headers=dict(provider.headers),
                timeouts=timeouts,
                cache_retention=provider.cache_retention,
                prompt_cache_key=provider.prompt_cache_key,
                **_think_tags(provider),
            )
            instance = create_provider(settings, self._http)
            self._instances[provider.id] = instance
        return instance

    def secrets(self) -> list[str]:
        """The providers' keys, for redaction: they must never reach logs, saved chats or the model."""
        return [p.key for p in self.providers.values() if p.key]

    async def aclose(self) -> None:
        """Close the provider instances this registry made (the embedded runtime only if it was used)."""
        if _local.PROVIDER_ID in self._instances:
            # the runtime is process-wide; only an engine that used it stops it
            await _local.shutdown_local_runtimes()
        for instance in self._instances.values():
            try:
                await instance.aclose()
            except Exception:  # pragma: no cover - closing must never mask shutdown
                log.debug("error closing provider", exc_info=True)
        self._instances.clear()


_LOCAL_PROVIDER = ResolvedProvider(
    id=_local.PROVIDER_ID, api="local", url="", key=None, key_source=None, completion_path=None, headers={},
    think_tag_start=None, think_tag_end=None, models={}, authenticated=True,
)


class _ThinkTags(TypedDict, total=False):
    """The provider's think tags, passed to ProviderSettings only when configured (its defaults apply otherwise)."""

    think_tag_start: str
    think_tag_end: str


def _think_tags(provider: ResolvedProvider) -> _ThinkTags:
    tags: _ThinkTags = {}
    if provider.think_tag_start:
        tags["think_tag_start"] = provider.think_tag_start
    if provider.think_tag_end:
        tags["think_tag_end"] = provider.think_tag_end
    return tags


def _plain_model(provider_id: str, name: str, api: str = "") -> ModelInfo:
    return ModelInfo(
        id=f"{provider_id}/{name}",
        provider=provider_id,
        name=name,
        extra_payload={},
        extra_headers={},
        input_cost=None,
        output_cost=None,
        cache_read_cost=None,
        cache_write_cost=None,
        context_limit=None,
        output_limit=None,
        reasoning=False,
        image_input=provider_id != _local.PROVIDER_ID and sees_images(name),  # (discovered Ollama models: by name)
        # a discovered Ollama model that thinks gets the ``think`` efforts (engine/config/_variants.py)
        variants=builtin_variants(api, name, False) if api == "ollama" else {},
    )
