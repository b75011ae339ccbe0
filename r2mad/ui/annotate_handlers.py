"""Event handlers of the Annotate tab about one run and its labels: open a queue or a run, step through
it, show suggestions grouped with their precision, pick the turns to blame, save and go on, open a
link (or the queue this browser used last). Tools around labelling are in annotate_tools.py. Each
returns plain values for the components; bad input becomes a one-sentence warning and loses nothing."""
from __future__ import annotations

import gradio as gr

from r2mad.annotation import review
from r2mad.annotation.book import blame_turns, blame_value
from r2mad.annotation.queues import next_pending, others_visible, queue_items, step
from r2mad.serving.identity import current_annotator
from r2mad.text import quoted
from r2mad.ui.annotate_base import ANY, FLAGS, Profile, Req, Token, final_text, flat_chat  # noqa: F401
from r2mad.ui.annotate_tools import AnnotateTools
from r2mad.ui.handlers import warn
from r2mad.ui.render.annotate_view import (
    NO_TURN,
    full_id,
    others_markdown,
    parse_turns,
    progress_markdown,
    queue_rows,
    short_id,
    suggestions_markdown,
    turn_choices,
    turn_names,
)
from r2mad.ui.render.chat import esc, final_markdown
from r2mad.ui.render.tables import run_header_markdown

# what the workbench's events return (_show), by the Annotate tab's output names, in order
SHOWN = ("run_id", "header", "chat", "suggestions", "labels", "turn", "note", "others", "progress", "items", "final",
         "final_md")


class AnnotateHandlers(AnnotateTools):
    def show(self, queue_name, run_id, typed, visitor_id,
             request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Open the run whose id is typed in the box."""
        return self._show(queue_name, run_id, self._me(typed, visitor_id, request, profile, oauth_token))

    def _empty(self, run_id, header, progress, items):
        return (run_id, header, [], "", [], gr.update(choices=[NO_TURN], value=[]), "", "", progress,
                queue_rows(items, None), [], "")

    def _show(self, queue_name: str | None, run_id: str | None, me: str):
        """Everything the workbench shows for one run of (optionally) a queue, in SHOWN's order."""
        queue = self._queue(queue_name)
        self.book.detect()
        items = queue_items(self.store, queue, me) if queue else []
        run_id = full_id(run_id)
        progress = progress_markdown(queue, items, run_id, me)
        if not run_id:
            return self._empty("", "*Nothing pending here for you.*" if queue else "*Open a queue or paste a run "
                               "id.*", progress, items)
        try:
            record = self.store.get_run(run_id)
        except KeyError:
            warn("No saved run has that id; pick a row of the queue or check the link.")
            return self._empty(run_id, "*No such run.*", progress, items)
        everything, finals = self.book.suggestions(), self.book.finals()
        groups = review.group([s for s in everything if s.run_id == run_id],
                              review.source_scores(everything, {r: f.labels for r, f in finals.items()}),
                              record.correct)
        mine = next((a for a in record.annotations if a.annotator == me), None)
        ticked = list(mine.labels) if mine else review.ticked_labels(groups)
        if mine:  # the turns you blamed for labels no detector placed
            detected = {g.label for g in groups}
            blamed = sorted({t for label, v in mine.blame.items() if label not in detected for t in blame_turns(v)})
        else:  # a counterfactual suggestion (blame's replay) pre-selects its turns
            replay = next((g.items[0] for g in groups if g.source == "counterfactual"), None)
            blamed = [(replay.round, a) for a in replay.agents] if replay else []
        visible = others_visible(queue, me, tuple(a.annotator for a in record.annotations))
        final = finals.get(run_id)
        header = run_header_markdown(record).replace(f"**Run {esc(record.id)}**", f"**Run {short_id(record.id)}**")
        header += "  \n" + final_markdown(record.transcript) if record.transcript else ""
        return (run_id, header, flat_chat(record.transcript), suggestions_markdown(groups, me, visible), ticked,
                gr.update(choices=turn_choices(record.transcript), value=turn_names(blamed)),
                mine.note if mine else "", others_markdown(record.annotations, me, visible), progress,
                queue_rows(items, run_id), list(final.labels) if final else [], final_text(final))

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
        return self._show(queue_name, step(items, full_id(run_id), delta) or "", me)

    def select_row(self, queue_name, typed, visitor_id, evt: gr.SelectData,
                   request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """A click on a row of the queue (run in column 2) or of the disagreements (column 1) opens that run."""
        me = self._me(typed, visitor_id, request, profile, oauth_token)
        row = evt.row_value if getattr(evt, "row_value", None) else None
        run_id = full_id(row[1] if len(row or []) == len(QUEUE_ROW) else row[0]) if row else ""
        return self._show(queue_name, run_id, me)

    def label_other(self, queue_name, run_id, other_id, typed, visitor_id,
                    request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """In the compare view: make the other run the one being labelled, and this one the other."""
        me = self._me(typed, visitor_id, request, profile, oauth_token)
        other = full_id(other_id)
        if not other:
            warn("Type the other run's id first; then you can label it here.")
            return (gr.skip(),) * (len(SHOWN) + 1)
        return (*self._show(queue_name, other, me), full_id(run_id))

    def pick_turn(self, run_id, turns, typed, visitor_id, evt: gr.SelectData,
                  request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Clicking an agent's message in the chat adds that turn to the blamed ones (a second click removes it)."""
        self._me(typed, visitor_id, request, profile, oauth_token)
        try:
            record = self.store.get_run(full_id(run_id))
        except KeyError:
            return gr.skip()
        messages = flat_chat(record.transcript)
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        meta = messages[index].get("metadata", {}) if isinstance(index, int) and 0 <= index < len(messages) else {}
        parts = str(meta.get("id", "")).split("-")  # round-R-agent-A
        if not (len(parts) == 4 and parts[0] == "round" and parts[2] == "agent"):
            return gr.skip()
        picked = set(parse_turns(turns)) ^ {(int(parts[1]), int(parts[3]))}
        return gr.update(value=turn_names(sorted(picked)))

    def save_next(self, queue_name, run_id, labels, note, turns, typed, visitor_id,
                  request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Save your labels for this run, then open the next run still pending for you. The picked turns
        (one or several) are the blame of every label no suggestion placed."""
        me, run_id = self._me(typed, visitor_id, request, profile, oauth_token), full_id(run_id)
        if not run_id:
            warn("No run is open; open a queue or paste a run id before saving.")
            return self._show(queue_name, run_id, me)
        blamed, detected = blame_value(parse_turns(turns)), {s.label for s in self.book.suggestions(run_id)}
        try:
            self.book.save_labels(run_id, me, labels or [], note or "",
                                  blame={x: blamed for x in labels or [] if x not in detected} if blamed else None)
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

    def deep_link(self, remembered, visitor_id, last_queue,
                  request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """On page load: the remembered name back in its box; `?run=<id>` opens that run and `?queue=<name>`
        that queue, in the Annotate tab (for whoever may annotate); with neither, the queue this browser
        had open last (kept in browser storage: a queue name only)."""
        typed = remembered or ""
        params = dict(request.query_params) if request is not None else {}
        run, queue = params.get("run", "").strip(), params.get("queue", "").strip()
        me = current_annotator(self.services.config, request, typed, browser_id=visitor_id, profile=profile,
                               token=oauth_token)
        keep = [gr.skip()] * len(SHOWN)
        if me is None:
            if run or queue:
                warn("Links to runs and queues open for this Space's annotators; sign in with Hugging Face as one.")
            return (typed, gr.skip(), gr.skip(), *keep)
        if run:
            return (typed, gr.Tabs(selected="annotate"), gr.skip(), *self._show(None, run, me))
        if queue:
            if queue not in self.queue_names():
                warn(f"No queue named {quoted(queue)}; pick one from the list or create it from a filter.")
                return (typed, gr.Tabs(selected="annotate"), gr.skip(), *keep)
            return (typed, gr.Tabs(selected="annotate"), gr.update(choices=self.queue_names(), value=queue),
                    *self._open_queue(queue, me))
        if last_queue and last_queue in self.queue_names():  # stay on the Debate tab; the queue waits there
            return (typed, gr.skip(), gr.update(choices=self.queue_names(), value=last_queue),
                    *self._open_queue(last_queue, me))
        return (typed, gr.skip(), gr.update(choices=self.queue_names()), *keep)


QUEUE_ROW = ("#", "Run", "Question", "Flags", "You")
