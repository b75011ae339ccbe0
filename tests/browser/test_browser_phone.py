"""The Debate tab on a phone (390x844) in a real headless Chromium, after 3 rounds of 4 agents: every column of
the scoreboard is on screen (none clipped), the full texts read as part of the page (no inner scroller) and no
label covers the text under it. A scripted OpenAI-compatible server on loopback answers."""
from __future__ import annotations

import pytest

from r2mad.ui import build_app
from testing.scripted_server import FakeServer, ok
from tests.browser import SHOTS, app_config, ask_planets, launch, table_reads

pytestmark = pytest.mark.slow  # a real browser
PHONE, DESKTOP = {"width": 390, "height": 844}, {"width": 1440, "height": 900}


def reply(body):
    """Agent answers alternate between rounds, so no round is unanimous and all 3 rounds run."""
    turns = sum(m["role"] == "assistant" for m in body["messages"])
    return ok("Thinking about the sizes of the planets once more. " + ("((A))" if turns % 2 else "((B))"))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("phone")
    with FakeServer(responder=reply) as server:
        config = app_config(tmp, server.base_url, settings=dict(agents=4, rounds=3, early_stop=False))
        demo = build_app(config)
        yield launch(demo)
        demo.close()


OVERFLOW = """() => {
    const table = document.querySelector('#scoreboard table');
    const cells = [...table.querySelectorAll('thead th')].map(c => c.getBoundingClientRect());
    const box = document.querySelector('#scoreboard .scoreboard').getBoundingClientRect();
    return {right: Math.max(...cells.map(r => r.right)), columns: cells.length, box: box.right, vw: innerWidth};
}"""
SCROLLERS = """() => [...document.querySelectorAll('#chat-single *')]
    .filter(e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight + 4)
    .map(e => e.className || e.tagName)"""
COVERED = """() => {
    const label = document.querySelector('#chat-single [data-testid="block-label"]');
    const first = document.querySelector('#chat-single .message, #chat-single [data-testid="user"]');
    if (!label || !first) return null;
    const a = label.getBoundingClientRect(), b = first.getBoundingClientRect();
    return a.bottom > b.top + 1 && a.top < b.bottom && a.right > b.left && a.left < b.right;
}"""


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_three_rounds_of_four_agents_read_on_a_phone(browser, served, viewport):
    page = browser.new_page(viewport=viewport)
    page.goto(served)
    ask_planets(page)
    page.locator("#final").get_by_text("Final answer", exact=False).wait_for(timeout=90_000)
    page.locator("#chat-single .message").first.wait_for(timeout=30_000)
    name = "phone" if viewport is PHONE else "desktop"
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"scoreboard-{name}.png"), full_page=True)
    fit = page.evaluate(OVERFLOW)
    assert fit["columns"] == 4 and fit["right"] <= fit["vw"], fit  # Agent + rounds 0-2, the last on screen
    if viewport is PHONE:  # on a wide screen the full texts keep their own scroller beside the page
        assert page.evaluate(SCROLLERS) == []  # the chat is part of the page, not a box in a box
    assert page.evaluate(COVERED) is False  # the chat's label covers no message
    page.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_side_by_side_summary_reads_on_a_phone(browser, served, viewport):
    """Its headers ("Parse failures", "Final answer") break at word boundaries or the table scrolls in its own
    box; never a header squeezed letter by letter, never the page pushed sideways."""
    page = browser.new_page(viewport=viewport)
    page.goto(served)
    ask_planets(page, compare=True)
    page.locator("#final").get_by_text("Side by side: 2 methods — finished").wait_for(timeout=90_000)
    page.click("#vote-skip")
    page.locator("#vote-note").get_by_text("as you skipped the vote").wait_for(timeout=60_000)
    page.locator("#summary-csv").wait_for(timeout=60_000)
    page.locator("#summary").scroll_into_view_if_needed()
    name = "phone" if viewport is PHONE else "desktop"
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"summary-{name}.png"), full_page=True)
    reads = table_reads(page, "#summary")
    assert reads["cells"] >= 9 and reads["broken"] == [] and reads["hidden"] == [], reads
    assert reads["page"] <= 1, reads
    page.close()
