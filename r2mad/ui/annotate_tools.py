"""The Annotate tab's tools around labelling: create a queue, write adjudicated final labels, measure
agreement, compare two runs, export or push the dataset. Each returns plain values for the components;
bad input becomes a one-sentence warning and loses nothing."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import gradio as gr

from r2mad.annotation import agreement
from r2mad.annotation.book import blame_value
from r2mad.annotation.card import agreement_markdown
from r2mad.annotation.influence import compare_rows, edge_counts
from r2mad.annotation.queues import Queue, frozen_copy, save_queue
from r2mad.exports.dataset import push_dataset, write_dataset
from r2mad.serving.own_repo import own_repo
from r2mad.text import quoted
from r2mad.ui.annotate_base import ANY, FLAGS, AnnotateBase, Profile, Req, Token, final_text
from r2mad.ui.handlers import warn
from r2mad.ui.render.annotate_view import SHORT, disagreement_rows, influence_svg, parse_turns
from r2mad.ui.render.chat import esc


class AnnotateTools(AnnotateBase):
    def create_queue(self, name, n, blind, frozen, typed, visitor_id, request: Req = None, profile: Profile = None,
                     oauth_token: Token = None, **wanted):
        """A live filter (runs saved later join it), or with `frozen` a snapshot of the runs matching now.
        `wanted`: the runs it holds, as the form's method, backbone, bank, outcome, flags and detector."""
        me = self._me(typed, visitor_id, request, profile, oauth_token)
        flags = wanted.get("flags") or []
        chosen = {key: None if wanted.get(key) in (ANY, "", None) else wanted[key]
                  for key in ("method", "backbone", "bank", "detector")}
        filters = {**chosen, "correct": {"correct": True, "wrong": False}.get(wanted.get("outcome")),
                   "shared_misconception": True if FLAGS[0] in flags else None,
                   "flip": True if FLAGS[1] in flags else None,
                   "parse_failures": True if FLAGS[2] in flags else None}
        try:
            queue = Queue(name or "", filters, int(n or 1), bool(blind))
            queue = (frozen_copy(self.store, queue, queue.name, me) if frozen else save_queue(self.store, queue))
        except ValueError as exc:
            warn(str(exc))
            return gr.skip()
        return gr.update(choices=self.queue_names(), value=queue.name)

    def freeze_queue(self, queue_name, typed, visitor_id,
                     request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """A frozen copy of the open queue beside it ("NAME · frozen HH:MM"): its runs now, whatever is saved later."""
        me = self._me(typed, visitor_id, request, profile, oauth_token)
        queue = self._queue(queue_name)
        if queue is None:
            warn("Open a queue first; its runs as they are now become the frozen copy.")
            return gr.skip()
        base = queue.name.split(" · frozen ")[0]
        name = f"{base[:50]} · frozen {time.strftime('%m-%d %H:%M:%S')}"
        frozen_copy(self.store, queue, name, me)
        return gr.update(choices=self.queue_names(), value=name)

    def save_final(self, run_id, labels, turns, typed, visitor_id,
                   request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """The adjudicated labels of the open run; the picked turns (one or several) are their blame."""
        me, blamed = self._me(typed, visitor_id, request, profile, oauth_token), blame_value(parse_turns(turns))
        try:
            self.book.set_final((run_id or "").strip(), labels or [], me,
                                blame={label: blamed for label in labels or []} if blamed else None)
        except (ValueError, KeyError) as exc:
            warn(str(exc.args[0] if isinstance(exc, KeyError) else exc))
            return gr.skip()
        return final_text(self.book.finals().get((run_id or "").strip()))

    def measure(self, typed, visitor_id, request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """κ/α per label (with a caution on few runs), blame overlap, detector precision, and disagreements."""
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
                                       if r.transcript.rounds else 0, f"{r.method} · {r.id[:SHORT]}") for r in runs)
        rows = compare_rows(runs[0].transcript, runs[1].transcript) if len(runs) == 2 else []
        return rows, f'<div style="display:flex;gap:24px;flex-wrap:wrap">{graphs}</div>'
