"""What every browser test shares: Debian's Chromium driven by Playwright (its own browser download does
not work offline), the flags it runs headless with, and where screenshots go (git-ignored). Importing
this skips the importing test module, with the reason, where Chromium or Playwright is missing."""
from pathlib import Path

import pytest

from r2mad.ui import serving

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Debian chromium is not installed (/usr/bin/chromium); install it with "
                "`apt-get install -y chromium` to run the browser tests.", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

SHOTS = Path(__file__).resolve().parent.parent / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def launch(demo) -> str:
    """Queue and serve a built app on a free loopback port; returns its URL (close the app when done)."""
    import socket

    demo.queue(default_concurrency_limit=4)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serving.launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
    return f"http://127.0.0.1:{port}/"


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
