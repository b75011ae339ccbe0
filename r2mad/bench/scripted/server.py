"""Scripted OpenAI-compatible HTTP server on loopback for the tests and `r2mad bench`; not a model.

    with FakeServer(models=["m1"]) as srv:
        srv.script([status(503), ok("4")])   # one behaviour per /chat/completions request
        ... point a client at srv.base_url ...
        assert srv.hits == 2

When the script queue is empty, `responder(body)` decides (default: ok("ok")). Every sleep is capped
and wakes early when the server stops, so a test can never hang on it. Like vLLM and OpenAI it answers `n`
with n choices (`ignore_n` plays a server that does not); `provider` plays the HF router's
x-inference-provider header, `name` a replica naming itself (x-served-by, as replicas.py's do), and
`kill()` a crash. Faults of a connection that was reached: `short_body` (a body shorter than its
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

from r2mad.bench.scripted.behaviours import (  # noqa: F401 - the behaviours are used from here
    CONTEXT_ERROR,
    Behaviour,
    ContentNull,
    Hang,
    Ok,
    ShortBody,
    SseCut,
    SseError,
    Status,
    TruncatedJson,
    Unauthorized,
    burst,
    completion_body,
    content_null,
    context_length,
    drip,
    error_body,
    hang,
    ok,
    prompt_words,
    short_body,
    split_tokens,
    sse_cut,
    sse_error,
    status,
    truncated_json,
    unauthorized,
    usage_body,
    words_in,
)

MAX_SLEEP_S = 30.0  # no behaviour sleeps longer than this


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
    name: str | None = None  # a replica's name, sent as the x-served-by header of every answer

    def __post_init__(self) -> None:
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._slots = threading.BoundedSemaphore(self.max_parallel) if self.max_parallel else None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.killed = False
        self._local = threading.local()  # the request each handler thread is answering

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

    def kill(self) -> None:
        """Die as a crashed server does: requests in flight get no answer, new connections are refused."""
        self.killed = True
        self.__exit__()

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # wakes any sleeping handler
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def request_headers(self) -> dict[str, str]:
        """For a responder: the (lower-case) headers of the request it is answering."""
        return getattr(self._local, "headers", {})

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
            if self.path.rstrip("/") == "/health":  # what a router polls (vLLM answers it too)
                self._send(200, b"")
            elif self.path.rstrip("/") == "/v1/models":
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
            server._local.headers = headers
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
                n_tokens = len(b.logprobs) if b.logprobs is not None else words_in(
                    b.text if isinstance(b.text, str) else " ".join(b.text))
                server._sleep(b.per_token_latency_s * n_tokens)
                if server.killed:
                    self.close_connection = True
                    return
                if body.get("stream"):
                    self._stream(b.text if isinstance(b.text, str) else b.text[0], body, finish=b.finish_reason,
                                 logprobs=b.logprobs, drip_s=b.drip_s, cached=b.cached_tokens)
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
            named = {"x-inference-provider": server.provider} if server.provider else {}
            return {**named, "x-served-by": server.name} if server.name else named or None

        def _stream(self, text: str, body: dict, finish: str | None, logprobs: list[float] | None = None,
                    drip_s: float = 0.0, error: str | None = None, cached: int | None = None) -> None:
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
                pieces = split_tokens(text, len(logprobs))
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
                usage = usage_body(prompt_words(body), len(pieces), cached)
                self._event({**base, "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def _event(self, obj: dict) -> None:
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            self.wfile.flush()

    return Handler
