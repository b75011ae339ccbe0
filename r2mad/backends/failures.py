"""How a failed call to an OpenAI-compatible endpoint is classed — worth retrying or not — and said to a
person in one sentence. Pure: no client and no key here (the backend redacts what it raises)."""
from __future__ import annotations

import email.utils
import time
from typing import Any

import openai

from r2mad.text import quoted

TRANSIENT_STATUS = {408, 409, 425, 429}
# transport errors (httpx's, or its fork's, by name) of a server that was reached and then stopped mid-answer
_CLOSED_ERRORS = {"RemoteProtocolError", "ReadError", "WriteError"}
_QUOTA_WORDS = ("insufficient_quota", "insufficient credits", "exceeded your current quota", "credit balance",
                "included credits")


class Retryable(Exception):
    """One failed attempt that a later attempt may fix; `kind` picks the final message."""

    def __init__(self, kind: str, detail: str = "", retry_after: float | None = None):
        super().__init__(detail)
        self.kind, self.detail, self.retry_after = kind, detail, retry_after


def classify(exc: Exception) -> Retryable | tuple[int | None, str, bool]:
    """A Retryable, or (HTTP status or None, error text, out of quota) for a failure retrying cannot fix."""
    if isinstance(exc, openai.APITimeoutError):
        return Retryable("timeout")
    if isinstance(exc, openai.APIConnectionError):  # reached, then cut off: closed; never reached: unreachable
        cause = exc.__cause__
        closed = any(c.__name__ in _CLOSED_ERRORS for c in type(cause).__mro__)
        return Retryable("closed" if closed else "unreachable", type(cause or exc).__name__)
    if isinstance(exc, openai.APIStatusError):
        code, text = exc.status_code, error_text(exc)
        quota = any(w in text.lower() for w in _QUOTA_WORDS)
        if (code in TRANSIENT_STATUS or code >= 500) and not quota:
            return Retryable(f"status {code}", text, retry_after(exc.response))
        return code, text, quota
    if isinstance(exc, openai.APIError):  # an error event inside an answer stream ("upstream overloaded")
        text = str(getattr(exc, "message", "") or "")[:500]
        if any(w in text.lower() for w in _QUOTA_WORDS):
            return 402, text, True
        return Retryable("stream error", text)
    if isinstance(exc, ValueError):  # a 200 whose body is not JSON (cut, an HTML page from a proxy, ...)
        return Retryable("unreadable", type(exc).__name__)
    return None, str(exc), False


def permanent_message(code: int, text: str, quota: bool, *, base_url: str, model: str | None, has_key: bool,
                      key_source: str) -> str:
    model = model or "the model"
    if quota or code == 402:
        return (f"The account behind the API key has run out of credits or quota ({code}); add credits or "
                "choose another backbone.")
    if code == 401:
        return (f"The endpoint rejected the API key (401); check the token in {key_source}." if has_key else
                f"The endpoint requires an API key (401) and none was given; set one in {key_source}.")
    if code == 403:
        return f"The endpoint refused access to {model} (403); check that your token may use this model."
    if code == 404:
        return (f"{base_url} has no model {model!r} or no chat completions route (404); check the model "
                "name and that base_url ends in /v1.")
    if "context length" in text.lower() or "context_length" in text.lower():
        return ("The prompt is longer than the model's context window; lower max tokens, rounds or "
                "retrieved cases.")
    return (f"The endpoint rejected the request ({code}: {text[:200] or 'no detail'}); check the "
            "backbone's model name and sampling settings.")


def give_up_message(kind: str, where: str, attempts: int, elapsed: float, timeout_s: float,
                    detail: str = "") -> str:
    """The sentence for a call whose retries ran out; `kind` and `detail` are the last attempt's."""
    tries = f"after {attempts} attempt{'s' if attempts != 1 else ''} within {elapsed:.1f}s"
    if kind == "unreachable":
        return f"Could not reach {where} {tries}; is the server running?"
    if kind == "closed":
        return (f"{where} closed its answer before it was complete {tries}; try again later, and check the "
                "server's logs if it keeps happening.")
    if kind == "stalled":
        return (f"{where} stopped sending its answer: no new token came for {timeout_s:g}s (the backbone's "
                f"timeout_s) {tries}; the server may be overloaded, so try again later or raise timeout_s.")
    if kind == "stream error":
        return (f"{where} kept sending an error inside its answer stream ({quoted(detail or 'no detail', 200)}) "
                f"{tries}; try again later or set stream: false for this backbone.")
    if kind == "timeout":
        return (f"{where} did not answer within {timeout_s:g}s {tries}; the server may be overloaded, "
                "so raise the timeout or try again later.")
    if kind == "unreadable":
        return f"{where} sent a response that is not valid JSON {tries}; check that it is OpenAI-compatible."
    if kind == "cut":
        return (f"{where} kept ending its answer stream before it was complete {tries}; try again later or "
                "set stream: false for this backbone.")
    if kind == "empty":
        return f"{where} returned no text (content null) {tries}; try again or raise max tokens."
    if kind == "status 429":
        return f"{where} kept rate-limiting (429) {tries}; run fewer agents at once or try again later."
    return f"{where} kept failing ({kind.replace('status ', 'HTTP ')}) {tries}; try again later."


def too_slow_message(where: str, total_s: float) -> str:
    """The sentence for an answer still streaming when its bound on total time ran out (not retried)."""
    return (f"{where} was still sending its answer after {total_s:g}s, the bound on one answer's total time "
            "(the backbone's total_timeout_s); raise total_timeout_s, lower max tokens, or use a faster server.")


def error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return " ".join(str(inner.get(k) or "") for k in ("message", "code", "type")).strip()
        return str(inner)
    return str(getattr(exc, "message", "") or "")


def retry_after(response: Any) -> float | None:
    """Seconds the server asks to wait (Retry-After-Ms, or Retry-After as seconds or an HTTP date)."""
    headers = getattr(response, "headers", None) or {}
    if headers.get("retry-after-ms"):
        try:
            return float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
