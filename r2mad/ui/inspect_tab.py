"""The Inspect tab for annotators: list and filter saved runs, open one in the same round-by-round
view as a live debate, annotate it with taxonomy labels, and rerun its config in the Debate tab."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from r2mad.methods import METHODS
from r2mad.runs.io import export_jsonl, export_runs_csv
from r2mad.runs.store import STATUSES
from r2mad.serving.services import Services
from r2mad.serving.visitors import Visitor, VisitorHandlers
from r2mad.steer.fork import fork_starts
from r2mad.steer.links import fork_of, forks_of
from r2mad.ui.errors import refusal
from r2mad.ui.fill import in_fill_order, run_values
from r2mad.ui.handlers import warn
from r2mad.ui.render.chat import chat_messages, esc, final_markdown, task_markdown
from r2mad.ui.render.scoreboard import scoreboard_html
from r2mad.ui.render.tables import (
    RUN_DATATYPES,
    RUN_HEADERS,
    SHORT_ID,
    annotations_markdown,
    run_header_markdown,
    run_rows,
)

ANY = "any"


FLAGS = ("shared misconception", "correct→wrong flip", "parse failures")


class InspectHandlers(VisitorHandlers):
    def list_runs(self, method: str, backbone: str, bank: str, outcome: str, flags: list[str], status: str,
                  visitor_id: str | None = None, request: gr.Request = None,
                  profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        """Runs matching the filters, newest first (any = no filter): this visitor's own runs on a
        public Space, every run for its annotators and on a local install."""
        flags = flags or []
        runs = self.services.store.list_runs(
            owner=self.visitor(visitor_id, request, profile, oauth_token).list_filter,
            method=None if method in (ANY, "", None) else method,
            backbone=None if backbone in (ANY, "", None) else backbone,
            bank=None if bank in (ANY, "", None) else bank,
            correct={"correct": True, "wrong": False}.get(outcome),
            shared_misconception=True if FLAGS[0] in flags else None,
            flip=True if FLAGS[1] in flags else None,
            parse_failures=True if FLAGS[2] in flags else None,
            status=None if status in (ANY, "", None) else status)
        # the list shows short ids; the state keeps them whole
        return run_rows(runs, self.services.store.taxonomy), [r.id for r in runs]

    def export(self, ids: list[str], fmt: str = "jsonl") -> str:
        """The runs the list shows: JSONL (every column, transcript and annotations; imports back) or CSV
        (one summary row per run)."""
        if not ids:
            raise refusal("The list is empty; change the filters so it shows the runs to export.")
        path = Path(tempfile.mkdtemp(prefix="r2mad-runs-")) / f"runs.{fmt}"
        (export_runs_csv if fmt == "csv" else export_jsonl)(self.services.store, path, ids)
        return str(path)

    def _record(self, run_id: str, visitor: Visitor):
        """A saved run this visitor may read, by its id or the short id the list shows (another visitor's
        run reads as no run at all)."""
        run_id = (run_id or "").strip()
        if not run_id:
            raise refusal("No run chosen; click a row of the list or paste a run id.")
        try:
            record = self.services.store.get_run(run_id)
        except KeyError:
            record = None
        if record is None or not visitor.can_read(record.owner):
            raise refusal("No saved run of yours has that id; refresh the list and pick one of its rows.")
        return record

    def open_run(self, run_id: str, visitor_id: str | None = None, request: gr.Request = None,
                 profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        """Header, chat, final line and annotations of one saved run."""
        record = self._record(run_id, self.visitor(visitor_id, request, profile, oauth_token))
        taxonomy = self.services.store.taxonomy
        if record.transcript is None:
            shown = [{"role": "user", "content": task_markdown(record.task), "metadata": {}}]
            why = f" ({esc(record.status_note)})" if record.status_note else ""
            return (run_header_markdown(record), shown,
                    f"**{esc(record.status.capitalize())} before round 0 finished — no answers{why}.**",
                    annotations_markdown(record.annotations, taxonomy))
        return (run_header_markdown(record), chat_messages(record.transcript),
                final_markdown(record.transcript), annotations_markdown(record.annotations, taxonomy))

    def drawer(self, run_id: str, visitor_id: str | None = None, request: gr.Request = None,
               profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        """The run drawer opened on a run: its scoreboard, the rounds a fork can start from, and the runs
        it was forked from or into."""
        visitor = self.visitor(visitor_id, request, profile, oauth_token)
        try:
            record = self._record(run_id, visitor)
        except gr.Error:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        t, starts = record.transcript, fork_starts(record.transcript)
        return (gr.Column(visible=True), scoreboard_html(t) if t else "",
                gr.Dropdown(choices=starts, value=starts[0] if starts else None, interactive=bool(starts)),
                self._lineage(record.id, visitor))

    def _lineage(self, run_id: str, visitor: Visitor) -> str:
        """"Fork of run … (what changed)" and "Forked into …", naming only runs this visitor may read."""
        store = self.services.store
        parent, spec = fork_of(store, run_id)
        forks = forks_of(store, run_id)
        readable = {r.id for r in store.list_runs(ids=[*forks, *([parent] if parent else [])],
                                                  owner=visitor.list_filter, limit=len(forks) + 1)}
        mine = [f for f in forks if f in readable]
        lines = []
        if parent in readable:
            lines.append(f"Fork of run `{parent[:SHORT_ID]}`" + (f" ({esc(spec.describe())})." if spec else "."))
        if mine:
            lines.append("Forked into " + ", ".join(f"`{f[:SHORT_ID]}`" for f in mine) + ".")
        return "  \n".join(lines)

    def select(self, ids: list[str], visitor_id: str | None, evt: gr.SelectData, request: gr.Request,
               profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        """Clicking a row of the list opens that run."""
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        run_id = ids[index] if isinstance(index, int) and 0 <= index < len(ids or []) else ""
        return (run_id, *self.open_run(run_id, visitor_id, request, profile, oauth_token))

    def annotate(self, run_id: str, labels: list[str], note: str, annotator: str,
                 visitor_id: str | None = None, request: gr.Request = None,
                 profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        """Save (or edit) this annotator's labels and note for the run; returns the annotations. On a
        public Space only the allow-listed annotators label, as their login (the typed name is ignored)."""
        visitor = self.visitor(visitor_id, request, profile, oauth_token)
        if not visitor.annotator:
            raise refusal("Labelling runs is for this Space's annotators; sign in with Hugging Face as one "
                          "(the owner lists them in R2MAD_ANNOTATORS).")
        record = self._record(run_id, visitor)
        name = visitor.username if visitor.owner is not None else annotator
        try:
            self.services.store.annotate(record.id, annotator=name or "", labels=labels or [], note=note or "")
        except ValueError as exc:
            warn(str(exc))
        fresh = self.services.store.get_run(record.id)
        return annotations_markdown(fresh.annotations, self.services.store.taxonomy)

    def rerun(self, run_id: str, visitor_id: str | None = None, request: gr.Request = None,
              profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        """Values for the Debate tab's controls from a saved run, and switch to that tab."""
        record = self._record(run_id, self.visitor(visitor_id, request, profile, oauth_token))
        config = self.services.config
        values = run_values(record, config, self.services.bank_choices())
        names = record.backbone.split(",") if values["mixed_models"] else [record.backbone]
        unknown = [n for n in names if n not in config.backbones]
        if unknown:
            warn(f"Backbone {unknown[0]} is not configured here; keeping the selected backbone.")
        gr.Info("The Debate tab now holds this run's question and settings; press Run debate to run it again.")
        return (*in_fill_order(values), gr.Tabs(selected="debate"))


@dataclass
class InspectTab:
    run_id: gr.Textbox
    fork_round: gr.Dropdown  # the round a fork of the open run starts from
    fork_button: gr.Button  # layout.py sends both to the Fork tab


def build(services: Services, debate, tabs, tab: gr.Tab, visitor_id) -> InspectTab:
    h = InspectHandlers(services)
    config, store = services.config, services.store
    with gr.Accordion("Filters", open=False, elem_id="inspect-filters"):
        with gr.Row():
            method = gr.Dropdown([ANY, *METHODS], value=ANY, allow_custom_value=True, label="Method", min_width=160)
            outcome = gr.Radio([ANY, "correct", "wrong"], value=ANY, label="Outcome", min_width=160)
            status = gr.Dropdown([ANY, *STATUSES], value=ANY, label="Status", min_width=160)
            backbone = gr.Dropdown([ANY, *config.backbones], value=ANY, allow_custom_value=True, label="Backbone",
                                   min_width=160)
            bank = gr.Dropdown([ANY, *services.bank_choices()], value=ANY, allow_custom_value=True, label="Bank",
                               min_width=160)
        flags = gr.CheckboxGroup(list(FLAGS), label="Only runs with")
    with gr.Row():
        refresh = gr.Button("Refresh list", elem_id="inspect-refresh", size="sm")
        export = gr.Button("Export the listed runs (JSONL)", elem_id="inspect-export", size="sm")
        export_csv = gr.Button("Export the listed runs (CSV)", elem_id="inspect-export-csv", size="sm")
    exported = gr.File(label="Exported runs", visible=False, elem_id="inspect-file")
    runs = gr.Dataframe(headers=RUN_HEADERS, datatype=RUN_DATATYPES, interactive=False,
                        label="Saved runs (click a row to open it)", wrap=True, elem_id="runs", max_height=480,
                        pinned_columns=1,
                        column_widths=["260px", "90px", "130px", "70px", "60px", "150px", "170px", "140px", "110px",
                                       "70px", "90px"])
    ids = gr.State([])
    with gr.Row():
        run_id = gr.Textbox(label="Run id", scale=3, elem_id="run-id")
        open_button = gr.Button("Open", scale=1)
    # The run drawer: slides over the list from the right (the whole width on a phone) until closed.
    with gr.Column(visible=False, elem_id="run-drawer") as drawer:
        with gr.Row(equal_height=True):
            gr.Markdown("### Run", elem_id="drawer-title")
            close = gr.Button("Close", size="sm", scale=0, min_width=80, elem_id="drawer-close")
        header = gr.Markdown(elem_id="inspect-header")
        lineage = gr.Markdown(elem_id="inspect-lineage")
        final = gr.Markdown(elem_id="inspect-final")
        scoreboard = gr.HTML("", elem_id="inspect-scoreboard")
        with gr.Row(equal_height=True, elem_id="drawer-actions"):
            fork_round = gr.Dropdown([], label="Fork from round", show_label=False, container=False, scale=0,
                                     min_width=90, elem_id="fork-from-round")
            fork_button = gr.Button("Fork from this round", elem_id="fork-from-here", size="sm", scale=1,
                                    min_width=150)
            rerun_button = gr.Button("Fill the Debate tab with this run", size="sm", scale=1, min_width=200)
        chat = gr.Chatbot(label="Saved debate", height=520, group_consecutive_messages=False,
                          feedback_options=None, autoscroll=False, elem_id="inspect-chat")
        gr.Markdown("#### Annotations")
        existing = gr.Markdown("*Open a run to see its annotations.*")
        labels = gr.CheckboxGroup([(f"{key} — {text}", key) for key, text in store.taxonomy.items()],
                                  label="Failure labels")
        note = gr.Textbox(lines=2, label="Note")
        annotator = gr.Textbox(label="Your name", visible=not config.private_runs)  # else: the login's name
        save = gr.Button("Save annotation", variant="primary")

    filters = [method, backbone, bank, outcome, flags, status, visitor_id]
    drawn = [drawer, scoreboard, fork_round, lineage]
    refresh.click(h.list_runs, filters, [runs, ids], api_name="inspect_list_runs")
    for button, fmt in ((export, "jsonl"), (export_csv, "csv")):
        button.click(lambda listed, fmt=fmt: h.export(listed, fmt), [ids], [exported],
                     api_visibility="private").success(lambda: gr.File(visible=True), None, [exported],
                                                       api_visibility="private", queue=False)
    gr.on([tab.select, *(f.change for f in filters[:-1])], h.list_runs, filters, [runs, ids], api_visibility="private",
          show_progress="hidden")  # the list is current whenever the tab is opened or a filter changes
    open_button.click(h.open_run, [run_id, visitor_id], [header, chat, final, existing], api_name="open_run").success(
        h.drawer, [run_id, visitor_id], drawn, api_visibility="private", show_progress="hidden")
    runs.select(h.select, [ids, visitor_id], [run_id, header, chat, final, existing], api_visibility="private").success(
        h.drawer, [run_id, visitor_id], drawn, api_visibility="private", show_progress="hidden")
    close.click(lambda: gr.Column(visible=False), None, [drawer], api_visibility="private", queue=False)
    save.click(h.annotate, [run_id, labels, note, annotator, visitor_id], [existing], api_name="annotate").success(
        h.list_runs, filters, [runs, ids], api_visibility="private", show_progress="hidden")
    # Rerun fills the Debate tab (debate.fill: FILL's order) and waits for the visitor to press Run.
    rerun_button.click(h.rerun, [run_id, visitor_id], [*debate.fill, tabs], api_name="rerun")
    return InspectTab(run_id, fork_round, fork_button)
