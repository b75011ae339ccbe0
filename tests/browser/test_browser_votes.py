"""Blind votes, the Method board, thinking models' folded reasoning and `/?view=api`, in a real headless Chromium
at a desktop (1440×900) and a phone (390×844) size, against a scripted OpenAI-compatible server on loopback.
Screenshots go to screenshots/ (git-ignored)."""
from __future__ import annotations

import pytest

from r2mad.runs.votes import VoteStore  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.debate_form import METHOD_LABELS  # noqa: E402
from testing.scripted_server import FakeServer, ok  # noqa: E402
from tests.browser import SHOTS, app_config, launch, open_options  # noqa: E402  (skips without Chromium)

pytestmark = pytest.mark.slow
DESKTOP, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}
BERLIN = {"A": "1991", "B": "1989", "C": "1961", "D": "1979"}
NAMES = ("MAD", "CoT", "Chain of thought", "mad", "cot")


class Script:
    def __init__(self):
        self.reply = lambda body: ok("The wall fell in 1989. ((B))", latency_s=0.1)

    def __call__(self, body):
        return self.reply(body)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("votes")
    script = Script()
    with FakeServer(models=["fake-model"], responder=script) as server:
        config = app_config(tmp, server.base_url)
        demo = build_app(config)
        yield launch(demo), script, demo.r2mad_services
        demo.close()


def open_page(browser, url, viewport=DESKTOP, path=""):
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(90_000)  # a busy machine renders late; each wait still has its bound
    page.goto(url + path)
    page.wait_for_selector("#question textarea", timeout=60_000)
    return page


def shot(page, name: str, full: bool = True) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"i31-votes-{name}.png"), full_page=full)


def compare_two(page) -> None:
    """MAD and CoT side by side on the Berlin question (gold B), 2 rounds."""
    page.locator("#methods input").click()
    page.get_by_role("option", name=METHOD_LABELS["cot"], exact=True).click()
    page.keyboard.press("Escape")
    page.locator("#methods-hint").get_by_text("2 methods will run side by side").wait_for(timeout=60_000)
    assert page.locator("#blind input").is_checked()  # a page compares blind unless the visitor unticks it
    page.locator("#advanced").get_by_text("Advanced", exact=False).first.click()
    box = page.locator("#rounds input[type=number]")
    box.fill("2")
    box.press("Enter")
    ask_berlin(page)
    page.locator("#final").get_by_text("Side by side: 2 methods — finished").wait_for(timeout=90_000)


def ask_berlin(page) -> None:
    """Type the Berlin Wall question with its options and gold answer, and press Run."""
    page.fill("#question textarea", "In which year did the Berlin Wall fall?")
    open_options(page)
    for letter, text in BERLIN.items():
        page.fill(f"#option-{letter} textarea, #option-{letter} input", text)
    page.fill("#gold textarea, #gold input", "B")
    page.click("#run")


def shown_text(page) -> str:
    """Everything of the comparison a visitor reads: status, summary, matrix, tab names, both chats."""
    parts = [page.locator(sel).inner_text() for sel in ("#final", "#summary", "#matrix", "#chat-col-0")]
    parts += page.locator("button[role=tab]").all_inner_texts()
    return "\n".join(parts)


def test_names_and_gold_stay_hidden_until_the_vote_then_one_vote_counts(browser, served):
    url, _, services = served
    page = open_page(browser, url)
    compare_two(page)
    page.locator("#vote-box").wait_for(state="visible", timeout=30_000)
    text = shown_text(page)
    assert "Debate A" in text and "Debate B" in text
    for name in NAMES:
        assert f"{name}:" not in text and f"{name} " not in text.replace("Debate ", ""), name
    assert "correct" not in page.locator("#final").inner_text()
    assert page.locator("#matrix tbody .chip-gold").count() == 0  # no answer marked right before the vote
    shot(page, "blind-desktop")
    page.locator("#vote-0").click()
    note = page.locator("#vote-note")
    note.get_by_text("your vote is counted").wait_for(timeout=30_000)
    assert "← your vote" in note.inner_text() and "Gold answer: B" in note.inner_text()
    final = page.locator("#final").inner_text()
    assert "MAD: Final answer: B — correct" in final and "CoT: Final answer: B — correct" in final
    assert page.locator("#matrix tbody .chip-gold").count() > 0
    assert not page.locator("#vote-box").is_visible()  # the vote is asked once
    [vote] = VoteStore(services.store).votes()
    assert set(vote.runs) == {"mad", "cot"} and vote.shown["Debate A"] == vote.winner_method
    shot(page, "revealed-desktop")

    page.get_by_role("tab", name="Method board").click()
    board = page.locator("#board-table")
    page.locator("#board-note").get_by_text("1 vote(s) from 1 visitor(s)").wait_for(timeout=30_000)
    page.wait_for_function("() => document.querySelector('#board-table').innerText.includes('100% (1/1)')",
                           timeout=30_000)
    shot(page, "board-desktop")
    table = board.inner_text().split("Accuracy (same comparisons)", 1)[1]
    winner, loser = ("MAD", "CoT") if vote.winner_method == "mad" else ("CoT", "MAD")
    assert table.count("100% (1/1)") == 2 and table.index(winner) < table.index(loser)  # strongest first
    assert table.split(winner, 1)[1].split()[0].startswith("+")  # the winner above the average, the loser below
    assert table.split(loser, 1)[1].split()[0].startswith("-")
    page.close()


def test_skip_on_a_phone_shows_the_names_without_a_vote(browser, served):
    url, _, services = served
    before = len(VoteStore(services.store).votes())
    page = open_page(browser, url, PHONE)
    compare_two(page)
    page.locator("#vote-box").wait_for(state="visible", timeout=30_000)
    page.locator("#vote-box").scroll_into_view_if_needed()
    buttons = [page.locator(f"#vote-{i}").bounding_box() for i in (0, 1)] + [
        page.locator("#vote-skip").bounding_box()]
    assert all(b["x"] >= 0 and b["x"] + b["width"] <= PHONE["width"] for b in buttons)  # within 390 px
    shot(page, "blind-phone", full=False)
    page.locator("#vote-skip").click()
    page.locator("#vote-note").get_by_text("as you skipped the vote").wait_for(timeout=30_000)
    assert "MAD: Final answer" in page.locator("#final").inner_text()
    assert len(VoteStore(services.store).votes()) == before  # skipping counts nothing
    shot(page, "skipped-phone", full=False)
    page.close()


def test_a_thinking_models_reasoning_is_folded_apart_from_the_answer(browser, served):
    url, script, _ = served
    script.reply = lambda body: ok("<think>The wall fell in 1991? No: 1991 is the USSR. It was November "
                                   "1989.</think>It fell in 1989. ((B))", latency_s=0.1)
    try:
        page = open_page(browser, url)
        ask_berlin(page)
        page.locator("#final").get_by_text("Final answer: B", exact=False).first.wait_for(timeout=90_000)
        chat = page.locator("#chat-single")
        chat.get_by_text("Agent 1 · ", exact=False).first.click()  # open the first agent's message
        folded = chat.locator("details.thinking").first
        folded.wait_for(timeout=30_000)
        assert "Thinking (" in folded.locator("summary").inner_text()
        assert not folded.get_attribute("open") and not folded.get_by_text("USSR").is_visible()
        folded.locator("summary").click()
        folded.get_by_text("USSR", exact=False).wait_for(timeout=10_000)
        shot(page, "thinking-desktop")
        page.close()
    finally:
        script.reply = Script().reply


def test_view_api_in_the_address_opens_the_api_page(browser, served):
    page = open_page(browser, served[0], path="?view=api")
    page.locator(".api-docs").get_by_text("run_debate", exact=False).first.wait_for(timeout=90_000)
    assert "view=api" in page.url
    shot(page, "view-api", full=False)
    page.close()


def test_a_card_clicked_while_a_vote_waits_drops_the_vote(browser, served):
    page = open_page(browser, served[0])
    compare_two(page)
    page.locator("#vote-box").wait_for(state="visible", timeout=30_000)
    page.locator("#example-0").click()
    page.locator("#vote-box").wait_for(state="hidden", timeout=30_000)
    page.locator("#blind").wait_for(state="hidden", timeout=30_000)  # the card's one method: nothing blind
    page.close()
