"""The OpenAI wire format of the served model (r2mad/serving/openai_server.py): request bodies read within bounds,
the caller's sampling settings, errors in OpenAI's shape with one sentence, replies and stream chunks with the whole
debate's usage, the runs and what was changed in an extra field, and the route class through whose scrub every
response leaves. No I/O beyond reading the request."""
from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, AsyncIterator, Callable

from fastapi import Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute

from r2mad.backends.base import BackendError
from r2mad.runs.faults import StoreError
from r2mad.serving.admission import Refused
from r2mad.serving.chat_prompt import rationale, reply_content
from r2mad.serving.compact import compact
from r2mad.settings.config import ConfigError
from r2mad.types import Transcript

log = logging.getLogger("r2mad.serve")
MAX_BODY = 1_000_000  # bytes of one request
MAX_N = 8  # debates one request may ask for
MAX_DEPTH = 64  # nesting levels of a request body (OpenAI's own bodies need a handful)
# the caller's sampling fields -> the debate settings they set (max_tokens: per agent turn)
SAMPLING = {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens",
            "max_completion_tokens": "max_tokens", "seed": "seed"}
CHANGES_HEADER = "x-r2mad-changes"
APP = "r2mad"  # the reply's own extra field and the models' owner, named after the app
LIBRARY_ERRORS = (Refused, BackendError, ConfigError, ValueError, KeyError, StoreError)


class ServeError(Exception):
    """A refused request: the HTTP status, OpenAI's error type and code, and one sentence."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", code: str | None = None):
        super().__init__(message)
        self.status, self.kind, self.code = status, kind, code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.kind, "param": None, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status)


def refused(exc: BaseException) -> ServeError:
    """A library's one-sentence refusal as OpenAI's error shape."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    if isinstance(exc, Refused):
        return ServeError(429, text, "rate_limit_error", "line_full")
    if isinstance(exc, BackendError):
        return ServeError(502, text, "api_error", "backbone_failed")
    if isinstance(exc, StoreError):
        return ServeError(503, text, "api_error", "store_unavailable")
    return ServeError(400, text)


def as_error(exc: BaseException) -> ServeError:
    """Whatever stopped a request, as the error its caller gets; an unexpected one is logged with its traceback."""
    if isinstance(exc, ServeError):
        return exc
    if isinstance(exc, TimeoutError):
        return ServeError(504, "The request waited in line and ran past its bound; try again later.", "api_error",
                          "deadline")
    if isinstance(exc, LIBRARY_ERRORS):
        return refused(exc)
    log.error("A served debate failed", exc_info=exc)
    return ServeError(500, f"The debate failed unexpectedly ({type(exc).__name__}); see the server's log.",
                      "api_error")


def failure(run_id: str, t: Transcript) -> ServeError | None:
    """A debate that did not finish, as an error that names its saved run."""
    if t.status == "done":
        return None
    why = (t.notices[-1] if t.notices else f"it ended {t.status}").rstrip(".")
    failed_calls = any(r.turns and all(x.error for x in r.turns) for r in t.finished().rounds)
    return ServeError(502 if failed_calls else 504, f"The debate did not finish ({why}); its run is saved as "
                      f"{run_id}.", "api_error", "backbone_failed" if failed_calls else "deadline")


def usage_of(transcripts: list[Transcript]) -> dict[str, int]:
    tokens_in = sum(t.usage().tokens_in for t in transcripts)
    tokens_out = sum(t.usage().tokens_out for t in transcripts)
    return {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}


def extras(done: list[tuple[str, Transcript]], changes: list[str]) -> dict[str, Any]:
    """The extra field of a reply: the run ids, each run's rounds and per-model usage, and what was changed."""
    return {"run_ids": [run_id for run_id, _ in done], "runs": [compact(t, run_id) for run_id, t in done],
            "changes": changes}


def changes_header(changes: list[str]) -> dict[str, str]:
    """The changes made to a request as a response header: a JSON list, ASCII-escaped."""
    return {CHANGES_HEADER: json.dumps(changes)} if changes else {}


def memory_changes(transcripts: list[Transcript]) -> list[str]:
    """Why a method that reads a memory bank ran without one, once per reason."""
    return list(dict.fromkeys(n for t in transcripts for n in t.notices if n.startswith("Memory off")))


async def read_body(request: Request) -> dict[str, Any]:
    """The JSON body, refused unread past MAX_BODY bytes and nested past MAX_DEPTH levels."""
    declared = request.headers.get("content-length", "")
    too_big = ServeError(413, f"The request is over {MAX_BODY // 1_000_000} MB; send a shorter question.",
                         code="request_too_large")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise too_big
        chunks.append(chunk)
    return await asyncio.to_thread(parse_body, b"".join(chunks))  # up to 1 MB: parsed off the event loop


def parse_body(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object, refused in one sentence when it is not one or nests past MAX_DEPTH."""
    too_deep = ServeError(400, f"The request body nests deeper than {MAX_DEPTH} levels; send a plain chat "
                               "completion request.")
    try:
        body = json.loads(raw or b"null")
    except RecursionError:
        raise too_deep from None
    except (ValueError, UnicodeDecodeError):
        raise ServeError(400, "The request body is not JSON; send a chat completion request as JSON.") from None
    if not isinstance(body, dict):
        raise ServeError(400, "The request body is not a JSON object; send {\"model\": ..., \"messages\": [...]}.")
    if depth(body) > MAX_DEPTH:
        raise too_deep
    return body


def depth(value: Any) -> int:
    """How deeply JSON lists and objects nest in `value` (without recursion; scalars are passed over)."""
    deepest, stack = 0, [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def sampling(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The debate settings the caller's sampling fields set, and what was not applied (`stop`); the debate's
    settings check the values. Log probabilities are refused: a debate has no single sequence to score."""
    if body.get("logprobs") or body.get("top_logprobs"):
        raise ServeError(400, "logprobs cannot be served: a debate's reply is no single sampled sequence; "
                              "leave logprobs out.", code="unsupported_parameter")
    asked = {setting: body[name] for name, setting in SAMPLING.items() if body.get(name) is not None}
    changes = ["stop was not applied: the agents reply in full and the reply is the debate's answer line."
               ] if body.get("stop") else []
    return asked, changes


def whole_n(body: dict[str, Any]) -> int:
    n = body.get("n", 1) or 1
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_N:
        raise ServeError(400, f"n is {n!r}; ask for 1 to {MAX_N} debates.")
    return n


def chunk(cid: str, model: str, created: int, delta: dict | None, *, index: int = 0, finish: str | None = None,
          **extra: Any) -> str:
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish}]
    data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices,
            **extra}
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def finish_reason(t: Transcript) -> str:
    """"length" when an agent's turn used its whole max_tokens (cut), else "stop"."""
    limit = t.settings.get("max_tokens")
    cut = limit and any(x.tokens_out >= limit for r in t.rounds for x in r.turns)
    return "length" if cut else "stop"


def reply(model: str, form: str, done: list[tuple[str, Transcript]], changes: list[str]) -> dict[str, Any]:
    """A chat completion: one choice per debate (the answer line as content, the rationale as reasoning_content),
    the debates' usage, the runs and the changes in the extra field `r2mad`."""
    return {"id": f"chatcmpl-{done[0][0]}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": i, "message": {"role": "assistant", "content": reply_content(t, form),
                                                 "reasoning_content": rationale(t)},
                         "finish_reason": finish_reason(t)} for i, (_, t) in enumerate(done)],
            "usage": usage_of([t for _, t in done]), APP: extras(done, changes)}



def scrubbing_route(scrub: Callable[[str], str]) -> type[APIRoute]:
    """A route class whose responses leave through `scrub`: a JSON body whole, a stream event by event (each event
    is written whole), so an upstream that wrote a key into its reply sends it no further."""
    class ScrubbedRoute(APIRoute):
        def get_route_handler(self):
            handler = super().get_route_handler()

            async def scrubbed(request: Request) -> Response:
                response = await handler(request)
                if isinstance(response, StreamingResponse):
                    response.body_iterator = _scrubbed_events(response.body_iterator, scrub)
                    return response
                headers = {k: v for k, v in response.headers.items() if k != "content-length"}
                return Response(scrub(bytes(response.body).decode()), response.status_code, headers)
            return scrubbed
    return ScrubbedRoute


async def _scrubbed_events(events: AsyncIterator[str | bytes], scrub: Callable[[str], str]) -> AsyncIterator[str]:
    async for event in events:
        yield scrub(event if isinstance(event, str) else bytes(event).decode())
