"""Event handlers of the Debate tab: validate the visitor's input, run (or compare) with streaming,
stop, and turn transcripts into component updates. Errors become one-sentence warnings."""
from __future__ import annotations

import asyncio
import dataclasses
import html
import logging
import time

import gradio as gr

from r2mad.backends.base import BackendError
from r2mad.evaluation.costs import price_table
from r2mad.methods import needs_bank
from r2mad.runs.faults import StoreError
from r2mad.serving.admission import Refused, waiting_words
from r2mad.serving.line import lane_of, sharing_words, skip_hint, visitor_key, with_hint
from r2mad.serving.live import LiveRun, stream
from r2mad.serving.services import Services
from r2mad.serving.visitors import identify
from r2mad.settings.config import PAPER_PROFILE, ConfigError
from r2mad.text import without_paths
from r2mad.ui import moderator_box, vote_panel
from r2mad.ui.form_request import DebateRequest
from r2mad.ui.render.blind import Curtain
from r2mad.ui.views import (  # the Debate tab's component updates (issue 16)
    MAX_COLUMNS,
    VIEW_OUTPUTS,
    as_saved,
    idle,
    status_line,
    view,
)

log = logging.getLogger("r2mad.ui")
NOT_SAVED = "**Not saved yet** — kept and saved when space returns."


def with_reason(status: str, busy: str) -> str:
    """A running debate's status line, with why it is slow when the shared model is busy (serving/line.py)."""
    return f"{status}  \n{busy}" if busy else status
USER_ERRORS = (BackendError, ConfigError, ValueError, StoreError)  # StoreError: a full or locked run store
TICK_S = 1.0  # the running status line's seconds move on at least this often


def warn(message: str, secret: str | None = None) -> None:
    """Show a one-sentence warning (escaped: toasts render HTML; a pasted token and server folders never shown)."""
    if secret:
        message = message.replace(secret, "[redacted]")
    gr.Warning(html.escape(without_paths(message), quote=False))


def not_started(message: str, secret: str | None = None) -> tuple:
    """A refusal before the debate started, said once on the outcome line where the visitor looks (no toast)."""
    if secret:
        message = message.replace(secret, "[redacted]")
    return idle(f"Not started: {html.escape(without_paths(message), quote=False)}")


class DebateHandlers:
    def __init__(self, services: Services):
        self.services = services

    def profile_values(self, profile: str):
        """The decoding sliders for a profile: the papers' (1.0, 6,144 tokens) or this app's defaults."""
        s = self.services.config.settings
        return (PAPER_PROFILE["temperature"], PAPER_PROFILE["max_tokens"]) if profile != "demo" else (
            s.temperature, s.max_tokens)

    async def stop(self, request: gr.Request) -> None:
        """Stop the debate running in this browser session; it ends showing its partial transcript
        as cancelled and is saved as cancelled."""
        if not self.services.request_stop(getattr(request, "session_hash", None) or "anonymous"):
            gr.Info("Nothing is running in this tab.")

    async def unload(self, request: gr.Request) -> None:
        """The page was closed: stop its debate instead of letting it run on."""
        self.services.request_stop(getattr(request, "session_hash", None) or "anonymous")

    async def _skip_hint(self, lane: str, token: str | None, login_token: str | None) -> str:
        """The remote backbone this visitor could pick to skip the line ("" when none is theirs to use)."""
        def usable(name: str) -> bool:
            try:
                self.services.backend(name, token=token, login_token=login_token)
            except USER_ERRORS:
                return False
            return True
        return await asyncio.to_thread(skip_hint, self.services.config, lane, usable)

    async def run_debate(self, request: gr.Request = None, login: gr.OAuthProfile | None = None,
                         oauth_token: gr.OAuthToken | None = None, *, visitor_id: str | None = None, **form):
        """Run one debate (one method) or a side-by-side comparison (2–4 methods), streaming. `form`: the
        Debate form's values by name (r2mad.ui.debate_form; they name the event's parameters too);
        `visitor_id`: the id the visitor's browser keeps (their runs are kept under it). Gradio fills
        `request`, `login` and `oauth_token` itself (only parameters that may be positional)."""
        blind = bool(form.pop("blind", False))  # side by side: names hidden until the vote (ui/render/blind.py)
        req = DebateRequest.from_form(form)
        asked = time.time()  # the visitor's clock starts here: the status line counts from the press of Run
        session = getattr(request, "session_hash", None) or "anonymous"
        visitor = identify(self.services.config, browser_id=visitor_id, session=session, profile=login,
                           token=oauth_token)
        key = visitor_key(visitor.owner, visitor_id, session)
        curtain, first, note_line = (Curtain() if blind else None), True, []
        async for update in self._run(req, session, visitor.owner, getattr(oauth_token, "token", None), asked=asked,
                                      key=key, curtain=curtain, note_line=note_line):
            yield (*update, *(vote_panel.cleared() if first else vote_panel.unchanged()), gr.skip())
            first = False
        if curtain is not None and curtain.drawn and curtain.real:  # a comparison that started
            saved = None
            if not curtain.votable():  # no vote is asked: the names are shown now, with the runs as saved
                self.services.sealed.unseal(curtain.runs.values())
                saved = await asyncio.to_thread(as_saved, self.services.store, curtain.runs, curtain.real)
            yield (*vote_panel.ending(curtain, saved), gr.skip())
        if note_line:  # the run ended with a note no debate read: the note line says so, not "Sent"
            yield (*(gr.skip() for _ in range(VIEW_OUTPUTS)), *vote_panel.unchanged(), note_line[-1])

    async def _run(self, req: DebateRequest, session: str, owner: str | None, login_token: str | None, *,
                   asked: float, key: str, curtain: Curtain | None, note_line: list[str]):
        """`owner`: whose runs they are; `asked`: time.time() when the visitor pressed Run; `key`: who they are to
        the line (cap per visitor); `curtain`: a comparison of 2+ methods is shown blind through it (names hidden
        until the vote); `note_line`: gets what the note line says instead of "Sent" when a note reached no agent."""
        services, methods, bank = self.services, req.methods, req.bank
        token = req.token or login_token  # whichever reaches the endpoint is scrubbed from what is kept
        # a refusal before the start is said once, on the outcome line (not_started), never also as a toast
        if not (req.question or "").strip():
            yield idle("Type a question first; nothing was run.")
            return
        if not 1 <= len(methods) <= MAX_COLUMNS:
            yield idle(f"Choose 1 to {MAX_COLUMNS} methods ({len(methods)} are selected); nothing was run.")
            return
        if not bank and any(map(needs_bank, methods)):  # R²-MAD with "(no memory bank)": the default bank
            default = services.config.app.default_bank
            if default and default in await asyncio.to_thread(services.bank_choices):
                bank, req = default, dataclasses.replace(req, bank=default)
                gr.Info(f"{', '.join(m for m in methods if needs_bank(m))} read a memory bank and none was "
                        f"chosen, so they use {default}; choose another under Advanced.")
        stop_signal = services.begin(session)
        if stop_signal is None:
            yield not_started("A debate is already running in this browser tab; stop it or wait until it ends.")
            return
        store = live = None
        try:
            try:
                request = req.run_request(self.services.config.settings, owner)
                # the visitor's notes between rounds, to every debate side by side (ui/moderator_box.py)
                request = dataclasses.replace(request, moderator=moderator_box.mailbox(services, session))
            except USER_ERRORS as exc:
                yield not_started(str(exc), token)
                return
            store = services.store_for(req.token, login_token)
            prices = price_table(services.config.backbones.values())  # a custom endpoint has none
            live = LiveRun(request, store)
            endpoint = request.endpoint
            resources = services.in_line(key, token=req.token, login_token=login_token, waiting=live.waiting)
            if curtain is not None and len(methods) > 1:
                curtain.draw(list(methods))
            hide = curtain.hide if curtain is not None else (lambda shown: shown)
            hint = None
            async for transcripts in stream(live, resources, stop=stop_signal, tick_s=TICK_S):
                if not live.run_ids:  # not started yet: waiting in the line, or the bank warming up
                    if live.ticket is not None and live.ticket.waiting:
                        update, hint = await self._in_line(live.ticket, req.token, login_token, asked, hint)
                        yield update
                    elif bank and (doing := services.warming_up(bank)):
                        yield idle(f"Memory bank warming up ({doing})…")
                    continue
                # what the page shows and downloads holds no key, even one an endpoint echoed back
                shown = {m: store.scrub_transcript(t) for m, t in (transcripts or live.transcripts()).items()}
                lane = live.ticket.lane if live.ticket is not None else ""
                busy = sharing_words(services.admission, lane, next(iter(shown.values()), None))
                if not transcripts:  # nothing new for a while: only the clock on the status line moves
                    yield idle(with_reason(status_line(hide(shown), prices, time.time() - asked), busy))
                    continue
                done = all(t.status != "running" for t in transcripts.values())
                if curtain is not None and curtain.drawn:  # Inspect shows none of them until the vote
                    services.sealed.seal(live.run_ids.values())
                seconds = None
                if done and len(shown) > 1:  # side by side: each run's seconds as saved, its shared round 0 counted
                    _, seconds = await asyncio.to_thread(as_saved, store, live.run_ids, shown)
                    seconds = {(curtain.labels.get(m, m) if curtain else m): s for m, s in seconds.items()}
                update = view(hide(shown), final=done, prices=prices, saved=live.run_ids, elapsed=time.time() - asked,
                              seconds=seconds)
                yield (update[0] if done else with_reason(update[0], busy), *update[1:])
            if not live.run_ids:  # stopped before anything was saved
                yield idle("Stopped while waiting in line; nothing was run." if live.ticket is not None
                           else "Stopped before the debate started; nothing was run.")
                return
            self._unheard_notes(session, note_line)
            if store.unsaved(live.run_ids.values()):  # the disk is full: kept, and the visitor is told
                ended = {m: store.scrub_transcript(t) for m, t in live.results.items()}
                yield idle(f"{status_line(hide(ended), prices)}  \n{NOT_SAVED}")
            if curtain is not None:
                curtain.runs.update(live.run_ids)  # what a vote names (the runs are saved by now)
            self._warn_ended(live, store, token, curtain)
        except Refused as exc:  # the line is full, or this visitor has enough debates in it
            hint = await self._skip_hint(lane_of(services.config, [request.backbone, *request.agent_backbones],
                                                 custom=endpoint is not None), req.token, login_token)
            yield not_started(with_hint(str(exc), hint))
        except USER_ERRORS as exc:  # a backbone refused, a bank holding the question, a method's settings
            if live is not None and live.run_ids:
                warn(str(exc), token)
                yield view(hide(live.transcripts()), final=True)
            else:  # refused before anything was saved (a full run store, a bank that holds the question)
                yield not_started(str(exc), token)
        except Exception as exc:  # a bug, not the visitor's fault: log it (no secrets in it) and say so
            log.exception("debate failed")
            warn(f"The debate stopped on an internal error ({type(exc).__name__}); the partial transcript is kept.")
            if live is not None:
                yield view(hide(live.transcripts()), final=True)
        finally:
            services.end(session)
            if store is not None and store is not services.store:
                store.close()

    async def _in_line(self, ticket, token: str | None, login_token: str | None, asked: float,
                       hint: str | None) -> tuple[tuple, str]:
        """A waiting visitor's status line (place, estimate, the remote backbone that would skip the line: `hint`,
        looked up once); returns it with the hint."""
        hint = await self._skip_hint(ticket.lane, token, login_token) if hint is None else hint
        line = self.services.admission
        words = waiting_words(line.place(ticket), line.estimate_s(ticket), time.time() - asked, hint,
                              held=line.held(ticket))
        place, _, rest = words.partition(" · ")
        return idle(f"**{html.escape(place, quote=False)}** · {html.escape(rest, quote=False)}"), hint

    def _unheard_notes(self, session: str, note_line: list[str]) -> None:
        """Notes sent after the last round began (or before an early stop) reached no agent: say so."""
        with self.services._lock:
            unsaid = self.services.notes.pop(session, [])
        if unsaid:
            warn(f"{len(unsaid)} note(s) reached no agent: the debate had no round after them.")
            note_line.append(moderator_box.unheard(len(unsaid)))

    @staticmethod
    def _warn_ended(live: LiveRun, store, token: str | None, curtain: Curtain | None) -> None:
        """The store's notices, then per method a failure or the agent calls that failed (a blind warning names
        no method)."""
        for notice in store.take_notices():
            warn(notice)
        for m, t in live.results.items():
            m = curtain.labels.get(m, m) if curtain is not None else m
            errors = [turn.error for r in t.rounds for turn in r.turns if turn.error]
            if t.status == "failed":
                why = errors[0] if errors else (t.notices[-1] if t.notices else "the debate failed")
                warn(f"{m}: {why}", token)
            elif errors:
                warn(f"{m}: {len(errors)} agent call(s) failed and abstained: {errors[0]}", token)
