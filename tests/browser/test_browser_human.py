"""A visitor in the debate, in a real headless Chromium: a note sent while round 0 runs reaches every agent's
round-1 prompt; the run opens in Inspect with the note in place; a fork from round 1 says it again. Debates on
a scripted OpenAI-compatible server on loopback, whose round-0 answers wait until the page says the note was
sent (so the note is sent during round 0, with no sleep). Screenshots at 1440x900 (the phone's: test_browser_phone)."""
from __future__ import annotations

import re
import threading

import pytest

from r2mad.ui import build_app
from testing.scripted_server import FakeServer, ok
from tests.browser import SHOTS, app_config, ask_planets, launch

pytestmark = pytest.mark.slow  # a real browser
NOTE = "Moderator here: compare the planets' diameters."
DESKTOP = {"width": 1440, "height": 900}


class Table:
    """Round 0: every agent says Mars, once `gate` opens. Later: Jupiter when the moderator's note was read."""

    def __init__(self):
        self.gate = threading.Event()

    def __call__(self, body):
        messages = body["messages"]
        if len(messages) == 2:
            self.gate.wait(timeout=120)
            return ok("Mars, I think. ((A))")
        return ok("Jupiter, by diameter. ((B))" if NOTE in messages[-1]["content"] else "Still Mars. ((A))")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("human")
    table = Table()
    with FakeServer(responder=table) as server:
        config = app_config(tmp, server.base_url, timeout_s=120, settings=dict(early_stop=False, rounds=2))
        demo = build_app(config)
        yield launch(demo), table, demo.r2mad_services.store
        demo.close()


def prompts(turn) -> str:
    return "\n".join(m.content for m in turn.prompt)


def shot(page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_a_note_after_round_0_reaches_round_1_opens_in_inspect_and_a_fork_says_it_again(browser, served):
    url, table, store = served
    page = browser.new_page(viewport=DESKTOP)
    page.goto(url)
    ask_planets(page, gold="B")
    page.locator("#final").get_by_text("Round 0 running", exact=False).wait_for(timeout=60_000)
    page.fill("#note textarea, #note input", NOTE)
    page.click("#note-send")
    page.locator("#note-said").get_by_text("Sent — reaches every agent before the next round").wait_for(timeout=30_000)
    shot(page, "human-note-sent")
    table.gate.set()  # round 0 answers now
    page.locator("#final").get_by_text("Final answer: B", exact=False).wait_for(timeout=60_000)
    [run] = store.list_runs()
    t = store.get_run(run.id).transcript
    assert all(NOTE in prompts(turn) for turn in t.rounds[1].turns)  # the agents' round-1 prompts
    assert not any(NOTE in prompts(turn) for turn in t.rounds[0].turns)
    assert [c.text for c in t.rounds[1].aux if c.kind == "human"] == [NOTE]
    shot(page, "human-debate")

    page.get_by_role("tab", name="Inspect runs").click()
    page.locator("#runs span:visible").filter(has_text="Which planet is largest?").first.click()
    chat = page.locator("#run-drawer #inspect-chat")
    chat.get_by_text(re.compile(r"^Round 1 \(debate\)")).first.click()
    chat.get_by_text("Moderator's note", exact=False).first.wait_for(timeout=60_000)
    assert NOTE in chat.inner_text()
    shot(page, "human-inspect")

    page.click("#fork-from-here")  # round 1, with agent 1's round-0 answer forced to B
    page.get_by_text("Run id (from Inspect runs)").wait_for(timeout=60_000)
    page.locator("label:has-text('Answer or new message') textarea").first.fill("B")
    assert not page.locator("#fork-stop").is_enabled()  # nothing runs: Stop is not live
    page.click("#fork-button")
    page.wait_for_selector("#fork-status :text('saved')", timeout=60_000)
    page.wait_for_function("() => document.querySelector('#fork-stop').disabled", timeout=30_000)
    fork = next(r for r in store.list_runs() if r.id != run.id)
    f = store.get_run(fork.id).transcript
    assert all(NOTE in prompts(turn) for turn in f.rounds[1].turns)  # said again before the fork's live round 1
    assert [c.text for c in f.rounds[1].aux if c.kind == "human"] == [NOTE]
    page.close()


def test_a_note_sent_during_a_side_by_side_reaches_every_methods_round_1(browser, served):
    """Side by side, the note line is there too, and one note reaches each method's debate (both after the
    shared round 0). Screenshots at 1440x900 and 390x844."""
    url, table, store = served
    table.gate.clear()  # round 0 waits again until the note is sent
    for viewport, name in ((DESKTOP, "desktop"), ({"width": 390, "height": 844}, "phone")):
        before = {r.id for r in store.list_runs()}
        page = browser.new_page(viewport=viewport)
        page.goto(url)
        ask_planets(page, compare=True)
        page.locator("#note textarea, #note input").wait_for(timeout=60_000)  # shown with the comparison
        page.fill("#note textarea, #note input", NOTE)
        page.click("#note-send")
        page.locator("#note-said").get_by_text("Sent — reaches every agent before the next round").wait_for(
            timeout=30_000)
        shot(page, f"i43-more-side-by-side-note-{name}")
        table.gate.set()
        page.locator("#final").get_by_text("Side by side: 2 methods — finished").wait_for(timeout=90_000)
        page.click("#vote-skip")
        page.locator("#vote-note").get_by_text("as you skipped the vote").wait_for(timeout=60_000)
        shot(page, f"i43-more-side-by-side-done-{name}")
        runs = {r.method: store.get_run(r.id).transcript for r in store.list_runs() if r.id not in before}
        assert {"mad", "madm2-objective"} <= set(runs), runs.keys()
        for method in ("mad", "madm2-objective"):
            t = runs[method]
            assert all(NOTE in prompts(turn) for turn in t.rounds[1].turns), method
            assert [c.text for c in t.rounds[1].aux if c.kind == "human"] == [NOTE], method
        assert "reached no agent" not in page.content()
        page.close()
        table.gate.clear()
