"""The app's line for debates (r2mad.serving.admission) as the app sets it up: which lane a debate waits in (the
embedded model's, or the remote backbones'), the backbone that skips the line for a visitor who has a token,
the line as the engine enters it for every visitor's request (in_line), and why a running debate is slow when
it shares the model (sharing_words) or while the model loads (loading_words). No Gradio here."""
from __future__ import annotations

import contextlib
from typing import AsyncIterator, Callable, Iterable

from r2mad.backends.embedded import loading_s
from r2mad.serving.admission import Admission, Ticket, about
from r2mad.settings.config import Config
from r2mad.types import Transcript

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


def in_line(admission: Admission, config: Config, visitor: str, *,
            waiting: Callable[[Ticket], None] | None = None) -> Callable:
    """The line as the engine enters it for one visitor's request (VisitorResources' `admitted`): the request
    enters its lane (Refused says why not), `waiting` gets the ticket at once so a caller can show its place,
    and the block runs once admitted (when its rounds are expected to end within its time limit); leaving counts
    the debate's time, and its pace per round, when it ran to its end."""
    @contextlib.asynccontextmanager
    async def admitted(request) -> AsyncIterator[Ticket]:
        ticket = admission.enter(visitor, lane_of(config, [request.backbone, *request.agent_backbones],
                                                  custom=request.endpoint is not None),
                                 rounds=request.settings.rounds, deadline_s=request.settings.deadline_s,
                                 agents=request.settings.agents)
        try:
            if waiting is not None:
                waiting(ticket)
            await ticket.admitted()
            yield ticket
        finally:
            admission.leave(ticket, measured=ticket.measured)
    return admitted


def round_seconds(t: Transcript) -> float | None:
    """How long this debate's finished rounds took, on average (from its turns' clocks); None before one."""
    spans = [max(x.ended_at for x in r.turns) - min(x.started_at for x in r.turns)
             for r in t.rounds if r.turns and not r.details.get("running") and not r.details.get("shared")
             and all(x.ended_at for x in r.turns)]
    return sum(spans) / len(spans) if spans else None


def sharing_words(admission: Admission, lane: str, t: Transcript | None = None) -> str:
    """Why a running debate is slow when it is not alone: "3 debates share the model; a round takes about 25 s"
    (the round time from `t`'s own finished rounds), or that the model is loading (loading_words); "" when it runs
    alone on a loaded model or on a remote backbone."""
    if lane == EMBEDDED and (loading := loading_words()):
        return loading
    if lane != EMBEDDED or admission.running_count(lane) < 2:
        return ""
    seconds = round_seconds(t) if t is not None else None
    took = f"; a round takes {about(seconds)}" if seconds else ""
    return f"{admission.running_count(lane)} debates share the model{took}."


def loading_words() -> str:
    """While the embedded model loads (once per process, started at app start where it can be): "Loading the
    model, about 25 s" from the last load's time, then the seconds so far once that is past; "" otherwise."""
    state = loading_s()
    if state is None:
        return ""
    so_far, expected = state
    if so_far < expected:
        return f"Loading the model, {about(expected - so_far)} (once: later debates find it loaded)."
    return f"Loading the model, {so_far:.0f} s so far (a busy machine takes longer; once: later debates find it " \
           "loaded)."
