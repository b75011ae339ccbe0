"""Launching a built app: `demo.launch` with Gradio's start-up check made patient. Gradio asks whether
its own server answers on localhost with one 3 s request and refuses to start when it does not; a loaded
machine (a busy Space, CI beside other jobs) can miss that, so here the check is retried for a while."""
from __future__ import annotations

import time
from typing import Any

START_CHECK_S = 120.0  # how long the server may take to answer its first request before launch gives up


def launch(demo: Any, **kwargs: Any) -> Any:
    """`demo.launch(**kwargs)`, waiting up to START_CHECK_S for the server to answer on localhost."""
    from gradio import networking

    check = networking.url_ok

    def patient(url: str) -> bool:
        deadline = time.monotonic() + START_CHECK_S
        while not check(url):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
        return True

    networking.url_ok = patient
    try:
        return demo.launch(**kwargs)
    finally:
        networking.url_ok = check
