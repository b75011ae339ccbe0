"""One scrub on every way out: an upstream that writes the Authorization header it received into its completions
(the owner's HF_TOKEN on one backbone, another key on a second) runs debates through the app as `python app.py`
serves it, and neither key comes back from the API, the MCP tools, /v1 (reply and stream), the exports or the log.
And every CSV file we write opens in a spreadsheet as text: no cell runs as a formula."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging

import httpx
import pytest

from app import serve
from r2mad.settings.config import Backbone
from r2mad.types import Task
from testing.scripted_server import FakeServer
from tests.helpers import free_port, make_transcript, save_run, scripted_config, two_rounds
from tests.ui_client import PatientClient as Client

slow = pytest.mark.slow  # the whole app on a port

HF_TOKEN = "hf_" + "OwnerTokenEchoedBack0123456789"  # shaped like an HF token; built, so no scanner flags it
OTHER_KEY = "sk-other-backbone-key-0987654321"  # shaped like nothing we know: only the list of keys finds it
KEYS = (HF_TOKEN, OTHER_KEY)
PLANETS = {"A": "Mars", "B": "Jupiter", "C": "Venus"}


def leaked(text: str) -> list[str]:
    return [key for key in KEYS if key in text]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("one-exit")
    with pytest.MonkeyPatch.context() as env, FakeServer() as upstream:
        env.setenv("HF_TOKEN", HF_TOKEN)
        env.setenv("R2MAD_OTHER_KEY", OTHER_KEY)

        def echo(body):  # the reply names the key it was sent with, as a misconfigured upstream might
            reply = two_rounds(body)
            sent = upstream.request_headers().get("authorization", "")
            return dataclasses.replace(reply, text=f"I was called with {sent}; also {sent[7:]}. {reply.text}")
        upstream.responder = echo
        config = scripted_config(upstream.base_url, tmp / "var", rounds=2)
        owner = dataclasses.replace(config.backbones["fake"], api_key_env="HF_TOKEN")
        other = Backbone(name="other", base_url=upstream.base_url, model="fake-model", api_key_env="R2MAD_OTHER_KEY",
                         timeout_s=30, max_retries=0)
        config = dataclasses.replace(config, backbones={**config.backbones, "fake": owner, "other": other},
                                     app=dataclasses.replace(config.app, default_bank=None))
        port = free_port()
        demo = serve(config, port=port, block=False, warm=False)
        yield demo, f"http://127.0.0.1:{port}", upstream
        demo.close()


@slow
def test_the_upstream_really_echoes_both_keys(app):
    _, _, upstream = app
    with httpx.Client(timeout=30) as http:
        for key in KEYS:
            body = http.post(upstream.base_url + "/chat/completions", headers={"authorization": f"Bearer {key}"},
                             json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}).text
            assert leaked(body) == [key]


@slow
def test_api_results_hold_no_key(app, caplog):
    demo, base, _ = app
    client = Client(base + "/", verbose=False)
    caplog.set_level(logging.INFO)
    t = client.predict(question="Which planet is largest?", options=PLANETS, gold="B", method="mad",
                       agent_backbones=["fake", "other", "fake"], api_name="/run_debate")
    assert "I was called with Bearer [redacted]" in t["rounds"][0]["turns"][0]["text"]  # the reply, keys scrubbed
    fork = client.predict(run_id=t["run_id"], from_round=1, answers={"2": "A"}, api_name="/fork_run")
    saved = client.predict(run_id=t["run_id"], api_name="/get_run")
    listed = client.predict(limit=5, api_name="/list_runs")
    assert not leaked(json.dumps([t, fork, saved, listed])) and not leaked(caplog.text)
    assert not leaked(demo.r2mad_services.store.get_run(t["run_id"]).transcript.to_json())


@slow
def test_mcp_tool_results_and_progress_hold_no_key(app):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    _, base, _ = app
    notes: list[str] = []

    async def session():
        async with streamablehttp_client(base + "/gradio_api/mcp/") as (read, write, _):
            async with ClientSession(read, write) as s:
                await s.initialize()

                async def progress(done, total, message):
                    notes.append(message or "")
                return await s.call_tool("run_debate", {"question": "Which planet is largest?", "options": PLANETS,
                                                        "method": "mad", "backbone": "other"},
                                         progress_callback=progress)
    result = asyncio.run(session())
    text = result.content[0].text
    assert not result.isError and "[redacted]" in text
    assert not leaked(text) and not leaked(" ".join(notes))


@slow
def test_v1_reply_and_stream_hold_no_key(app, caplog):
    _, base, _ = app
    caplog.set_level(logging.INFO)
    question = "Which planet is largest?\nA) Mars\nB) Jupiter\nC) Venus"
    asked = {"messages": [{"role": "user", "content": question}]}
    with httpx.Client(timeout=120) as http:
        for model in ("mad@fake", "mad@other"):
            reply = http.post(base + "/v1/chat/completions", json={**asked, "model": model})
            assert reply.status_code == 200 and not leaked(reply.text)
            with http.stream("POST", base + "/v1/chat/completions",
                             json={**asked, "model": model, "stream": True}) as streamed:
                events = "".join(streamed.iter_text())
            assert "[DONE]" in events and "[redacted]" in events and not leaked(events)
    assert not leaked(caplog.text)


@slow
def test_exports_hold_no_key(app, tmp_path):
    from r2mad.runs.io import export_annotations_csv, export_jsonl, export_runs_csv
    from r2mad.ui.inspect_tools import page_of
    from r2mad.ui.views import write_summary_csv

    demo, base, _ = app
    store = demo.r2mad_services.store
    run_id = Client(base + "/", verbose=False).predict(question="Which planet is largest?", options=PLANETS,
                                                       backbone="other", method="mad", api_name="/run_debate")["run_id"]
    store.annotate(run_id, annotator="ana", labels=[next(iter(store.taxonomy))], note="the key was echoed")
    export_jsonl(store, tmp_path / "runs.jsonl")
    export_runs_csv(store, tmp_path / "runs.csv", [run_id])
    export_annotations_csv(store, tmp_path / "labels.csv")
    record = store.get_run(run_id)
    (tmp_path / "page.html").write_text(page_of(store, record), encoding="utf-8")
    summary = write_summary_csv({"mad": store.scrub_transcript(record.transcript)})
    files = [*tmp_path.iterdir(), tmp_path / summary]
    assert len(files) == 5 and not [f.name for f in files if leaked(f.read_text(encoding="utf-8"))]


@slow
def test_the_log_holds_no_key(app, caplog):
    log = logging.getLogger("r2mad.ui")
    caplog.set_level(logging.INFO)
    log.warning("The upstream answered %s and %s", HF_TOKEN, OTHER_KEY)
    try:
        raise RuntimeError(f"Upstream said: Incorrect API key provided: {OTHER_KEY}")
    except RuntimeError:
        log.exception("A debate failed")
    assert caplog.text.count("[redacted]") == 3 and "Traceback" in caplog.text and not leaked(caplog.text)


def test_every_csv_we_write_opens_as_text_in_a_spreadsheet(tmp_path):
    import csv

    from r2mad.runs.io import export_annotations_csv, export_runs_csv
    from r2mad.runs.store import RunStore
    from r2mad.ui.views import write_summary_csv

    question = '=HYPERLINK("http://x","y")'
    store = RunStore(tmp_path / "runs.db")
    t = make_transcript(Task("math", question, gold="-3", id="h1"), [["-3", "-3", "-3"]], "-3", True)
    run_id = save_run(store, t)
    store.annotate(run_id, annotator="ana", labels=[next(iter(store.taxonomy))], note="@SUM(A1) looks odd")

    def rows(path):
        with open(path, newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    export_runs_csv(store, tmp_path / "runs.csv", [run_id])
    [run] = rows(tmp_path / "runs.csv")
    assert (run["question"], run["gold"], run["final_answer"]) == ("'" + question, "'-3", "'-3")
    assert (run["tokens"], run["rounds"], run["correct"]) == ("55", "1", "1")  # 3 turns x 15 + a summary of 10
    export_annotations_csv(store, tmp_path / "labels.csv")
    [label] = rows(tmp_path / "labels.csv")
    assert (label["question"], label["note"]) == ("'" + question, "'@SUM(A1) looks odd")
    [summary] = rows(write_summary_csv({"mad": t}))
    assert (summary["Final answer"], summary["Rounds"], summary["Tokens"]) == ("'-3", "1", "55")


def test_eval_rows_hold_no_key(tmp_path):
    from tests.helpers import evaluate, make_eval_run
    from tests.scripted import ScriptedBackend

    echoing = ScriptedBackend(reply=lambda messages: f"Called with Bearer {OTHER_KEY} and {HF_TOKEN}. ((B))")
    evaluate(make_eval_run(("cot", "mad"), limit=1), tmp_path, echoing, secrets=[OTHER_KEY])
    rows = (tmp_path / "rows.jsonl").read_text(encoding="utf-8")
    assert rows.count("\n") == 2 and "Called with Bearer [redacted] and [redacted]" in rows and not leaked(rows)
