"""The "Your data" tab (a researcher's view): upload a CSV, TSV, JSONL, JSON or Parquet file, map its columns
to question, answer and choices, pick an answer kind, methods and a backbone, run an eval with a progress bar
and an estimate of the time left, and read its report when it ends. On a public Space only signed-in
annotators may use it. Reading, running and scoring live in evaluation/own_data.py and serving/own_eval.py."""
from __future__ import annotations

import asyncio
import html
import os
from pathlib import Path
from typing import Any

import gradio as gr

from r2mad.engine.evaluate import eval_requests
from r2mad.evaluation.benchmarks.hub import columns_of, read_table
from r2mad.evaluation.datasets import DataError
from r2mad.evaluation.own_data import guess_columns, load_own
from r2mad.grading.kinds import KIND_NAMES
from r2mad.methods import PLAIN, REGISTRY, SINGLE, is_debate
from r2mad.serving import own_eval
from r2mad.serving.admission import waiting_words
from r2mad.serving.line import visitor_key
from r2mad.serving.visitors import identify
from r2mad.text import without_paths
from r2mad.ui.handlers import USER_ERRORS

INTRO = ("### Evaluate methods on your own questions\nUpload a file (CSV, TSV, JSON lines, JSON or Parquet), say "
         "which column holds the question, the answer and (for multiple choice) the choices, then run. The same "
         "eval on the command line: `python -m r2mad eval --data FILE --columns question=Q,answer=A,choices=C "
         "--kind KIND --out DIR` (docs/own-data.md).")
NONE = "(none)"
FILE_TYPES = [".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".parquet"]


def researcher_refusal(config, visitor) -> str | None:
    """Why this visitor may not run evals here (None: they may)."""
    if not config.private_runs or visitor.annotator:
        return None
    return ("Evaluating your own data is for researchers: on this public Space, sign in with an account on its "
            "annotator list, or run the app on your own machine (`python app.py`).")


def build(services: Any, visitor_id: gr.BrowserState) -> None:
    config = services.config
    gr.Markdown(INTRO, elem_id="data-intro")
    upload = gr.File(label="Your data", file_types=FILE_TYPES, type="filepath", elem_id="data-file")
    summary = gr.Markdown(elem_id="data-summary")
    with gr.Row():
        question = gr.Dropdown([], label="Question column", elem_id="data-question")
        answer = gr.Dropdown([], label="Answer column", elem_id="data-answer")
        choices = gr.Dropdown([], label="Choices column (multiple choice)", elem_id="data-choices")
    with gr.Row():
        kind = gr.Dropdown(list(KIND_NAMES), value="short", label="Answer kind", elem_id="data-kind")
        methods = gr.Dropdown([(spec.label, name) for name, spec in REGISTRY.items() if not spec.needs_bank],
                              value=[SINGLE, PLAIN], multiselect=True, label="Methods", elem_id="data-methods")
        backbone = gr.Dropdown(list(config.backbones), value=config.default_backbone, label="Backbone",
                               elem_id="data-backbone")
        limit = gr.Number(value=20, minimum=1, precision=0, label="Questions (at most)", elem_id="data-limit")
    run = gr.Button("Run eval", variant="primary", elem_id="data-run")
    progress = gr.HTML(elem_id="data-progress")
    report = gr.Markdown(elem_id="data-report")
    report_file = gr.File(label="The report as one HTML file", visible=False, elem_id="data-report-file")

    def who(visitor_id, request, profile, token):
        return identify(config, browser_id=visitor_id, session=getattr(request, "session_hash", None),
                        profile=profile, token=token)

    async def uploaded(path: str | None, visitor_id: str | None = None, request: gr.Request = None,
                       profile: gr.OAuthProfile | None = None, oauth_token: gr.OAuthToken | None = None):
        empty = gr.Dropdown(choices=[], value=None)
        if not path:
            return "", empty, empty, empty, gr.skip()
        refusal = researcher_refusal(config, who(visitor_id, request, profile, oauth_token))
        if refusal:
            return refusal, empty, empty, empty, gr.skip()
        if os.path.getsize(path) > own_eval.MAX_UPLOAD_BYTES:
            return (f"{Path(path).name} is over {own_eval.MAX_UPLOAD_BYTES // 2**20} MB; use the command line "
                    "(docs/own-data.md) for big files.", empty, empty, empty, gr.skip())
        try:
            rows = await asyncio.to_thread(read_table, path)
        except DataError as exc:
            return without_paths(str(exc)), empty, empty, empty, gr.skip()
        columns = columns_of(rows)
        guess = guess_columns(columns)
        line = f"**{Path(path).name}**: {len(rows)} rows; columns: {', '.join(f'`{c}`' for c in columns)}."
        optional = [NONE, *columns]
        return (line, gr.Dropdown(choices=columns, value=guess["question"]),
                gr.Dropdown(choices=optional, value=guess["answer"] or NONE),
                gr.Dropdown(choices=optional, value=guess["choices"] or NONE),
                "mcq" if guess["choices"] else gr.skip())

    async def evaluate(path, q, a, c, kind_name, names, backbone_name, at_most, visitor_id=None,
                       request: gr.Request = None, profile: gr.OAuthProfile | None = None,
                       oauth_token: gr.OAuthToken | None = None):
        hidden = gr.File(visible=False)
        visitor = who(visitor_id, request, profile, oauth_token)
        refusal = researcher_refusal(config, visitor)
        problem = refusal or next((why for bad, why in (
            (not path, "Upload a file first."), (not q, "Choose the question's column."),
            (not names, "Choose at least one method."),
            (own_eval.busy(), "One eval runs at a time in this app; wait for the running one to end.")) if bad), None)
        if problem:
            yield f"<p class='data-progress-line'>{problem}</p>", "", hidden
            return
        mapping = ",".join(f"{role}={col}" for role, col in (("question", q), ("answer", a), ("choices", c))
                           if col and col != NONE)
        # the eval's questions wait in the app's line as this visitor's debates, under their token rules and allowance
        key = visitor_key(visitor.owner, visitor_id, getattr(request, "session_hash", None))
        tickets = []  # each question's place in the line, the latest last
        resources = services.in_line(key, login_token=getattr(oauth_token, "token", None), waiting=tickets.append)

        def waiting() -> str:
            ticket = tickets[-1] if tickets else None
            if ticket is None or not ticket.waiting:
                return ""
            line = services.admission  # no "starts in": the bar's estimate, recomputed every tick, counts the wait
            return waiting_words(line.place(ticket), None, line.clock() - ticket.entered,
                                 leave="The eval's next question starts when its turn comes")

        def typical() -> float | None:  # the line's measured seconds per row: a question runs every method
            mean = services.admission.mean_duration(tickets[-1].lane) if tickets else None
            return None if mean is None else mean / len(names)
        try:
            split = await asyncio.to_thread(load_own, path, mapping, kind=kind_name, limit=int(at_most or 1))
            from r2mad.evaluation.rows import EvalRun
            settings = config.settings.replace(answer_guard="off") if config.settings.answer_guard == "auto" \
                else config.settings
            run = EvalRun(split, tuple(names), backbone_name, settings, sum(map(is_debate, names)) > 1, path)
            # a backbone this visitor may not use is said now (the embedded model may load here: off the loop)
            await asyncio.to_thread(resources.backends, eval_requests(run, set())[0])
        except (DataError, *USER_ERRORS) as exc:
            yield f"<p class='data-progress-line'>{html.escape(without_paths(str(exc)), quote=False)}</p>", "", hidden
            return
        job = own_eval.start(run, resources, own_eval.results_folder(config.app.data_dir, path), waiting=waiting,
                             secrets=[*services.env_secrets, getattr(oauth_token, "token", None) or ""],
                             typical=typical)
        yield job.progress(), "", hidden
        try:
            async for bar in own_eval.follow(job):
                yield bar, "", hidden
        except Exception as exc:  # a failed eval keeps its finished rows; say why it stopped
            yield job.progress(), (f"The eval stopped: {without_paths(str(exc))}. Its finished rows are kept in "
                                   "this app's data folder."), hidden
            return
        from r2mad.evaluation.report import write_report
        path_md = await asyncio.to_thread(write_report, job.out)
        text = await asyncio.to_thread(path_md.read_text, encoding="utf-8")
        shown = "\n".join(line for line in text.splitlines()  # the plots are in the HTML report
                           if not line.startswith("![") and line != "## Plots")
        yield job.progress(), shown, gr.File(value=str(job.out / "report.html"), visible=True)

    who_args = [visitor_id]
    upload.change(uploaded, [upload, *who_args], [summary, question, answer, choices, kind],
                  api_visibility="private")
    run.click(evaluate, [upload, question, answer, choices, kind, methods, backbone, limit, *who_args],
              [progress, report, report_file], api_visibility="private", show_progress="hidden")
