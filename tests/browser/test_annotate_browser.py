"""The Annotate tab in a real headless Chromium: label five runs of a queue with the keyboard alone,
reload and find labels and queue state kept; a blind queue hides the other annotator's labels until
you submit; a ?run= link opens the run in a fresh browser, and a click on a message blames that turn.
Screenshots go to screenshots/ (git-ignored)."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re

import pytest

from r2mad.annotation.book import LabelBook  # noqa: E402
from r2mad.annotation.queues import Queue, queue_items, save_queue  # noqa: E402
from r2mad.settings.config import load_config  # noqa: E402
from r2mad.types import Task  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from tests.browser import SHOTS, click_until_shown, launch, sync_api  # noqa: E402  (skips without Chromium)
from tests.helpers import make_transcript, save_run  # noqa: E402

pytestmark = pytest.mark.slow
PAYLOAD = '<img src=x onerror="window.__pwned=1">'


def task(n: int) -> Task:
    return Task("mcq", f"Question {n}: which holds? {PAYLOAD}", (("A", "this"), ("B", "that"), ("C", "other")),
                gold="A", id=f"q{n}")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from r2mad.settings.config import Backbone
    from testing.scripted_server import FakeServer
    from tests.conftest import answer

    tmp = tmp_path_factory.mktemp("annotate")
    server = FakeServer(responder=answer).__enter__()  # the runs' backbone, for forks that verify (all say B)
    config = load_config(env={**os.environ, "R2MAD_DATA_DIR": str(tmp / "var")})
    fake = Backbone(name="smollm2-135m", base_url=server.base_url, model="fake-model", timeout_s=30, max_retries=0)
    config = dataclasses.replace(config, app=dataclasses.replace(config.app, memory_dirs=(), default_bank=None),
                                 backbones={**config.backbones, "smollm2-135m": fake})
    demo = build_app(config)
    store = demo.r2mad_services.store
    # five wrong runs for the keyboard queue (their detector flags differ), two for the blind queue
    # ("Run i says I think ((X))" changing X is a bare answer change, not "the same reasoning")
    grids = [[["A", "B", "B"], ["B", "B", "B"]],             # shared misconception, persuaded
             [["B", "C", "A"], ["B", "C", "A"], ["B", "C", "B"]],  # shared, stalled split
             [["B", None, "C"], ["B", "B", "C"]],            # shared, parse failure
             [["B", "B", "A"], ["B", "B", "B"]],             # shared, persuaded
             [["C", "A", "C"], ["C", "C", "C"]]]             # shared, persuaded
    runs = [save_run(store, make_transcript(task(i), grid, "B" if i != 4 else "C", False, text=f"Run {i} says "))
            for i, grid in enumerate(grids)]
    blind = [save_run(store, make_transcript(task(10 + i), [["B", "B"]], "B", False, method="madm2-objective"))
             for i in range(2)]
    book = LabelBook(store)
    book.detect()
    save_queue(store, Queue("five", {"method": "mad", "correct": False}))
    save_queue(store, Queue("blind", {"method": "madm2-objective"}, annotators_per_run=2, blind=True))
    book.save_labels(blind[0], "ana", ["backend_error"], note="the call timed out")
    yield launch(demo), book, runs, blind
    demo.close()
    server.__exit__(None, None, None)


def fresh_page(browser, url):
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#ann-panel", state="attached", timeout=60_000)
    return page


def run_shown(page) -> str:
    return page.locator("#ann-run input, #ann-run textarea").first.input_value()


def ticked(page) -> list[str]:
    boxes = page.locator("#ann-labels input[type=checkbox]")
    return [str(i + 1) for i in range(boxes.count()) if boxes.nth(i).is_checked()]


def wait_progress(page, pattern: str) -> None:
    try:
        page.locator("#ann-progress").filter(has_text=re.compile(pattern)).wait_for(timeout=30_000)
    except sync_api.TimeoutError:
        shot(page, "annotate-failure.png")
        raise AssertionError(f"progress never matched {pattern!r}: {page.locator('#ann-progress').inner_text()!r}")


def shot(page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def test_five_runs_labelled_with_keys_alone_survive_a_reload(served, browser):
    url, book, runs, _ = served
    page = fresh_page(browser, url + "?queue=five")
    wait_progress(page, "Queue five · run 1 of 5")
    for _ in range(5):  # on a busy machine a late first render of the page has emptied a name typed early
        page.fill("#ann-name input, #ann-name textarea", "ana")
        page.keyboard.press("Enter")
        named = page.locator("#ann-progress").filter(has_text=re.compile("as ana: 0 done, 5 pending"))
        with contextlib.suppress(sync_api.TimeoutError):
            named.wait_for(timeout=5_000)
            break
    wait_progress(page, "as ana: 0 done, 5 pending")
    page.keyboard.press("Escape")  # leave the name box: from here on, keys only
    order = [i.run.id for i in queue_items(book.store, _queue(book), "ana")]
    assert order == runs  # 2 flags each: oldest first
    expected = {}
    for n in range(5):
        wait_progress(page, f"run {n + 1} of 5 · as ana: {n} done")
        assert run_shown(page) == order[n]
        pre = set(ticked(page))  # no source's precision is measured yet: nothing comes pre-ticked
        assert not pre and "precision not measured yet" in page.locator("#ann-suggestions").inner_text()
        page.keyboard.press("9")  # 'other' on
        page.keyboard.press(str(6 if n % 2 else 8))  # parse_failure or shared misconception toggled
        page.wait_for_timeout(150)
        expected[order[n]] = pre ^ {"9", str(6 if n % 2 else 8)}
        assert set(ticked(page)) == expected[order[n]]
        if n == 0:
            page.keyboard.press("?")
            assert not page.locator("#ann-help").is_visible()
            page.keyboard.press("?")
            assert page.locator("#ann-help").is_visible()
            shot(page, "annotate-queue.png")
        page.keyboard.press("Control+Enter")
    wait_progress(page, "5 done, 0 pending")
    taxonomy = list(book.store.taxonomy)
    for run_id, keys in expected.items():
        (ann,) = [a for a in book.store.get_run(run_id).annotations if a.annotator == "ana"]
        assert set(ann.labels) == {taxonomy[int(k) - 1] for k in keys}
    page.reload()
    page.wait_for_selector("#ann-panel", state="attached", timeout=60_000)
    wait_progress(page, "as ana: 5 done, 0 pending")
    assert page.locator("#ann-name input, #ann-name textarea").first.input_value() == "ana"
    assert page.locator("#ann-items").inner_text().count("done") == 5
    first = run_shown(page)
    page.keyboard.press("J")
    page.wait_for_function("(id) => document.querySelector('#ann-run input, #ann-run textarea').value !== id",
                           arg=first, timeout=60_000)
    shown = run_shown(page)
    assert shown == order[order.index(first) + 1]
    page.wait_for_timeout(300)
    assert set(ticked(page)) == expected[shown]  # your saved labels come back
    assert page.locator("#ann-chat img[src='x']").count() == 0 and page.evaluate("window.__pwned") is None
    shot(page, "annotate-after-reload.png")
    page.context.close()


def _queue(book):
    return _named(book, "five")


def _named(book, name):
    from r2mad.annotation.queues import get_queue
    return get_queue(book.store, name)


def test_blind_queue_hides_the_other_label_until_you_submit(served, browser):
    url, book, _, blind = served
    page = fresh_page(browser, url + "?queue=blind")
    page.fill("#ann-name input, #ann-name textarea", "bo")
    page.keyboard.press("Enter")
    wait_progress(page, "as bo: 0 done, 2 pending")
    page.keyboard.press("Escape")
    assert run_shown(page) == blind[0]
    others = page.locator("#ann-others")
    others.filter(has_text="stay hidden until you submit").wait_for(timeout=60_000)
    assert "backend_error" not in others.inner_text() and "timed out" not in others.inner_text()
    assert "ana" not in page.locator("#ann-suggestions").inner_text()  # nor her review of a suggestion
    shot(page, "annotate-blind-before.png")
    page.keyboard.press("7")  # backend_error
    page.keyboard.press("Control+Enter")
    wait_progress(page, "as bo: 1 done, 1 pending")
    assert run_shown(page) == blind[1]
    page.keyboard.press("K")
    wait_progress(page, "run 1 of 2")
    others.filter(has_text="backend_error").wait_for(timeout=60_000)
    assert "ana rejected" in page.locator("#ann-suggestions").inner_text()
    assert "ana" in others.inner_text() and "the call timed out" in others.inner_text()
    shot(page, "annotate-blind-after.png")
    page.context.close()


def test_deep_link_opens_the_run_a_click_blames_a_turn_and_a_compared_run_is_labelled(served, browser):
    url, book, runs, _ = served
    page = fresh_page(browser, url + f"?run={runs[3]}")
    # the header names the run by a short id, the whole id on hover
    page.locator(f'#ann-header span.run-id[title="{runs[3]}"]').filter(has_text=runs[3][:8]).wait_for(timeout=30_000)
    assert page.locator("#ann-header").inner_text().count(runs[3]) == 0
    assert run_shown(page) == runs[3]
    assert page.get_by_role("tab", name="Annotate").get_attribute("aria-selected") == "true"
    # round 1's agent 3: its text starts collapsed under its title; open it, then click the text
    page.locator("#ann-chat").get_by_text("Agent 3 · careful").nth(1).click()
    page.locator("#ann-chat").get_by_text("Run 3 says I think ((B))").locator("visible=true").first.click()
    page.locator("#ann-turn").filter(has_text="round 1 · agent 3").wait_for(timeout=60_000)
    # keys: N five times focuses round 1's agent 2 (agent turns only), B blames it, B again unpicks it
    for _ in range(5):
        page.keyboard.press("N")
    assert page.locator("#ann-chat .ann-focus").inner_text().startswith("Agent 2")
    page.keyboard.press("B")
    page.locator("#ann-turn").filter(has_text="round 1 · agent 2").wait_for(timeout=60_000)
    assert "round 1 · agent 3" in page.locator("#ann-turn").inner_text()
    shot(page, "annotate-keys-blame.png")
    page.keyboard.press("B")
    page.wait_for_function("() => !document.querySelector('#ann-turn').innerText.includes('round 1 · agent 2')",
                           timeout=60_000)
    # the ideal action of the picked turn, verified by a fork (the scripted server's agents all say B)
    page.get_by_text("Ideal action of the picked turn").click()

    def save_ideal():  # filled again each try: the unpick's late update can empty the box after it was filled
        page.fill("#ann-ideal textarea", "Mars is the one. ((A))")
        page.click("#ann-ideal-save")
    try:
        click_until_shown(save_ideal, page.locator("#ann-moves").filter(has_text="Opinions"), timeout=30_000)
    except sync_api.TimeoutError:
        shot(page, "annotate-ideal-failure.png")
        raise
    page.click("#ann-ideal-verify")
    page.locator("#ann-moves").filter(has_text="Verified corrections").wait_for(timeout=60_000)
    assert "does not flip: still wrong (B)" in page.locator("#ann-moves").inner_text()
    shot(page, "annotate-verified.png")
    page.locator("#ann-labels").get_by_label(re.compile("majority_persuaded_correct_agent")).check()
    page.locator("#ann-labels input[type=checkbox]").nth(8).check()  # other
    page.click("#ann-copy")
    page.wait_for_function("(id) => document.querySelector('#ann-link input, #ann-link textarea').value"
                           ".endsWith('?run=' + id)", arg=runs[3], timeout=60_000)
    page.click("#ann-save")
    page.wait_for_timeout(1500)
    (ann,) = [a for a in book.store.get_run(runs[3]).annotations if a.annotator == "local"]
    assert ann.blame["other"] == {"round": 1, "agent": 2}
    assert ann.blame["majority_persuaded_correct_agent"]["round"] == 1  # the detector's turn
    # the Compare page, with the labels still beside it: compare, then label the other run there
    page.get_by_role("tab", name="Compare").click()
    page.fill("#ann-other input, #ann-other textarea", runs[0])
    page.click("#ann-compare")
    page.locator("#ann-graphs svg").nth(1).wait_for(timeout=60_000)
    # run 3: agent 3 took B from agents 1 and 2; run 0: agent 1 took B from agents 2 and 3
    assert page.locator("#ann-graphs svg").nth(0).locator("line.move").count() == 2
    assert page.locator("#ann-graphs svg").nth(1).locator('line[data-from="2"][data-to="1"]').count() == 1
    table = page.locator("#ann-compared").inner_text()
    assert "B B A" in table and "A B B" in table and "final" in table
    assert page.locator("#ann-labels").is_visible() and page.locator("#ann-graphs").is_visible()
    shot(page, "annotate-compare.png")
    page.click("#ann-swap")
    page.wait_for_function("(id) => document.querySelector('#ann-run input, #ann-run textarea').value === id",
                           arg=runs[0], timeout=60_000)
    assert page.locator("#ann-other input, #ann-other textarea").first.input_value() == runs[3]
    assert page.locator("#ann-graphs").is_visible()  # still on the Compare page
    page.locator("#ann-labels input[type=checkbox]").nth(10).check()  # stalled_split
    page.click("#ann-save")
    page.wait_for_timeout(1500)
    (ann,) = [a for a in book.store.get_run(runs[0]).annotations if a.annotator == "local"]
    assert "stalled_split" in ann.labels
    page.context.close()


def test_create_a_queue_measure_agreement_adjudicate_and_export(served, browser):
    import io
    import zipfile
    url, book, _, blind = served
    book.save_labels(blind[1], "cy", ["other"])
    book.save_labels(blind[1], "dee", ["advice_misled"])
    page = fresh_page(browser, url + "?queue=blind")
    wait_progress(page, "Queue blind")
    page.get_by_text("New queue from a filter").click()
    page.fill("#ann-q-name input, #ann-q-name textarea", "all wrong")
    page.click("#ann-create")
    # five mad runs, two madm2 runs and the forks that verified a correction above, all wrong (which one
    # opens first depends on who labelled what above)
    n = len(book.store.list_runs(correct=False))
    wait_progress(page, f"Queue all wrong · run [12] of {n}")
    page.click("#ann-freeze")  # a frozen snapshot beside the live filter
    wait_progress(page, rf"Queue all wrong · frozen .* of {n} .*frozen snapshot")
    # a new wrong run is saved while one works: the snapshot keeps its n runs, the live filter takes it
    save_run(book.store, make_transcript(task(20), [["B", "B"]], "B", False, method="madm2-objective"))
    page.keyboard.press("J")
    wait_progress(page, f"run 2 of {n} ")
    assert len(queue_items(book.store, _named(book, "all wrong"), "local")) == n + 1
    page.get_by_role("tab", name="Agreement").click()
    page.click("#ann-measure")
    agreement = page.locator("#ann-agreement")
    agreement.filter(has_text="Krippendorff").wait_for(timeout=30_000)
    assert "advice_misled" in agreement.inner_text() and "precision" in agreement.inner_text()
    assert "Caution:" in agreement.inner_text()  # two runs labelled by two people are too few for κ
    # tables fit their column: every number on one line, no table wider than the run's column
    fits = page.evaluate("""() => {
      const cells = [...document.querySelectorAll('#ann-agreement td')]
        .filter((td) => /^[-+0-9.,%()/ ]+$/.test(td.innerText.trim()) && td.innerText.trim());
      const oneLine = cells.every((td) => { const r = document.createRange(); r.selectNodeContents(td);
        return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size <= 1; });
      const main = document.querySelector('#ann-main').getBoundingClientRect().right;
      const wide = [...document.querySelectorAll('#ann-agreement table')]
        .every((t) => t.getBoundingClientRect().right <= main + 1);
      return [cells.length, oneLine, wide]; }""")
    assert fits[0] > 5 and fits[1:] == [True, True], fits
    row = page.locator("#ann-disagreements").get_by_text(blind[1][:8], exact=True).filter(visible=True).first
    row.wait_for(timeout=60_000)
    assert "cy: other" in page.locator("#ann-disagreements").inner_text()
    row.click()
    page.wait_for_function("(id) => document.querySelector('#ann-run input, #ann-run textarea').value === id",
                           arg=blind[1], timeout=60_000)
    assert blind[1][:8] in page.locator("#ann-final-run").inner_text()  # the run the final labels are for
    page.locator("#ann-final").get_by_label("advice_misled").check()
    page.click("#ann-final-save")
    page.locator("#ann-final-md").filter(has_text="Final labels by local: advice_misled").wait_for(timeout=60_000)
    assert book.finals()[blind[1]].labels == ("advice_misled",)
    shot(page, "annotate-agreement.png")
    page.get_by_role("tab", name="Export").click()
    page.click("#ann-export")
    link = page.locator("#ann-export-file a[href*='.zip']").first
    link.wait_for(timeout=30_000)
    data = page.request.get(link.get_attribute("href")).body()
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert sorted(names) == ["README.md", "labels.parquet", "runs.parquet", "votes.parquet"]
    page.context.close()


def test_the_workbench_fits_a_laptop_and_a_phone_and_the_last_queue_comes_back(served, browser):
    url, book, runs, _ = served
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(url + "?queue=five")
    wait_progress(page, "Queue five")
    boxes = [page.locator(f"#{x}").bounding_box() for x in ("ann-side", "ann-main", "ann-label-pane")]
    assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]  # sidebar | run pages | labels, side by side
    assert all(b["y"] < 300 for b in boxes) and boxes[2]["x"] + boxes[2]["width"] <= 1440
    # Tab from the top of the workbench reaches the labels before the queue form (which sits left of them)
    page.locator("#ann-who").click()
    first = None
    for _ in range(80):
        page.keyboard.press("Tab")
        first = page.evaluate("""() => { const a = document.activeElement;
          return a.closest('#ann-label-pane') ? 'labels' : a.closest('#ann-side') ? 'queue' : null; }""")
        if first:
            break
    assert first == "labels"
    cell = page.locator("#ann-items span.run-id").filter(visible=True).first
    full = cell.get_attribute("title")
    assert full in {r.id for r in book.store.list_runs()} and cell.inner_text() == full[:8]  # short id, whole on hover
    page.goto(url)  # no link: the queue this browser had open comes back
    page.get_by_role("tab", name="Annotate").click()
    wait_progress(page, "Queue five")
    kept = page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
    assert '"r2mad-annotate-queue":"five"' in kept
    shot(page, "annotate-laptop.png")
    context.close()
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True).new_page()
    phone.goto(url + "?queue=five")
    wait_progress(phone, "Queue five")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the screen
    xs = [phone.locator(f"#{x}").bounding_box()["x"] for x in ("ann-side", "ann-main", "ann-label-pane")]
    assert max(xs) - min(xs) < 20  # stacked
    shot(phone, "annotate-phone.png")
    phone.context.close()
