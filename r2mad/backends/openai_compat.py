"""ChatBackend over any OpenAI-compatible endpoint (HF router, vLLM, OpenAI, llama.cpp server) with bounded,
deadline-aware retries and one-sentence errors (classed and worded in failures.py); answers are read whole
or, with `stream`, as server-sent events (a stream cut before its finish_reason is retried, never taken as
an answer). A streamed answer is bounded twice: no new chunk for `timeout_s` is a stall (retried), and
the whole answer taking over `total_timeout_s` ends the call (not retried: a retry would be as slow).

Accounting when one request returns several choices: the request's prompt tokens go on the first completion
it produced and 0 on the others (so summing completions gives the true cost); each choice's completion tokens
are its own count of token logprobs when the server sent them, otherwise the request's total shared in
proportion to each choice's characters (the sum stays exact); every completion carries the wall time of the
request that produced it, who served it (the HF router's `x-inference-provider` header, or a replica's
`x-served-by`) and the prompt tokens a prefix cache served (usage.prompt_tokens_details.cached_tokens, on the
request's first completion like its prompt tokens). Every request carries the current debate's routing key
(affinity.py), so a router keeps a debate on one replica.

With `native_n` (batching.py), single-sample calls of identical prompts and sampling settings that arrive within
BATCH_WINDOW_S of each other (Self-Consistency's samples, judges of the same response) go as one request
for n samples, carrying the first call's seed; the server derives each sample from it (vLLM seeds the n
samples of a request from the request's seed), so the set is reproducible, and samples asked again because
a server returned fewer choices get seeds shifted past it.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, Callable, Sequence

import openai

from r2mad.backends.affinity import affinity_headers
from r2mad.backends.base import BackendError, Capabilities
from r2mad.backends.batching import SampleBatcher
from r2mad.backends.failures import (
    Retryable,
    classify,
    give_up_message,
    permanent_message,
    too_slow_message,
)
from r2mad.backends.openai_reading import (  # noqa: F401 - choice_tokens and constraint are used from here
    cached_tokens,
    choice_tokens,
    constraint,
    provider,
    token_logprobs,
    usable,
)
from r2mad.types import AnswerShape, Completion, Message

BACKOFF_START_S = 0.5
BACKOFF_CAP_S = 8.0
MAX_RETRY_AFTER_S = 30.0  # without a deadline, a longer Retry-After ends the call instead of waiting
TOTAL_PER_TOKEN_S = 0.05  # default bound on a streamed answer: timeout_s plus this per max token (>= 20 tokens/s)
NO_KEY = "not-needed"  # local servers take no key; a placeholder keeps the client from reading the environment


class OpenAICompatBackend:
    def __init__(self, *, base_url: str, model: str | None, api_key: str | None, name: str = "",
                 timeout_s: float = 60, max_retries: int = 2, deadline_s: float | None = None, stream: bool = False,
                 native_n: bool = False, total_timeout_s: float | None = None,
                 key_source: str = "the token field or HF_TOKEN",
                 capabilities: Capabilities = Capabilities(supports_logprobs=True, judges_answers=True)):
        """`deadline_s`: a bound on a call with its retries; `capabilities`: what the backbone declares
        (streams_text follows `stream`). `extra_body` (an attribute) goes with every request."""
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = name or model or self.base_url
        self.timeout_s = float(timeout_s)
        self.total_timeout_s = None if total_timeout_s is None else float(total_timeout_s)
        self.max_retries = max(0, int(max_retries))
        self.deadline_s = deadline_s
        self.extra_body: dict[str, Any] = {}
        self.stream = stream
        self.capabilities = dataclasses.replace(capabilities, streams_text=stream)
        self.native_n = native_n  # the server returns n choices for one request (vLLM, OpenAI)
        self._batcher = SampleBatcher(self._request_samples)
        self.key_source = key_source  # where the person sets the key, named in the 401 message
        self._api_key = api_key or None
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._model_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def __repr__(self) -> str:
        return f"OpenAICompatBackend(name={self.name!r}, base_url={self.base_url!r}, model={self.model!r})"

    def describe(self) -> dict[str, Any]:
        """What a transcript records about this backbone (never the key)."""
        return {"name": self.name, "base_url": self.base_url, "model": self.model}

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    # --- the protocol -------------------------------------------------------------------------

    async def chat(self, messages: Sequence[Message], *, n: int = 1, temperature: float = 0.7,
                   top_p: float = 1.0, max_tokens: int = 512, seed: int | None = None,
                   logprobs: bool = False, on_text: Callable[[str], None] | None = None,
                   shape: AnswerShape | None = None) -> list[Completion]:
        """Return `n` completions; if the server returns fewer choices than asked, ask again for the rest
        (with the seed shifted, so repeated calls do not return the same sample). When streaming, a single
        completion's text so far goes to `on_text` as it grows. With `native_n`, a single-sample call may
        be answered by a request shared with identical calls (see the module docstring)."""
        if self.native_n and n == 1:
            return [await self._batcher.sample(tuple(messages), (temperature, top_p, max_tokens, logprobs, shape),
                                               seed, on_text)]
        return await self._chat(messages, n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                seed=seed, logprobs=logprobs, on_text=on_text, shape=shape)

    async def _request_samples(self, messages: tuple[Message, ...], n: int, sampling: tuple, seed: int | None,
                               on_text: Callable[[str], None] | None) -> list[Completion]:
        temperature, top_p, max_tokens, logprobs, shape = sampling
        return await self._chat(messages, n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                seed=seed, logprobs=logprobs, on_text=on_text, shape=shape)

    async def _chat(self, messages: Sequence[Message], *, n: int, temperature: float, top_p: float,
                    max_tokens: int, seed: int | None, logprobs: bool,
                    on_text: Callable[[str], None] | None, shape: AnswerShape | None) -> list[Completion]:
        deadline = None if self.deadline_s is None else time.monotonic() + self.deadline_s
        model = await self._model(deadline)
        want_logprobs = logprobs and self.capabilities.supports_logprobs
        payload = [{"role": m.role, "content": m.content} for m in messages]
        results: list[Completion] = []
        for _ in range(max(1, n)):  # each request yields at least one completion, so n requests suffice
            wanted = n - len(results)
            if wanted <= 0:
                break
            args: dict[str, Any] = {"model": model, "messages": payload, "temperature": temperature,
                                    "top_p": top_p, "max_tokens": max_tokens}
            if wanted > 1:
                args["n"] = wanted
            if seed is not None:
                args["seed"] = seed + len(results)
            if want_logprobs:  # llama.cpp's server sends logprobs only when top_logprobs > 0
                args["logprobs"], args["top_logprobs"] = True, 1
            extra = {**self.extra_body, **(constraint(self.capabilities.structured_output, shape) if shape else {})}
            if extra:
                args["extra_body"] = extra
            if self.stream and wanted == 1:
                results += await self._with_retries(
                    lambda timeout, args=args: self._complete_streamed(args, timeout, on_text, deadline), deadline)
                continue
            results += await self._with_retries(
                lambda timeout, args=args, wanted=wanted: self._complete(args, timeout, wanted), deadline)
        return results[:n]

    # --- one request ---------------------------------------------------------------------------

    async def _complete(self, args: dict[str, Any], timeout: float, wanted: int) -> list[Completion]:
        started = time.monotonic()
        raw = await self._get_client().chat.completions.with_raw_response.create(**args, timeout=timeout,
                                                                                 extra_headers=affinity_headers())
        response = raw.parse()
        latency = time.monotonic() - started
        choices = [c for c in (getattr(response, "choices", None) or [])[:wanted] if usable(c)]
        if not choices:
            raise Retryable("empty", "no choice with content")
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        out_total = int(getattr(usage, "completion_tokens", 0) or 0)
        logprobs = [token_logprobs(c) if "logprobs" in args else None for c in choices]
        counts = choice_tokens(out_total, [c.message.content or "" for c in choices], logprobs)
        served = provider(raw)
        return [Completion(text=c.message.content or "", tokens_in=prompt_tokens if i == 0 else 0,
                           tokens_out=counts[i], latency_s=round(latency, 6), logprobs=logprobs[i],
                           finish_reason=getattr(c, "finish_reason", None), provider=served,
                           tokens_cached=cached_tokens(usage) if i == 0 else 0)
                for i, c in enumerate(choices)]

    def total_bound(self, max_tokens: int) -> float:
        """The most one streamed answer may take in all: total_timeout_s, or timeout_s plus
        TOTAL_PER_TOKEN_S per token it may have."""
        return self.total_timeout_s or self.timeout_s + TOTAL_PER_TOKEN_S * max_tokens

    async def _complete_streamed(self, args: dict[str, Any], timeout: float,
                                 on_text: Callable[[str], None] | None, deadline: float | None) -> list[Completion]:
        """One completion read as server-sent events. openai returns the partial text of a stream cut
        before its finish_reason without an error: such a stream is a failed attempt, not an answer."""
        started = time.monotonic()
        total = self.total_bound(args["max_tokens"])
        raw = await self._get_client().chat.completions.with_raw_response.create(
            **args, stream=True, stream_options={"include_usage": True}, timeout=timeout,
            extra_headers=affinity_headers())
        stream = raw.parse()
        text, logprobs, finish, usage, chunks = "", [], None, None, 0
        async with stream:
            async for chunk in self._bounded(stream, started, timeout, total, deadline):
                usage = getattr(chunk, "usage", None) or usage
                for choice in getattr(chunk, "choices", None) or []:
                    piece = getattr(choice.delta, "content", None) if choice.delta else None
                    if piece:
                        text, chunks = text + piece, chunks + 1
                        if on_text is not None:
                            on_text(text)
                    logprobs += token_logprobs(choice) or ()
                    finish = getattr(choice, "finish_reason", None) or finish
        if finish is None:
            raise Retryable("cut", f"stream ended after {chunks} chunks without a finish_reason")
        if not text and finish != "length":
            raise Retryable("empty", "no text in the stream")
        return [Completion(text=text, tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
                           tokens_out=int(getattr(usage, "completion_tokens", 0) or chunks),
                           latency_s=round(time.monotonic() - started, 6),
                           logprobs=(tuple(logprobs) or None) if "logprobs" in args else None,
                           finish_reason=finish, provider=provider(raw),
                           tokens_cached=cached_tokens(usage))]

    async def _bounded(self, stream: Any, started: float, gap: float, total: float, deadline: float | None):
        """The stream's chunks, each within `gap` seconds of the one before (or of the request) and all within
        `total` of the request; the call's deadline, when nearer, cuts it as a timeout."""
        chunks, last, end = stream.__aiter__(), started, started + total
        while True:
            stall = last + gap
            cut = min(stall, end, deadline if deadline is not None else end)
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), max(0.0, cut - time.monotonic()))
            except StopAsyncIteration:
                return
            except (asyncio.TimeoutError, openai.APITimeoutError):
                if deadline is not None and deadline < min(stall, end):
                    raise Retryable("timeout") from None
                if end < stall:
                    raise BackendError(self._redact(too_slow_message(self.base_url, total)), transient=True) from None
                raise Retryable("stalled", f"no chunk for {gap:g}s") from None
            last = time.monotonic()
            yield chunk

    async def _model(self, deadline: float | None) -> str:
        """The configured model, or the first one the server lists (asked once, then cached)."""
        if self.model:
            return self.model
        loop = asyncio.get_running_loop()
        if self._model_lock is None or self._model_lock[0] is not loop:  # a lock serves one event loop
            self._model_lock = (loop, asyncio.Lock())
        async with self._model_lock[1]:
            if not self.model:
                async def first_model(timeout: float) -> str:
                    page = await self._get_client().models.list(timeout=timeout)
                    ids = [m.id for m in (getattr(page, "data", None) or []) if getattr(m, "id", None)]
                    if not ids:
                        raise BackendError(f"{self.base_url}/models lists no models; start the server with a "
                                           "model loaded or set the model name in the backbone config.")
                    return ids[0]
                self.model = await self._with_retries(first_model, deadline)
                if self.name == self.base_url:
                    self.name = self.model
        return self.model

    def _get_client(self) -> openai.AsyncOpenAI:
        # httpx connections belong to one event loop; a caller on a new loop gets a fresh client
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self._api_key or NO_KEY, max_retries=0,
                timeout=openai.Timeout(self.timeout_s, connect=min(5.0, self.timeout_s)))
            self._client_loop = loop
        return self._client

    # --- retries and errors -------------------------------------------------------------------

    async def _with_retries(self, attempt, deadline: float | None):
        started, attempts = time.monotonic(), 0
        last: Retryable | None = None
        for number in range(1, self.max_retries + 2):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0.05:
                break
            attempts = number
            try:
                return await attempt(min(self.timeout_s, remaining) if remaining is not None else self.timeout_s)
            except Retryable as exc:
                outcome: Retryable | BackendError = exc
            except BackendError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below, anything unknown is permanent
                outcome = classify(exc)
                if not isinstance(outcome, Retryable):
                    outcome = BackendError(self._redact(self._permanent(exc, *outcome)), transient=False)
            if isinstance(outcome, BackendError):
                raise outcome  # outside the except block: no chained client error that could quote the key
            last = outcome
            if number > self.max_retries:
                break
            wait = min(BACKOFF_START_S * 2 ** (number - 1), BACKOFF_CAP_S)
            if last.retry_after:  # the server knows best when it will have room again
                wait = last.retry_after
                limit = MAX_RETRY_AFTER_S if deadline is None else deadline - time.monotonic()
                if last.retry_after > limit:
                    raise BackendError(self._redact(
                        f"{self.base_url} answered {last.kind.replace('status ', 'HTTP ')} and asked to wait "
                        f"{last.retry_after:g}s, longer than the {max(limit, 0):.0f}s this call may still wait; "
                        "try again later or run fewer agents at once."), transient=True)
            elif deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            await asyncio.sleep(wait)
        raise BackendError(self._redact(give_up_message(last.kind if last else "timeout", self.base_url, attempts,
                                                        time.monotonic() - started, self.timeout_s,
                                                        last.detail if last else "")), transient=True)

    def _permanent(self, exc: Exception, code: int | None, text: str, quota: bool) -> str:
        if code is None:
            return (f"Calling {self.base_url} failed unexpectedly ({type(exc).__name__}: {str(exc)[:200]}); "
                    "check the backbone settings.")
        return permanent_message(code, text, quota, base_url=self.base_url, model=self.model,
                                 has_key=bool(self._api_key), key_source=self.key_source)

    def _redact(self, text: str) -> str:
        if self._api_key and len(self._api_key) >= 4:
            text = text.replace(self._api_key, "***")
        return text
