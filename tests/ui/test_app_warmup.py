"""A cold memory bank never freezes the app: while one visitor's R²-MAD debate builds the index of the
shipped demo bank (real MiniLM embedder, real on-disk Qdrant), the page's /gradio_api/info keeps
answering (polls sent during the warm-up are answered during it), that visitor sees the warm-up's progress,
and another visitor's debate runs untouched. How fast those polls answer is a figure for the bench, not a
test: a busy machine stretches it. Timeouts here only keep a broken app from hanging the suite."""
from __future__ import annotations

import threading
import time
import urllib.request

import pytest
import yaml

pytest.importorskip("gradio_client")

from r2mad.settings.config import load_config  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.serving import launch  # noqa: E402
from tests.helpers import free_port  # noqa: E402
from tests.ui_client import UIClient as Client  # noqa: E402  (the UI events are undocumented)
from tests.ui_client import debate_outputs  # noqa: E402

pytestmark = pytest.mark.slow
HANG_GUARD_S = 900  # only a broken app waits this long; a busy machine is slow, not broken
# not a question of the demo bank, nor one meaning the same: the leak guard would refuse it (docs/memory.md)
ASK = dict(question="Which planet has a day longer than its year?", option_a="Venus", option_b="Mars",
           option_c="Jupiter", option_d="Saturn", gold="A", backbone="fake", agents=3, rounds=2,
           max_tokens=32, seed=0, api_name="/debate")


@pytest.fixture
def app(config_dir):
    methods = yaml.safe_load((config_dir / "methods.yaml").read_text())
    methods["defaults"]["early_stop"] = False  # the scripted agents agree at once; round 1 retrieves
    (config_dir / "methods.yaml").write_text(yaml.safe_dump(methods))
    config = load_config(config_dir)
    assert config.app.default_bank == "memory/demo-mcq" and config.app.embedder == "all-MiniLM-L6-v2"
    demo = build_app(config)
    demo.queue(default_concurrency_limit=4)
    port = free_port()
    launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
    yield demo, f"http://127.0.0.1:{port}/"
    demo.close()


def test_a_cold_bank_index_keeps_the_app_responsive_and_other_debates_running(app):
    demo, url = app
    services = demo.r2mad_services
    answered_while_warming, warming = [], threading.Event()

    def poll() -> None:
        while not warming.is_set():
            sent_while_warming = bool(services.warming)
            urllib.request.urlopen(url + "gradio_api/info", timeout=HANG_GUARD_S).read()
            # a frozen event loop would answer only once the index is built, when warming is over
            answered_while_warming.append(sent_while_warming and bool(services.warming))
            time.sleep(0.2)

    poller = threading.Thread(target=poll)
    poller.start()
    first, second = Client(url, verbose=False), Client(url, verbose=False)
    cold = first.submit(methods=["r2mad"], bank="memory/demo-mcq", **ASK)
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline and not any("warming up" in debate_outputs(out)["status"]
                                                  for out in cold.outputs()):
        time.sleep(0.1)
    other = second.submit(methods=["mad"], bank="", **ASK)
    other_out = debate_outputs(other.result(timeout=HANG_GUARD_S))
    still_warming = not cold.done()
    cold_out = debate_outputs(cold.result(timeout=HANG_GUARD_S))
    warming.set()
    poller.join()

    statuses = [debate_outputs(out)["status"] for out in cold.outputs()]
    assert any("Memory bank warming up (indexing its cases:" in s for s in statuses), statuses[:5]
    assert other_out["json"]["mad"]["status"] == "done" and still_warming  # finished while the index was built
    assert cold_out["json"]["r2mad"]["status"] == "done"
    assert cold_out["json"]["r2mad"]["rounds"][1]["turns"][0]["details"]["retrieved"]  # the bank was used
    assert sum(answered_while_warming) >= 3, answered_while_warming


def test_stop_while_the_bank_warms_up_runs_nothing_and_the_warm_up_goes_on(app):
    demo, url = app
    client = Client(url, verbose=False)
    job = client.submit(methods=["r2mad"], bank="memory/demo-mcq", **ASK)
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline and not any("warming up" in debate_outputs(out)["status"]
                                                  for out in job.outputs()):
        time.sleep(0.1)
    client.predict(api_name="/stop")
    out = debate_outputs(job.result(timeout=HANG_GUARD_S))
    assert out["status"] == "Stopped before the debate started; nothing was run."
    services = demo.r2mad_services
    deadline = time.monotonic() + HANG_GUARD_S
    while services.warming and time.monotonic() < deadline:  # the index is still built, for the next visitor
        time.sleep(0.5)
    assert services.bank("memory/demo-mcq").manifest["counts"]["cases"] > 0 and not services.warming
