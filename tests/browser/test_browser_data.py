"""The Your data tab in real headless Chromium at 1440 and 390 wide, against a scripted OpenAI-compatible server
on loopback: upload a CSV, see its columns mapped by their names, run an eval, watch the bar and the time left,
and read the report when it ends. Screenshots in screenshots/ (git-ignored)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from r2mad.ui import build_app
from testing.scripted_server import FakeServer, ok
from tests.browser import SHOTS, app_config, launch, table_reads  # noqa: E402  (skips without Chromium)

pytestmark = pytest.mark.slow
DESKTOP, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}
CSV = ("prompt,label,options\n"
       "Which planet is the largest?,Jupiter,Mars|Jupiter|Venus\n"
       "Which gas do plants take in?,carbon dioxide,oxygen|carbon dioxide|helium\n"
       "Which metal is liquid at room temperature?,mercury,iron|copper|mercury\n")
OUT = SHOTS


HOLD = threading.Event()  # a visitor's debate asking to "hold the slot" waits for this before it answers


def staggered(body):
    """Every answer is B; the three questions take 0.3 s, 1.5 s and 3 s a call, so rows arrive one by one."""
    text = json.dumps(body["messages"])
    if "hold the slot" in text:
        HOLD.wait(120)
    return ok("Checked. ((B))", latency_s=0.3 if "planet" in text else 1.5 if "plants" in text else 3.0)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("data")
    with FakeServer(models=["fake-model"], responder=staggered) as server:
        config = app_config(tmp, server.base_url, remote_concurrency_limit=1)  # one debate on it at a time
        demo = build_app(config)
        yield launch(demo), tmp, demo.r2mad_services
        HOLD.set()
        demo.close()


def shot(page, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / f"i40-bench-{name}.png"), full_page=True)


def upload(page, path: Path) -> None:
    tab = page.get_by_role("tab", name="Your data")
    if not tab.count():  # a phone: the tabs past the first few sit behind "More tabs"
        page.get_by_role("button", name="More tabs").click()
        tab = page.locator(".tab-wrapper button").get_by_text("Your data", exact=True).last
    tab.click()
    page.set_input_files("#data-file input[type=file]", str(path))
    page.locator("#data-summary").get_by_text("3 rows; columns").wait_for(timeout=60_000)


def value(page, elem: str) -> str:
    return page.locator(f"#{elem} input").first.input_value()


def run_and_wait(page, name: str) -> list[str]:
    """Press Run; return every progress line seen until the report shows (a screenshot of the bar midway)."""
    page.click("#data-run")
    seen = []
    line = page.locator("#data-progress .data-progress-line")
    line.wait_for(timeout=60_000)
    while not page.locator("#data-report").get_by_text("own:mine.csv").count():
        text = line.inner_text() if line.count() else ""
        if text and (not seen or seen[-1] != text):
            seen.append(text)
            if "about" in text and not any("about" in x for x in seen[:-1]):
                shot(page, f"running-{name}")
        page.wait_for_timeout(100)  # a poll of the page's state, not a wait for the eval
        assert len(seen) < 500
    seen.append(line.inner_text())
    return seen


def test_upload_map_run_and_read_the_report_on_a_desktop(browser, served, tmp_path):
    url, tmp, _ = served
    path = tmp_path / "mine.csv"
    path.write_text(CSV, encoding="utf-8")
    page = browser.new_page(viewport=DESKTOP)
    page.goto(url)
    page.wait_for_selector("#question textarea", timeout=60_000)
    upload(page, path)
    assert "mine.csv: 3 rows; columns: prompt, label, options." in page.locator("#data-summary").inner_text()
    assert (value(page, "data-question"), value(page, "data-answer"), value(page, "data-choices"),
            value(page, "data-kind")) == ("prompt", "label", "options", "mcq")  # guessed from the names
    shot(page, "mapped-desktop")
    seen = run_and_wait(page, "desktop")
    assert any(" of 6 rows · about " in s for s in seen[:-1]), seen  # the bar moved, with the time left
    assert seen[-1].startswith("6 of 6 rows in "), seen  # 3 questions x 2 methods
    report = page.locator("#data-report").inner_text()
    assert "own:mine.csv" in report and "Accuracy (Table 1 layout)" in report
    shot(page, "report-desktop")
    page.locator("#data-report-file a[download='report.html']").wait_for(timeout=30_000)
    [folder] = (tmp / "var" / "evals").iterdir()
    rows = [json.loads(x) for x in (folder / "rows.jsonl").read_text().splitlines()]
    assert sorted((r["method"], r["final"], r["correct"]) for r in rows)[:3] == [
        ("cot", "B", False), ("cot", "B", True), ("cot", "B", True)]  # gold B, B, C
    page.close()


def test_a_phone_maps_a_file_and_a_wrong_column_is_named(browser, served, tmp_path):
    url, _, _ = served
    path = tmp_path / "mine.csv"
    path.write_text(CSV, encoding="utf-8")
    page = browser.new_page(viewport=PHONE)
    page.goto(url)
    page.wait_for_selector("#question textarea", timeout=60_000)
    upload(page, path)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390 + 1, width  # nothing wider than the phone
    shot(page, "mapped-phone")
    seen = run_and_wait(page, "phone")
    assert seen[-1].startswith("6 of 6 rows in ")
    shot(page, "report-phone")
    reads = table_reads(page, "#data-report")  # the report's tables: whole words, wide ones scroll in their box
    assert reads["cells"] >= 10 and reads["broken"] == [] and reads["hidden"] == [] and reads["page"] <= 1, reads
    page.close()


def test_an_eval_waits_its_turn_behind_a_visitors_debate_and_says_so(browser, served, tmp_path):
    """One visitor's debate holds the only slot on the backbone; another's eval shows its place in the line,
    calls nothing meanwhile, and runs to its report once the debate ends."""
    url, tmp, services = served
    path = tmp_path / "mine.csv"
    path.write_text(CSV, encoding="utf-8")
    rows = lambda: set((tmp / "var" / "evals").glob("*/rows.jsonl"))  # noqa: E731
    before = rows()
    debater, researcher = browser.new_page(viewport=DESKTOP), browser.new_page(viewport=DESKTOP)
    debater.goto(url)
    debater.fill("#question textarea", "Please hold the slot: is 3 more than 2?")
    debater.click("#run")
    researcher.goto(url)
    researcher.wait_for_selector("#question textarea", timeout=60_000)
    upload(researcher, path)
    researcher.click("#data-run")
    waiting = researcher.locator("#data-progress .data-progress-waiting")
    waiting.get_by_text("Waiting in line: place 1").wait_for(timeout=60_000)
    assert "The eval's next question starts when its turn comes." in waiting.inner_text()
    assert services.admission.running_count("remote") == 1 and rows() == before  # not a row while it waits
    shot(researcher, "waiting-in-line")
    HOLD.set()  # the debate answers and ends; the eval's questions take their turns
    researcher.locator("#data-report h1").get_by_text("own:mine.csv").wait_for(timeout=120_000)
    assert researcher.locator("#data-progress .data-progress-line").inner_text().startswith("6 of 6 rows in ")
    assert not waiting.count()
    debater.locator("#final").get_by_text("Final answer", exact=False).wait_for(timeout=60_000)
    debater.close()
    researcher.close()
