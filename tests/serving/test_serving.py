"""Launching survives a server slow to answer its first request: Gradio's one-shot localhost check is
retried (a loaded machine used to make launch refuse with "localhost is not accessible")."""
from __future__ import annotations

import urllib.request

import gradio as gr
import pytest
from gradio import networking

from r2mad.ui import serving
from tests.helpers import free_port

pytestmark = pytest.mark.slow  # a real server


def test_launch_waits_out_a_localhost_check_that_fails_at_first(monkeypatch):
    real, misses = networking.url_ok, []

    def slow_to_answer(url: str) -> bool:  # what a loaded machine looks like to Gradio's check
        if len(misses) < 3:
            misses.append(url)
            return False
        return real(url)

    monkeypatch.setattr(networking, "url_ok", slow_to_answer)
    with gr.Blocks() as demo:
        gr.Markdown("hello")
    port = free_port()
    serving.launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
    try:
        assert len(misses) == 3  # it asked again instead of refusing to start
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as page:
            assert page.status == 200
        assert networking.url_ok is slow_to_answer  # Gradio's check is put back
    finally:
        demo.close()
