"""Event handlers of the Annotate tab. Each returns plain values for the components; bad input becomes
a one-sentence warning and loses nothing. The annotator's name comes from identity.current_annotator."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import gradio as gr

from r2mad.annotation import agreement
from r2mad.annotation.book import LabelBook
from r2mad.annotation.card import agreement_markdown
from r2mad.annotation.dataset import push_dataset, write_dataset
from r2mad.annotation.influence import compare_rows, edge_counts
from r2mad.annotation.queues import (
    Queue,
    get_queue,
    next_pending,
    others_visible,
    queue_items,
    queues,
    save_queue,
    step,
)
from r2mad.text import quoted
from r2mad.ui.annotate_view import (
    NO_TURN,
    disagreement_rows,
    influence_svg,
    others_markdown,
    parse_turn,
    progress_markdown,
    queue_rows,
    suggestions_markdown,
    turn_choices,
    turn_name,
)
from r2mad.ui.errors import refusal
from r2mad.ui.handlers import warn
from r2mad.ui.identity import current_annotator
from r2mad.ui.own_repo import own_repo
from r2mad.ui.render import chat_messages, esc, final_markdown
from r2mad.ui.services import Services
from r2mad.ui.tables import run_header_markdown

ANY = "any"
Req, Profile, Token = gr.Request, gr.OAuthProfile | None, gr.OAuthToken | None  # injected by Gradio
FLAGS = ("shared misconception", "correct→wrong flip", "parse failures")


# what the workbench's events return (_show), by the Annotate tab's output names, in order
SHOWN = ("run_id", "header", "chat", "suggestions", "labels", "turn", "note", "others", "progress", "items", "final",
         "final_md")


class AnnotateHandlers:
    def __init__(self, services: Services):
        self.services = services
        self.book = LabelBook(services.store)
        self.hub_endpoint: str | None = None  # None: huggingface_hub's own (HF_ENDPOINT or the Hub)

    @property
    def store(self):
        return self.services.store

    def queue_names(self) -> list[str]:
        return list(queues(self.store))

    def _queue(self, name: str | None) -> Queue | None:
        if not (name or "").strip():
            return None
        try:
            return get_queue(self.store, name)
        except KeyError as exc:
            warn(exc.args[0])
            return None

    # --- showing a run ------------------------------------------------------------------------

    def _me(self, typed, visitor_id, request, profile, oauth_token) -> str:
        """The annotator of this request (see identity.current_annotator); on a public Space only
        its allow-listed annotators, signed in, may use the tab."""
        name = current_annotator(self.services.config, request, typed, browser_id=visitor_id, profile=profile,
                                 token=oauth_token)
        if name is None:
            raise refusal("The Annotate tab is for this Space's annotators; sign in with Hugging Face as one "
                          "of them (the Space's owner lists them in R2MAD_ANNOTATORS).")
        return name

    def show(self, queue_name, run_id, typed, visitor_id,
             request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Open the run whose id is typed in the box."""
        return self._show(queue_name, run_id, self._me(typed, visitor_id, request, profile, oauth_token))

    def _show(self, queue_name: str | None, run_id: str | None, me: str):
        """Everything the workbench shows for one run of (optionally) a queue, in SHOWN's order."""
        queue = self._queue(queue_name)
        self.book.detect()
        items = queue_items(self.store, queue, me) if queue else []
        run_id = (run_id or "").strip()
        progress = progress_markdown(queue, items, run_id, me)
        if not run_id:
            empty = "*Nothing pending here for you.*" if queue else "*Open a queue or paste a run id.*"
            return ("", empty, [], "", [], gr.update(choices=[NO_TURN], value=NO_TURN), "", "", progress,
                    queue_rows(items, None), [], "")
        try:
            record = self.store.get_run(run_id)
        except KeyError:
            warn("No saved run has that id; pick a row of the queue or check the link.")
            return (run_id, "*No such run.*", [], "", [], gr.update(choices=[NO_TURN], value=NO_TURN), "", "",
                    progress, queue_rows(items, None), [], "")
        found = self.book.suggestions(run_id)
        mine = next((a for a in record.annotations if a.annotator == me), None)
        ticked = list(mine.labels) if mine else list(dict.fromkeys(s.label for s in found if s.label))
        blamed = next(iter(mine.blame.values()), None) if mine and mine.blame else None
        if mine is None:  # a counterfactual suggestion (blame's replay) pre-selects its turn
            blamed = next(({"round": s.round, "agent": s.agents[0]} for s in found if s.detector == "counterfactual"),
                          None)
        visible = others_visible(queue, me, tuple(a.annotator for a in record.annotations))
        final = self.book.finals().get(run_id)
        chat = flat_chat(record.transcript)
        header = run_header_markdown(record) + ("  \n" + final_markdown(record.transcript) if record.transcript else "")
        return (run_id, header, chat, suggestions_markdown(found, me, visible), ticked,
                gr.update(choices=turn_choices(record.transcript),
                          value=turn_name(blamed["round"], blamed["agent"]) if blamed else NO_TURN),
                mine.note if mine else "", others_markdown(record.annotations, me, visible), progress,
                queue_rows(items, run_id), list(final.labels) if final else [], _final_text(final))

    def open_queue(self, queue_name, typed, visitor_id,
                   request: Req = None, profile: Profile = None, oauth_token: Token = None):
        return self._open_queue(queue_name, self._me(typed, visitor_id, request, profile, oauth_token))

    def _open_queue(self, queue_name: str | None, me: str):
        """A queue opens at its first run still pending for you (else its first run)."""
        queue = self._queue(queue_name)
        self.book.detect()
        items = queue_items(self.store, queue, me) if queue else []
        first = next_pending(items) or (items[0].run.id if items else "")
        return self._show(queue_name, first, me)

    def step_on(self, queue_name, run_id, typed, visitor_id,
                request: Req = None, profile: Profile = None, oauth_token: Token = None):
        return self._step(queue_name, run_id, self._me(typed, visitor_id, request, profile, oauth_token), +1)

    def step_back(self, queue_name, run_id, typed, visitor_id,
                  request: Req = None, profile: Profile = None, oauth_token: Token = None):
        return self._step(queue_name, run_id, self._me(typed, visitor_id, request, profile, oauth_token), -1)

    def _step(self, queue_name, run_id, me, delta):
        queue = self._queue(queue_name)
        if queue is None:
            return self._show(queue_name, run_id, me)
        items = queue_items(self.store, queue, me)
        return self._show(queue_name, step(items, run_id, delta) or "", me)

    def select_row(self, queue_name, typed, visitor_id, evt: gr.SelectData,
                   request: Req = None, profile: Profile = None, oauth_token: Token = None):
        me = self._me(typed, visitor_id, request, profile, oauth_token)
        row = evt.row_value if getattr(evt, "row_value", None) else None
        run_id = str(row[1] if len(row or []) == len(QUEUE_ROW) else row[0]) if row else ""
        return self._show(queue_name, run_id, me)

    def pick_turn(self, run_id, typed, visitor_id, evt: gr.SelectData,
                  request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Clicking an agent's message in the chat picks that turn for blame."""
        self._me(typed, visitor_id, request, profile, oauth_token)
        try:
            record = self.store.get_run((run_id or "").strip())
        except KeyError:
            return gr.skip()
        messages = flat_chat(record.transcript)
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        meta = messages[index].get("metadata", {}) if isinstance(index, int) and 0 <= index < len(messages) else {}
        parts = str(meta.get("id", "")).split("-")  # round-R-agent-A
        if len(parts) == 4 and parts[0] == "round" and parts[2] == "agent":
            return turn_name(int(parts[1]), int(parts[3]))
        return gr.skip()

    # --- saving -------------------------------------------------------------------------------

    def save_next(self, queue_name, run_id, labels, note, turn, typed, visitor_id,
                  request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Save your labels for this run, then open the next run still pending for you."""
        me, run_id = self._me(typed, visitor_id, request, profile, oauth_token), (run_id or "").strip()
        if not run_id:
            warn("No run is open; open a queue or paste a run id before saving.")
            return self._show(queue_name, run_id, me)
        blame, detected = parse_turn(turn), {s.label for s in self.book.suggestions(run_id)}
        try:  # the picked turn goes to the labels no detector placed
            self.book.save_labels(run_id, me, labels or [], note or "",
                                  blame={x: blame for x in labels or [] if x not in detected} if blame else None)
        except (ValueError, KeyError) as exc:
            warn(str(exc.args[0] if isinstance(exc, KeyError) else exc))
            return gr.skip()  # keep what the annotator ticked and typed on screen
        queue = self._queue(queue_name)
        if queue is None:
            return self._show(queue_name, run_id, me)
        following = next_pending(queue_items(self.store, queue, me), run_id)
        if following is None:
            gr.Info("That was the last run pending for you in this queue.")
        return self._show(queue_name, following or run_id, me)

    def create_queue(self, name, method, backbone, bank, outcome, flags, detector, n, blind, typed, visitor_id,
                     request: Req = None, profile: Profile = None, oauth_token: Token = None):
        self._me(typed, visitor_id, request, profile, oauth_token)
        flags = flags or []
        filters = {"method": None if method in (ANY, "", None) else method,
                   "backbone": None if backbone in (ANY, "", None) else backbone,
                   "bank": None if bank in (ANY, "", None) else bank,
                   "correct": {"correct": True, "wrong": False}.get(outcome),
                   "shared_misconception": True if FLAGS[0] in flags else None,
                   "flip": True if FLAGS[1] in flags else None,
                   "parse_failures": True if FLAGS[2] in flags else None,
                   "detector": None if detector in (ANY, "", None) else detector}
        try:
            queue = save_queue(self.store, Queue(name or "", filters, int(n or 1), bool(blind)))
        except ValueError as exc:
            warn(str(exc))
            return gr.skip()
        return gr.update(choices=self.queue_names(), value=queue.name)

    def save_final(self, run_id, labels, turn, typed, visitor_id,
                   request: Req = None, profile: Profile = None, oauth_token: Token = None):
        blame, me = parse_turn(turn), self._me(typed, visitor_id, request, profile, oauth_token)
        try:
            self.book.set_final((run_id or "").strip(), labels or [], me,
                                blame={label: blame for label in labels or []} if blame else None)
        except (ValueError, KeyError) as exc:
            warn(str(exc.args[0] if isinstance(exc, KeyError) else exc))
            return gr.skip()
        return _final_text(self.book.finals().get((run_id or "").strip()))

    # --- agreement and export -----------------------------------------------------------------

    def measure(self, typed, visitor_id, request: Req = None, profile: Profile = None, oauth_token: Token = None):
        self._me(typed, visitor_id, request, profile, oauth_token)
        self.book.detect()
        humans = self.book.human_labels()
        questions = {r.id: r.question for r in self.store.list_runs(limit=100_000)}
        return agreement_markdown(self.book), disagreement_rows(agreement.disagreements(humans), questions)

    def export(self, typed, visitor_id, request: Req = None, profile: Profile = None, oauth_token: Token = None):
        self._me(typed, visitor_id, request, profile, oauth_token)
        folder = Path(tempfile.mkdtemp(prefix="r2mad-dataset-"))
        write_dataset(self.book, folder / "annotations")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return shutil.make_archive(str(folder / f"r2mad-annotations-{stamp}"), "zip", folder / "annotations")

    def push(self, repo, pasted, typed, visitor_id, request: Req = None, profile: Profile = None,
             oauth_token: Token = None):
        """Push the dataset to a Hub dataset repo with the pasted token, else the annotator's login token."""
        self._me(typed, visitor_id, request, profile, oauth_token)
        token = (pasted or "").strip() or getattr(oauth_token, "token", None)
        if not token:
            warn("No token to push with; paste a Hugging Face token with write access (or sign in on the Space).")
            return gr.skip()
        folder = Path(tempfile.mkdtemp(prefix="r2mad-dataset-"))
        try:
            counts = write_dataset(self.book, folder)
            url = push_dataset(folder, own_repo(repo, profile), token, endpoint=self.hub_endpoint)
        except (ValueError, RuntimeError) as exc:
            warn(str(exc), secret=token)
            return gr.skip()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return f"Pushed {counts['runs']} runs and {counts['labels']} label rows to {esc(url)}"

    def compare(self, run_id, other_id, typed, visitor_id,
                request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Two runs round against round, and each one's influence graph (this run's alone when no other)."""
        self._me(typed, visitor_id, request, profile, oauth_token)
        runs = []
        for rid in ((run_id or "").strip(), (other_id or "").strip()):
            if not rid:
                continue
            try:
                record = self.store.get_run(rid)
            except KeyError:
                warn(f"No saved run has id {quoted(rid)}; check it against the queue or the Inspect list.")
                return gr.skip(), gr.skip()
            if record.transcript is None:
                warn(f"Run {rid} stopped before round 0, so there is nothing to compare; pick a finished run.")
                return gr.skip(), gr.skip()
            runs.append(record)
        if not runs:
            warn("No run is open; open one before comparing.")
            return gr.skip(), gr.skip()
        if len(runs) == 2 and runs[0].question != runs[1].question:
            warn("The two runs ask different questions; the rounds are shown side by side all the same.")
        graphs = "".join(influence_svg(edge_counts(r.transcript), len(r.transcript.rounds[0].turns)
                                       if r.transcript.rounds else 0, f"{r.method} · {r.id[:8]}") for r in runs)
        rows = compare_rows(runs[0].transcript, runs[1].transcript) if len(runs) == 2 else []
        return rows, f'<div style="display:flex;gap:24px">{graphs}</div>'

    def deep_link(self, remembered, visitor_id,
                  request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """On page load: the remembered name back in its box; `?run=<id>` opens that run and
        `?queue=<name>` that queue, in the Annotate tab (for whoever may annotate)."""
        typed = remembered or ""
        params = dict(request.query_params) if request is not None else {}
        run, queue = params.get("run", "").strip(), params.get("queue", "").strip()
        me = current_annotator(self.services.config, request, typed, browser_id=visitor_id, profile=profile,
                               token=oauth_token)
        if me is None:
            if run or queue:
                warn("Links to runs and queues open for this Space's annotators; sign in with Hugging Face as one.")
            return (typed, gr.skip(), gr.skip(), *[gr.skip()] * 12)
        if run:
            return (typed, gr.Tabs(selected="annotate"), gr.skip(), *self._show(None, run, me))
        if queue:
            if queue not in self.queue_names():
                warn(f"No queue named {quoted(queue)}; pick one from the list or create it from a filter.")
                return (typed, gr.Tabs(selected="annotate"), gr.skip(), *[gr.skip()] * 12)
            return (typed, gr.Tabs(selected="annotate"), gr.update(choices=self.queue_names(), value=queue),
                    *self._open_queue(queue, me))
        return (typed, gr.skip(), gr.update(choices=self.queue_names()), *[gr.skip()] * 12)


def flat_chat(transcript) -> list[dict]:
    """The Inspect chat with every agent turn as its own message (not folded under its round), so a
    click on a turn reports that turn."""
    if transcript is None:
        return []
    return [{**m, "metadata": {k: v for k, v in m["metadata"].items() if k != "parent_id"}}
            for m in chat_messages(transcript)]


QUEUE_ROW = ("#", "Run id", "Question", "Flags", "You", "Annotators")


def _final_text(final) -> str:
    if final is None:
        return "*No final labels yet.*"
    return f"Final labels by **{esc(final.adjudicator)}**: " + (", ".join(final.labels) or "none")
