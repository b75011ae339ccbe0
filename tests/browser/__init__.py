"""What every browser test shares: Debian's Chromium driven by Playwright (its own browser download does
not work offline), the flags it runs headless with, and where screenshots go (git-ignored). Importing
this skips the importing test module, with the reason, where Chromium or Playwright is missing."""
from contextlib import contextmanager
from pathlib import Path

import pytest

from r2mad.ui import serving

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Debian chromium is not installed (/usr/bin/chromium); install it with "
                "`apt-get install -y chromium` to run the browser tests.", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def app_config(tmp: Path, base_url: str, *, timeout_s: float = 60, more_backbones=(), settings=None, **app):
    """The shipped config with a default backbone "fake" at base_url (the scripted server), data under
    tmp/var, no default bank and the hash embedder; `settings` and `app` override those sections."""
    import dataclasses
    import os

    from r2mad.settings.config import load_config
    from r2mad.settings.serving import Backbone

    config = load_config(env={**os.environ, "R2MAD_DATA_DIR": str(tmp / "var")})
    fake = Backbone(name="fake", label="Scripted test server", base_url=base_url, model="fake-model",
                    timeout_s=timeout_s, max_retries=0)
    backbones = {**config.backbones, "fake": fake, **{b.name: b for b in more_backbones}}
    return dataclasses.replace(
        config, backbones=backbones, default_backbone="fake", settings=config.settings.replace(**(settings or {})),
        app=dataclasses.replace(config.app, **{"default_bank": None, "embedder": "hash-64", **app}))


def click_until_shown(click, shown, *, tries: int = 3, timeout: float = 20_000) -> None:
    """Call `click` until the locator `shown` is visible (its last wait's TimeoutError raised): on a busy machine
    a late update of the page can undo a click, fold again what it unfolded or empty a box just filled."""
    for attempt in range(tries):
        click()
        try:
            shown.wait_for(state="visible", timeout=timeout)
            return
        except sync_api.TimeoutError:
            if attempt == tries - 1:
                raise


def open_options(page) -> None:
    """Unfold the form's multiple-choice options (clicked again while option A does not show)."""
    click_until_shown(page.get_by_text("Multiple-choice options", exact=False).click,
                      page.locator("#option-A").first)


def ask_planets(page, *, compare: bool = False, gold: str | None = None) -> None:
    """On the Debate tab: ask which planet is largest (A Mars, B Jupiter; `gold` the right letter) and press Run;
    `compare` adds MAD-M² (objective) beside the default method first."""
    from r2mad.ui.debate_form import METHOD_LABELS

    if compare:
        page.locator("#methods input").click()
        page.get_by_role("option", name=METHOD_LABELS["madm2-objective"]).click()
        page.keyboard.press("Escape")
        page.locator("#methods-hint").get_by_text("2 methods will run side by side").wait_for(timeout=60_000)
    page.fill("#question textarea", "Which planet is largest?")
    open_options(page)
    page.fill("#option-A textarea, #option-A input", "Mars")
    page.fill("#option-B textarea, #option-B input", "Jupiter")
    if gold:
        page.fill("#gold textarea, #gold input", gold)
    page.click("#run")


def launch(demo) -> str:
    """Queue and serve a built app on a free loopback port; returns its URL (close the app when done)."""
    import socket

    demo.queue(default_concurrency_limit=4)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serving.launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
    return f"http://127.0.0.1:{port}/"


@contextmanager
def served_page(browser, demo, width: int = 1440):
    """A page on the Debate tab of `demo` (a built app), served for it; the app and the page closed after."""
    url = launch(demo)
    page = browser.new_page(viewport={"width": width, "height": 1000})
    try:
        page.goto(url)
        page.wait_for_selector("#question textarea", timeout=60_000)
        yield page
    finally:
        page.close()
        demo.close()


TABLE_READS = """(selector) => {
    // A table reads on a narrow screen when no word of a header or cell breaks over two lines and every cell
    // is on screen or inside a box that scrolls sideways (its own scroller), and the page itself does not.
    const broken = [], hidden = [];
    for (const cell of document.querySelectorAll(`${selector} th, ${selector} td`)) {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const m of node.textContent.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(node, m.index);
                range.setEnd(node, m.index + m[0].length);
                const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
                if (tops.size > 1) broken.push(m[0]);
            }
        }
        let box = cell.parentElement;
        while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
        if (!box && cell.getBoundingClientRect().right > innerWidth + 1) hidden.push(cell.innerText);
    }
    return {broken, hidden, cells: document.querySelectorAll(`${selector} th`).length,
            page: document.documentElement.scrollWidth - innerWidth};
}"""


def table_reads(page, selector: str) -> dict:
    """How the tables under `selector` read (TABLE_READS): words broken mid-word, cells off screen."""
    return page.evaluate(TABLE_READS, selector)
