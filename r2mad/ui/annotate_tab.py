"""The Annotate tab: walk a named queue of saved runs with the keyboard, tick failure labels (detector
suggestions pre-ticked, with evidence), blame a turn from the chat, see others' labels (hidden in blind
queues until you submit), measure agreement, adjudicate, and export the labels as a dataset.
Handlers live in annotate_handlers.py, renderers in annotate_view.py."""
from __future__ import annotations

import gradio as gr

from r2mad.methods import METHODS
from r2mad.ui.annotate_handlers import ANY, FLAGS, AnnotateHandlers
from r2mad.ui.annotate_view import (
    COMPARE_HEADERS,
    DISAGREEMENT_HEADERS,
    KEYS_HELP,
    NO_TURN,
    QUEUE_HEADERS,
    label_choices,
)
from r2mad.ui.bank_growth import bank_growth_block
from r2mad.ui.services import Services

KEYS_JS = """() => {
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
    } else if (e.key === 'j' || e.key === 'J') { e.preventDefault(); click('#ann-next'); }
    else if (e.key === 'k' || e.key === 'K') { e.preventDefault(); click('#ann-prev'); }
    else if (e.key === '?') {
      const help = document.querySelector('#ann-help');
      if (help) help.style.display = help.style.display === 'none' ? '' : 'none';
    }
  });
}"""
REMEMBER_JS = "(name) => { try { localStorage.setItem('r2mad-annotator', name || ''); } catch (e) {} return []; }"
RECALL_JS = ("(name, visitor) => { try { return [localStorage.getItem('r2mad-annotator') || '', visitor]; } "
             "catch (e) { return ['', visitor]; } }")
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
    h = AnnotateHandlers(services)
    config, taxonomy = services.config, services.store.taxonomy
    with gr.Column(elem_id="ann-panel"):
        gr.Markdown(who_annotates(config), elem_id="ann-who")
        with gr.Row():
            annotator = gr.Textbox(label="Your name (blank = local)", scale=1, elem_id="ann-name",
                                   visible=not config.private_runs)  # else: the annotator's login
            queue = gr.Dropdown(h.queue_names(), value=None, label="Queue", allow_custom_value=True, scale=2,
                                elem_id="ann-queue")
        with gr.Accordion("New queue from a filter", open=False, elem_id="ann-new"):
            with gr.Row():
                q_name = gr.Textbox(label="Queue name", elem_id="ann-q-name")
                q_method = gr.Dropdown([ANY, *METHODS], value=ANY, allow_custom_value=True, label="Method")
                q_backbone = gr.Dropdown([ANY, *config.backbones], value=ANY, allow_custom_value=True,
                                         label="Backbone")
                q_bank = gr.Dropdown([ANY, *services.bank_choices()], value=ANY, allow_custom_value=True,
                                     label="Bank")
                q_outcome = gr.Radio([ANY, "correct", "wrong"], value="wrong", label="Outcome")
            with gr.Row():
                q_flags = gr.CheckboxGroup(list(FLAGS), label="Only runs with")
                q_detector = gr.Dropdown([ANY, *taxonomy], value=ANY, label="Only runs a detector flagged as")
                q_n = gr.Number(1, precision=0, minimum=1, maximum=20, label="Annotators per run", elem_id="ann-q-n")
                q_blind = gr.Checkbox(False, label="Blind: hide others' labels until you submit", elem_id="ann-q-blind")
            q_create = gr.Button("Create queue", elem_id="ann-create")
        progress = gr.Markdown(elem_id="ann-progress")
        items = gr.Dataframe(headers=QUEUE_HEADERS, interactive=False, wrap=True, max_height=260,
                             label="Queue (most detector flags first; click a row to open it)", elem_id="ann-items")
        with gr.Row():
            prev = gr.Button("◀ Previous (K)", elem_id="ann-prev", size="sm")
            nxt = gr.Button("Next (J) ▶", elem_id="ann-next", size="sm")
            run_id = gr.Textbox(label="Run id", scale=2, elem_id="ann-run")
            open_run = gr.Button("Open run", size="sm", elem_id="ann-open")
            copy = gr.Button("Copy link", size="sm", elem_id="ann-copy")
        link = gr.Textbox(label="Link to this run", interactive=False, elem_id="ann-link")
        gr.Markdown(KEYS_HELP, elem_id="ann-help")
        header = gr.Markdown(elem_id="ann-header")
        chat = gr.Chatbot(label="Debate (click an agent's message to blame that turn)", height=480,
                          group_consecutive_messages=False, feedback_options=None, autoscroll=False,
                          elem_id="ann-chat")
        suggestions = gr.Markdown(elem_id="ann-suggestions")
        labels = gr.CheckboxGroup(label_choices(taxonomy), label="Failure labels (keys 1–9)", elem_id="ann-labels")
        with gr.Row():
            turn = gr.Dropdown([NO_TURN], value=NO_TURN, label="Blamed turn (for labels without a detector's)",
                               elem_id="ann-turn")
            note = gr.Textbox(label="Note", lines=1, scale=2, elem_id="ann-note")
        save = gr.Button("Save & next (Ctrl+Enter)", variant="primary", elem_id="ann-save")
        others = gr.Markdown(elem_id="ann-others")
        with gr.Accordion("Agreement and adjudication", open=False, elem_id="ann-agreement-box"):
            measure = gr.Button("Measure agreement", elem_id="ann-measure")
            agreement = gr.Markdown(elem_id="ann-agreement")
            disagreements = gr.Dataframe(headers=DISAGREEMENT_HEADERS, interactive=False, wrap=True,
                                         label="Runs where annotators disagree (click to open)",
                                         elem_id="ann-disagreements")
            final = gr.CheckboxGroup([(k, k) for k in taxonomy], label="Final labels of this run",
                                     elem_id="ann-final")
            final_save = gr.Button("Write final labels", elem_id="ann-final-save")
            final_md = gr.Markdown(elem_id="ann-final-md")
        with gr.Accordion("Compare with another run · who moved whom", open=False):
            with gr.Row():
                other_id = gr.Textbox(label="Other run id (same question; blank = this run's graph only)",
                                      scale=3, elem_id="ann-other")
                compare = gr.Button("Compare", scale=1, elem_id="ann-compare")
            compared = gr.Dataframe(headers=COMPARE_HEADERS, interactive=False, wrap=True,
                                    label="Round against round", elem_id="ann-compared")
            graphs = gr.HTML(elem_id="ann-graphs")
        with gr.Accordion("Export the labels as a dataset", open=False):
            gr.Markdown("A Parquet dataset (flat label rows, whole runs) with a card listing the taxonomy and "
                        "the agreement figures (`python -m r2mad export --hub user/name` does the same).")
            export = gr.Button("Export dataset (zip)", elem_id="ann-export")
            export_file = gr.File(label="Dataset", interactive=False, elem_id="ann-export-file")
            with gr.Row():
                hub_repo = gr.Textbox(label="Hub dataset repo (user/name)", scale=2, elem_id="ann-hub-repo")
                hub_token = gr.Textbox(type="password", scale=2, elem_id="ann-hub-token",
                                       label="Token with write access (used once, never kept; signed-in "
                                             "annotators on a Space may leave it empty)")
                push = gr.Button("Push to the Hub", scale=1, elem_id="ann-push")
            pushed = gr.Markdown(elem_id="ann-pushed")
        bank_growth_block(h.services, h._me, run_id, [annotator, visitor_id])  # labels become memory

    shown = [run_id, header, chat, suggestions, labels, turn, note, others, progress, items, final, final_md]  # SHOWN
    who = [annotator, visitor_id]
    open_in = [queue, *who]
    queue.change(h.open_queue, open_in, shown, api_visibility="private")
    annotator.submit(h.open_queue, open_in, shown, api_visibility="private")
    annotator.change(None, [annotator], None, js=REMEMBER_JS)
    q_create.click(h.create_queue, [q_name, q_method, q_backbone, q_bank, q_outcome, q_flags, q_detector, q_n, q_blind,
                                    *who], [queue], api_visibility="private")
    open_run.click(h.show, [queue, run_id, *who], shown, api_visibility="private")
    items.select(h.select_row, [queue, *who], shown, api_visibility="private")
    prev.click(h.step_back, [queue, run_id, *who], shown, api_visibility="private")
    nxt.click(h.step_on, [queue, run_id, *who], shown, api_visibility="private")
    save.click(h.save_next, [queue, run_id, labels, note, turn, *who], shown, api_visibility="private")
    chat.select(h.pick_turn, [run_id, *who], [turn], api_visibility="private")
    copy.click(None, [run_id, queue], [link], js=LINK_JS)
    measure.click(h.measure, who, [agreement, disagreements], api_visibility="private")
    disagreements.select(h.select_row, [queue, *who], shown, api_visibility="private")
    final_save.click(h.save_final, [run_id, final, turn, *who], [final_md], api_visibility="private")
    export.click(h.export, who, [export_file], api_visibility="private")
    push.click(h.push, [hub_repo, hub_token, *who], [pushed], api_visibility="private")
    compare.click(h.compare, [run_id, other_id, *who], [compared, graphs], api_visibility="private")
    demo.load(h.deep_link, who, [annotator, tabs, queue, *shown], js=RECALL_JS, api_visibility="private")
    demo.load(None, None, None, js=KEYS_JS)
