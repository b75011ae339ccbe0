"""The Debate tab: example cards on top (a recorded debate shows at once), the question and the methods,
Run / Stop, then the outcome line, the scoreboard and the full texts (or, for 2–4 methods, the methods ×
rounds matrix, the summary table and one tab of full texts per method). Backbone, token, endpoint, bank
and settings sit in one collapsed "Advanced" panel. Layout and wiring only: the run is r2mad.ui.live,
the updates r2mad.ui.views, the rendering r2mad.ui.render and scoreboard."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from r2mad.config import bounds
from r2mad.methods import REGISTRY, names
from r2mad.ui import handlers
from r2mad.ui.examples import BACKBONE, CARDS, SEED, cached, card_task
from r2mad.ui.render import final_markdown
from r2mad.ui.scoreboard import scoreboard_html
from r2mad.ui.services import Services
from r2mad.ui.tables import SUMMARY_HEADERS
from r2mad.ui.views import MAX_COLUMNS, layout_for, view

LETTERS = "ABCDEFGHIJ"
GROUPS = {"debate": "Debate methods", "baseline": "Single-agent baselines", "ablation": "R²-MAD ablations"}
ORDER = tuple(m for family in GROUPS for m in names(family))  # the method list, group by group


def method_label(name: str) -> str:
    spec = REGISTRY[name]
    what = spec.description or spec.title
    return f"{'R²-MAD, ' if spec.family == 'ablation' else ''}{spec.label} — {what}"


METHOD_LABELS = {name: method_label(name) for name in REGISTRY}


def _group_headings_css() -> str:
    """A heading above the first method of each group in the open method list (a Dropdown has no option
    groups): the list's options carry their index in `ORDER` as data-index."""
    rules = []
    for family, heading in GROUPS.items():
        first = ORDER.index(names(family)[0])
        rules.append(f'#methods li[data-index="{first}"]::before {{ content: "{heading}"; }}')
    firsts = ", ".join(f'#methods li[data-index="{ORDER.index(names(f)[0])}"]' for f in GROUPS)
    return "\n".join(rules) + f"""
{firsts} {{ flex-wrap: wrap; }}
#methods li[data-index]::before {{ display: block; flex-basis: 100%; margin: 6px 0 4px; font-size: 0.78rem;
  font-weight: 700; letter-spacing: 0.04em; text-transform: uppercase; color: #312e81; }}
"""


METHOD_GROUPS_CSS = _group_headings_css()


@dataclass
class DebateTab:
    inputs: list[Any]  # in the order handlers.run_debate takes them
    outputs: list[Any]  # in the order views.view returns them
    fill: list[Any]  # controls a rerun fills (InspectHandlers.rerun order)
    run_event: Any
    stop_button: Any
    run_fn: Any
    unload_fn: Any
    state: Any
    fork_offer: tuple[Any, Any, Any]  # (saved run id, round, "Fork from this round"): layout.py opens the Fork tab


def needs_token(config, backbone: str) -> bool:
    """The token field is for backbones a visitor's own token may reach (`visitor_token`)."""
    spec = config.backbones.get(backbone)
    return bool(spec and spec.visitor_token)


MAX_AGENTS = 8  # the Agents slider's maximum: one backbone dropdown each under Mixed models


def mix_values(t, known) -> list:
    """The Mixed-models controls for a saved transcript `t` (checkbox, auxiliary backbone, one dropdown per
    agent), given the backbone names configured here (`known`); gr.skip() where a name is not configured."""
    names = t.agent_backbones() if t is not None else []
    if not names or all(n == t.backbone for n in names):
        return [False, gr.skip(), *(gr.skip() for _ in range(MAX_AGENTS))]
    aux = "" if t.backbone == names[0] else t.backbone
    return [True, aux if aux in known or not aux else gr.skip(),
            *(names[i] if i < len(names) and names[i] in known else gr.skip() for i in range(MAX_AGENTS))]


def build(services: Services, visitor_id) -> DebateTab:
    """`visitor_id`: the gr.BrowserState with the id this browser keeps (the key of its runs)."""
    config, s = services.config, services.config.settings
    cards = [(card, card_task(card)) for card in CARDS]
    gr.Markdown("Try a card: three small language-model agents answer, read each other and revise; "
                "the grid shows who answered what in each round (green = correct, red = wrong).",
                elem_id="examples-intro")
    with gr.Row(elem_id="examples", equal_height=True):
        card_buttons = [gr.Button(card.label(task), elem_classes=["example-card"], elem_id=f"example-{i}",
                                  size="sm") for i, (card, task) in enumerate(cards)]
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            question = gr.Textbox("", lines=2, label="Question", elem_id="question",
                                  placeholder="A math problem, or a multiple-choice question with options below")
            with gr.Accordion("Multiple-choice options (optional; empty ones are ignored)", open=False):
                options = [gr.Textbox("", label=f"Option {letter}", elem_id=f"option-{letter}") for letter in LETTERS]
            gold = gr.Textbox("", label="Correct answer, if you know it (a letter or a number; used to score)",
                              elem_id="gold")
        with gr.Column(scale=2, min_width=300):
            methods = gr.Dropdown([(METHOD_LABELS[m], m) for m in ORDER], value=[config.app.default_method],
                                  multiselect=True, allow_custom_value=True, label="Method(s)", elem_id="methods",
                                  info="Grouped: debate methods, single-agent baselines, R²-MAD ablations. "
                                       f"Pick 2–{MAX_COLUMNS} to compare side by side.")
            hint = gr.Markdown(elem_id="methods-hint")
            with gr.Row():
                run_button = gr.Button("Run debate", variant="primary", elem_id="run", scale=2, min_width=110)
                live_button = gr.Button("Run it live", variant="secondary", elem_id="run-live", visible=False,
                                        scale=2, min_width=110)
                stop_button = gr.Button("Stop", variant="stop", elem_id="stop", interactive=False, scale=1,
                                        min_width=70)
    status = gr.Markdown(elem_id="final")
    scoreboard = gr.HTML("", elem_id="scoreboard")
    saved_run = gr.State("")
    with gr.Row(visible=False, equal_height=True, elem_id="debate-fork") as fork_box:  # under a finished debate
        fork_round = gr.Dropdown([], label="Fork from round", show_label=False, container=False, scale=0,
                                 min_width=90, elem_id="debate-fork-round")
        fork_button = gr.Button("Fork from this round", size="sm", scale=0, min_width=180,
                                elem_id="debate-fork-button")
    with gr.Column(visible=False) as single_box:  # the full texts, shown with the first debate
        single_chat = gr.Chatbot(label="Full texts, per round and agent (click an agent to open it)",
                                 height=560, elem_id="chat-single", group_consecutive_messages=False,
                                 feedback_options=None, autoscroll=False, buttons=[])
    with gr.Column(visible=False) as compare_box:
        summary = gr.Dataframe(headers=SUMMARY_HEADERS, label="Side-by-side summary", interactive=False,
                               elem_id="summary", wrap=True)
        summary_file = gr.DownloadButton("Download summary (CSV)", visible=False, elem_id="summary-csv", size="sm")
        matrix = gr.HTML("", elem_id="matrix")
        with gr.Tabs():
            tabs, columns = [], []
            for i in range(MAX_COLUMNS):
                with gr.Tab(f"Method {i + 1}", visible=i < 2) as tab:
                    columns.append(gr.Chatbot(label=f"Method {i + 1}", height=520, elem_id=f"chat-col-{i}",
                                              group_consecutive_messages=False, feedback_options=None,
                                              autoscroll=False, buttons=[]))
                tabs.append(tab)
    with gr.Accordion("Transcript (JSON)", open=False):
        transcript_json = gr.JSON(label="Canonical transcript(s)")
        download = gr.DownloadButton("Download JSON", visible=False, elem_id="download-json")
    with gr.Accordion("Advanced: backbone, token, endpoint, memory bank and settings", open=False,
                      elem_id="advanced"):
        choices = [(b.label or name, name) for name, b in config.backbones.items()]
        backbone = gr.Dropdown(choices, value=config.default_backbone, label="Backbone")
        mixed = gr.Checkbox(False, label="Mixed models: each agent on its own backbone", elem_id="mixed-models")
        with gr.Group(visible=False, elem_id="agent-backbones") as mixed_box:
            with gr.Row():
                agent_backbones = [gr.Dropdown(choices, value=config.default_backbone, label=f"Agent {i + 1}",
                                               visible=i < s.agents, elem_id=f"agent-backbone-{i + 1}",
                                               min_width=180) for i in range(MAX_AGENTS)]
            aux_backbone = gr.Dropdown([("Agent 1's backbone", ""), *choices], value="", elem_id="aux-backbone",
                                       label="Summaries, judges and advice", min_width=180)
        token = gr.Textbox("", type="password", label="Hugging Face token", elem_id="token",
                           visible=needs_token(config, config.default_backbone),
                           info="Sent only to the Hugging Face backbones (or a custom endpoint you give), for this "
                                "browser session only; never shown, logged or stored.")
        with gr.Accordion("Custom OpenAI-compatible endpoint", open=False,
                          visible=config.app.allow_custom_endpoint):
            base_url = gr.Textbox("", label="base_url", placeholder="http://localhost:8000/v1",
                                  interactive=config.app.allow_custom_endpoint)
            model = gr.Textbox("", label="model", placeholder="leave empty to ask /v1/models",
                               interactive=config.app.allow_custom_endpoint)
        banks = services.bank_choices()
        bank = gr.Dropdown([("(no memory bank)", "")] + [(b, b) for b in banks],
                           value=config.app.default_bank if config.app.default_bank in banks else "",
                           label="Memory bank (R²-MAD, ICL-CoT)")
        with gr.Group(elem_id="settings"):
            with gr.Row():
                agents = gr.Slider(1, 8, value=s.agents, step=1, label="Agents", elem_id="agents")
                rounds = gr.Slider(1, 6, value=s.rounds, step=1, label="Rounds in all (incl. round 0)",
                                   elem_id="rounds")
                max_tokens = gr.Slider(16, 8192, value=s.max_tokens, step=16, label="Max tokens per answer",
                                       elem_id="max-tokens")
            with gr.Row():
                temperature = gr.Slider(0.0, 2.0, value=s.temperature, step=0.05, label="Temperature")
                seed = gr.Number(value=s.seed, precision=0, minimum=0, maximum=bounds("seed")[1],
                                 label="Seed (empty = random)", elem_id="seed")
                answer_guard = gr.Radio(["auto", "on", "off"], value=s.answer_guard, label="Answer guard",
                                        elem_id="answer-guard",
                                        info="Ask once more for the answer alone when none is found "
                                             "(auto: on for the embedded model).")
            run_profile = gr.Radio(["demo", "paper"], value=s.profile, label="Profile", elem_id="profile",
                                   info="paper: the papers' decoding (temperature 1.0, top_p 1.0, up to 6,144 "
                                        "tokens) and task personas with the format in the system prompt; slow "
                                        "on the embedded model. demo: fast settings for small models.")
            with gr.Row():
                k = gr.Slider(1, 8, value=s.r2mad.k, step=1, label="R²-MAD: K (cases per agent and round)")
                gamma = gr.Slider(0.0, 1.0, value=s.r2mad.gamma, step=0.05, label="R²-MAD: γ (λ = 1 − γ·consensus)")
    state = gr.State({})

    inputs = [backbone, token, base_url, model, methods, bank, agents, rounds, k, gamma, temperature,
              max_tokens, seed, answer_guard, question, *options, gold, visitor_id, run_profile, mixed, aux_backbone,
              *agent_backbones]
    outputs = [status, single_box, single_chat, compare_box, *columns, summary, transcript_json, download, state,
               scoreboard, matrix, summary_file, *tabs, saved_run, fork_box, fork_round]
    fill = [backbone, methods, bank, agents, rounds, k, gamma, temperature, max_tokens, seed, answer_guard,
            question, *options, gold, mixed, aux_backbone, *agent_backbones]

    debate = handlers.DebateHandlers(services)
    run_fn = debate.run_debate

    def lock():
        return gr.Button(interactive=False), gr.Button(interactive=False), gr.Button(interactive=True)

    def unlock():
        return gr.Button(interactive=True), gr.Button(interactive=True), gr.Button(interactive=False)

    buttons = [run_button, live_button, stop_button]
    # Run is off and Stop on while a debate runs. The run streams its own "cancelled" view when Stop
    # signals it (see live.stream), so Stop needs no Gradio cancels=.
    started = gr.on([run_button.click, live_button.click, question.submit], lock, None, buttons,
                    queue=False, show_progress="hidden", api_visibility="private")
    # the app's line (services.admission) holds debates back and tells each its place; the framework's own
    # limit for them is the line's capacity, so a debate waiting there is never hidden in the framework's queue
    run_event = started.then(run_fn, inputs, outputs, api_name="debate", concurrency_id="debate",
                             concurrency_limit=services.admission.capacity, trigger_mode="multiple",
                             show_progress="hidden")
    run_event.then(unlock, None, buttons, queue=False, show_progress="hidden", api_visibility="private")
    stop_button.click(debate.stop, None, None, api_name="stop", queue=False)
    run_profile.change(debate.profile_values, [run_profile], [temperature, max_tokens], api_visibility="private",
                       queue=False)
    methods.change(layout_for, [methods], [single_box, compare_box, hint], api_visibility="private",
                   queue=False, show_progress="hidden")
    mix = [mixed, agents, aux_backbone, *agent_backbones]

    def token_box(chosen, on, n, aux, *per_agent):
        """The token field shows when the backbone (with Mixed models: an agent's or the auxiliary one) takes one."""
        names = [aux, *per_agent[:int(n)]] if on else [chosen]
        return gr.Textbox(visible=any(needs_token(config, b) for b in names if b))

    gr.on([backbone.change, *(c.change for c in mix)], token_box, [backbone, *mix], [token],
          api_visibility="private", queue=False, show_progress="hidden")
    mixed.change(lambda on: (gr.Group(visible=on), gr.Dropdown(interactive=not on)), [mixed], [mixed_box, backbone],
                 api_visibility="private", queue=False, show_progress="hidden")
    agents.change(lambda n: [gr.Dropdown(visible=i < int(n)) for i in range(MAX_AGENTS)], [agents], agent_backbones,
                  api_visibility="private", queue=False, show_progress="hidden")

    def recorded_view(index: int) -> tuple[str, str]:
        """The outcome line and scoreboard of a card's recorded debate (or why there is none)."""
        card, _ = cards[index]
        recorded = cached(card)
        if recorded is None:
            return (f"This example has no recorded debate yet; press **Run it live** to run it "
                    f"({card.method} on the embedded model).", "")
        return (final_markdown(recorded) + "  \n*Recorded earlier with seed 0 on the embedded model; press "
                "**Run it live** to watch it happen.*", scoreboard_html(recorded))

    def fill_card(index: int):
        """The card's question and preset in the form, the single-debate layout and "Run it live"."""
        card, task = cards[index]
        opts = dict(task.options)
        return (BACKBONE if BACKBONE in config.backbones else gr.skip(), [card.method],
                card.bank if card.bank in banks else "", s.agents, s.rounds, s.r2mad.k, s.r2mad.gamma,
                s.temperature, s.max_tokens, SEED, s.answer_guard, task.question,
                *(opts.get(letter, "") for letter in LETTERS), task.gold or "", False,
                *(gr.skip() for _ in range(1 + MAX_AGENTS)),
                gr.Column(visible=True), gr.Column(visible=False), gr.Button(visible=True))

    def card_texts(index: int):
        """Then the full texts, the JSON and its download (slower to draw)."""
        card, _ = cards[index]
        recorded = cached(card)
        if recorded is None:
            return tuple(gr.skip() for _ in outputs)
        shown = list(view({card.method: recorded}, final=True))
        shown[0] = gr.skip()  # the status line keeps the "recorded" note
        return tuple(shown)

    for i, button in enumerate(card_buttons):
        # the recorded outcome and scoreboard are drawn in the browser at once, with no server round trip
        button.click(None, None, [status, scoreboard], js=f"() => {json.dumps(recorded_view(i))}",
                     api_visibility="private")
        button.click(lambda i=i: fill_card(i), None, [*fill, single_box, compare_box, live_button],
                     queue=False, show_progress="hidden", api_visibility="private").then(
            lambda i=i: card_texts(i), None, outputs, queue=False, show_progress="hidden", api_visibility="private")
    return DebateTab(inputs, outputs, fill, run_event, stop_button, run_fn, debate.unload, state,
                     (saved_run, fork_round, fork_button))
