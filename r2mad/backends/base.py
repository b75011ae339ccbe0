"""The one backend contract: an async `chat` that returns completions. No transport code here."""
from __future__ import annotations

from typing import Protocol, Sequence

from r2mad.types import Completion, Message


class BackendError(Exception):
    """A call that failed for good. `transient` says whether retrying later could help; the message
    is one sentence a person can act on and never contains a secret."""

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class ChatBackend(Protocol):
    name: str
    supports_logprobs: bool
    # optional: `streams_text = True` promises that chat() takes on_text, a callable that receives a
    # single completion's text so far while it is generated (live display)
    # optional: `max_parallel = k` says it decodes k calls at once (more wait in line), for sizing concurrency

    async def chat(self, messages: Sequence[Message], *, n: int = 1, temperature: float = 0.7,
                   top_p: float = 1.0, max_tokens: int = 512, seed: int | None = None,
                   logprobs: bool = False) -> list[Completion]:
        """Return `n` completions of the conversation; raise BackendError on failure."""
        ...
