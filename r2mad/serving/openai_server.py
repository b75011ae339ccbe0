"""The debate as an OpenAI-compatible model: /v1/models and /v1/chat/completions (streamed or not), where the
model name picks method and backbone. Every debate starts through the app's line and run service
(r2mad/ui/visitor_runs.start_in_line, as the API's run_debate does) and is saved like any other run. The routes
are mounted by `python -m r2mad serve` and on the Gradio app's own FastAPI (app.py)."""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import uuid
from typing import Any, AsyncIterator

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from r2mad.admission import Refused
from r2mad.backends.base import BackendError
from r2mad.config import ConfigError
from r2mad.methods import needs_bank
from r2mad.runs.faults import StoreError
from r2mad.service import RunRequest
from r2mad.serving.chat_prompt import last_user_text, read_prompt, reply_content, round_text, task_for
from r2mad.serving.compact import compact
from r2mad.serving.model_names import ModelChoice, model_ids, parse_model
from r2mad.text import quoted
from r2mad.types import Transcript

log = logging.getLogger("r2mad.serve")
MAX_BODY = 1_000_000  # bytes of one request
MAX_N = 8  # debates one request may ask for
LINE_WAIT_S = 600.0  # the longest a request waits in the line, on top of the debate's own deadline
KEY_ENV = "R2MAD_SERVE_KEY"


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


class Served:
    """What the routes serve from: the app's process-wide services (r2mad/ui/services.py) and the key callers
    must send (None: no key, allowed only on loopback; `key_required` with no key refuses every request)."""

    def __init__(self, services, *, key: str | None, key_required: bool, source: str = "serve"):
        self.services, self.key, self.key_required, self.source = services, key or None, key_required, source
        self.tasks: set[asyncio.Task] = set()  # debates still running after their caller left

    def check_key(self, request: Request) -> None:
        if self.key is None:
            if self.key_required:
                raise ServeError(401, f"This server is reachable beyond loopback and has no API key; set {KEY_ENV} "
                                      "where it runs and send it as a Bearer token.", "authentication_error",
                                 "no_api_key_set")
            return
        sent = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(sent.encode(), self.key.encode()):
            raise ServeError(401, "The API key is missing or wrong; send the server's key as "
                                  "'Authorization: Bearer <key>'.", "authentication_error", "invalid_api_key")

    def choice(self, model: Any) -> ModelChoice:
        try:
            return parse_model(str(model or ""), self.services.config)
        except ConfigError as exc:
            raise ServeError(404, str(exc), code="model_not_found") from None

    def request_for(self, body: dict[str, Any], choice: ModelChoice, index: int) -> RunRequest:
        s = self.services
        settings = choice.settings(s.config.settings)
        if index and settings.seed is not None:
            settings = settings.replace(seed=settings.seed + index)  # n debates, not n copies of one
        asked = read_prompt(last_user_text(body.get("messages")))
        task = task_for(asked, body.get("kind") or choice.kind, settings.max_question_chars)
        bank = None
        if needs_bank(choice.method):
            bank = choice.bank or s.config.app.default_bank
            if bank not in s.bank_choices():
                raise ServeError(400, f"No bank {quoted(bank)} here; choose one of: "
                                      f"{', '.join(s.bank_choices()) or 'none'}.")
        owner = self.source if s.config.private_runs else None  # on a public Space: not any visitor's
        return RunRequest(task, (choice.method,), settings, choice.backbone, source=self.source, bank=bank,
                          owner=owner)

    async def debate(self, request: RunRequest, on_round, on_open) -> tuple[str, Transcript]:
        """One debate through the app's line and run service; (run id, transcript)."""
        from r2mad.ui.line import lane_of
        from r2mad.ui.visitor_runs import start_in_line

        s = self.services
        seen = [0]

        def on_update(column: str, t: Transcript) -> None:
            finished = [r for r in t.rounds if not r.details.get("running")]
            for rnd in finished[seen[0]:]:
                on_round(rnd)
            seen[0] = max(seen[0], len(finished))
        # each request is its own entry in the line: a harness's many requests wait like visitors' debates
        async with asyncio.timeout(request.settings.deadline_s + LINE_WAIT_S):
            runs = await start_in_line(s, request, f"serve:{uuid.uuid4().hex[:12]}",
                                       lane_of(s.config, [request.backbone]), on_update=on_update,
                                       on_open=on_open)
        [(method, t)] = runs.transcripts.items()
        return runs.run_ids[method], t


def failure(run_id: str, t: Transcript) -> ServeError | None:
    """A debate that did not finish, as an error that names its saved run."""
    if t.status == "done":
        return None
    why = (t.notices[-1] if t.notices else f"it ended {t.status}").rstrip(".")
    failed_calls = any(all(x.error for x in r.turns) for r in t.rounds)
    return ServeError(502 if failed_calls else 504, f"The debate did not finish ({why}); its run is saved as "
                      f"{run_id}.", "api_error", "backbone_failed" if failed_calls else "deadline")


def usage_of(transcripts: list[Transcript]) -> dict[str, int]:
    tokens_in = sum(t.usage().tokens_in for t in transcripts)
    tokens_out = sum(t.usage().tokens_out for t in transcripts)
    return {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}


def extras(done: list[tuple[str, Transcript]]) -> dict[str, Any]:
    """The extra field of a reply: the run ids, and each run's rounds and per-model usage."""
    return {"run_ids": [run_id for run_id, _ in done], "runs": [compact(t, run_id) for run_id, t in done]}


async def read_body(request: Request) -> dict[str, Any]:
    """The JSON body, refused unread past MAX_BODY bytes."""
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
    try:
        body = json.loads(b"".join(chunks) or b"null")
    except (ValueError, UnicodeDecodeError):
        raise ServeError(400, "The request body is not JSON; send a chat completion request as JSON.") from None
    if not isinstance(body, dict):
        raise ServeError(400, "The request body is not a JSON object; send {\"model\": ..., \"messages\": [...]}.")
    return body


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


def make_router(served: Served) -> APIRouter:
    """/models and /chat/completions, to mount under /v1."""
    router = APIRouter()

    @router.get("/models")
    async def models(request: Request):
        try:
            served.check_key(request)
        except ServeError as exc:
            return exc.response()
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "r2mad"}
                                           for name in model_ids(served.services.config)]}

    @router.post("/chat/completions")
    async def chat_completions(request: Request):
        try:
            served.check_key(request)
            body = await read_body(request)
            choice, n = served.choice(body.get("model")), whole_n(body)
            requests = [served.request_for(body, choice, i) for i in range(n)]
        except ServeError as exc:
            return exc.response()
        except (ConfigError, ValueError) as exc:
            return refused(exc).response()
        model, form = str(body["model"]), read_prompt(last_user_text(body.get("messages"))).form
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await stream(served, requests, model, form, include_usage)
        done: list[tuple[str, Transcript]] = []
        try:
            for req in requests:
                run_id, t = await served.debate(req, lambda rnd: None, None)
                done.append((run_id, t))
                if (err := failure(run_id, t)) is not None:
                    raise err
        except ServeError as exc:
            return exc.response()
        except TimeoutError:
            return ServeError(504, "The request waited in line and ran past its bound; try again later.",
                              "api_error", "deadline").response()
        except (Refused, BackendError, ConfigError, ValueError, KeyError, StoreError) as exc:
            return refused(exc).response()
        reply = {"id": f"chatcmpl-{done[0][0]}", "object": "chat.completion", "created": int(time.time()),
                 "model": model,
                 "choices": [{"index": i, "message": {"role": "assistant", "content": reply_content(t, form)},
                              "finish_reason": "stop"} for i, (_, t) in enumerate(done)],
                 "usage": usage_of([t for _, t in done]), "r2mad": extras(done)}
        return JSONResponse(reply, headers={"x-r2mad-run-id": ",".join(run_id for run_id, _ in done)})

    return router


async def stream(served: Served, requests: list[RunRequest], model: str, form: str, include_usage: bool):
    """Server-sent events: each finished round as reasoning text, then the answer. The response starts once the
    first debate is saved (its id in the header); a refusal before that is a plain error response."""
    events: asyncio.Queue = asyncio.Queue()
    opened: asyncio.Future = asyncio.get_running_loop().create_future()

    async def run_all() -> None:
        done: list[tuple[str, Transcript]] = []
        try:
            for i, req in enumerate(requests):
                def on_open(ids: dict[str, str]) -> None:
                    if not opened.done():
                        opened.set_result(next(iter(ids.values())))
                run_id, t = await served.debate(req, lambda rnd, i=i: events.put_nowait(("round", i, rnd)), on_open)
                done.append((run_id, t))
                if (err := failure(run_id, t)) is not None:
                    raise err
                events.put_nowait(("answer", i, t))
            events.put_nowait(("end", None, done))
        except Exception as exc:  # noqa: BLE001 - every failure reaches the caller, as an error event or response
            error = exc if isinstance(exc, ServeError) else (
                ServeError(504, "The request waited in line and ran past its bound; try again later.", "api_error",
                           "deadline") if isinstance(exc, TimeoutError) else
                refused(exc) if isinstance(exc, (Refused, BackendError, ConfigError, ValueError, KeyError,
                                                  StoreError)) else None)
            if error is None:
                log.exception("A served debate failed")
                error = ServeError(500, f"The debate failed unexpectedly ({type(exc).__name__}); see the server's "
                                        "log.", "api_error")
            if not opened.done():
                opened.set_exception(error)
            events.put_nowait(("error", None, error))

    task = asyncio.create_task(run_all())
    served.tasks.add(task)  # it finishes (and is saved) even when the caller goes away
    task.add_done_callback(served.tasks.discard)
    try:
        run_id = await opened
    except ServeError as exc:
        return exc.response()
    cid, created = f"chatcmpl-{run_id}", int(time.time())

    async def sse() -> AsyncIterator[str]:
        yield chunk(cid, model, created, {"role": "assistant", "content": ""})
        while True:
            kind, index, item = await events.get()
            if kind == "round":
                yield chunk(cid, model, created, {"reasoning_content": round_text(item)}, index=index)
            elif kind == "answer":
                yield chunk(cid, model, created, {"content": reply_content(item, form)}, index=index)
                yield chunk(cid, model, created, {}, index=index, finish="stop")
            elif kind == "error":
                yield f"data: {json.dumps(item.body(), ensure_ascii=False)}\n\n"
                break
            else:
                transcripts = [t for _, t in item]
                yield chunk(cid, model, created, None, r2mad=extras(item),
                            **({"usage": usage_of(transcripts)} if include_usage else {}))
                break
        yield "data: [DONE]\n\n"
    return StreamingResponse(sse(), media_type="text/event-stream", headers={"x-r2mad-run-id": run_id,
                                                                             "cache-control": "no-cache"})


def create_app(served: Served) -> FastAPI:
    """The standalone server of `python -m r2mad serve`: the routes under /v1."""
    app = FastAPI(title="R²-MAD debates as an OpenAI-compatible model", docs_url=None, redoc_url=None)
    mount(app, served)
    return app


def mount(app: FastAPI, served: Served, prefix: str = "/v1") -> None:
    """Put the routes on an existing FastAPI app (the Gradio app's), ahead of its own routes."""
    before = len(app.router.routes)
    app.include_router(make_router(served), prefix=prefix)
    added = app.router.routes[before:]
    del app.router.routes[before:]
    app.router.routes[0:0] = added
    app.state.r2mad_served = served
