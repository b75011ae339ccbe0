"""The first screen, the scoreboard and the honest states in a real headless Chromium at a desktop
(1440×900) and a phone (390×844) size, against a scripted OpenAI-compatible server on loopback: an
example card shows a recorded debate without running it, a live run streams the scoreboard with Run off and Stop on,
stopped / unreachable / cut / rejected answers read as such, four methods side by side fit 1440 px, and
Inspect on a phone shows the question and the outcome. Screenshots go to screenshots/ (git-ignored)."""
from __future__ import annotations

import shutil

import pytest

from r2mad.settings.serving import Backbone  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.examples import CARDS, cached  # noqa: E402
from testing.scripted_server import FakeServer, ok  # noqa: E402
from tests.browser import SHOTS, app_config, launch, open_options  # noqa: E402  (skips without Chromium)
from tests.helpers import ROOT  # noqa: E402

pytestmark = pytest.mark.slow
DESKTOP, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}
BERLIN = {"A": "1991", "B": "1989", "C": "1961", "D": "1979"}


class Script:
    """What the scripted server answers: `reply(body)` is swapped per test; `slow_after` delays every
    call after that many, so a test can stop a debate between rounds."""

    def __init__(self):
        self.reply = lambda body: ok("The wall fell in 1989. ((B))", latency_s=0.3)

    def __call__(self, body):
        return self.reply(body)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    script = Script()
    with FakeServer(models=["fake-model"], responder=script) as server:
        shutil.copytree(ROOT / "memory" / "demo-mcq", tmp / "memory" / "demo-mcq")
        config = app_config(tmp, server.base_url, memory_dirs=(str(tmp / "memory"),), more_backbones=[
            Backbone(name="nowhere", label="Nothing listens here", base_url="http://127.0.0.1:9/v1", model="m",
                     timeout_s=0.5, max_retries=0)])
        demo = build_app(config)
        yield launch(demo), script, demo.r2mad_services
        demo.close()


def open_page(browser, url, viewport=DESKTOP):
    page = browser.new_page(viewport=viewport)
    page.goto(url)
    page.wait_for_selector("#question textarea", timeout=60_000)
    return page


@pytest.fixture
def page(browser, served, request):
    page = open_page(browser, served[0])
    yield page
    shot(page, f"last-{request.node.name.removeprefix('test_')[:40]}")  # how the page ended, pass or fail
    page.close()


def shot(page, name: str, full: bool = True) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full)


def ask(page, question: str, options: dict[str, str] | None = None, gold: str = "", backbone: str | None = None,
        max_tokens: int | None = None, rounds: int = 3):
    page.locator("#advanced").get_by_text("Advanced", exact=False).first.click()
    if backbone:
        page.locator("#advanced input[role=listbox], #advanced input").first.click()
        page.get_by_role("option", name=backbone).click()
    for elem_id, value in (("rounds", rounds), ("max-tokens", max_tokens)):
        if value is not None:
            box = page.locator(f"#{elem_id} input[type=number]")
            box.fill(str(value))
            box.press("Enter")
    page.fill("#question textarea", question)
    if options:
        open_options(page)
        for letter, text in options.items():
            page.fill(f"#option-{letter} textarea, #option-{letter} input", text)
    if gold:
        page.fill("#gold textarea, #gold input", gold)


CONTRAST = """text => {
    const el = [...document.querySelectorAll('body *')]
        .find(e => e.children.length === 0 && e.textContent.includes(text));
    const rgb = c => c.match(/[0-9.]+/g).slice(0, 4).map(Number);
    const lum = ([r, g, b]) => [r, g, b].map(v => v / 255).map(v => v <= 0.03928 ? v / 12.92
        : ((v + 0.055) / 1.055) ** 2.4).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
    let bg = el, c;
    while (bg && ((c = rgb(getComputedStyle(bg).backgroundColor)).length === 4 && c[3] === 0)) bg = bg.parentElement;
    const back = bg ? rgb(getComputedStyle(bg).backgroundColor) : [255, 255, 255];
    const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(back)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def final_text(page) -> str:
    return page.locator("#final").inner_text()


def wait_final(page, text: str, timeout: float = 60_000) -> str:
    page.locator("#final").get_by_text(text, exact=False).first.wait_for(timeout=timeout)
    return final_text(page)


def test_first_screen_explains_itself_and_a_card_shows_a_recorded_debate(browser, served):
    services = served[2]
    recorded = [card for card in CARDS if cached(card) is not None]
    assert recorded, "no example debate is recorded; run `python -m r2mad.ui.examples`"
    for viewport, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page = open_page(browser, served[0], viewport)
        cards = page.locator(".example-card")
        assert cards.count() == len(CARDS)
        if viewport is DESKTOP:
            assert cards.first.bounding_box()["y"] < 450  # the cards are on the first screen
            assert page.locator("#run").is_enabled() and not page.locator("#stop").is_enabled()
            assert not page.locator("#token").is_visible()  # the scripted backbone needs no token
            for help_text in ("Grouped: debate methods", "Try a card"):  # help text reads at WCAG AA or better
                assert page.evaluate(CONTRAST, help_text) >= 4.5
        shot(page, f"first-screen-{name}", full=False)
        index = CARDS.index(recorded[0])
        saved = services.store.count_runs()
        cards.nth(index).click()
        page.locator("#scoreboard .chip").first.wait_for(timeout=60_000)
        # shown from its recording, not run: nothing new is saved (how fast it shows is the bench's figure)
        assert "Recorded earlier with seed 0" in final_text(page)
        assert services.store.count_runs() == saved
        page.locator("#run-live").wait_for(timeout=30_000)  # the form is filled by the server, then
        page.wait_for_function("q => document.querySelector('#question textarea').value === q",
                               arg=cached(recorded[0]).task.question, timeout=30_000)
        page.locator("#chat-single").get_by_text("Round 0 (each agent alone)").first.wait_for(timeout=30_000)
        shot(page, f"card-recorded-{name}")
        board = page.evaluate("() => { const d = document.querySelector('#scoreboard .scoreboard'); "
                              "return [d.getBoundingClientRect().right, d.scrollWidth, d.clientWidth]; }")
        assert board[0] <= viewport["width"] and board[1] <= board[2], board  # every round in view, no cut
        page.close()


def test_a_live_run_streams_the_scoreboard_with_run_off_and_stop_on(page, served):
    served[1].reply = lambda body: ok("Checking. The wall fell in 1989. ((B))", latency_s=2.0)
    ask(page, "In which year did the Berlin Wall fall?", BERLIN, gold="B")
    page.click("#run")
    page.locator("#scoreboard .chip-pending").first.wait_for(timeout=60_000)  # agents still writing
    assert not page.locator("#run").is_enabled() and page.locator("#stop").is_enabled()
    assert not page.locator("#debate-fork").is_visible()  # a fork is offered once the debate is saved
    shot(page, "live-running", full=False)
    text = wait_final(page, "Final answer: B — correct")
    assert "Final answer: B — correct" in text
    assert page.locator("#scoreboard .chip-gold").count() >= 3
    page.wait_for_function("() => !document.querySelector('#run').disabled", timeout=60_000)
    assert not page.locator("#stop").is_enabled()
    shot(page, "live-finished")
    page.click("#debate-fork-button")  # fork the debate just watched, from round 1
    page.get_by_text("Run id (from Inspect runs)").wait_for(timeout=60_000)
    fork_tab = page.locator("#fork-button").locator("xpath=ancestor::div[@role='tabpanel']")
    assert fork_tab.locator("input, textarea").first.input_value() == served[2].store.list_runs()[0].id


def test_stopped_after_round_0_says_there_is_no_final_answer(page, served):
    calls = []

    def reply(body):  # round 0 is quick and split (no early stop); a debate round is slow
        calls.append(1)
        slow = any(m.get("role") == "assistant" for m in body.get("messages", []))
        return ok("It was 1989. ((B))" if len(calls) % 3 else "It was 1991. ((A))", latency_s=20 if slow else 0.2)
    served[1].reply = reply
    ask(page, "In which year did the Berlin Wall fall?", BERLIN, gold="B")
    page.click("#run")
    page.locator("#scoreboard").get_by_text("running…").first.wait_for(timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('#scoreboard .chip-gold').length >= 2", timeout=60_000)
    page.click("#stop")
    text = wait_final(page, "Stopped after round 0 — no final answer")
    assert "Final answer" not in text
    page.locator("#scoreboard").get_by_text("stopped mid-round").first.wait_for(timeout=30_000)
    assert "running…" not in page.locator("#scoreboard").inner_text()
    shot(page, "stopped-after-round-0")


def test_unreachable_endpoint_reads_failed_with_zero_calls(page, served):
    ask(page, "What is 2+3?", gold="5", backbone="Nothing listens here")
    page.click("#run")
    text = wait_final(page, "Failed: could not reach the endpoint (0 calls)")
    assert "Final answer" not in text
    shot(page, "failed-unreachable")


def test_answers_cut_at_the_token_limit_and_rejected_citations_say_so(page, served):
    served[1].reply = lambda body: ok("Let me think about the wall and the", finish_reason="length",
                                      completion_tokens=64)
    ask(page, "In which year did the Berlin Wall fall?", BERLIN, gold="B", max_tokens=64, rounds=1)
    page.click("#run")
    wait_final(page, "every answer was cut at the token limit")
    assert page.locator("#scoreboard").get_by_text("cut").count() >= 3
    assert "Cut at the token limit" in page.locator("#chat-single").inner_text()
    shot(page, "cut-at-token-limit")
    served[1].reply = lambda body: ok("The wall came down late in the decade.\nC) 1989")
    page.click("#run")
    wait_final(page, "No final answer — no agent gave an answer")
    assert page.locator("#scoreboard").get_by_text("rejected").count() >= 3
    assert "Rejected: letter C but the text names option B's answer" in page.locator("#chat-single").inner_text()
    shot(page, "rejected-citation")


def pick_methods(page, labels: list[str]) -> None:
    for label in labels:
        page.locator("#methods input").click()
        page.get_by_role("option", name=label, exact=True).click()
    page.keyboard.press("Escape")


def test_four_methods_side_by_side_form_a_matrix_that_fits_1440_px(page, served):
    from r2mad.ui.debate_form import METHOD_LABELS

    served[1].reply = lambda body: ok("Checked twice. ((B))", latency_s=0.2)
    pick_methods(page, [METHOD_LABELS[m] for m in ("madm2-objective", "truemad", "cot", "r2mad-random")])
    page.locator("#methods-hint").get_by_text("5 methods are picked").wait_for(timeout=60_000)
    page.locator("#methods").get_by_text("R²-MAD, Random", exact=False).locator(
        "xpath=..").get_by_role("button").first.click()  # remove the fifth
    page.locator("#methods-hint").get_by_text("4 methods will run side by side").wait_for(timeout=60_000)
    ask(page, "In which year did the Berlin Wall fall?", BERLIN, gold="B", rounds=2)
    page.click("#run")
    wait_final(page, "Side by side: 4 methods — finished", timeout=90_000)
    page.click("#vote-skip")  # blind until a vote or a skip (test_browser_votes.py)
    text = wait_final(page, "MAD-M² (O): Final answer", timeout=60_000)
    for line in ("MAD: Final answer: B — correct", "MAD-M² (O): Final answer: B — correct",
                 "TrueMAD: Final answer: B — correct", "CoT: Final answer: B — correct"):
        assert line in text
    matrix = page.locator("#matrix table")
    assert matrix.locator("tbody tr").count() == 4
    assert matrix.locator(".chip-gold").count() >= 3 * 3 + 1  # three debate rows of 3 agents, CoT's one
    summary = page.locator("#summary").inner_text()
    assert "Parse failures" in summary and "Calls" in summary
    page.locator("#summary-csv").wait_for(timeout=30_000)
    fits = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
                         " document.querySelector('#matrix .matrix').scrollWidth,"
                         " document.querySelector('#matrix .matrix').clientWidth]")
    assert fits[0] <= fits[1] and fits[2] <= fits[3], fits  # no horizontal scrolling at 1440 px
    assert page.locator("#summary").bounding_box()["y"] < page.locator("#matrix").bounding_box()["y"]
    shot(page, "side-by-side-4")


def test_inspect_on_a_phone_shows_the_question_and_the_outcome(browser, served):
    from r2mad.types import AgentTurn, Answer, Round, Task, Transcript

    store = served[2].store
    task = Task("mcq", "In which year did the Berlin Wall fall?", tuple(BERLIN.items()), "B", "mcq-027")
    turns = tuple(AgentTurn(a, 0, "P", (), "((C))", Answer("C", "double_paren")) for a in range(3))
    t = Transcript(task, "mad", "fake", {"agents": 3}, (Round(0, turns, 1.0),), Answer("C", "double_paren"),
                   False, "done")
    run_id = store.start_run(method="mad", backbone="fake", bank=None, task=task, settings={}, seed=0,
                             code_version="t", source="app")
    store.save_transcript(run_id, t, "done")
    page = open_page(browser, served[0], PHONE)
    page.get_by_role("tab", name="Inspect runs").click()
    find = """([question, outcome]) => {
        const seen = t => [...document.querySelectorAll('#runs .cell-wrap')].map(e => [e, e.getBoundingClientRect()])
            .find(([e, r]) => e.innerText.trim() === t && r.width > 0 && r.height > 0);
        const q = seen(question), o = seen(outcome);
        return q && o ? [q[1].left, q[1].right, o[1].left, o[1].right, (q[1].top + q[1].bottom) / 2] : null;
    }"""
    boxes = page.wait_for_function(find, arg=["In which year did the Berlin Wall fall?", "wrong"],
                                   timeout=30_000).json_value()
    assert 0 <= boxes[0] and boxes[3] <= PHONE["width"], boxes  # question and outcome on screen, no scrolling
    shot(page, "inspect-phone", full=False)
    page.mouse.click((boxes[0] + boxes[1]) / 2, boxes[4])  # open the run from its row
    page.locator("#inspect-header").get_by_text("Question:").wait_for(timeout=60_000)
    assert "Final answer: C — wrong (gold B)" in page.locator("#inspect-final").inner_text()
    shot(page, "inspect-phone-open")
    page.close()


def test_inspect_shows_label_chips_and_a_run_drawer_that_forks_from_a_round(page, served):
    from dataclasses import asdict

    from r2mad.steer.fork import ForkSpec
    from r2mad.types import AgentTurn, Answer, Round, Task, Transcript

    store = served[2].store
    task = Task("mcq", "Which wall fell in 1989 in Germany?", tuple(BERLIN.items()), "B", "mcq-drawer")
    rounds = tuple(Round(r, tuple(AgentTurn(a, r, "P", (), f"(({x}))", Answer(x, "double_paren"))
                                  for a, x in enumerate(xs)), 1.0) for r, xs in enumerate(["BCC", "CCC"]))
    t = Transcript(task, "mad", "fake", {"agents": 3}, rounds, Answer("C", "double_paren"), False, "done")
    child = store.start_run(method="mad", backbone="fake", bank=None, task=task, settings={"rounds": 2}, seed=0,
                            code_version="t", source="fork")  # saved first: the parent is the newest row
    store.save_transcript(child, t, "done")
    run_id = store.start_run(method="mad", backbone="fake", bank=None, task=task, settings={"rounds": 2}, seed=0,
                             code_version="t", source="app")
    store.save_transcript(run_id, t, "done")
    store.link_fork(child, run_id, asdict(ForkSpec(1)))
    first, second = list(store.taxonomy)[:2]
    store.annotate(run_id, annotator="ann1", labels=[first, second])
    store.annotate(run_id, annotator="ann2", labels=[first])

    page.get_by_role("tab", name="Inspect runs").click()
    chips = page.locator("#runs .label-chip:visible")  # the only labelled run of this module
    chips.first.wait_for(timeout=30_000)
    assert chips.all_inner_texts() == [first.replace("_", " ") + " ×2", second.replace("_", " ")]
    assert "wrong" in page.locator("#runs .chip-wrong:visible").all_inner_texts()
    assert not page.locator("#run-drawer").is_visible()
    page.locator("#runs span:visible").filter(has_text="Which wall fell in 1989").first.click()
    drawer = page.locator("#run-drawer")
    drawer.locator("#inspect-scoreboard .chip-gold").first.wait_for(timeout=60_000)  # agent 1's B in round 0
    assert drawer.locator("#inspect-header").get_by_text("Which wall fell in 1989").is_visible()
    assert "Final answer: C — wrong (gold B)" in drawer.locator("#inspect-final").inner_text()
    assert drawer.locator("#inspect-lineage").inner_text() == f"Forked into {child[:8]}."
    box = drawer.bounding_box()
    assert box["x"] + box["width"] <= DESKTOP["width"] + 1 and box["width"] <= 721  # a drawer, not the page
    shot(page, "inspect-drawer", full=False)
    drawer.locator("#inspect-html").click()  # the open run as one self-contained page
    link = drawer.locator("#inspect-html-file a[href*='.html']").first
    link.wait_for(timeout=60_000)
    html = page.request.get(link.get_attribute("href")).text()
    assert f"Run {run_id}" in html and "<script" not in html

    page.click("#fork-from-here")  # round 1, the first a fork can start from
    page.get_by_text("Run id (from Inspect runs)").wait_for(timeout=60_000)
    fork_tab = page.locator("#fork-button").locator("xpath=ancestor::div[@role='tabpanel']")
    assert fork_tab.locator("input, textarea").first.input_value() == run_id
    assert page.get_by_role("spinbutton", name="Fork from round").input_value() == "1"
    shot(page, "inspect-fork-from-here", full=False)

    page.get_by_role("tab", name="Inspect runs").click()
    page.click("#drawer-close")
    drawer.wait_for(state="hidden", timeout=60_000)
    page.click("#inspect-export-csv")  # what the list shows, one row per run
    page.wait_for_function(  # the file's name shows as "runs" and ".csv" on two lines
        "() => (document.querySelector('#inspect-file') || {}).innerText?.replace(/\\s/g, '').includes('runs.csv')",
        timeout=60_000)
    page.click("#inspect-export-html")  # the listed runs as a zip of pages, beside JSONL and CSV
    page.wait_for_function(
        "() => (document.querySelector('#inspect-file') || {}).innerText?.replace(/\\s/g, '')"
        ".includes('runs-html.zip')",
        timeout=60_000)


def test_the_method_list_shows_its_groups_as_headings(page):
    from r2mad.ui.debate_form import GROUPS, ORDER, names

    page.locator("#methods input").click()
    page.get_by_role("option").first.wait_for(timeout=60_000)
    headings = page.evaluate("""ids => ids.map(i => {
        const li = document.querySelector(`#methods li[data-index="${i}"]`);
        return li && getComputedStyle(li, '::before').content; })""",
                             [ORDER.index(names(family)[0]) for family in GROUPS])
    assert headings == [f'"{heading}"' for heading in GROUPS.values()]
    shot(page, "methods-grouped", full=False)
