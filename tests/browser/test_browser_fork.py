"""The Fork tab in a real headless Chromium: open a saved run, force an agent's answer at round 0, and
watch the fork run live beside its parent (debates on a scripted OpenAI-compatible server on loopback)."""
from __future__ import annotations

import asyncio
import dataclasses
import re

import pytest

from r2mad.engine.resources import backend_for  # noqa: E402
from r2mad.engine.runner import Setup, run_debate  # noqa: E402
from r2mad.grading.tasks import task_from_input  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.serving import launch  # noqa: E402
from testing.scripted_server import FakeServer  # noqa: E402
from tests.browser import ARGS, CHROMIUM, SHOTS, app_config, sync_api
from tests.helpers import free_port, herd  # noqa: E402

pytestmark = pytest.mark.slow  # a real browser


def opened_text(chat) -> str:
    """A chat's text with every agent's message opened (each starts collapsed under its title)."""
    titles = chat.get_by_text(re.compile(r"^Agent \d+ ·"))
    for i in range(titles.count()):
        titles.nth(i).click()
    return chat.inner_text()


def fork_tab(p, url: str):
    """(browser, page) with the app's Fork tab open."""
    browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(url)
    page.get_by_role("tab", name="Fork").click()
    return browser, page


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fork-browser")
    with FakeServer(responder=herd) as server:
        config = app_config(tmp, server.base_url, settings=dict(early_stop=False))
        demo = build_app(config)
        store = demo.r2mad_services.store
        task = task_from_input("Largest planet?", {"A": "Mars", "B": "Jupiter"}, "B")
        run_id = store.start_run(method="mad", backbone="fake", bank=None, task=task,
                                 settings=dataclasses.asdict(config.settings), seed=0, code_version="test")
        asyncio.run(run_debate(task, "mad", Setup(backend_for(config, "fake"), config.settings),
                               record=store.recorder(run_id)))
        demo.queue(default_concurrency_limit=4)
        port = free_port()
        launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
        yield f"http://127.0.0.1:{port}/", run_id, server
        demo.close()


def test_fork_from_a_round_runs_live_beside_its_parent(served):
    url, run_id, server = served
    assert server.hits == 9
    with sync_api.sync_playwright() as p:
        browser, page = fork_tab(p, url)
        page.locator("label:has-text('Run id') textarea, label:has-text('Run id') input").first.fill(run_id)
        page.locator("label:has-text('Answer or new message') textarea").first.fill("B")
        page.click("#fork-button")
        page.wait_for_selector("#fork-status :text('saved')", timeout=60_000)
        fork, parent = opened_text(page.locator("#fork-chat")), opened_text(page.locator("#fork-parent"))
        assert "My final answer is ((B))." in fork and "Mars. ((A))" in parent
        parent_row, fork_row = rounds_of(page)
        assert f"Parent run {run_id[:8]}" in parent_row.inner_text() and "A — wrong" in parent_row.inner_text()
        assert "B — correct" in fork_row.inner_text()
        assert forked(fork_row, 0) == ["B"]  # agent 1's forced answer, in the app's chips
        assert f"of run {run_id[:8]}" in page.locator("#fork-status").inner_text()  # short ids, as Inspect lists
        assert server.hits == 9 + 6  # rounds 1 and 2 ran; round 0 was replayed
        assert "6 model calls made" in page.locator("#fork-status").inner_text()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "fork.png"), full_page=True)
        page.locator("label:has-text('Fork from round') input").first.fill("9")
        page.click("#fork-button")
        page.get_by_text("fork from a round between 1 and 3").first.wait_for(timeout=30_000)
        assert server.hits == 15
        browser.close()


def test_pause_after_one_round_change_and_go_on(served):
    url, run_id, server = served
    with sync_api.sync_playwright() as p:
        browser, page = fork_tab(p, url)
        run_box = page.locator("label:has-text('Run id') textarea, label:has-text('Run id') input").first
        run_box.fill(run_id)
        page.locator("label:has-text('Answer or new message') textarea").first.fill("B")
        page.locator("#fork-pause input").check()
        hits = server.hits
        page.click("#fork-button")
        page.wait_for_selector("#fork-status :text('Paused after round 1')", timeout=60_000)
        assert server.hits == hits + 3  # one round ran
        paused = run_box.input_value()
        assert paused != run_id and page.locator("label:has-text('Fork from round') input").first.input_value() == "2"
        page.locator("label:has-text('Agent') input").first.fill("2")
        page.locator("label:has-text('Answer or new message') textarea").first.fill("A")
        page.click("#fork-button")
        page.wait_for_selector(f"#fork-status :text('of run {paused[:8]}')", timeout=60_000)
        assert "saved" in page.locator("#fork-status").inner_text() and server.hits == hits + 6
        assert forked(rounds_of(page)[1], 1) == ["A"]  # the paused round with agent 2 changed, then round 2 live
        browser.close()


def rounds_of(page):
    """The parent's and the fork's rows of the side-by-side chips."""
    rows = page.locator("#fork-aligned tbody tr")
    return rows.nth(0), rows.nth(1)


def forked(row, round_index: int) -> list[str]:
    """The answers of the chips marked "fork" in one round of a row."""
    chips = row.locator("td").nth(round_index).locator(".chip", has_text="fork")
    return [text.split()[0] for text in chips.all_inner_texts()]


def pick(page, box: str, option: str) -> None:
    page.locator(f"{box} input").first.click()
    page.get_by_role("option", name=option, exact=True).click()


def test_drop_an_advice_at_the_fork_round_from_the_dropdown(served):
    url, run_id, server = served
    with sync_api.sync_playwright() as p:
        browser, page = fork_tab(p, url)
        page.locator("label:has-text('Run id') textarea, label:has-text('Run id') input").first.fill(run_id)
        pick(page, "#fork-change", "drop the advice to it from the agent in the box")
        pick(page, "#fork-method", "truemad")
        page.locator("label:has-text('Answer or new message') textarea").first.fill("2")
        hits = server.hits
        page.click("#fork-button")
        page.wait_for_selector("#fork-status :text('saved')", timeout=60_000)
        status = page.locator("#fork-status").inner_text()
        assert "agent 1 advice from agent 2 dropped at round 1, method truemad" in status
        assert server.hits == hits + (5 + 3) + (6 + 3)  # round 1 asks five advisers, not six
        advice = [r.body["messages"][-1]["content"] for r in server.requests[hits:hits + 5]]
        assert sum("addressed only to Agent 1" in text for text in advice) == 1
        assert forked(rounds_of(page)[1], 1) == ["B"]  # round 1's agent 1 was steered (its advice dropped)
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "fork-drop-advice.png"), full_page=True)
        pick(page, "#fork-change", "unmask it at the round (MAD-M²)")
        page.click("#fork-button")
        page.get_by_text("which 'truemad' does not have").first.wait_for(timeout=30_000)
        assert server.hits == hits + 17  # refused before any call
        browser.close()
