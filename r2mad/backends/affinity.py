"""Debate affinity: every call of one debate carries one routing key, so a router in front of several
replicas (vllm-router's consistent_hash, sglang-router's manual policy) keeps the debate on one replica and
that replica's prefix cache serves its growing prompts. The key lives in a context variable: set once
around a debate (or an eval question, whose shared round 0 and method forks then stay together), it
reaches every call made inside, agents, summaries, judges, advice and the answer guard alike, because
asyncio tasks copy the context they are created in. Not a router: only the key and the headers."""
from __future__ import annotations

import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

# The headers the routers read their sticky key from: vllm-router's consistent_hash reads X-Session-ID
# (its README), sglang-router's manual policy x-smg-routing-key. Sending both works behind either.
AFFINITY_HEADERS = ("X-Session-ID", "X-SMG-Routing-Key")
# Who served a call, as servers tell it: the HF router's provider, or a replica naming itself (the scripted
# replicas do; a lab can add it to its own proxy). vllm-router passes a worker's response headers on.
SERVED_BY_HEADERS = ("x-inference-provider", "x-served-by")

_debate_key: ContextVar[str | None] = ContextVar("r2mad_debate_key", default=None)


def current_key() -> str | None:
    """The routing key of the debate this call belongs to, if any."""
    return _debate_key.get()


@contextmanager
def debate_key(key: str | None = None) -> Iterator[str]:
    """Within the block, calls carry `key`; with no key, the enclosing one stays (an eval question's), or
    a fresh random one is made. Yields the key in force."""
    key = key or _debate_key.get() or uuid.uuid4().hex[:16]
    token = _debate_key.set(key)
    try:
        yield key
    finally:
        _debate_key.reset(token)


def affinity_headers() -> dict[str, str]:
    """The request headers that carry the current debate's key (none outside a debate)."""
    key = _debate_key.get()
    return {name: key for name in AFFINITY_HEADERS} if key else {}


def served_by(headers) -> str | None:
    """Who served a call, from a response's headers (None when no server says)."""
    if headers is None:
        return None
    for name in SERVED_BY_HEADERS:
        value = headers.get(name)
        if value and value.strip():
            return value.strip()[:100]
    return None
