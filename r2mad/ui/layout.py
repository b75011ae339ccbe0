"""The whole app: tabs Debate, Inspect, Memory bank and About, wired to one set of process-wide
services. `build_app` returns gr.Blocks; queueing and launching are app.py's job."""
from __future__ import annotations

import os
from typing import Iterable

import gradio as gr

from r2mad.config import Config, load_config
from r2mad.ui import annotate_tab, api, bank_tab, debate_tab, fork_tab, inspect_tab
from r2mad.ui.about import about_text
from r2mad.ui.services import Services
from r2mad.ui.visitors import kept_notice, new_browser_id

INTRO = ("# R²-MAD Studio\nMulti-agent debate — MAD, MAD-M², TrueMAD and R²-MAD — round by round. "
         "The default backbone is a tiny CPU model for trying the app, not for accuracy.")


def build_app(config: Config | None = None, *, secrets: Iterable[str] = (),
              services: Services | None = None) -> gr.Blocks:
    """`secrets`: values (e.g. API keys from the environment) the run store must never keep."""
    config = config or load_config()
    services = services or Services(config, secrets=secrets)
    with gr.Blocks(title="R²-MAD Studio") as demo:
        # the key of this browser's runs on a public Space; sealed with a secret kept on the server
        visitor_id = gr.BrowserState("", storage_key="r2mad-visitor", secret=services.browser_secret())
        with gr.Row():
            gr.Markdown(INTRO)
            if config.on_space and os.environ.get("OAUTH_CLIENT_ID"):  # the Space has `hf_oauth: true`
                gr.LoginButton(scale=0, min_width=220)
        with gr.Tabs() as tabs:
            with gr.Tab("Debate", id="debate"):
                debate = debate_tab.build(services, visitor_id)
            with gr.Tab("Inspect runs", id="inspect") as inspect:
                inspect_tab.build(services, debate, tabs, inspect, visitor_id)
            with gr.Tab("Annotate", id="annotate") as annotate:
                annotate_tab.build(services, demo, tabs, annotate, visitor_id)
            with gr.Tab("Fork", id="fork"):
                fork_tab.build(services, visitor_id)
            with gr.Tab("Memory bank", id="bank") as bank:
                bank_tab.build(services, bank)
            with gr.Tab("About", id="about"):
                gr.Markdown(about_text())
        gr.Markdown(kept_notice(config), elem_id="kept")
        demo.load(lambda known: known or new_browser_id(), [visitor_id], [visitor_id], api_visibility="private",
                  queue=False)
        demo.unload(debate.unload_fn)
        api.install(demo, services)  # last: the UI's events above stay out of the public API
    demo.r2mad_services = services  # for tests and app.py
    return demo
