"""The Annotate tab: a sidebar with a named queue of saved runs (short ids, the whole id on hover; the last
queue remembered by this browser) beside pages for a run, a comparison of two runs and agreement, with the
labels always at hand on the right: tick failure labels (trusted suggestions pre-ticked, with their
precision and evidence), blame one or several turns from the chat, see others' labels (hidden in blind
queues until you submit), measure agreement, adjudicate, and export the labels as a dataset. Handlers
live in annotate_handlers.py and annotate_tools.py, renderers in annotate_view.py."""
from __future__ import annotations

import gradio as gr

from r2mad.methods import METHODS
from r2mad.runs.records import NAME_CHARS, NOTE_LIMIT
from r2mad.serving.services import Services
from r2mad.text import FIELD_CHARS
from r2mad.ui.annotate_handlers import ANY, FLAGS, NO_RUN_FINAL, AnnotateHandlers
from r2mad.ui.bank_growth import bank_growth_block
from r2mad.ui.render.annotate_view import (
    COMPARE_HEADERS,
    DISAGREEMENT_HEADERS,
    KEYS_HELP,
    NO_TURN,
    QUEUE_HEADERS,
    label_choices,
    label_guide,
)

KEYS_JS = r"""() => {
  if (window.__r2madKeys) return; window.__r2madKeys = true;
  const click = (sel) => { const b = document.querySelector(sel); if (b) b.click(); };
  document.addEventListener('keydown', (e) => {
    const panel = document.querySelector('#ann-panel');
    if (!panel || panel.offsetParent === null) return;  // only while the Annotate tab is shown
    const t = e.target, tag = t && t.tagName;
    const typing = tag === 'TEXTAREA' || (tag === 'INPUT' && t.type !== 'checkbox');
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') { e.preventDefault(); click('#ann-save'); return; }
    if (typing && e.key === 'Escape') { t.blur(); return; }  // leave a text box, keys work again
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (/^[1-9]$/.test(e.key)) {
      const box = document.querySelectorAll('#ann-labels input[type=checkbox]')[Number(e.key) - 1];
      if (box) { e.preventDefault(); box.click(); }
    } else if ('nNpPbB'.includes(e.key) && e.key.length === 1) {  // turns: focus the next / previous, blame it
      const turns = [...document.querySelectorAll('#ann-chat [data-testid="bot"]')]
        .filter((m) => /^Agent \d/.test(m.innerText.trim()));
      if (!turns.length) return;
      e.preventDefault();
      const at = turns.findIndex((m) => m.classList.contains('ann-focus'));
      const key = e.key.toLowerCase();
      if (key === 'b') { if (at >= 0) turns[at].click(); return; }
      const next = key === 'n' ? Math.min(at + 1, turns.length - 1) : Math.max(at - 1, 0);
      turns.forEach((m) => m.classList.remove('ann-focus'));
      turns[next].classList.add('ann-focus');
      turns[next].scrollIntoView({block: 'nearest'});
    } else if (e.key === 'j' || e.key === 'J') { e.preventDefault(); click('#ann-next'); }
    else if (e.key === 'k' || e.key === 'K') { e.preventDefault(); click('#ann-prev'); }
    else if (e.key === '?') {
      const help = document.querySelector('#ann-help');
      if (help) help.style.display = help.style.display === 'none' ? '' : 'none';
    }
  });
}"""
REMEMBER_JS = "(name) => { try { localStorage.setItem('r2mad-annotator', name || ''); } catch (e) {} return []; }"
CSS = """
#ann-labels label { padding: 2px 8px !important; margin: 0 !important; flex: 1 1 100%; }
#ann-labels .wrap { gap: 3px !important; }
#ann-side th { height: auto !important; }
#ann-suggestions details { margin-left: 1.2em; }
#ann-chat .ann-focus { outline: 3px solid #e8590c; outline-offset: 2px; border-radius: 6px; }
/* on screen: queue | run | labels; in the page (so in Tab order): labels, run, queue */
#ann-side { order: 1; } #ann-main { order: 2; } #ann-label-pane { order: 3; }
/* tables keep numbers whole: narrow cells, words wrap only between words, a wide table scrolls */
#ann-agreement table { display: block; overflow-x: auto; max-width: 100%; font-size: 0.85em; }
#ann-agreement th, #ann-agreement td { padding: 3px 6px !important; word-break: normal !important;
  overflow-wrap: normal !important; hyphens: none; }
#ann-agreement td:not(:first-child) { white-space: nowrap; }
"""
REMEMBER_QUEUE_JS = ("(queue) => { try { localStorage.setItem('r2mad-annotate-queue', queue || ''); } "
                     "catch (e) {} return []; }")  # a queue name: nothing secret
RECALL_JS = ("(name, visitor, queue) => { try { return [localStorage.getItem('r2mad-annotator') || '', visitor, "
             "localStorage.getItem('r2mad-annotate-queue') || '']; } catch (e) { return ['', visitor, '']; } }")
LINK_JS = """(run, queue) => {
  const base = location.origin + location.pathname;
  const link = run ? base + '?run=' + encodeURIComponent(run)
                   : (queue ? base + '?queue=' + encodeURIComponent(queue) : '');
  if (link && navigator.clipboard) navigator.clipboard.writeText(link).catch(() => {});
  return link;
}"""


def who_annotates(config) -> str:
    """One line at the top of the tab: who may label debates here, and how."""
    if not config.private_runs:
        return ("*Anyone using this app may label debates here; type your name so each label says who gave it "
                "(blank = local).*")
    names = ", ".join(config.app.annotators)
    who = f"the Space's annotators ({names})" if names else "the Space's annotators (none is named yet)"
    return (f"*Labelling debates here is for {who}: sign in with Hugging Face as one of them. Everyone else "
            "can read their own debates in Inspect runs.*")


def build(services: Services, demo: gr.Blocks, tabs: gr.Tabs, tab: gr.Tab, visitor_id: gr.BrowserState) -> None:
    """A sidebar (name, queue, its runs, stepping, a link) beside pages: Run (the chat, the labels beside
    it), Compare (two runs side by side, the labels still beside them), Agreement, Export."""
    h = AnnotateHandlers(services)
    config, taxonomy = services.config, services.store.taxonomy
    last_queue = gr.Textbox(visible=False)  # filled on load from this browser's localStorage (RECALL_JS)
    with gr.Column(elem_id="ann-panel"):
        gr.Markdown(who_annotates(config), elem_id="ann-who")
        with gr.Row(equal_height=False, elem_id="ann-layout"):
            with gr.Column(scale=3, min_width=320, elem_id="ann-label-pane") as label_pane:
                suggestions = gr.Markdown(elem_id="ann-suggestions")
                labels = gr.CheckboxGroup(label_choices(taxonomy), label="Failure labels (keys 1–9)",
                                          elem_id="ann-labels")
                turn = gr.Dropdown([NO_TURN], value=[], multiselect=True, elem_id="ann-turn",
                                   label="Blamed turns, one or several (for labels no suggestion placed)")
                note = gr.Textbox(label="Note", lines=1, elem_id="ann-note", max_length=NOTE_LIMIT)
                with gr.Accordion("Ideal action of the picked turn (what it should have said)", open=False,
                                  elem_id="ann-ideal-box"):
                    ideal = gr.Textbox(lines=3, show_label=False, elem_id="ann-ideal", max_length=NOTE_LIMIT,
                                       placeholder="Pick one turn, write what that agent should have said "
                                                   "(with its answer), then verify: a fork runs with it in place.")
                    with gr.Row():
                        ideal_save = gr.Button("Keep as opinion", size="sm", elem_id="ann-ideal-save", min_width=80)
                        ideal_verify = gr.Button("Verify by fork", size="sm", elem_id="ann-ideal-verify",
                                                 min_width=80)
                    moves = gr.Markdown(elem_id="ann-moves")
                save = gr.Button("Save & next (Ctrl+Enter)", variant="primary", elem_id="ann-save")
                others = gr.Markdown(elem_id="ann-others")
                gr.Markdown(KEYS_HELP, elem_id="ann-help")
                with gr.Accordion("What each label means (and its MAST mode)", open=False):
                    gr.Markdown(label_guide(taxonomy), elem_id="ann-guide")

            with gr.Column(scale=5, min_width=340, elem_id="ann-main"):
                header = gr.Markdown(elem_id="ann-header")
                with gr.Tabs(elem_id="ann-pages"):
                    with gr.Tab("Run", id="ann-run-page"):
                        chat = gr.Chatbot(label="Debate (click an agent's message to blame that turn; again to "
                                                "unpick it)", height=560, group_consecutive_messages=False,
                                          feedback_options=None, autoscroll=False, elem_id="ann-chat")
                    with gr.Tab("Compare", id="ann-compare-page"):
                        with gr.Row():
                            other_id = gr.Textbox(label="Other run id (same question; blank = this run's graph "
                                                        "only)", scale=3, elem_id="ann-other", max_length=FIELD_CHARS)
                            compare = gr.Button("Compare", scale=1, elem_id="ann-compare", min_width=90)
                            swap = gr.Button("Label the other run", scale=1, elem_id="ann-swap", min_width=90)
                        compared = gr.Dataframe(headers=COMPARE_HEADERS, interactive=False, wrap=True,
                                                label="Round against round", elem_id="ann-compared")
                        graphs = gr.HTML(elem_id="ann-graphs")
                    with gr.Tab("Agreement", id="ann-agreement-page", elem_id="ann-agreement-box"):
                        measure = gr.Button("Measure agreement", elem_id="ann-measure")
                        agreement = gr.Markdown(elem_id="ann-agreement")
                        disagreements = gr.Dataframe(headers=DISAGREEMENT_HEADERS, datatype=["html", "str", "str"],
                                                     interactive=False, wrap=True, elem_id="ann-disagreements",
                                                     label="Runs where annotators disagree (click to open)")
                        final_run = gr.Markdown(NO_RUN_FINAL, elem_id="ann-final-run")
                        final = gr.CheckboxGroup([(k, k) for k in taxonomy], label="Final labels of this run",
                                                 elem_id="ann-final")
                        final_save = gr.Button("Write final labels (blame: the picked turns)",
                                               elem_id="ann-final-save")
                        final_md = gr.Markdown(elem_id="ann-final-md")
                    with gr.Tab("Export", id="ann-export-page"):
                        gr.Markdown("A Parquet dataset (flat label rows with their MAST mode, whole runs) with a "
                                    "card listing the taxonomy and the agreement figures (`python -m r2mad export "
                                    "--hub user/name` does the same).")
                        export = gr.Button("Export dataset (zip)", elem_id="ann-export")
                        export_file = gr.File(label="Dataset", interactive=False, elem_id="ann-export-file")
                        with gr.Row():
                            hub_repo = gr.Textbox(label="Hub dataset repo (user/name)", scale=2,
                                                  elem_id="ann-hub-repo", max_length=FIELD_CHARS)
                            hub_token = gr.Textbox(type="password", scale=2, elem_id="ann-hub-token",
                                                   max_length=FIELD_CHARS,
                                                   label="Token with write access (used once, never kept; signed-in "
                                                         "annotators on a Space may leave it empty)")
                            push = gr.Button("Push to the Hub", scale=1, elem_id="ann-push")
                        pushed = gr.Markdown(elem_id="ann-pushed")
            with gr.Column(scale=2, min_width=300, elem_id="ann-side"):
                annotator = gr.Textbox(label="Your name (blank = local)", elem_id="ann-name", max_length=NAME_CHARS,
                                       visible=not config.private_runs)  # else: the annotator's login
                queue = gr.Dropdown(h.queue_names(), value=None, label="Queue", allow_custom_value=True,
                                    elem_id="ann-queue")
                progress = gr.Markdown(elem_id="ann-progress")
                freeze = gr.Button("Freeze a snapshot of this queue", size="sm", elem_id="ann-freeze", min_width=80)
                items = gr.Dataframe(headers=QUEUE_HEADERS, datatype=["str", "html", "str", "number", "str"],
                                     interactive=False, wrap=True, max_height=300, elem_id="ann-items",
                                     label="Runs (most flags first; click one; hover an id for all of it)")
                with gr.Row():
                    prev = gr.Button("◀ Prev (K)", elem_id="ann-prev", size="sm", min_width=80)
                    nxt = gr.Button("Next (J) ▶", elem_id="ann-next", size="sm", min_width=80)
                    copy = gr.Button("Copy link", size="sm", elem_id="ann-copy", min_width=80)
                with gr.Row():
                    run_id = gr.Textbox(label="Run id (paste one to open it)", scale=3, elem_id="ann-run",
                                     max_length=FIELD_CHARS)
                    open_run = gr.Button("Open", size="sm", scale=1, elem_id="ann-open", min_width=60)
                link = gr.Textbox(label="Link to this run", interactive=False, elem_id="ann-link")
                with gr.Accordion("New queue from a filter", open=False, elem_id="ann-new"):
                    q_name = gr.Textbox(label="Queue name", elem_id="ann-q-name", max_length=NAME_CHARS)
                    with gr.Row():
                        q_method = gr.Dropdown([ANY, *METHODS], value=ANY, allow_custom_value=True, label="Method")
                        q_backbone = gr.Dropdown([ANY, *config.backbones], value=ANY, allow_custom_value=True,
                                                 label="Backbone")
                    with gr.Row():
                        q_bank = gr.Dropdown([ANY, *services.bank_choices()], value=ANY, allow_custom_value=True,
                                             label="Bank")
                        q_outcome = gr.Radio([ANY, "correct", "wrong"], value="wrong", label="Outcome")
                    q_flags = gr.CheckboxGroup(list(FLAGS), label="Only runs with")
                    q_detector = gr.Dropdown([ANY, *taxonomy], value=ANY, label="Only runs a detector flagged as")
                    q_frozen = gr.Checkbox(False, elem_id="ann-q-frozen",
                                           label="Frozen: a snapshot of the runs matching now (new runs do not join)")
                    with gr.Row():
                        q_n = gr.Number(1, precision=0, minimum=1, maximum=20, label="Annotators per run",
                                        elem_id="ann-q-n")
                        q_blind = gr.Checkbox(False, label="Blind: hide others' labels until you submit",
                                              elem_id="ann-q-blind")
                    q_create = gr.Button("Create queue", elem_id="ann-create")
        with label_pane:
            bank_growth_block(h.services, h._me, run_id, [annotator, visitor_id])  # labels become memory

    shown = [run_id, header, chat, suggestions, labels, turn, note, others, progress, items, final, final_md, moves,
             ideal, final_run]  # SHOWN
    who = [annotator, visitor_id]
    open_in = [queue, *who]
    queue.change(h.open_queue, open_in, shown, api_visibility="private")
    queue.change(None, [queue], None, js=REMEMBER_QUEUE_JS)
    annotator.submit(h.open_queue, open_in, shown, api_visibility="private")
    annotator.change(None, [annotator], None, js=REMEMBER_JS)
    q_create.click(h.create_queue, [q_name, q_n, q_blind, q_frozen, *who], [queue], api_visibility="private",
                   inputs_kwargs={"method": q_method, "backbone": q_backbone, "bank": q_bank, "outcome": q_outcome,
                                  "flags": q_flags, "detector": q_detector})
    freeze.click(h.freeze_queue, [queue, *who], [queue], api_visibility="private")
    ideal_save.click(h.save_ideal, [run_id, turn, ideal, *who], [moves], api_visibility="private")
    ideal_verify.click(h.verify_ideal, [run_id, turn, ideal, *who], [moves], api_visibility="private")
    open_run.click(h.show, [queue, run_id, *who], shown, api_visibility="private")
    items.select(h.select_row, [queue, *who], shown, api_visibility="private")
    prev.click(h.step_back, [queue, run_id, *who], shown, api_visibility="private")
    nxt.click(h.step_on, [queue, run_id, *who], shown, api_visibility="private")
    save.click(h.save_next, [queue, run_id, labels, note, turn, *who], shown, api_visibility="private")
    chat.select(h.pick_turn, [run_id, turn, *who], [turn], api_visibility="private")
    copy.click(None, [run_id, queue], [link], js=LINK_JS)
    measure.click(h.measure, who, [agreement, disagreements], api_visibility="private")
    disagreements.select(h.select_row, [queue, *who], shown, api_visibility="private")
    final_save.click(h.save_final, [run_id, final, turn, *who], [final_md], api_visibility="private")
    export.click(h.export, who, [export_file], api_visibility="private")
    push.click(h.push, [hub_repo, hub_token, *who], [pushed], api_visibility="private")
    compare.click(h.compare, [run_id, other_id, *who], [compared, graphs], api_visibility="private")
    swap.click(h.label_other, [queue, run_id, other_id, *who], [*shown, other_id], api_visibility="private").then(
        h.compare, [run_id, other_id, *who], [compared, graphs], api_visibility="private")
    demo.load(h.deep_link, [*who, last_queue], [annotator, tabs, queue, *shown], js=RECALL_JS,
              api_visibility="private")
    demo.load(None, None, None, js=KEYS_JS)

