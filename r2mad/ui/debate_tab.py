"""The Debate tab: backbone, token, methods, bank, settings and question in; one streaming chat (or up
to four side-by-side columns with a summary table) out. Layout and wiring only; the run itself is
r2mad.ui.live and the rendering r2mad.ui.render."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from r2mad.evaluation.datasets import load_split
from r2mad.methods import REGISTRY, names
from r2mad.ui import handlers
from r2mad.ui.services import Services
from r2mad.ui.tables import SUMMARY_HEADERS

LETTERS = "ABCDEFGHIJ"
MAX_COLUMNS = 4
METHOD_LABELS = {name: f"{spec.title} ({spec.paper})" if spec.paper and spec.family != "ablation" else spec.title
                 for name, spec in REGISTRY.items()}


@dataclass
class DebateTab:
    inputs: list[Any]  # in the order handlers.run_debate takes them
    outputs: list[Any]  # in the order handlers.view returns them
    fill: list[Any]  # controls a rerun fills (handlers.rerun_values order)
    run_event: Any
    stop_button: Any
    run_fn: Any
    unload_fn: Any
    state: Any


def example_rows() -> list[list[str]]:
    """[question, A..J, gold] rows from the demo test splits."""
    rows = []
    for dataset in ("demo-mcq", "demo-math"):
        for task in load_split(dataset, "test").tasks:
            options = dict(task.options)
            rows.append([task.question, *(options.get(letter, "") for letter in LETTERS), task.gold or ""])
    return rows


def build(services: Services, visitor_id) -> DebateTab:
    """`visitor_id`: the gr.BrowserState with the id this browser keeps (the key of its runs)."""
    config, s = services.config, services.config.settings
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            backbone = gr.Dropdown([(b.label or name, name) for name, b in config.backbones.items()],
                                   value=config.default_backbone, label="Backbone")
            token = gr.Textbox("", type="password", label="Hugging Face token (optional)",
                               info="Used for this browser session only; never shown, logged or stored.")
            with gr.Accordion("Custom OpenAI-compatible endpoint", open=False,
                              visible=config.app.allow_custom_endpoint):
                base_url = gr.Textbox("", label="base_url", placeholder="http://localhost:8000/v1",
                                      interactive=config.app.allow_custom_endpoint)
                model = gr.Textbox("", label="model", placeholder="leave empty to ask /v1/models",
                                   interactive=config.app.allow_custom_endpoint)
            method_choices = [(METHOD_LABELS[m], m) for family in ("debate", "baseline", "ablation")
                              for m in names(family)]
            methods = gr.Dropdown(method_choices, value=[config.app.default_method], multiselect=True,
                                  max_choices=MAX_COLUMNS, allow_custom_value=True, label="Method(s)",
                                  elem_id="methods",
                                  info="Pick 2–4 to compare side by side (round 0 is computed once and shared).")
            banks = services.bank_choices()
            bank = gr.Dropdown([("(no memory bank)", "")] + [(b, b) for b in banks],
                               value=config.app.default_bank if config.app.default_bank in banks else "",
                               label="Memory bank (R²-MAD, ICL-CoT)")
            with gr.Accordion("Settings", open=False, elem_id="settings"):
                agents = gr.Slider(1, 8, value=s.agents, step=1, label="Agents", elem_id="agents")
                rounds = gr.Slider(1, 6, value=s.rounds, step=1, label="Rounds in all (incl. round 0)",
                                   elem_id="rounds")
                k = gr.Slider(1, 8, value=s.r2mad.k, step=1, label="K (retrieved cases per agent and round)")
                gamma = gr.Slider(0.0, 1.0, value=s.r2mad.gamma, step=0.05, label="γ (λ = 1 − γ·consensus)")
                run_profile = gr.Radio(["demo", "paper"], value=s.profile, label="Profile", elem_id="profile",
                                   info="paper: the papers' decoding (temperature 1.0, top_p 1.0, up to 6,144 "
                                        "tokens) and task personas with the format in the system prompt; slow "
                                        "on the embedded model. demo: fast settings for small models.")
                temperature = gr.Slider(0.0, 2.0, value=s.temperature, step=0.05, label="Temperature")
                max_tokens = gr.Slider(16, 8192, value=s.max_tokens, step=16, label="Max tokens per answer",
                                       elem_id="max-tokens")
                seed = gr.Number(value=s.seed, precision=0, label="Seed (empty = random)")
                answer_guard = gr.Radio(["auto", "on", "off"], value=s.answer_guard, label="Answer guard",
                                        elem_id="answer-guard",
                                        info="When an agent's reasoning gives no answer in the task's format, "
                                             "ask it once more for the answer alone (auto: on for the embedded model).")
        with gr.Column(scale=2):
            question = gr.Textbox("", lines=3, label="Question", elem_id="question",
                                  placeholder="A math problem, or a multiple-choice question with options below")
            with gr.Accordion("Multiple-choice options (optional; empty ones are ignored)", open=False):
                options = [gr.Textbox("", label=f"Option {letter}", elem_id=f"option-{letter}") for letter in LETTERS]
            gold = gr.Textbox("", label="Gold answer (optional; a letter or a number)", elem_id="gold")
            with gr.Row():
                run_button = gr.Button("Run debate", variant="primary", elem_id="run")
                stop_button = gr.Button("Stop", variant="stop", elem_id="stop")
            status = gr.Markdown(elem_id="final")
            with gr.Column(visible=True) as single_box:
                single_chat = gr.Chatbot(label="Debate", height=640, elem_id="chat-single",
                                         group_consecutive_messages=False, feedback_options=None)
    with gr.Row(visible=False) as compare_row:
        columns = [gr.Chatbot(label=f"Method {i + 1}", height=560, elem_id=f"chat-col-{i}",
                              group_consecutive_messages=False, feedback_options=None, visible=i < 2)
                   for i in range(MAX_COLUMNS)]
    summary = gr.Dataframe(headers=SUMMARY_HEADERS, label="Side-by-side summary", visible=False,
                           interactive=False, elem_id="summary")
    with gr.Accordion("Transcript (JSON)", open=False):
        transcript_json = gr.JSON(label="Canonical transcript(s)")
        download = gr.DownloadButton("Download JSON", visible=False)
    rows = example_rows()
    gr.Examples(rows, inputs=[question, *options, gold], label="Example questions (demo test split)",
                example_labels=[row[0] if len(row[0]) <= 70 else row[0][:69] + "…" for row in rows])
    state = gr.State({})

    inputs = [backbone, token, base_url, model, methods, bank, agents, rounds, k, gamma, temperature,
              max_tokens, seed, answer_guard, question, *options, gold, visitor_id, run_profile]
    outputs = [status, single_box, single_chat, compare_row, *columns, summary, transcript_json, download, state]
    fill = [backbone, methods, bank, agents, rounds, k, gamma, temperature, max_tokens, seed, answer_guard,
            question, *options, gold]

    debate = handlers.DebateHandlers(services)
    run_fn = debate.run_debate
    # The run streams its own "cancelled" view when Stop signals it (see live.stream), so Stop needs
    # no Gradio cancels=: a cancelled event can race with its last yield and flag its outputs "Error".
    run_event = run_button.click(run_fn, inputs, outputs, api_name="debate", concurrency_id="debate",
                                 trigger_mode="multiple", show_progress="hidden")
    question.submit(run_fn, inputs, outputs, api_visibility="private", concurrency_id="debate",
                    show_progress="hidden")
    stop_button.click(debate.stop, None, None, api_name="stop", queue=False)
    run_profile.change(debate.profile_values, [run_profile], [temperature, max_tokens], api_visibility="private",
                   queue=False)
    methods.change(handlers.layout_for, [methods], [single_box, compare_row, *columns, summary],
                   api_visibility="private", queue=False)
    return DebateTab(inputs, outputs, fill, run_event, stop_button, run_fn, debate.unload, state)
