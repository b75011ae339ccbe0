"""The line for debates in a real headless Chromium: with the embedded model's only slot taken, a visitor's
debate waits and the status line says its place, how to leave and which Hugging Face backbone skips the
line (the app may spend a key for them here); Stop takes it out of the line. A screenshot of the waiting
page at 1440×900 goes to the system's temp folder (R2MAD_SHOTS_DIR to keep it elsewhere)."""
from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

import pytest

from r2mad.settings.config import load_config
from r2mad.ui import build_app
from tests.browser import launch  # skips without Chromium

pytestmark = pytest.mark.slow  # a real app and browser

SHOTS = Path(os.environ.get("R2MAD_SHOTS_DIR") or tempfile.gettempdir())
HF_KEY = "hf_" + "LocalOwnerKey" + "7" * 20  # token-shaped, built; never sent anywhere (no debate starts)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser-line")
    env = {**os.environ, "R2MAD_DATA_DIR": str(tmp / "var"), "HF_TOKEN": HF_KEY}
    config = load_config(env=env)
    config = dataclasses.replace(config, app=dataclasses.replace(config.app, concurrency_limit=1, default_bank=None,
                                                                 memory_dirs=(str(tmp),)))
    before = os.environ.get("HF_TOKEN")
    os.environ["HF_TOKEN"] = HF_KEY  # a local install whose owner has a Hugging Face key: visitors may use it
    demo = build_app(config, secrets=[HF_KEY])
    url = launch(demo)
    holder = demo.r2mad_services.admission.enter("test:holder", "embedded")  # the embedded model is busy
    yield url, demo.r2mad_services
    demo.r2mad_services.admission.leave(holder)
    demo.close()
    if before is None:
        os.environ.pop("HF_TOKEN", None)
    else:
        os.environ["HF_TOKEN"] = before


def test_a_waiting_visitor_sees_their_place_and_the_backbone_that_skips_the_line(browser, served):
    url, services = served
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(url)
        page.wait_for_selector("#question textarea", timeout=60_000)
        page.fill("#question textarea", "What is 12 times 12?")
        page.click("#run")
        status = page.locator("#final")
        status.get_by_text("Waiting in line: place 1").wait_for(timeout=60_000)
        page.wait_for_function("document.querySelector('#final').innerText.match(/waited [1-9]/)",
                               timeout=30_000)  # the time waited moves on while the visitor waits
        text = status.inner_text()
        assert "Press Stop to leave the line; or pick Qwen2.5-7B-Instruct (HF Inference Providers) under " \
               "Advanced to skip the line." in text
        assert "about" not in text  # nothing measured yet: the place alone
        page.screenshot(path=str(SHOTS / "r2mad-waiting-in-line.png"))
        assert services.admission.waiting_count() == 1
        runs = services.store.count_runs()
        page.click("#stop")
        status.get_by_text("Stopped while waiting in line; nothing was run.").wait_for(timeout=30_000)
        assert services.admission.waiting_count() == 0 and services.store.count_runs() == runs
        page.locator("#run:not([disabled])").wait_for(timeout=30_000)  # Run is offered again
    finally:
        page.close()
