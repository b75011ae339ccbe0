"""The one backend contract: an async `chat` that returns completions, and the capabilities a backend
declares so that callers read them instead of probing. No transport code here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from r2mad.types import AnswerShape, Completion, Message


class BackendError(Exception):
    """A call that failed for good. `transient` says whether retrying later could help; the message
    is one sentence a person can act on and never contains a secret."""

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, checked before tokens are spent. The defaults promise nothing."""
    supports_logprobs: bool = False  # chat(logprobs=True) returns token logprobs
    streams_text: bool = False  # chat() takes on_text (live display of a single completion)
    structured_output: str | None = None  # how chat() keeps to `shape`: "grammar", "vllm", "json_schema"; None: not
    guard_by_default: bool = False  # answer_guard "auto" turns the guard on (a model that often forgets to answer)
    n_ctx: int | None = None  # the context window in tokens, when known (peers' responses are clipped to fit)
    max_parallel: int | None = None  # calls decoded at once (more wait in line), for sizing concurrency
    judges_answers: bool = False  # able to grade answers the rules leave undecided (a debate's judge "auto")


class ChatBackend(Protocol):
    name: str
    model: str | None  # the served model's id when known (with `name`, a summary cache's key)
    capabilities: Capabilities

    async def chat(self, messages: Sequence[Message], *, n: int = 1, temperature: float = 0.7,
                   top_p: float = 1.0, max_tokens: int = 512, seed: int | None = None,
                   logprobs: bool = False, on_text: Callable[[str], None] | None = None,
                   shape: AnswerShape | None = None) -> list[Completion]:
        """Return `n` completions of the conversation; raise BackendError on failure.
        on_text: called with a single completion's text so far as it grows; only when capabilities.streams_text.
        shape: the answer's form, kept to as capabilities.structured_output says; only when that is set."""
        ...


class Wrapped:
    """A backend around `inner` (metered, counted, recorded): its name, model and capabilities are the inner
    backend's; `chat` passes through unless a subclass adds its step around the inner call."""

    def __init__(self, inner: ChatBackend):
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str | None:
        return self.inner.model

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    async def chat(self, messages: Sequence[Message], **options) -> list[Completion]:
        return await self.inner.chat(messages, **options)
