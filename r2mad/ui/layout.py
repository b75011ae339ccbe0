"""The whole app: tabs Debate, Inspect, Memory bank and About, wired to one set of process-wide
services, with the app's theme and a little CSS. `build_app` returns gr.Blocks; queueing and launching
are app.py's job."""
from __future__ import annotations

import os
import warnings
from typing import Iterable

import gradio as gr

from r2mad.exports.live import install as install_traces
from r2mad.serving.services import Services
from r2mad.serving.visitors import kept_notice, new_browser_id
from r2mad.settings.config import Config, load_config
from r2mad.ui import (
    annotate_tab,
    api,
    api_page,
    bank_tab,
    board_tab,
    data_tab,
    debate_tab,
    fork_tab,
    inspect_tab,
    vote_panel,
)
from r2mad.ui.render.about import about_text
from r2mad.ui.render.agent_input import KEEP_CLICKS

INTRO = ("# R²-MAD Studio\nWatch several language-model agents debate a question round by round, and "
         "compare debate methods (MAD, MAD-M², TrueMAD, R²-MAD) side by side.")

THEME = gr.themes.Soft(primary_hue="indigo", secondary_hue="slate", neutral_hue="slate").set(
    body_text_color_subdued="#475569",  # help text: 7.6:1 on white (the default grey is lighter)
    block_info_text_color="#475569",
    block_title_text_color="#1e293b",
    block_label_text_color="#334155",
)
CSS = """
.example-card { white-space: pre-line !important; text-align: left !important; justify-content: flex-start !important;
  line-height: 1.35 !important; min-height: 4.5em; font-weight: 400 !important; }
.example-card::first-line { font-weight: 700; color: #312e81; }
.example-card { font-size: 0.95rem !important; display: block !important; }
#final p { margin: 0.2em 0; }
@media (max-width: 640px) { #examples { flex-direction: column; } }
/* The debate streams its own progress line; Gradio 6 draws its "processing | 0.5s" tracker over these
   outputs although the events say show_progress="hidden" (gradio-app/gradio#12406). */
#final .progress-text, #scoreboard .progress-text, #matrix .progress-text { display: none !important; }
#run-drawer { position: fixed; top: 0; right: 0; bottom: 0; width: min(720px, 100vw); z-index: 60;
  overflow-y: auto; padding: 12px 16px; background: var(--background-fill-primary);
  box-shadow: -8px 0 24px rgba(15, 23, 42, 0.25); flex-wrap: nowrap; }
#run-drawer > * { flex: 0 0 auto !important; }
/* a phone: the agents x rounds grid fits 390 px (persona and model under the agent's name, tighter cells) */
@media (max-width: 640px) {
  .scoreboard .who-extra { display: block; font-size: 12px; }
  .scoreboard th, .scoreboard td { padding: 4px 3px !important; white-space: normal !important; }
}
/* a phone: the full texts read as part of the page (no box in a box), under their label, not beneath it; the
   note line stacks its box over its button */
@media (max-width: 640px) {
  #chat-single, #chat-single > div, #chat-single .wrapper { height: auto !important; max-height: none !important; }
  #chat-single .bubble-wrap { height: auto !important; max-height: none !important; overflow-y: visible !important; }
  #chat-single [data-testid="block-label"] { position: static !important; max-width: 100% !important;
    white-space: normal !important; margin: 0 0 6px 0; }
  #note-row { flex-direction: column !important; align-items: stretch !important; }
}
/* tables of figures (the side-by-side summary, the eval report): wrap at word boundaries, never mid-word; on a
   phone a table wider than the screen scrolls sideways in its own box, the page does not */
#summary th *, #summary td * { word-break: normal !important; overflow-wrap: normal !important; }
#data-report table { display: block; width: max-content; max-width: 100%; overflow-x: auto; border: none; padding: 0; }
#data-report th, #data-report td { word-break: normal !important; overflow-wrap: normal !important; }
""" + debate_tab.METHOD_GROUPS_CSS + debate_tab.KIND_CSS + annotate_tab.CSS


def build_app(config: Config | None = None, *, secrets: Iterable[str] = (),
              services: Services | None = None) -> gr.Blocks:
    """`secrets`: values (e.g. API keys from the environment) the run store must never keep."""
    config = config or load_config()
    services = services or Services(config, secrets=secrets)
    install_traces()  # R2MAD_OTEL_ENDPOINT: finished runs as traces (nothing when unset)
    with warnings.catch_warnings():
        # Gradio 6 takes theme and css at launch(); given here they travel with the Blocks, so every
        # launcher (app.py, the tests) gets them.
        warnings.simplefilter("ignore", UserWarning)
        demo = gr.Blocks(title="R²-MAD Studio", theme=THEME, css=CSS)
    with demo:
        # the key of this browser's runs on a public Space: a random id that works like a password (whoever
        # presents it reads those runs); the secret only keeps stored ids readable after a restart
        visitor_id = gr.BrowserState("", storage_key="r2mad-visitor", secret=services.browser_secret())
        with gr.Row():
            gr.Markdown(INTRO, elem_id="intro")
            if config.on_space and os.environ.get("OAUTH_CLIENT_ID"):  # the Space has `hf_oauth: true`
                gr.LoginButton(scale=0, min_width=220)
        with gr.Tabs() as tabs:
            with gr.Tab("Debate", id="debate"):
                debate = debate_tab.build(services, visitor_id)
            with gr.Tab("Inspect runs", id="inspect") as inspect:
                inspected = inspect_tab.build(services, debate, tabs, inspect, visitor_id)
            with gr.Tab("Annotate", id="annotate") as annotate:
                annotate_tab.build(services, demo, tabs, annotate, visitor_id)
            with gr.Tab("Fork", id="fork"):
                fork_run, fork_round = fork_tab.build(services, visitor_id)
            with gr.Tab("Method board", id="board") as board:
                board_tab.build(services, board)
            with gr.Tab("Memory bank", id="bank") as bank:
                bank_tab.build(services, bank)
            with gr.Tab("Your data", id="data"):
                data_tab.build(services, visitor_id)
            with gr.Tab("About", id="about"):
                gr.Markdown(about_text())
        gr.Markdown(kept_notice(config), elem_id="kept")
        # "Fork from this round" under a finished debate and in Inspect's run drawer: the Fork tab opens
        # on that run and round
        for run, start, button in ((inspected.run_id, inspected.fork_round, inspected.fork_button),
                                   debate.fork_offer):
            button.click(lambda run, start: (run, start or 1, gr.Tabs(selected="fork")), [run, start],
                         [fork_run, fork_round, tabs], api_visibility="private", queue=False)
        demo.load(lambda known: known or new_browser_id(), [visitor_id], [visitor_id], api_visibility="private",
                  queue=False)
        demo.load(None, None, debate.form["blind"], js=vote_panel.BLIND_ON_LOAD, api_visibility="private",
                  queue=False)  # a page compares blind (names hidden until the vote); an API client does not
        demo.load(None, js=KEEP_CLICKS, api_visibility="private", queue=False)  # reading a turn's input blames nothing
        demo.unload(debate.unload_fn)
        api_page.open_from_address(demo)  # /?view=api opens the API page
        api.install(demo, services)  # last: the UI's events above stay out of the public API
    demo.r2mad_services = services  # for tests and app.py
    return demo
