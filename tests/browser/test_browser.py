"""The app in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright): type a
question, watch a MAD debate on the embedded model finish with its rounds and final answer, check a
question carrying an HTML payload is shown as text and never runs, and run two methods side by side.
Screenshots go to screenshots/ (git-ignored)."""
from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from r2mad.settings.config import load_config  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.debate_form import METHOD_LABELS  # noqa: E402
from tests.browser import SHOTS, launch  # noqa: E402  (skips without Chromium)

pytestmark = pytest.mark.slow  # real model, server, embedder or browser

PAYLOAD = '<img src=x onerror="window.__pwned=1">'
DEBATE_TIMEOUT_MS = 300_000  # the embedded model on 2 shared, busy cores


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    shutil.copytree(Path(__file__).resolve().parents[2] / "memory" / "demo-mcq", tmp / "demo-mcq")
    config = load_config(env={**os.environ, "R2MAD_DATA_DIR": str(tmp / "var")})
    config = dataclasses.replace(config, app=dataclasses.replace(config.app, memory_dirs=(str(tmp),),
                                                                 default_bank=None))
    demo = build_app(config)
    yield launch(demo), demo.r2mad_services
    demo.close()


@pytest.fixture(scope="module")
def url(served):
    return served[0]


@pytest.fixture
def page(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(url)
    page.wait_for_selector("#question textarea", timeout=60_000)
    yield page
    page.close()


def set_number(page, elem_id: str, value: int) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def small_settings(page, *, agents: int, rounds: int, max_tokens: int) -> None:
    page.locator("#advanced").get_by_text("Advanced", exact=False).first.click()
    set_number(page, "agents", agents)
    set_number(page, "rounds", rounds)
    set_number(page, "max-tokens", max_tokens)


def test_mad_debate_streams_rounds_and_final_answer_and_shows_html_as_text(page):
    small_settings(page, agents=3, rounds=2, max_tokens=48)
    page.fill("#question textarea", f"What is 2+3? {PAYLOAD}")
    page.fill("#gold textarea, #gold input", "5")
    page.click("#run")
    chat = page.locator("#chat-single")
    chat.get_by_text("— writing…").first.wait_for(timeout=DEBATE_TIMEOUT_MS)  # live text while agents write
    page.wait_for_selector("#final :text-matches('^(No final answer|Final answer)')", timeout=DEBATE_TIMEOUT_MS)
    text = chat.inner_text()
    assert "writing…" not in text
    assert "Round 0 (each agent alone) — consensus" in text
    for agent in ("Agent 1 · Careful solver", "Agent 2 · Explainer", "Agent 3 · Skeptic"):
        assert agent in text
    assert "final answer" in text.lower() and "mad on smollm2-135m" in text
    assert page.locator("#scoreboard .chip").count() >= 3  # the scoreboard above the texts
    assert PAYLOAD in text  # the question shown literally, as text
    assert chat.locator("img[src='x']").count() == 0
    assert page.evaluate("window.__pwned") is None
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "mad-debate.png"), full_page=True)


def test_side_by_side_shows_two_columns_and_a_summary(page):
    page.locator("#methods input").click()
    page.get_by_role("option", name=METHOD_LABELS["madm2-objective"]).click()
    page.keyboard.press("Escape")
    page.wait_for_selector("#methods-hint :text('2 methods will run side by side')", timeout=60_000)
    small_settings(page, agents=2, rounds=2, max_tokens=32)
    page.fill("#question textarea", "What is 3+4?")
    page.fill("#gold textarea, #gold input", "7")
    page.click("#run")
    page.wait_for_selector("#final :text('Side by side: 2 methods — finished')", timeout=DEBATE_TIMEOUT_MS)
    page.click("#vote-skip")  # blind until a vote or a skip (test_browser_votes.py)
    page.locator("#vote-note").get_by_text("as you skipped the vote").wait_for(timeout=60_000)
    left = page.locator("#chat-col-0")
    assert left.is_visible() and not page.locator("#chat-single").is_visible()
    assert "Round 0 (each agent alone) · shared by every method" in left.inner_text()
    page.get_by_role("tab", name="MAD-M² (O)").click()  # one tab of full texts per method
    right = page.locator("#chat-col-1")
    right.wait_for(state="visible", timeout=60_000)
    assert "Round 0 (each agent alone) · shared by every method" in right.inner_text()
    assert page.locator("#matrix tbody tr").count() == 2
    summary = page.locator("#summary").inner_text()
    assert "madm2-objective" in summary and "Parse failures" in summary
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "side-by-side.png"), full_page=True)


def test_opening_a_tab_shows_its_runs_and_bank_cases_without_a_click(page, served):
    from r2mad.types import Task

    store = served[1].store
    task = Task("mcq", "Which planet is largest?", (("A", "Mars"), ("B", "Jupiter")), "B", "t1")
    run_id = store.start_run(method="mad", backbone="smollm2-135m", bank=None, task=task, settings={},
                             seed=0, code_version="t", source="app")
    store.set_status(run_id, "done")
    page.get_by_role("tab", name="Inspect runs").click()
    page.locator("#runs span").filter(has_text=run_id[:8]).first.wait_for(timeout=30_000)
    page.get_by_role("tab", name="Memory bank").click()
    # the bank's index is built on first open: wait while the page shows it warming up, however long that takes
    # on a loaded machine, and fail only when the page shows no change for 120 s (a hang guard)
    while not page.locator("#bank-cases span").filter(has_text="mcq-001").count():
        shown = page.locator("#bank-about").inner_text()
        page.wait_for_function("([shown]) => document.querySelector('#bank-about').innerText !== shown || "
                               "[...document.querySelectorAll('#bank-cases span')].some(s => "
                               "s.textContent.includes('mcq-001'))", arg=[shown], timeout=120_000)
    cases = len((Path(__file__).resolve().parents[2] / "memory/demo-mcq/cases.jsonl").read_text().splitlines())
    assert "demo-mcq · mcq cases" in page.locator("#bank-about").inner_text()
    assert f"{cases} cases" in page.locator("#bank-about").inner_text()
