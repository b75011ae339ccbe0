"""The scripted server's behaviours (one per /chat/completions request: an answer, a status, a hang, a
broken body or stream) and the OpenAI-shaped bodies it sends; the server itself is server.py."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

CONTEXT_ERROR = ("This model's maximum context length is 4096 tokens. However, you requested 5120 tokens "
                 "(4608 in the messages, 512 in the completion). Please reduce the length of the messages "
                 "or completion.")


# --- behaviours ---------------------------------------------------------------------------------

@dataclass
class Ok:
    text: str | list[str] = "ok"  # a list gives one text per choice
    logprobs: list[float] | None = None  # per-token logprobs, sent only when the request asks for them
    latency_s: float = 0.0
    per_token_latency_s: float = 0.0
    prompt_tokens: int | None = None  # default: words in the messages
    completion_tokens: int | None = None  # per choice; default: len(logprobs) or words in the text
    finish_reason: str = "stop"
    ignore_n: bool = False  # answer with one choice whatever `n` asked for
    drip_s: float = 0.0  # streams only: the pause before each chunk
    cached_tokens: int | None = None  # sent as usage.prompt_tokens_details.cached_tokens, as vLLM does


@dataclass
class Status:
    code: int
    retry_after: float | None = None
    message: str = ""
    error_code: str | None = None


@dataclass
class Hang:
    seconds: float  # sleep, then close the connection without a response


@dataclass
class TruncatedJson:
    """200 with a valid-looking chat.completion body cut in half (Content-Length matches the cut)."""


@dataclass
class ContentNull:
    finish_reason: str = "stop"


@dataclass
class SseCut:
    text: str = "partial answer that never"  # streamed word by word, then the connection drops


@dataclass
class ShortBody:
    """200 whose Content-Length promises a whole chat.completion but only its first half is sent."""


@dataclass
class SseError:
    text: str = "partial"  # streamed word by word, then an error event, as vLLM and the HF router send one
    message: str = "upstream overloaded"


@dataclass
class Unauthorized:
    echo_key: bool = False  # put the received bearer token in the error message, as some servers do


def ok(text: str | list[str] = "ok", **kw: Any) -> Ok:
    return Ok(text, **kw)


def status(code: int, retry_after: float | None = None, message: str = "", error_code: str | None = None) -> Status:
    return Status(code, retry_after, message, error_code)


def burst(code: int, count: int) -> list[Status]:
    return [Status(code) for _ in range(count)]


def hang(seconds: float) -> Hang:
    return Hang(seconds)


def truncated_json() -> TruncatedJson:
    return TruncatedJson()


def content_null(finish_reason: str = "stop") -> ContentNull:
    return ContentNull(finish_reason)


def sse_cut(text: str = "partial answer that never") -> SseCut:
    return SseCut(text)


def short_body() -> ShortBody:
    return ShortBody()


def sse_error(text: str = "partial", message: str = "upstream overloaded") -> SseError:
    return SseError(text, message)


def drip(text: str, every_s: float) -> Ok:
    return Ok(text, drip_s=every_s)


def context_length() -> Status:
    return Status(400, message=CONTEXT_ERROR, error_code="context_length_exceeded")


def unauthorized(echo_key: bool = False) -> Unauthorized:
    return Unauthorized(echo_key)


Behaviour = Ok | Status | Hang | TruncatedJson | ContentNull | SseCut | ShortBody | SseError | Unauthorized


# --- response bodies ----------------------------------------------------------------------------

def words_in(text: str) -> int:
    return len(text.split())


def split_tokens(text: str, count: int) -> list[str]:
    """Cut text into `count` contiguous pieces (the fake's notion of tokens)."""
    if count <= 0:
        return []
    step, extra = divmod(len(text), count)
    pieces, start = [], 0
    for i in range(count):
        end = start + step + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def prompt_words(body: dict) -> int:
    return sum(words_in(str(m.get("content") or "")) for m in body.get("messages") or [])


def completion_body(b: Ok, body: dict) -> dict:
    """An OpenAI chat.completion object for behaviour `b` answering request `body`."""
    n = 1 if b.ignore_n else max(1, int(body.get("n") or 1))
    texts = b.text if isinstance(b.text, list) else [b.text] * n
    want_logprobs = bool(body.get("logprobs"))
    choices, out_tokens = [], 0
    for i, text in enumerate(texts[:n]):
        logprobs = None
        if want_logprobs and b.logprobs is not None:
            tokens = split_tokens(text, len(b.logprobs))
            logprobs = {"content": [{"token": t, "logprob": lp, "bytes": None, "top_logprobs": []}
                                    for t, lp in zip(tokens, b.logprobs)], "refusal": None}
        out_tokens += b.completion_tokens if b.completion_tokens is not None else (
            len(b.logprobs) if b.logprobs is not None else words_in(text))
        choices.append({"index": i, "message": {"role": "assistant", "content": text},
                        "finish_reason": b.finish_reason, "logprobs": logprobs})
    prompt = b.prompt_tokens if b.prompt_tokens is not None else prompt_words(body)
    return {"id": f"chatcmpl-fake-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or "fake-model", "choices": choices,
            "usage": usage_body(prompt, out_tokens, b.cached_tokens)}


def usage_body(prompt: int, completion: int, cached: int | None = None) -> dict:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


def error_body(message: str, code: str | None = None, kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
