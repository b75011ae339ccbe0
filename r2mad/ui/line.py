"""The app's line for debates (r2mad.engine.admission) as the app sets it up: which lane a debate waits in (the
embedded model's, or the remote backbones'), the backbone that skips the line for a visitor who has a token,
and the wait itself, yielding the place-in-line sentence while it lasts. No Gradio here."""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import AsyncIterator, Callable, Iterable

from r2mad.engine.admission import Admission, Ticket, waiting_words
from r2mad.settings.config import Config

EMBEDDED, REMOTE = "embedded", "remote"
HF_KEY_ENV = "HF_TOKEN"
REFRESH_S = 1.0  # how often a waiting visitor's place and time are refreshed


def visitor_key(owner: str | None, browser_id: str | None, session: str | None) -> str:
    """Who a debate belongs to in the line (its cap per visitor): the owner, else the browser, else the
    session (each gradio_client Client is one)."""
    return owner or (f"browser:{browser_id}" if browser_id else f"session:{session or 'anonymous'}")


def make_admission(config: Config) -> Admission:
    """Debates on the embedded model share the CPU: `concurrency_limit` of them run at once. Debates on remote
    backbones only wait on the network: `remote_concurrency_limit` run at once. One line of `max_queue`."""
    app = config.app
    return Admission({EMBEDDED: app.concurrency_limit, REMOTE: app.remote_concurrency_limit},
                     max_waiting=app.max_queue, per_visitor=app.per_visitor_limit)


def lane_of(config: Config, backbones: Iterable[str], *, custom: bool = False) -> str:
    """The embedded lane when any of the debate's backbones is the embedded model, else the remote one."""
    if custom:
        return REMOTE
    kinds = {config.backbones[b].kind for b in backbones if b in config.backbones}
    return EMBEDDED if EMBEDDED in kinds or not kinds else REMOTE


def skip_hint(config: Config, lane: str, usable: Callable[[str], bool]) -> str:
    """'pick Qwen2.5-7B-Instruct (HF Inference Providers) under Advanced' when the debate waits for the
    embedded model and a Hugging Face backbone is `usable` by this visitor (their login's or pasted token, or
    a key the app may spend for them); "" otherwise."""
    if lane != EMBEDDED:
        return ""
    spec = next((b for b in config.backbones.values()
                 if b.kind != "embedded" and b.api_key_env == HF_KEY_ENV and usable(b.name)), None)
    return f"pick {spec.label or spec.name} under Advanced" if spec else ""


def with_hint(message: str, hint: str) -> str:
    """A refusal sentence, with the backbone that skips the line where there is one."""
    return message.rstrip(".") + f"; or {hint} to skip the line." if hint else message


@contextlib.asynccontextmanager
async def admitted(admission: Admission, visitor: str, lane: str) -> AsyncIterator[Ticket]:
    """For a caller that shows no waiting (the API): enter the line (Refused says why not), wait for a slot,
    run the block, leave. Set `ticket.measured = True` inside when the debate ran to its end."""
    ticket = admission.enter(visitor, lane)
    try:
        await ticket.admitted()
        yield ticket
    finally:
        admission.leave(ticket, measured=ticket.measured)


async def wait_turn(admission: Admission, ticket: Ticket, *, stop: asyncio.Event | None = None,
                    since: float | None = None, hint: str = "", every_s: float = REFRESH_S) -> AsyncIterator[str]:
    """While `ticket` waits: yield the place-in-line sentence at once and then every `every_s`. Ends when it
    is admitted, or, when `stop` is set first, after taking it out of the line (ticket.left is then True).
    `since`: time.time() when the visitor asked (the time waited counts from there)."""
    since = time.time() if since is None else since
    gate = asyncio.ensure_future(ticket.admitted())
    stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
    try:
        while ticket.waiting:
            if stop is not None and stop.is_set():
                admission.leave(ticket)
                return
            yield waiting_words(admission.place(ticket), admission.estimate_s(ticket), time.time() - since, hint)
            await asyncio.wait([f for f in (gate, stopper) if f is not None], timeout=every_s,
                               return_when=asyncio.FIRST_COMPLETED)
    finally:
        gate.cancel()
        if stopper is not None:
            stopper.cancel()
