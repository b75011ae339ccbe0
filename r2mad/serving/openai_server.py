"""The debate as an OpenAI-compatible model: /v1/models and /v1/chat/completions (streamed or not), where the
model name picks method and backbone. Every debate starts through the app's line and run service
(r2mad/serving/visitor_runs.start_in_line, as the API's run_debate does) and is saved like any other run. The routes
are mounted by `python -m r2mad serve` and on the Gradio app's own FastAPI (app.py)."""
from __future__ import annotations

import asyncio
import hmac
import json
import time
import uuid
from typing import Any, AsyncIterator, Callable

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from r2mad.budget import OVERRUN
from r2mad.engine.service import RunRequest
from r2mad.methods import needs_bank
from r2mad.serving.chat_prompt import (
    DEFAULT_KIND,
    last_user_text,
    rationale,
    read_prompt,
    reply_content,
    round_text,
    task_for,
)
from r2mad.serving.model_names import ModelChoice, model_ids, parse_model
from r2mad.serving.openai_wire import (
    APP,
    ServeError,
    as_error,
    changes_header,
    chunk,
    extras,
    failure,
    finish_reason,
    memory_changes,
    read_body,
    reply,
    sampling,
    scrubbing_route,
    usage_of,
    whole_n,
)
from r2mad.settings.config import ConfigError
from r2mad.text import quoted
from r2mad.types import Round, Transcript

LINE_WAIT_S = 600.0  # the longest a request waits in the line, on top of the debate's own deadline
KEY_ENV = "R2MAD_SERVE_KEY"
Done = list[tuple[str, Transcript]]  # (run id, transcript) per debate


class Served:
    """What the routes serve from: the app's process-wide services (r2mad/serving/services.py) and the key callers
    must send (None: no key, allowed only on loopback; `key_required` with no key refuses every request), and the
    answer kind of a question that names none and has no options (`serve --kind`)."""

    def __init__(self, services, *, key: str | None, key_required: bool, source: str = "serve",
                 kind: str = DEFAULT_KIND):
        self.services, self.key, self.key_required, self.source = services, key or None, key_required, source
        self.kind = kind
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

    def request_for(self, body: dict[str, Any], choice: ModelChoice, index: int) -> tuple[RunRequest, list[str]]:
        """The request's `index`-th debate, and the changes made to what the caller asked."""
        s = self.services
        asked_sampling, changes = sampling(body)
        try:
            settings = choice.settings(s.config.settings).replace(**asked_sampling)
        except ConfigError as exc:
            raise ServeError(400, str(exc).removeprefix("settings.")) from None
        if index and settings.seed is not None:  # n debates, not n copies of one
            settings = settings.replace(seed=(settings.seed + index) % 2**31)
        asked = read_prompt(last_user_text(body.get("messages")))
        kind = body.get("kind") or choice.kind
        if not isinstance(kind, (str, type(None))):
            raise ServeError(400, f"kind is {type(kind).__name__}; send the answer kind as text (math, mcq, ...).")
        task, decided = task_for(asked, kind, settings.max_question_chars, self.kind)
        bank = None
        if needs_bank(choice.method):
            bank = choice.bank or s.config.app.default_bank  # none at all: memory off, said as a change
            if bank is not None and bank not in s.bank_choices():
                raise ServeError(400, f"No bank {quoted(bank)} here; choose one of: "
                                      f"{', '.join(s.bank_choices()) or 'none'}.")
        owner = self.source if s.config.private_runs else None  # on a public Space: not any visitor's
        return RunRequest(task, (choice.method,), settings, choice.backbone, source=self.source, bank=bank,
                          owner=owner), decided + changes

    async def debate(self, request: RunRequest, on_round, on_open) -> tuple[str, Transcript]:
        """One debate through the app's line and run service; (run id, transcript)."""
        from r2mad.serving.visitor_runs import start_in_line

        s = self.services
        seen = [0]

        def on_update(column: str, t: Transcript) -> None:
            finished = [r for r in t.rounds if not r.details.get("running")]
            for rnd in finished[seen[0]:]:
                on_round(rnd)
            seen[0] = max(seen[0], len(finished))
        # each request is its own entry in the line: a harness's many requests wait like visitors' debates; its
        # round is cut at OVERRUN times its time limit (budget.TimeLimit)
        async with asyncio.timeout(OVERRUN * request.settings.deadline_s + LINE_WAIT_S):
            runs = await start_in_line(s, request, f"serve:{uuid.uuid4().hex[:12]}", on_update=on_update,
                                       on_open=on_open)
        [(method, t)] = runs.transcripts.items()
        return runs.run_ids[method], t


async def run_all(served: Served, requests: list[RunRequest], on_round: Callable[[int, Round], None],
                  on_open: Callable[[str], None]) -> Done:
    """The request's debates at once (each its own entry in the line); once all have ended, a debate that did not
    finish is an error naming its saved run."""
    async def one(i: int, request: RunRequest) -> tuple[str, Transcript]:
        return await served.debate(request, lambda rnd: on_round(i, rnd),
                                   lambda ids: on_open(next(iter(ids.values()))))
    done = await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)), return_exceptions=True)
    for item in done:
        if isinstance(item, BaseException):
            raise item
    if (error := next(filter(None, (failure(run_id, t) for run_id, t in done)), None)) is not None:
        raise error
    return done


def make_router(served: Served) -> APIRouter:
    """/models and /chat/completions, to mount under /v1; every response leaves through the run store's scrub."""
    router = APIRouter(route_class=scrubbing_route(served.services.store.scrub))

    @router.get("/models")
    async def models(request: Request):
        try:
            served.check_key(request)
        except ServeError as exc:
            return exc.response()
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": APP}
                                           for name in model_ids(served.services.config)]}

    @router.post("/chat/completions")
    async def chat_completions(request: Request):
        try:
            served.check_key(request)
            body = await read_body(request)
            choice, n = served.choice(body.get("model")), whole_n(body)
            planned = [served.request_for(body, choice, i) for i in range(n)]
            requests, changes = [r for r, _ in planned], planned[0][1]
            model, form = str(body["model"]), read_prompt(last_user_text(body.get("messages"))).form
        except Exception as exc:  # noqa: BLE001 - every refusal in OpenAI's shape
            return as_error(exc).response()
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await stream(served, requests, model, form, include_usage, changes)
        try:
            done = await run_all(served, requests, lambda i, rnd: None, lambda run_id: None)
        except Exception as exc:  # noqa: BLE001
            return as_error(exc).response()
        changes = changes + memory_changes([t for _, t in done])
        return JSONResponse(reply(model, form, done, changes),
                            headers={"x-r2mad-run-id": ",".join(i for i, _ in done), **changes_header(changes)})

    return router


async def stream(served: Served, requests: list[RunRequest], model: str, form: str, include_usage: bool,
                 changes: list[str]):
    """Server-sent events: each finished round as reasoning text, then the rationale, then the answer. The response
    starts once the first debate is saved (its id and the changes known then in the headers); a refusal before
    that is a plain error response. The last chunk's extra field holds every change. The debates go on, and are
    saved, when the caller leaves."""
    events: asyncio.Queue = asyncio.Queue()
    opened: asyncio.Future = asyncio.get_running_loop().create_future()

    def on_open(run_id: str) -> None:
        if not opened.done():
            opened.set_result(run_id)

    async def debates() -> None:
        try:
            done = await run_all(served, requests, lambda i, rnd: events.put_nowait(("round", i, rnd)), on_open)
            events.put_nowait(("end", None, done))
        except Exception as exc:  # noqa: BLE001 - reaches the caller as a response or an error event
            error = as_error(exc)
            if not opened.done():
                opened.set_exception(error)
            events.put_nowait(("error", None, error))

    task = asyncio.create_task(debates())
    served.tasks.add(task)
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
                continue
            if kind == "error":
                yield f"data: {json.dumps(item.body(), ensure_ascii=False)}\n\n"
                break
            for i, (_, t) in enumerate(item):
                yield chunk(cid, model, created, {"reasoning_content": rationale(t)}, index=i)
                yield chunk(cid, model, created, {"content": reply_content(t, form)}, index=i)
                yield chunk(cid, model, created, {}, index=i, finish=finish_reason(t))
            usage = {"usage": usage_of([t for _, t in item])} if include_usage else {}
            every = changes + memory_changes([t for _, t in item])
            yield chunk(cid, model, created, None, **{APP: extras(item, every)}, **usage)
            break
        yield "data: [DONE]\n\n"
    return StreamingResponse(sse(), media_type="text/event-stream",
                             headers={"x-r2mad-run-id": run_id, "cache-control": "no-cache",
                                      **changes_header(changes)})


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
