"""The annotator's button in real headless Chromium: open a run by link, write it into a memory bank from
the Annotate tab, and find its cases in the bank's file with the annotator's name; a second click is
refused with the reason. Screenshot in screenshots/ (git-ignored)."""
from __future__ import annotations

import dataclasses
import json
import os

import pytest

from r2mad.backends.embedder import load_embedder
from r2mad.memory.bank import MemoryBank
from r2mad.settings.config import load_config
from r2mad.types import Task
from r2mad.ui import build_app
from tests.browser import SHOTS, launch  # noqa: E402  (skips without Chromium)
from tests.helpers import make_transcript, save_run

pytestmark = pytest.mark.slow
TASK = Task("mcq", "Which gas do plants take in?", (("A", "oxygen"), ("B", "carbon dioxide")), gold="B", id="own-1")


def test_an_annotator_adds_the_open_run_to_a_bank(tmp_path, browser):
    banks = tmp_path / "banks"
    MemoryBank.create(banks / "grown", task_kind="mcq", split="demo-mcq:train", backbone="test",
                      embedder=load_embedder("hash-64"), code_version="test", index_root=tmp_path / "index").close()
    config = load_config(env={**os.environ, "R2MAD_DATA_DIR": str(tmp_path / "var")})
    config = dataclasses.replace(config, app=dataclasses.replace(config.app, memory_dirs=(str(banks),),
                                                                 default_bank=None))
    demo = build_app(config)
    run = save_run(demo.r2mad_services.store, make_transcript(TASK, [["B", "A", "A"], ["B", "B", "A"]], "B", True))
    try:
        page = browser.new_context(viewport={"width": 1400, "height": 1800}).new_page()
        page.goto(launch(demo) + f"?run={run}")
        page.wait_for_selector("#ann-panel", state="attached", timeout=60_000)
        page.fill("#ann-name input, #ann-name textarea", "ada")
        page.get_by_text("Write this run into a memory bank").click()
        page.click("#ann-grow-add")
        added = page.locator("#ann-grow-added")
        added.filter(has_text="Added run").wait_for(timeout=60_000)
        assert f"Added run {run[:8]} to grown as 3 cases (batch 1, by ada)" in added.inner_text()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "bank-growth-button.png"), full_page=True)
        lines = [json.loads(x) for x in (banks / "grown" / "cases.jsonl").read_text().splitlines()]
        assert [(c["id"], c["provenance"]["annotator"]) for c in lines] == [
            (f"run:{run}:a{a}:r1", "ada") for a in range(3)]
        page.click("#ann-grow-add")
        added.filter(has_text="Not added").wait_for(timeout=60_000)
        assert "already holds" in added.inner_text()
    finally:
        demo.close()
