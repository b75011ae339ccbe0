"""Backends: build the right ChatBackend for a configured backbone, by its kind (BACKENDS)."""
from __future__ import annotations

from typing import Callable

from r2mad.backends.base import BackendError, Capabilities, ChatBackend
from r2mad.settings.config import Backbone

__all__ = ["BACKENDS", "BackendError", "ChatBackend", "make_backend"]

_embedded: dict[str, ChatBackend] = {}


def embedded_backend(backbone: Backbone, api_key: str | None) -> ChatBackend:
    """The model in this process's model worker, shared by the whole process."""
    if backbone.name not in _embedded:
        from r2mad.backends.embedded import EmbeddedBackend

        locate = None
        if backbone.gguf_repo:  # a GGUF from the Hub, fetched and checked on first use
            from r2mad.backends.gguf import hub_gguf

            b = backbone
            locate = lambda: hub_gguf(b.name, b.gguf_repo, b.gguf_file, b.gguf_sha256, b.gguf_revision)  # noqa: E731
        _embedded[backbone.name] = EmbeddedBackend(name=backbone.name, n_ctx=backbone.n_ctx, locate=locate,
                                                   file_name=backbone.gguf_file)
    return _embedded[backbone.name]


def openai_backend(backbone: Backbone, api_key: str | None) -> ChatBackend:
    """An OpenAI-compatible server; one backend per call (the key may differ per visitor)."""
    from r2mad.backends.openai_compat import OpenAICompatBackend

    if not backbone.base_url:
        raise BackendError(f"Backbone '{backbone.name}' has no base_url; set one in configs/backbones.yaml.")
    return OpenAICompatBackend(base_url=backbone.base_url, model=backbone.model, api_key=api_key,
                               name=backbone.name, timeout_s=backbone.timeout_s,
                               max_retries=backbone.max_retries, total_timeout_s=backbone.total_timeout_s,
                               stream=backbone.stream, native_n=backbone.native_n,
                               key_source=backbone.api_key_env or "the token field",
                               capabilities=Capabilities(
                                   supports_logprobs=backbone.supports_logprobs, guard_by_default=backbone.answer_guard,
                                   structured_output=None if backbone.structured_output == "none"
                                   else backbone.structured_output,  # the answer guard's
                                   judges_answers=backbone.judges))


def scripted_backend(backbone: Backbone, api_key: str | None) -> ChatBackend:
    """No model: a short answer in the form asked (r2mad/backends/scripted.py), for trying the plumbing."""
    from r2mad.backends.scripted import ScriptedBackend, answer_in_form

    return ScriptedBackend(answer_in_form, name=backbone.name, model=backbone.model, record=False)


# a backbone's `kind` -> its maker; configs/backbones.yaml's kinds are these (Backbone.kind's choices)
BACKENDS: dict[str, Callable[[Backbone, str | None], ChatBackend]] = {
    "embedded": embedded_backend, "openai": openai_backend, "scripted": scripted_backend}


def make_backend(backbone: Backbone, *, api_key: str | None = None) -> ChatBackend:
    return BACKENDS[backbone.kind](backbone, api_key)
