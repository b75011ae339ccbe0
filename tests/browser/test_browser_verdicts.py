"""Verdicts in a real headless Chromium (scripted backbone with no judge: the reading, the rules and the page are
under test, not a model): "What is 17 times 23?" is debated as math and its chips say how each answer was read
and graded; options typed into the question move into the option fields; a short-answer debate whose agents name
different people never stops early as agreed, and says what it left undecided."""
from __future__ import annotations

import dataclasses
import itertools

import pytest

from r2mad.ui import build_app
from tests.browser import SHOTS, app_config, served_page  # skips without Chromium

pytestmark = pytest.mark.slow  # a browser

NAMES = itertools.cycle(["Final answer: John Adams", "Final answer: John Quincy Adams", "Final answer: John Adams"])


def reply(body) -> str:
    from testing.scripted_server import ok

    question = body["messages"][-1]["content"] if body["messages"][0]["role"] != "system" else \
        next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "17 times 23" in question:
        return ok("17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391.")  # no box: read flexibly
    return ok(f"Reasoning about presidents.\n{next(NAMES)}")


@pytest.fixture(scope="module")
def app(tmp_path_factory, browser):
    from testing.scripted_server import FakeServer

    tmp = tmp_path_factory.mktemp("verdicts")
    with FakeServer(models=["fake-model"], responder=reply) as srv:
        config = app_config(tmp, srv.base_url, settings={"early_stop": True})
        config = dataclasses.replace(config, backbones={**config.backbones, "fake": dataclasses.replace(
            config.backbones["fake"], judges=False)})  # no judge: what the rules leave undecided stays so
        demo = build_app(config)
        with served_page(browser, demo) as page:
            yield page, demo.r2mad_services


def chip_titles(page) -> list[str]:
    """The answer chips' hover texts ("391: matches …"; the legend's chips name no answer)."""
    titles = page.eval_on_selector_all(".scoreboard .chip", "els => els.map(e => e.getAttribute('title'))")
    return [t for t in titles if ": " in t]


def test_17_times_23_is_debated_as_math_and_each_chip_says_how_it_was_read(app):
    page, services = app
    page.fill("#question textarea", "What is 17 times 23?")
    page.wait_for_function("document.querySelector('#kind-chip').innerText.includes('Answer kind: math')",
                           timeout=30_000)
    page.fill("#gold textarea, #gold input", "391")
    page.click("#run")
    page.wait_for_function("document.querySelector('#final').innerText.includes('Final answer: 391')",
                           timeout=120_000)
    assert "correct" in page.inner_text("#final")
    titles = chip_titles(page)
    assert len(titles) == 3 and all(
        t == "391: matches the gold answer (correct: same after normalising); flexible: last number"
        for t in titles), titles
    [record] = services.store.list_runs(limit=1)
    assert services.store.get_run(record.id).transcript.task.kind == "math"
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "verdicts-math.png"), full_page=True)


def test_typed_options_move_into_the_option_fields(app):
    page, _ = app
    page.fill("#question textarea", "Which is a mammal? (A) shark (B) dolphin (C) trout")
    page.locator("#gold textarea, #gold input").click()  # the question box loses focus
    page.wait_for_function("document.querySelector('#question textarea').value === 'Which is a mammal?'",
                           timeout=30_000)
    assert [page.input_value(f"#option-{x} textarea, #option-{x} input") for x in "ABCD"] == [
        "shark", "dolphin", "trout", ""]
    page.wait_for_function("document.querySelector('#kind-chip').innerText.includes('multiple choice')",
                           timeout=30_000)
    page.screenshot(path=str(SHOTS / "verdicts-typed-options.png"), full_page=True)
    for x in "ABC":
        page.fill(f"#option-{x} textarea, #option-{x} input", "")


def test_agents_naming_different_people_never_stop_early_as_agreed(app):
    page, services = app
    page.fill("#question textarea", "Who was the sixth president of the United States?")
    page.fill("#gold textarea, #gold input", "John Quincy Adams")
    page.click("#run")
    page.wait_for_function("document.querySelector('#final').innerText.includes('Final answer: John')",
                           timeout=120_000)
    [record] = services.store.list_runs(limit=1)
    t = services.store.get_run(record.id).transcript
    assert t.task.kind == "short" and len(t.rounds) == 3  # no early stop: the names were never the same
    assert not any("stopping early" in n for n in t.notices)
    assert all(r.consensus == pytest.approx(2 / 3) for r in t.rounds)
    titles = chip_titles(page)
    adams = [x for x in titles if x.startswith("John Adams:")]
    assert adams and all(x.split(": ", 1)[1].startswith(  # then, maybe, "; changed from …"
        "undecided against the gold answer (undecided: no judge (one name inside another)); strict: “Answer:” line")
        for x in adams), titles
    assert any(x.startswith("John Quincy Adams: matches the gold answer") for x in titles), titles
    assert "No judge: 1 pair of answers the rules could not tell apart" in page.inner_text("body")
    page.screenshot(path=str(SHOTS / "verdicts-undecided.png"), full_page=True)
