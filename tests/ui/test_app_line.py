"""The line for debates, end to end through gradio_client: with one debate running at a time, a second
visitor's debate waits and is told its place, Stop takes it out of the line with nothing saved, a second
Run of a visitor already waiting is refused in one sentence, and an API caller waits in the same line (and
is refused as an error). The scripted server holds every answer until the test lets it go."""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("gradio_client")

from r2mad.settings.config import load_config  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.serving import launch  # noqa: E402
from testing.scripted_server import FakeServer, ok  # noqa: E402
from tests.helpers import free_port  # noqa: E402
from tests.ui_client import PatientClient as Client  # noqa: E402
from tests.ui_client import UIClient, debate_outputs  # noqa: E402  (the UI events are undocumented)

pytestmark = pytest.mark.slow  # a real app and test server

ROOT = Path(__file__).resolve().parents[2]
FORM = dict(backbone="held", methods=["mad"], bank="", agents=2, rounds=1, max_tokens=32, seed=0,
            answer_guard="off", question="What is 1+1?", gold="2")
WAIT_S = 60


def until(check, what: str):
    deadline = time.time() + WAIT_S
    while time.time() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture(scope="module")
def held(tmp_path_factory):
    """An app with one slot per lane, on a server whose answers wait for `gate`."""
    tmp = tmp_path_factory.mktemp("line")
    gate = threading.Event()

    def answer(body):
        gate.wait(WAIT_S)
        return ok("Sure. ((2))")

    with FakeServer(models=["m"], responder=answer) as server:
        configs = tmp / "configs"
        shutil.copytree(ROOT / "configs", configs)
        (configs / "backbones.yaml").write_text(yaml.safe_dump({"default": "held", "backbones": {
            "held": {"base_url": server.base_url, "model": "m", "timeout_s": WAIT_S, "max_retries": 0}}}))
        app = yaml.safe_load((configs / "app.yaml").read_text())
        (configs / "app.yaml").write_text(yaml.safe_dump({**app, "default_bank": None, "concurrency_limit": 1,
                                                          "remote_concurrency_limit": 1, "max_queue": 4}))
        config = load_config(configs, env={**os.environ, "R2MAD_DATA_DIR": str(tmp / "var")})
        demo = build_app(config)
        demo.queue(default_concurrency_limit=config.app.concurrency_limit, max_size=config.app.max_queue)
        port = free_port()
        launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
        yield demo, f"http://127.0.0.1:{port}/", server, gate
        gate.set()
        demo.close()


def status_of(job) -> str:
    outputs = job.outputs()
    return str(debate_outputs(outputs[-1])["status"]) if outputs else ""


def test_a_waiting_visitor_sees_their_place_and_stop_takes_them_out_of_the_line(held):
    demo, url, server, gate = held
    services = demo.r2mad_services
    ann, bob, bob_again = UIClient(url, verbose=False), UIClient(url, verbose=False), UIClient(url, verbose=False)
    first = ann.submit(**FORM, visitor_id="a" * 32, api_name="/debate")
    until(lambda: server.hits, "the first debate's first model call")
    runs_before = services.store.count_runs()
    second = bob.submit(**FORM, visitor_id="b" * 32, api_name="/debate")
    shown = until(lambda: "Waiting in line" in status_of(second) and status_of(second), "bob's place in line")
    assert shown.startswith("**Waiting in line: place 1**") and "Press Stop to leave the line" in shown
    assert "about" not in shown  # no debate has finished yet: no estimate, only the place
    # bob presses Run in another tab: one debate of his may wait, and he is told where it is
    refused = bob_again.predict(**FORM, visitor_id="b" * 32, api_name="/debate")
    assert refused[0].startswith("Not started: Your other debate is still waiting in line (place 1)")
    bob.predict(api_name="/stop")
    final = second.result()
    assert final[0] == "Stopped while waiting in line; nothing was run."
    assert services.store.count_runs() == runs_before and services.admission.waiting_count() == 0
    gate.set()
    assert "final answer" in debate_outputs(first.result())["status"].lower()  # it ran on once the line was clear
    gate.clear()


def test_an_api_caller_waits_in_the_same_line_and_is_refused_as_an_error(held):
    demo, url, server, gate = held
    services = demo.r2mad_services
    ui, api = UIClient(url, verbose=False), Client(url, verbose=False)
    hits = server.hits
    running = ui.submit(**FORM, visitor_id="c" * 32, api_name="/debate")
    until(lambda: server.hits > hits, "the running debate's first model call")
    waiting = api.submit(question="What is 2+2?", method="cot", backbone="held", api_name="/run_debate")
    until(lambda: services.admission.waiting_count() == 1, "the API call in line")
    with pytest.raises(Exception, match="Your other debate is still waiting in line"):
        api.predict(question="What is 3+3?", method="cot", backbone="held", api_name="/run_debate")
    gate.set()
    assert "final answer" in debate_outputs(running.result())["status"].lower()
    assert waiting.result()["status"] == "done"
    assert services.admission.mean_duration("remote") is not None  # finished debates now give an estimate


def test_once_a_debate_has_run_to_its_end_the_waiting_visitor_is_given_an_estimate(held):
    demo, url, server, gate = held
    services = demo.r2mad_services
    if services.admission.mean_duration("remote") is None:  # this test alone: one debate to measure first
        gate.set()
        UIClient(url, verbose=False).predict(**FORM, visitor_id="m" * 32, api_name="/debate")
    gate.clear()
    hits = server.hits
    running = UIClient(url, verbose=False).submit(**FORM, visitor_id="d" * 32, api_name="/debate")
    until(lambda: server.hits > hits, "the running debate's first model call")
    eve = UIClient(url, verbose=False)
    waiting = eve.submit(**FORM, visitor_id="e" * 32, api_name="/debate")
    shown = until(lambda: "Waiting in line" in status_of(waiting) and status_of(waiting), "eve's place in line")
    assert "**Waiting in line: place 1 — starts in about " in shown
    eve.predict(api_name="/stop")
    assert debate_outputs(waiting.result())["status"] == "Stopped while waiting in line; nothing was run."
    gate.set()
    running.result()


def test_a_fork_waits_in_the_same_line(held):
    demo, url, server, gate = held
    services = demo.r2mad_services
    api = Client(url, verbose=False)
    gate.set()
    parent = api.predict(question="What is 5+5?", method="mad", backbone="held", api_name="/run_debate")
    gate.clear()
    hits = server.hits
    running = UIClient(url, verbose=False).submit(**FORM, visitor_id="f" * 32, api_name="/debate")
    until(lambda: server.hits > hits, "the running debate's first model call")
    runs = services.store.count_runs()
    fork = api.submit(run_id=parent["run_id"], from_round=1, answers={"1": "3"}, api_name="/fork_run")
    until(lambda: services.admission.waiting_count() == 1, "the fork in line")
    assert services.store.count_runs() == runs  # nothing is saved while it waits
    gate.set()
    assert fork.result()["forked_from"] == parent["run_id"]
    running.result()


def test_stop_takes_a_fork_out_of_the_line_with_nothing_saved(held):
    demo, url, server, gate = held
    services = demo.r2mad_services
    gate.set()
    UIClient(url, verbose=False).predict(**FORM, visitor_id="g" * 32, api_name="/debate")
    parent_id = services.store.list_runs(limit=1)[0].id  # the debate just run
    gate.clear()
    hits = server.hits
    running = UIClient(url, verbose=False).submit(**FORM, visitor_id="h" * 32, api_name="/debate")
    until(lambda: server.hits > hits, "the running debate's first model call")
    runs = services.store.count_runs()
    forker = UIClient(url, verbose=False)
    fork = forker.submit(run_id=parent_id, from_round=1, agent=1, change="force its answer to", value="3",
                         method="(same as the run)", backbone="(same as the run)", rounds=0, pause=False,
                         visitor_id="g" * 32, api_name="/fork")
    until(lambda: services.admission.waiting_count() == 1, "the fork in line")
    forker.predict(api_name="/fork_stop")
    assert fork.result()[0] == "Stopped while waiting in line; nothing was run."
    assert services.store.count_runs() == runs and services.admission.waiting_count() == 0
    gate.set()
    running.result()
