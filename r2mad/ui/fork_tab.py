"""The Fork tab: pick a saved run and a round, change one thing (force an agent's answer, rewrite or mask
its message at the round before; or, at the round itself, unmask it, drop or replace a retrieved case, drop
an advice), and watch the fork run live beside its parent, aligned round by round. The
rounds before are replayed from the record without model calls; the fork is saved linked to its parent.
Stepping: a fork may run one round and pause; it then becomes the run to change and go on from."""
from __future__ import annotations

import asyncio
import contextlib
import html
import time
from typing import Any

import gradio as gr

from r2mad.budget import EDIT_CHARS
from r2mad.methods import names
from r2mad.serving.admission import Ticket, waiting_words
from r2mad.serving.line import REFRESH_S, sharing_words, visitor_key
from r2mad.serving.services import Services
from r2mad.serving.visitor_runs import fork_saved, readable
from r2mad.serving.visitors import VisitorHandlers
from r2mad.settings.config import bounds
from r2mad.steer.fork import Change, ForkSpec, live_usage, parse_changes
from r2mad.text import FIELD_CHARS, without_paths
from r2mad.types import Transcript
from r2mad.ui.api import USER_ERRORS
from r2mad.ui.errors import sentence
from r2mad.ui.render.chat import chat_messages
from r2mad.ui.render.scoreboard import matrix_html
from r2mad.ui.render.states import running_words
from r2mad.ui.render.tables import SHORT_ID

SAME = "(same as the run)"
CHANGES = {"force its answer to": "answer", "replace its message with": "edit", "mask it from the peers": "mask",
           "unmask it at the round (MAD-M²)": "unmask",
           "drop its retrieved case, rank in the box (R²-MAD)": "drop-case",
           "replace its retrieved case, RANK:CASE_ID in the box (R²-MAD)": "replace-case",
           "drop the advice to it from the agent in the box": "drop-advice", "change nothing": ""}
VALUE_FORMS = {"answer": "answers", "edit": "edits", "drop-case": "drop_cases", "replace-case": "replace_cases",
               "drop-advice": "drop_advice"}  # read and bounded as the CLI's flags are (steer/fork.parse_changes)


def short(run_id: str) -> str:
    """A run id as the Inspect list shows it (the run id box keeps the whole id)."""
    return run_id[:SHORT_ID]


def side_by_side(parent: Transcript, parent_id: str, fork: Transcript) -> str:
    """The parent and the fork as rows of answer chips, round by round (a changed turn is marked "fork")."""
    return matrix_html({"parent": parent, "fork": fork},
                       {"parent": f"Parent run {short(parent_id)}", "fork": "Fork"})


def fork_session(request: gr.Request | None) -> str:
    """The key of this browser tab's fork for Stop (apart from its debate's: both may run at once)."""
    return f"{getattr(request, 'session_hash', None) or 'anonymous'}:fork"



def refused(message: str) -> tuple:
    """A fork refused before it ran, said once on the status line where the visitor looks (no toast)."""
    return (f"Not started: {html.escape(without_paths(message), quote=False)}", *(gr.skip() for _ in range(6)))

class ForkHandlers(VisitorHandlers):
    async def stop(self, request: gr.Request = None) -> None:
        """Stop this tab's fork: out of the line with nothing saved, or saved as cancelled once it runs."""
        if not self.services.request_stop(fork_session(request)):
            gr.Info("No fork is running in this tab.")

    def show(self, run_id: str, visitor_id: str | None = None, request: gr.Request = None,
             profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        """The parent's chat as soon as an id of a run this visitor may read is given."""
        try:
            visitor = self.visitor(visitor_id, request, profile, oauth_token)
            t = readable(self.services.store, run_id, visitor).transcript
        except KeyError:
            return gr.skip()
        return chat_messages(t, saw=True) if t else []

    async def fork(self, run_id: str, from_round: float, method: str, backbone: str, rounds: float | None,
                   pause: bool, visitor_id: str | None = None, request: gr.Request = None,
                   profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None, **asked: Any):
        """Yields (status, parent chat, fork chat, aligned rows, run id, from round, rounds) while the fork
        runs. With `pause`, only round `from_round` runs; the fork then becomes the run to continue from.
        `asked`: the change, as the form's `agent` (from 1), `change` (its label in CHANGES) and `value`."""
        agent, value = asked.get("agent"), asked.get("value")
        kind = CHANGES.get(asked.get("change") or "", "")
        try:
            if kind in ("answer", "edit") and not (value or "").strip():
                raise ValueError("The change needs a value: an option letter or number to force, or the new "
                                 "message; type it in the box.")
            visitor = self.visitor(visitor_id, request, profile, oauth_token)
            record = readable(self.services.store, run_id, visitor)
            start, total = int(from_round or 1), int(rounds or 0) or int(record.settings.get("rounds") or 0)
            if kind in VALUE_FORMS:  # checked and worded as the CLI's flags are
                changes = parse_changes(**{VALUE_FORMS[kind]: [f"{int(agent or 1)}={(value or '').strip()}"]})
            else:
                changes = (Change(kind, int(agent or 1) - 1, (value or "").strip()),) if kind else ()
            spec = ForkSpec(start, changes, None if method in ("", SAME) else method,
                            None if backbone in ("", SAME) else backbone, start + 1 if pause else total or None)
        except USER_ERRORS as exc:
            yield refused(sentence(exc))
            return
        session = fork_session(request)
        stop = self.services.begin(session)
        if stop is None:
            yield refused("A fork is already running in this tab; press Stop or wait until it ends.")
            return
        try:
            async for shown in self._fork(run_id, record, spec, visitor, stop, pause=pause, start=start,
                                          total=total, key=visitor_key(visitor.owner, visitor_id,
                                                                       getattr(request, "session_hash", None))):
                yield shown
        finally:
            self.services.end(session)

    async def _fork(self, run_id: str, record, spec: ForkSpec, visitor, stop: asyncio.Event, *, pause: bool,
                    start: int, total: int, key: str):
        skip = tuple(gr.skip() for _ in range(7))
        parent = record.transcript
        updates: asyncio.Queue[Transcript] = asyncio.Queue()
        tickets: list[Ticket] = []
        asked, line, latest = time.time(), self.services.admission, None
        job = asyncio.ensure_future(fork_saved(self.services, run_id, spec, source="app-fork", visitor=visitor,
                                               record=updates.put_nowait, waiting=tickets.append, line_key=key))
        stopped = asyncio.ensure_future(stop.wait())
        parent_chat = await asyncio.to_thread(chat_messages, parent, True) if parent else []  # it checks answers
        try:
            while not job.done():
                getter = asyncio.ensure_future(updates.get())
                await asyncio.wait({job, getter, stopped}, timeout=REFRESH_S, return_when=asyncio.FIRST_COMPLETED)
                if stop.is_set() and not job.done():
                    getter.cancel()
                    in_line = not tickets or tickets[0].waiting  # nothing is saved before the line lets it in
                    await _cancel(job)
                    yield ("Stopped while waiting in line; nothing was run." if in_line else
                           "Stopped; the fork is saved as cancelled with the rounds it finished."), parent_chat, \
                        *skip[:5]
                    return
                if tickets and tickets[0].waiting:
                    getter.cancel()
                    words = waiting_words(line.place(tickets[0]), line.estimate_s(tickets[0]), time.time() - asked,
                                          leave="Closing the page gives up your place", held=line.held(tickets[0]))
                    yield html.escape(words, quote=False), parent_chat, *skip[:5]
                    continue
                fresh = getter.done()
                if fresh:
                    latest = getter.result()
                else:
                    getter.cancel()
                busy = sharing_words(line, tickets[0].lane, latest) if tickets else ""
                now = (running_words(latest, time.time() - asked) if latest is not None
                       else f"starting · {time.time() - asked:.0f} s")
                words = f"Forking {html.escape(spec.describe())} — {now}" + (f"  \n{busy}" if busy else "")
                if fresh:
                    yield words, parent_chat, chat_messages(latest), side_by_side(parent, run_id, latest), *skip[:3]
                else:  # nothing new from the fork: the clock and the line's words move
                    yield words, *skip[:6]
            parent_id, fork_id, t = job.result()
        except USER_ERRORS as exc:  # refused by the engine before it ran (a bank, the leak guard, the line)
            yield refused(sentence(exc))
            return
        finally:
            stopped.cancel()
            await _cancel(job)
        done = (f"Fork **{short(fork_id)}** of run **{short(parent_id)}** ({html.escape(spec.describe())}) — "
                f"saved; {live_usage(t).calls} model calls made, none for the replayed rounds.")
        if pause and t.status == "done" and len(t.rounds) == start + 1 and start + 1 < total:
            yield (done + f" Paused after round {start}: change what you like and press the button to go on "
                   f"from round {start + 1}.", parent_chat, chat_messages(t, saw=True),
                   side_by_side(parent, parent_id, t), fork_id, start + 1, total)
            return
        yield done, parent_chat, chat_messages(t, saw=True), side_by_side(parent, parent_id, t), *skip[:3]


async def _cancel(job: asyncio.Future) -> None:
    if not job.done():
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError, *USER_ERRORS):
            await job


def build(services: Services, visitor_id: gr.BrowserState) -> tuple[gr.Textbox, gr.Number]:
    """`visitor_id`: the key of this browser's runs on a public Space (each visitor forks only their own).
    Returns the run id and round boxes, which Inspect's "Fork from here" fills."""
    h = ForkHandlers(services)
    gr.Markdown("Replay a saved debate up to a round from its record (no model calls), change one thing, and go "
                "on live: an agent's answer, message or mask at the round before it, or what the method does at "
                "the round itself (unmask, drop or replace a retrieved case, drop an advice). Agents and case "
                "ranks are counted from 1, as shown.")
    with gr.Row():
        run_id = gr.Textbox(label="Run id (from Inspect runs)", scale=3, max_length=FIELD_CHARS)
        from_round = gr.Number(label="Fork from round", value=1, minimum=1, maximum=bounds("rounds")[1], precision=0)
    with gr.Row():
        agent = gr.Number(label="Agent", value=1, minimum=1, maximum=bounds("agents")[1], precision=0)
        change = gr.Dropdown(list(CHANGES), value="force its answer to", label="Change", elem_id="fork-change")
        value = gr.Textbox(label="Answer or new message · case rank · advice source", scale=2, max_length=EDIT_CHARS)
    with gr.Row():
        method = gr.Dropdown([SAME, *names("debate"), *names("ablation")], value=SAME, label="Go on with method",
                             elem_id="fork-method")
        backbone = gr.Dropdown([SAME, *services.config.backbones], value=SAME, label="Go on with backbone")
    with gr.Row():
        rounds = gr.Number(label="Rounds in all (0: the run's)", value=0, minimum=0, maximum=bounds("rounds")[1],
                           precision=0)
        pause = gr.Checkbox(label="Pause after one round (step), to change and go on", value=False,
                            elem_id="fork-pause")
    with gr.Row():
        go = gr.Button("Run the fork", variant="primary", elem_id="fork-button", scale=3)
        stop = gr.Button("Stop", variant="stop", elem_id="fork-stop", scale=1, interactive=False)  # live in a fork
    status = gr.Markdown(elem_id="fork-status")
    table = gr.HTML(elem_id="fork-aligned")  # the two runs, round by round, in the scoreboard's chips
    with gr.Row():
        parent_chat = gr.Chatbot(label="Parent run", elem_id="fork-parent", height=480,
                                 group_consecutive_messages=False, feedback_options=None)
        fork_chat = gr.Chatbot(label="Fork", elem_id="fork-chat", height=480,
                               group_consecutive_messages=False, feedback_options=None)
    run_id.change(h.show, [run_id, visitor_id], [parent_chat], api_visibility="private", queue=False)
    go.click(lambda: gr.Button(interactive=True), None, stop, queue=False, api_visibility="private")
    go.click(h.fork, [run_id, from_round, method, backbone, rounds, pause, visitor_id],
             inputs_kwargs={"agent": agent, "change": change, "value": value},
             outputs=[status, parent_chat, fork_chat, table, run_id, from_round, rounds], api_name="fork",
             api_visibility="undocumented", concurrency_id="debate",
             concurrency_limit=services.admission.capacity  # the line is services.admission
             ).then(lambda: gr.Button(interactive=False), None, stop, api_visibility="private", queue=False)
    stop.click(h.stop, None, None, api_name="fork_stop", api_visibility="undocumented", queue=False)
    return run_id, from_round
