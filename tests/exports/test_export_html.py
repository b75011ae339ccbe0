"""Sharing without a server: `export-html RUN_ID` and an eval's report.html are one self-contained file each
(no script, no external URL, plots inline), read in real Chromium with JavaScript off."""
import dataclasses
import re

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.cli import main
from r2mad.evaluation.report import write_report
from r2mad.runs.store import RunStore
from r2mad.settings.config import load_config
from tests.helpers import STORED_MCQ, evaluate, make_eval_run, make_transcript, save_run

CASE = {"case_id": "q7:a1:r1", "similarity": 0.8125, "answer": "B", "correct": False}


def stored_run(store):
    """Agent 2 takes agent 1's A in round 1 (an influence edge); agent 1 was shown a memory case."""
    t = make_transcript(STORED_MCQ, [["A", "B", "B"], ["A", "A", "B"]], "A", True,
                        text="See <https://example.com/x.png> and ![p](http://example.com/p.png). ")
    r1 = t.rounds[1]
    turns = (dataclasses.replace(r1.turns[0], details={"retrieved": [CASE]}), *r1.turns[1:])
    t = dataclasses.replace(t, rounds=(t.rounds[0], dataclasses.replace(r1, turns=turns)))
    run = save_run(store, t)
    book = LabelBook(store)
    book.save_labels(run, "ada", ["other"], note="agent 2 gave in <quickly>")
    book.set_final(run, ["other"], adjudicator="bo")
    return run


def exported(tmp_path):
    store = RunStore(load_config().app.runs_db)
    run = stored_run(store)
    out = tmp_path / "run.html"
    assert main(["export-html", run[:8], "--out", str(out)]) == 0
    return run, out.read_text(encoding="utf-8")


def test_the_run_page_holds_every_part_and_nothing_from_outside(tmp_path):
    run, html = exported(tmp_path)
    for part in ("Scoreboard", "Debate", "Memory cases shown to the agents", "Influence graph", "Labels"):
        assert f"<h2>{part}</h2>" in html
    assert "q7:a1:r1" in html and "0.812" in html  # the case shown to agent 1
    assert 'data-from="1" data-to="2"' in html  # agent 2 took agent 1's answer
    assert "agent 2 gave in &lt;quickly&gt;" in html and "Adjudicated: other (by bo)" in html
    assert "<script" not in html.lower()
    assert not re.findall(r"""(?:src|href)\s*=\s*["'](?!#|data:)""", html)  # the transcript's URLs went nowhere
    assert f"<h1>Run {run}</h1>" in html


def test_report_html_inlines_the_plots(tmp_path):
    evaluate(make_eval_run(methods=("cot", "mad"), limit=2), tmp_path / "ev")
    write_report(tmp_path / "ev")
    html = (tmp_path / "ev" / "report.html").read_text(encoding="utf-8")
    assert html.count('src="data:image/png;base64,') >= 2 and "<table>" in html
    assert "<script" not in html.lower() and not re.findall(r"""(?:src|href)\s*=\s*["'](?!#|data:)""", html)


@pytest.mark.slow
def test_both_files_read_in_chromium_with_javascript_off(tmp_path, browser):
    from concurrent.futures import ThreadPoolExecutor

    from tests.browser import SHOTS

    run, _ = exported(tmp_path)
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread; the eval gets its own
        pool.submit(evaluate, make_eval_run(methods=("cot", "mad"), limit=2), tmp_path / "ev").result()
    write_report(tmp_path / "ev")
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    asked = []
    context.on("request", lambda r: asked.append(r.url))
    page = context.new_page()
    page.goto((tmp_path / "run.html").as_uri())
    assert page.get_by_role("heading", name=f"Run {run}").is_visible()
    assert page.locator("table").first.is_visible() and "Consensus" in page.locator("table").first.inner_text()
    page.get_by_text("Round 1", exact=False).first.click()  # <details> open and close without script
    turn = page.locator("details details summary").first
    turn.click()
    assert page.locator("details details[open]").first.is_visible()
    assert page.locator("svg line.move").count() == 1 and page.get_by_role("cell", name="q7:a1:r1").is_visible()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "export-html-run.png"), full_page=True)
    page.goto((tmp_path / "ev" / "report.html").as_uri())
    boxes = [img.bounding_box() for img in page.locator("img").all()]
    assert len(boxes) >= 2 and all(b and b["width"] > 100 and b["height"] > 100 for b in boxes)
    page.screenshot(path=str(SHOTS / "export-html-report.png"), full_page=True)
    assert all(u.startswith(("file://", "data:")) for u in asked), [u for u in asked if not u.startswith("file")]
    context.close()
