"""The Debate tab: example cards on top (a recorded debate shows at once), the question and the methods,
Run / Stop, then the outcome line, the scoreboard and the full texts (or, for 2–4 methods, the methods ×
rounds matrix, the summary table and one tab of full texts per method). Backbone, token, endpoint, bank
and settings sit in one collapsed "Advanced" panel. Layout and wiring only, every component by name: the
form is r2mad.ui.debate_form, its fills r2mad.ui.fill, the run r2mad.serving.live, the updates r2mad.ui.views."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from r2mad.grading.tasks import inline_options
from r2mad.methods import names
from r2mad.serving.services import Services
from r2mad.ui import handlers, moderator_box, vote_panel
from r2mad.ui.debate_form import (
    AGENTS,
    FILL,
    GROUPS,
    MAX_AGENTS,
    OPTIONS,
    ORDER,
    advanced_part,
    kind_chip,
    methods_part,
    needs_token,
    question_part,
)
from r2mad.ui.examples import BACKBONE, CARDS, SEED, cached, card_task, recording_model
from r2mad.ui.fill import card_values
from r2mad.ui.render.allowance_line import AllowanceLine
from r2mad.ui.render.chat import final_markdown
from r2mad.ui.render.scoreboard import scoreboard_html
from r2mad.ui.render.tables import SUMMARY_HEADERS
from r2mad.ui.views import MAX_COLUMNS, VIEW_NAMES, layout_for, view

Parts = dict[str, Any]  # component by name


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
# the answer kind as a chip under the question, its "change" button right beside it
KIND_CSS = """
#kind-row { flex-wrap: nowrap; align-items: center; gap: 10px; }
#kind-row > #kind-chip { flex: 0 1 auto !important; min-width: 0 !important; background: #eef2ff;
  border: 1px solid #c7d2fe; border-radius: 14px; padding: 4px 12px; }
#kind-row > #kind-change { flex: 0 0 auto !important; }
#kind-chip p { margin: 0.1em 0; }
"""


@dataclass
class DebateTab:
    form: Parts  # the form's components by name (r2mad.ui.debate_form)
    outputs: list[Any]  # in the order views.view returns them (VIEW_NAMES)
    run_event: Any
    stop_button: Any
    run_fn: Any
    unload_fn: Any
    state: Any
    fork_offer: tuple[Any, Any, Any]  # (saved run id, round, "Fork from this round"): layout.py opens the Fork tab

    @property
    def fill(self) -> list[Any]:
        """The controls a fill sets, in FILL's order (Inspect's rerun returns its values so)."""
        return [self.form[name] for name in FILL]


def cards_part() -> list[gr.Button]:
    gr.Markdown("Try a card: three small language-model agents answer, read each other and revise; "
                "the grid shows who answered what in each round (green = correct, red = wrong).",
                elem_id="examples-intro")
    with gr.Row(elem_id="examples", equal_height=True):
        return [gr.Button(card.label(card_task(card), recording_model(card)), elem_classes=["example-card"],
                          elem_id=f"example-{i}", size="sm") for i, card in enumerate(CARDS)]


def buttons_part(ui: Parts) -> None:
    ui["hint"] = gr.Markdown(elem_id="methods-hint")
    with gr.Row():
        ui["run"] = gr.Button("Run debate", variant="primary", elem_id="run", scale=2, min_width=110)
        ui["live"] = gr.Button("Run it live", variant="secondary", elem_id="run-live", visible=False, scale=2,
                               min_width=110)
        ui["stop"] = gr.Button("Stop", variant="stop", elem_id="stop", interactive=False, scale=1, min_width=70)


def results_part(ui: Parts) -> None:
    """The outcome line, scoreboard, fork offer, full texts, side-by-side views and the transcript JSON."""
    ui["status"] = gr.Markdown(elem_id="final")
    ui["scoreboard"] = gr.HTML("", elem_id="scoreboard")
    vote_panel.part(ui)  # a blind side-by-side comparison asks which debate convinced the visitor
    ui["saved_run"] = gr.State("")
    with gr.Row(visible=False, equal_height=True, elem_id="debate-fork") as ui["fork_box"]:  # under a finished debate
        ui["fork_round"] = gr.Dropdown([], label="Fork from round", show_label=False, container=False, scale=0,
                                       min_width=90, elem_id="debate-fork-round")
        ui["fork_button"] = gr.Button("Fork from this round", size="sm", scale=0, min_width=180,
                                      elem_id="debate-fork-button")
    with gr.Column(visible=False) as ui["note_box"]:  # a visitor's note between rounds, to every debate shown
        moderator_box.part(ui)
    with gr.Column(visible=False) as ui["single_box"]:  # the full texts, shown with the first debate
        ui["single_chat"] = gr.Chatbot(label="Full texts, per round and agent (click an agent to open it)",
                                       height=560, elem_id="chat-single", group_consecutive_messages=False,
                                       feedback_options=None, autoscroll=False, buttons=[])
    with gr.Column(visible=False) as ui["compare_box"]:
        ui["summary"] = gr.Dataframe(headers=SUMMARY_HEADERS, label="Side-by-side summary", interactive=False,
                                     elem_id="summary", wrap=True)
        ui["summary_file"] = gr.DownloadButton("Download summary (CSV)", visible=False, elem_id="summary-csv",
                                               size="sm")
        ui["matrix"] = gr.HTML("", elem_id="matrix")
        with gr.Tabs():
            for i in range(MAX_COLUMNS):
                with gr.Tab(f"Method {i + 1}", visible=i < 2) as ui[f"tab_{i}"]:
                    ui[f"column_{i}"] = gr.Chatbot(label=f"Method {i + 1}", height=520, elem_id=f"chat-col-{i}",
                                                   group_consecutive_messages=False, feedback_options=None,
                                                   autoscroll=False, buttons=[])
    with gr.Accordion("Transcript (JSON)", open=False):
        ui["transcript_json"] = gr.JSON(label="Canonical transcript(s)")
        ui["download"] = gr.DownloadButton("Download JSON", visible=False, elem_id="download-json")
    ui["state"] = gr.State({})


def build(services: Services, visitor_id) -> DebateTab:
    """`visitor_id`: the gr.BrowserState with the id this browser keeps (the key of its runs)."""
    config, form, ui = services.config, {}, {}
    card_buttons = cards_part()
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            ui["kind_chip"], ui["kind_change"], ui["options_box"] = question_part(form)
        with gr.Column(scale=2, min_width=300):
            methods_part(form, config.app.default_method)
            form["blind"] = vote_panel.toggle()
            buttons_part(ui)
            ui["allowance"] = gr.Markdown(visible=services.ledger is not None, elem_id="allowance")
    results_part(ui)
    banks = services.bank_choices()
    with gr.Accordion("Advanced: backbone, token, endpoint, memory bank and settings", open=False,
                      elem_id="advanced"):
        ui["mixed_box"] = advanced_part(form, config, banks)
    debate = handlers.DebateHandlers(services)
    outputs = [ui[name] for name in VIEW_NAMES]
    run_event = run_events(services, debate, form, ui, visitor_id,
                           [*outputs, *(ui[name] for name in vote_panel.VOTE_NAMES), ui["note_said"]])
    vote_panel.events(services, ui, outputs, visitor_id)
    moderator_box.events(services, ui)
    form_events(services, debate, form, ui)
    kind_events(form, ui)
    card_events(services, form, ui, card_buttons, banks, outputs)
    if services.ledger is not None:
        allowance_events(services, form, ui, visitor_id, run_event)
    return DebateTab(form, outputs, run_event, ui["stop"], debate.run_debate, debate.unload, ui["state"],
                     (ui["saved_run"], ui["fork_round"], ui["fork_button"]))


def run_events(services: Services, debate, form: Parts, ui: Parts, visitor_id, outputs: list[Any]):
    """Run (or Enter in the question) locks the buttons, runs the debate by form name, then unlocks."""
    buttons = [ui["run"], ui["live"], ui["stop"]]

    def lock():
        return gr.Button(interactive=False), gr.Button(interactive=False), gr.Button(interactive=True)

    def unlock():
        return gr.Button(interactive=True), gr.Button(interactive=True), gr.Button(interactive=False)

    # Run is off and Stop on while a debate runs. The run streams its own "cancelled" view when Stop
    # signals it (see live.stream), so Stop needs no Gradio cancels=.
    started = gr.on([ui["run"].click, ui["live"].click, form["question"].submit], lock, None, buttons,
                    queue=False, show_progress="hidden", api_visibility="private")
    # the app's line (services.admission) holds debates back and tells each its place; the framework's own
    # limit for them is the line's capacity, so a debate waiting there is never hidden in the framework's queue
    run_event = started.then(debate.run_debate, inputs_kwargs={**form, "visitor_id": visitor_id}, outputs=outputs,
                             api_name="debate", concurrency_id="debate",
                             concurrency_limit=services.admission.capacity, trigger_mode="multiple",
                             show_progress="hidden")
    run_event.then(unlock, None, buttons, queue=False, show_progress="hidden", api_visibility="private")
    ui["stop"].click(debate.stop, None, None, api_name="stop", queue=False)
    return run_event


def form_events(services: Services, debate, form: Parts, ui: Parts) -> None:
    """The form answers itself: profile → decoding sliders, methods → layout, backbones → token field."""
    config, quiet = services.config, dict(api_visibility="private", queue=False, show_progress="hidden")
    form["profile"].change(debate.profile_values, [form["profile"]], [form["temperature"], form["max_tokens"]],
                           **quiet)
    form["methods"].change(layout_for, [form["methods"]], [ui["single_box"], ui["compare_box"], ui["hint"]], **quiet)
    form["methods"].change(lambda picked: gr.Checkbox(visible=len(picked or []) > 1), [form["methods"]],
                           [form["blind"]], **quiet)
    mix = {form[name] for name in ("backbone", "mixed_models", "agents", "aux_backbone", *AGENTS)}

    def token_box(values: dict):
        """The token field shows when the backbone (with Mixed models: an agent's or the auxiliary one) takes one."""
        picked = ([values[form["aux_backbone"]], *(values[form[a]] for a in AGENTS[:int(values[form["agents"]])])]
                  if values[form["mixed_models"]] else [values[form["backbone"]]])
        return gr.Textbox(visible=any(needs_token(config, b) for b in picked if b))

    gr.on([c.change for c in mix], token_box, mix, [form["token"]], **quiet)
    form["mixed_models"].change(lambda on: (gr.Group(visible=on), gr.Dropdown(interactive=not on)),
                                [form["mixed_models"]], [ui["mixed_box"], form["backbone"]], **quiet)
    form["agents"].change(lambda n: [gr.Dropdown(visible=i < int(n)) for i in range(MAX_AGENTS)], [form["agents"]],
                          [form[name] for name in AGENTS], **quiet)


def kind_events(form: Parts, ui: Parts) -> None:
    """The kind chip follows the question, its options and the picked kind; "change" shows the kinds."""
    quiet = dict(api_visibility="private", queue=False, show_progress="hidden")
    inputs = [form["question"], form["kind"], *(form[name] for name in OPTIONS)]

    def chip(question: str, picked: str, *options: str) -> str:
        return kind_chip(question, picked, any((o or "").strip() for o in options))

    gr.on([form[name].change for name in ("question", "kind", *OPTIONS)], chip, inputs, ui["kind_chip"], **quiet)
    ui["kind_change"].click(lambda: gr.Dropdown(visible=True), None, form["kind"], **quiet)

    def typed_options(question: str, *options: str):
        """Options typed into the question ("… (A) shark (B) dolphin") move into the option fields, when those
        are empty; the question keeps the rest."""
        found = None if any((o or "").strip() for o in options) else inline_options(question or "")
        if not found or len(found[1]) > len(OPTIONS):
            return [gr.skip()] * (len(OPTIONS) + 2)
        stem, pairs = found
        texts = [text for _, text in pairs] + [""] * (len(OPTIONS) - len(pairs))
        return [stem or question, *texts, gr.Accordion(open=True)]

    fields = [form["question"], *(form[name] for name in OPTIONS)]
    form["question"].blur(typed_options, fields, [*fields, ui["options_box"]], **quiet)


def allowance_events(services: Services, form: Parts, ui: Parts, visitor_id, run_event) -> None:
    """The allowance line answers at page load (and when the browser's id arrives), after a debate and when the
    backbone changes."""
    line, quiet = AllowanceLine(services), dict(api_visibility="private", show_progress="hidden")

    def refresh(known: str | None, backbone: str | None, request: gr.Request, login: gr.OAuthProfile | None,
                oauth_token: gr.OAuthToken | None) -> str:
        return line.refresh(known, backbone, request, login, oauth_token)

    inputs = [visitor_id, form["backbone"]]
    gr.on([visitor_id.change, form["backbone"].change], refresh, inputs, ui["allowance"], **quiet)
    run_event.then(refresh, inputs, ui["allowance"], **quiet)


def card_events(services: Services, form: Parts, ui: Parts, card_buttons, banks, outputs: list[Any]) -> None:
    """A card shows its recorded debate at once, fills the form with its preset, then draws the full texts."""
    config, quiet = services.config, dict(api_visibility="private", queue=False, show_progress="hidden")
    cards = [(card, card_task(card)) for card in CARDS]
    voting = [ui[name] for name in vote_panel.VOTE_NAMES]

    def recorded_view(index: int) -> tuple[str, str]:
        """The outcome line and scoreboard of a card's recorded debate (or why there is none)."""
        card, _ = cards[index]
        recorded = cached(card)
        if recorded is None:
            return (f"This example has no recorded debate yet; press **Run it live** to run it "
                    f"({card.method} on the embedded model).", "")
        return (final_markdown(recorded) + f"  \n*Recorded earlier with seed 0 on {recording_model(card)}; press "
                "**Run it live** to watch it happen.*", scoreboard_html(recorded))

    def fill_card(index: int) -> dict:
        """The card's question and preset in the form, the single-debate layout and "Run it live"."""
        recorded = cached(cards[index][0])  # "Run it live" runs on the backbone the recording used
        values = card_values(*cards[index], config, banks, recorded.backbone if recorded else BACKBONE, SEED)
        return {**{form[name]: value for name, value in values.items()}, ui["single_box"]: gr.Column(visible=True),
                ui["compare_box"]: gr.Column(visible=False), ui["live"]: gr.Button(visible=True),
                **dict(zip(voting, vote_panel.cleared()))}  # a vote still pending is dropped with its comparison

    def card_texts(index: int):
        """Then the full texts, the JSON and its download (slower to draw)."""
        card, _ = cards[index]
        recorded = cached(card)
        if recorded is None:
            return tuple(gr.skip() for _ in outputs)
        shown = list(view({card.method: recorded}, final=True))
        shown[VIEW_NAMES.index("status")] = gr.skip()  # the status line keeps the "recorded" note
        return tuple(shown)

    filled = [*(form[name] for name in FILL), ui["single_box"], ui["compare_box"], ui["live"], *voting]
    for i, button in enumerate(card_buttons):
        # the recorded outcome and scoreboard are drawn in the browser at once, with no server round trip
        button.click(None, None, [ui["status"], ui["scoreboard"]], js=f"() => {json.dumps(recorded_view(i))}",
                     api_visibility="private")
        button.click(lambda i=i: fill_card(i), None, filled, **quiet).then(
            lambda i=i: card_texts(i), None, outputs, **quiet)
