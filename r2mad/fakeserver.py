"""Scripted OpenAI-compatible HTTP server on loopback for the tests and `r2mad bench`; not a model.

    with FakeServer(models=["m1"]) as srv:
        srv.script([status(503), ok("4")])   # one behaviour per /chat/completions request
        ... point a client at srv.base_url ...
        assert srv.hits == 2

When the script queue is empty, `responder(body)` decides (default: ok("ok")). Every sleep is capped
and wakes early when the server stops, so a test can never hang on it. Like vLLM and OpenAI it answers `n`
with n choices (`ignore_n` plays a server that does not); `provider` plays the HF router's
x-inference-provider header. Faults of a connection that was reached: `short_body` (a body shorter than its
Content-Length), `sse_error` (an error event inside a stream), `drip` (a stream with a pause before each chunk).
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MAX_SLEEP_S = 30.0  # no behaviour sleeps longer than this
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

def _words(text: str) -> int:
    return len(text.split())


def _split_tokens(text: str, count: int) -> list[str]:
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


def _prompt_words(body: dict) -> int:
    return sum(_words(str(m.get("content") or "")) for m in body.get("messages") or [])


def completion_body(b: Ok, body: dict) -> dict:
    """An OpenAI chat.completion object for behaviour `b` answering request `body`."""
    n = 1 if b.ignore_n else max(1, int(body.get("n") or 1))
    texts = b.text if isinstance(b.text, list) else [b.text] * n
    want_logprobs = bool(body.get("logprobs"))
    choices, out_tokens = [], 0
    for i, text in enumerate(texts[:n]):
        logprobs = None
        if want_logprobs and b.logprobs is not None:
            tokens = _split_tokens(text, len(b.logprobs))
            logprobs = {"content": [{"token": t, "logprob": lp, "bytes": None, "top_logprobs": []}
                                    for t, lp in zip(tokens, b.logprobs)], "refusal": None}
        out_tokens += b.completion_tokens if b.completion_tokens is not None else (
            len(b.logprobs) if b.logprobs is not None else _words(text))
        choices.append({"index": i, "message": {"role": "assistant", "content": text},
                        "finish_reason": b.finish_reason, "logprobs": logprobs})
    prompt = b.prompt_tokens if b.prompt_tokens is not None else _prompt_words(body)
    return {"id": f"chatcmpl-fake-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or "fake-model", "choices": choices,
            "usage": {"prompt_tokens": prompt, "completion_tokens": out_tokens,
                      "total_tokens": prompt + out_tokens}}


def error_body(message: str, code: str | None = None, kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# --- the server ---------------------------------------------------------------------------------

@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict | None

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class FakeServer:
    models: list[str] = field(default_factory=lambda: ["fake-model"])
    responder: Callable[[dict], Behaviour] | None = None
    hits: int = 0  # /chat/completions requests
    model_hits: int = 0  # GET /models requests
    requests: list[Received] = field(default_factory=list)  # /chat/completions requests only
    model_requests: list[Received] = field(default_factory=list)  # GET /models requests
    provider: str | None = None  # sent as the x-inference-provider header of every answer, as the HF router does
    max_parallel: int | None = None  # answer at most this many chat requests at a time (a server with few slots)

    def __post_init__(self) -> None:
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._slots = threading.BoundedSemaphore(self.max_parallel) if self.max_parallel else None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # public API
    def script(self, behaviours: list[Behaviour]) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    @property
    def port(self) -> int:
        assert self._httpd is not None, "FakeServer is not running"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeServer:
        self._httpd = _Server(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fakeserver", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # wakes any sleeping handler
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # used by the handler
    def _next(self, body: dict) -> Behaviour:
        with self._lock:
            self.hits += 1
            if self._queue:
                return self._queue.popleft()
        return self.responder(body) if self.responder else Ok("ok")

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(min(max(seconds, 0.0), MAX_SLEEP_S))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # like a real server's backlog; the default 5 drops bursts of connections


def _make_handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive state to manage

        def log_message(self, format: str, *args: Any) -> None:  # silent: tests read srv.requests
            pass

        def _send(self, code: int, payload: bytes, content_type: str = "application/json",
                  headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, code: int, obj: dict, headers: dict[str, str] | None = None) -> None:
            self._send(code, json.dumps(obj).encode(), headers=headers)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                with server._lock:
                    server.model_hits += 1
                    server.model_requests.append(Received("GET", self.path, {k.lower(): v for k, v in
                                                                             self.headers.items()}, None))
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in server.models]
                self._json(200, {"object": "list", "data": data})
            else:
                self._json(404, error_body(f"No route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._json(404, error_body(f"No route {self.path}", "not_found"))
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, error_body("Request body is not JSON."))
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server._lock:
                server.requests.append(Received("POST", self.path, headers, body))
            if server._slots is None:
                self._respond(server._next(body), body, headers)
                return
            with server._slots:  # waits for a free slot, as a busy server queues requests
                self._respond(server._next(body), body, headers)

        def _respond(self, b: Behaviour, body: dict, headers: dict[str, str]) -> None:
            if isinstance(b, Ok):
                server._sleep(b.latency_s)
                n_tokens = len(b.logprobs) if b.logprobs is not None else _words(
                    b.text if isinstance(b.text, str) else " ".join(b.text))
                server._sleep(b.per_token_latency_s * n_tokens)
                if body.get("stream"):
                    self._stream(b.text if isinstance(b.text, str) else b.text[0], body, finish=b.finish_reason,
                                 logprobs=b.logprobs, drip_s=b.drip_s)
                else:
                    self._json(200, completion_body(b, body), headers=self._provider())
            elif isinstance(b, Status):
                extra = {"Retry-After": f"{b.retry_after:g}"} if b.retry_after is not None else None
                message = b.message or f"Fake status {b.code}."
                self._json(b.code, error_body(message, b.error_code), headers=extra)
            elif isinstance(b, Hang):
                server._sleep(b.seconds)
                self.close_connection = True  # nothing written: the client sees a dropped connection
            elif isinstance(b, TruncatedJson):
                full = json.dumps(completion_body(Ok("this body is cut"), body)).encode()
                self._send(200, full[: len(full) // 2])
            elif isinstance(b, ContentNull):
                obj = completion_body(Ok("", finish_reason=b.finish_reason), body)
                for choice in obj["choices"]:
                    choice["message"]["content"] = None
                self._json(200, obj)
            elif isinstance(b, SseCut):
                self._stream(b.text, body, finish=None)
            elif isinstance(b, ShortBody):
                full = json.dumps(completion_body(Ok("this body is cut short"), body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(full)))
                self.end_headers()
                self.wfile.write(full[: len(full) // 2])
                self.close_connection = True
            elif isinstance(b, SseError):
                self._stream(b.text, body, finish=None, error=b.message)
            elif isinstance(b, Unauthorized):
                token = headers.get("authorization", "").removeprefix("Bearer ")
                message = f"Incorrect API key provided: {token}." if b.echo_key else "Invalid credentials."
                self._json(401, error_body(message, "invalid_api_key"))
            else:  # a test scripted something unknown: say so loudly
                self._json(500, error_body(f"FakeServer cannot play behaviour {b!r}."))

        def _provider(self) -> dict[str, str] | None:
            return {"x-inference-provider": server.provider} if server.provider else None

        def _stream(self, text: str, body: dict, finish: str | None, logprobs: list[float] | None = None,
                    drip_s: float = 0.0, error: str | None = None) -> None:
            """SSE chunks (one per logprob when given, else word by word, each after `drip_s`) that join back to
            `text`, then the finish_reason, a usage chunk when stream_options asks for one, and [DONE];
            finish=None cuts the stream before all of that, after an error event when `error` is given."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            for key, value in (self._provider() or {}).items():
                self.send_header(key, value)
            self.end_headers()
            base = {"id": "chatcmpl-fake-stream", "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": body.get("model") or "fake-model"}
            if logprobs is not None:
                pieces = _split_tokens(text, len(logprobs))
            else:
                pieces = [w if i == 0 else " " + w for i, w in enumerate(text.split(" "))]
            for i, piece in enumerate(pieces):
                server._sleep(drip_s)
                delta = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                if logprobs is not None and body.get("logprobs"):
                    delta["logprobs"] = {"content": [{"token": piece, "logprob": logprobs[i], "bytes": None,
                                                      "top_logprobs": []}], "refusal": None}
                self._event({**base, "choices": [delta]})
            if error is not None:
                self._event(error_body(error, "server_error", "server_error"))
            if finish is None:
                self.close_connection = True
                return
            self._event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                prompt = _prompt_words(body)
                self._event({**base, "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": len(pieces),
                                                              "total_tokens": prompt + len(pieces)}})
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def _event(self, obj: dict) -> None:
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            self.wfile.flush()

    return Handler
