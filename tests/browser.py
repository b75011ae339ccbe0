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
