"""The app end to end through gradio_client, started in-process: a MAD debate and a side-by-side run
on the embedded SmolLM2 model, refusals that run nothing, the Inspect tab (list, open, annotate,
reload), the memory-bank browser, and a pasted token that never reaches the run store."""
from __future__ import annotations

import dataclasses
import os
import time

import pytest

pytest.importorskip("gradio")
pytest.importorskip("gradio_client")

from r2mad.engine.resources import Given
from r2mad.engine.service import RunRequest
from r2mad.settings.config import load_config  # noqa: E402
from r2mad.types import AgentTurn, Answer, Round, Task, Transcript  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.serving import launch  # noqa: E402
from tests.helpers import free_port, make_bank  # noqa: E402
from tests.ui_client import UIClient as Client  # noqa: E402  (the UI events are undocumented)
from tests.ui_client import debate_outputs, rerun_values  # noqa: E402

pytestmark = pytest.mark.slow  # real model, server, embedder or browser

SMALL = dict(backbone="smollm2-135m", bank="", agents=3, rounds=2, max_tokens=48, seed=0)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("app")
    make_bank(tmp / "memory")
    config = load_config(env={**os.environ, "R2MAD_DATA_DIR": str(tmp / "var")})
    config = dataclasses.replace(config, app=dataclasses.replace(
        config.app, embedder="hash-64", memory_dirs=(str(tmp / "memory"),), default_bank=None))
    demo = build_app(config)
    demo.queue(default_concurrency_limit=4)
    port = free_port()
    launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
    yield demo, f"http://127.0.0.1:{port}/", tmp
    demo.close()


@pytest.fixture
def client(app):
    return Client(app[1], verbose=False)


def debate(client, **kw):
    """The outputs of one /debate call by name; component updates are unwrapped to their props."""
    return debate_outputs(client.predict(**{**SMALL, **kw}, api_name="/debate"))


def value(output):
    """An output's value; None for an update that leaves the component as it was (e.g. only the status
    line's clock moved)."""
    return output.get("value") if isinstance(output, dict) and output.get("__type__") == "update" else output


def test_mad_debate_on_the_embedded_model_returns_a_finished_transcript(app, client):
    out = debate(client, methods=["mad"], question="What is 2+3?", gold="5")
    t = out["json"]["mad"]
    assert t["status"] == "done" and t["method"] == "mad" and t["backbone"] == "smollm2-135m"
    assert [r["index"] for r in t["rounds"]] in ([0], [0, 1])  # round 1 unless all agreed at once
    if len(t["rounds"]) == 1:
        assert any("stopping early" in n for n in t["notices"])
    assert all(len(r["turns"]) == 3 for r in t["rounds"])
    titles = [m["metadata"].get("title") or "" for m in value(out["chat"])]
    assert sum(x.startswith("Round ") for x in titles) == len(t["rounds"])
    assert sum(x.startswith("Agent ") for x in titles) == 3 * len(t["rounds"])
    assert "final answer" in out["status"].lower()  # "Final answer: X — …" or "No final answer — why"
    runs = app[0].r2mad_services.store.list_runs(method="mad")
    assert runs[0].status == "done" and runs[0].source == "app" and runs[0].rounds == len(t["rounds"])


def test_side_by_side_runs_two_methods_on_one_shared_round0(app, client):
    out = debate(client, methods=["mad", "madm2-objective"], agents=2, max_tokens=32,
                 question="What is 3+4?", gold="7")
    mad, m2 = out["json"]["mad"], out["json"]["madm2-objective"]
    assert mad["status"] == m2["status"] == "done"
    assert mad["shared_round0"] and m2["shared_round0"]
    assert [x["text"] for x in mad["rounds"][0]["turns"]] == [x["text"] for x in m2["rounds"][0]["turns"]]
    assert [row[0] for row in value(out["summary"])["data"]] == ["mad", "madm2-objective"]
    assert value(out["col0"]) and value(out["col1"]) and value(out["col2"]) == []  # one tab of texts per method
    assert value(out["matrix"]).count("<tr>") == 3 and value(out["scoreboard"]) == ""  # methods × rounds
    assert "Round 0 was computed once and shared" in out["status"]


def test_stop_ends_a_running_debate_and_keeps_its_partial_transcript(app, client):
    job = client.submit(**{**SMALL, "max_tokens": 128}, methods=["mad"], api_name="/debate",
                        question="Explain step by step why 17 is a prime number.")
    deadline = time.time() + 300  # a busy 2-core machine can take minutes for a first turn
    while time.time() < deadline and not any(  # a finished turn ("Agent 2 · …"), not live text
            (m["metadata"].get("title") or "").startswith("Agent ") and " · " in m["metadata"]["title"]
            for out in job.outputs() for m in value(debate_outputs(out)["chat"]) or ()):
        time.sleep(0.2)
    client.predict(api_name="/stop")
    out = debate_outputs(job.result())
    assert "stopped" in out["status"].lower() and "no final answer" in out["status"]
    assert out["json"]["mad"]["status"] == "cancelled"
    titles = [m["metadata"].get("title") or "" for m in value(out["chat"])]
    assert any(x.startswith("Agent ") and " · " in x for x in titles)  # what was said before Stop stays
    run = app[0].r2mad_services.store.list_runs(method="mad")[0]
    assert run.status == "cancelled"


def test_empty_question_is_refused_and_nothing_runs(app, client):
    store = app[0].r2mad_services.store
    before = store.count_runs()
    out = debate(client, methods=["mad"], question="   ")
    assert "Type a question first" in out["status"]
    assert store.count_runs() == before


def test_a_second_debate_in_the_same_session_is_refused(app, client):
    services = app[0].r2mad_services
    assert services.begin(client.session_hash)  # as if a debate were running in this session
    try:
        out = debate(client, methods=["mad"], question="What is 1+1?")
    finally:
        services.end(client.session_hash)
    assert "already running" in out["status"]


def test_missing_api_token_is_a_one_sentence_message(app, client, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    out = debate(client, methods=["mad"], backbone="qwen2.5-7b", question="What is 1+1?")
    assert out["status"].startswith("Not started: Backbone 'qwen2.5-7b' needs an API token")


def test_a_pasted_token_never_reaches_the_run_store(app, client):
    secret = "hf_test_Secret_0123456789abcdef"
    out = debate(client, methods=["mad"], agents=1, rounds=1, max_tokens=16, token=secret,
                 question=f"My token is {secret}. What is 1+1?")
    assert out["json"]["mad"]["status"] == "done"
    var = app[2] / "var"
    stored = b"".join(p.read_bytes() for p in var.glob("runs.sqlite*"))
    assert b"My token is [redacted]" in stored and secret.encode() not in stored


def test_rejected_token_on_a_custom_endpoint_shows_abstentions_without_the_token(app, client):
    from testing.scripted_server import FakeServer, ok, unauthorized

    secret = "sk-test-Rejected-0123456789"
    with FakeServer(models=["m1"], responder=lambda body: unauthorized(echo_key=True)) as server:
        out = debate(client, methods=["mad"], agents=2, rounds=2, token=secret, base_url=server.base_url,
                     model="m1", question="What is 2+2?", gold="4")
        assert server.hits >= 2  # both agents tried
    t = out["json"]["mad"]
    assert t["status"] == "failed" and t["backbone"] == "custom:m1"
    assert [len(r["turns"]) for r in t["rounds"]] == [2]  # round 0 kept, nothing after it
    assert all(turn["error"] for turn in t["rounds"][0]["turns"])
    assert out["status"].startswith("**Failed: ") and "(0 calls)**" in out["status"]  # why, and nothing served
    assert "abstained (call failed)" in str(value(out["chat"]))
    shown = str(out["status"]) + str(value(out["chat"])) + str(t["rounds"]) + str(t["notices"])
    assert secret not in shown
    stored = b"".join(p.read_bytes() for p in (app[2] / "var").glob("runs.sqlite*"))
    assert secret.encode() not in stored
    with FakeServer(models=["m1"], responder=lambda body: ok("4 is \\boxed{4}")) as server:
        out = debate(client, methods=["mad"], agents=2, rounds=1, base_url=server.base_url, model="m1",
                     question="What is 2+2?", gold="4")
    assert out["json"]["mad"]["status"] == "done" and out["json"]["mad"]["final"]["value"] == "4"


# --- the streaming run behind the Debate tab, on a scripted backend (fast, no model) -------------

def scripted_run(tmp_path, methods, *, rounds=3, delay_s=0.02, streams_text=False):
    from r2mad.backends.base import Capabilities
    from r2mad.runs.store import RunStore
    from r2mad.serving.live import LiveRun
    from tests.scripted import ScriptedBackend

    replies = iter([f"Weighing both options carefully, I pick (({x}))" for x in "AB"] * 200)
    backend = ScriptedBackend(lambda messages: next(replies), delay_s=delay_s,
                              capabilities=Capabilities(streams_text=streams_text))
    settings = load_config().settings.replace(agents=2, rounds=rounds, early_stop=False)
    task = Task("mcq", "Which?", (("A", "one"), ("B", "two")), "B", "t1")
    store = RunStore(tmp_path / "runs.sqlite")
    return LiveRun(RunRequest(task, tuple(methods), settings, "scripted", source="app"), store), backend, store


def test_live_run_saves_every_round_and_stops_on_request(tmp_path):
    import asyncio

    from r2mad.serving.live import stream

    live, backend, store = scripted_run(tmp_path, ["mad"])
    stop, saved_while_running = asyncio.Event(), []

    async def consume():
        async for shown in stream(live, Given(backend), stop=stop):
            finished = [r for r in shown["mad"].rounds if not r.details.get("running")]
            if len(finished) == 1 and not saved_while_running:
                record = store.get_run(live.run_ids["mad"])
                saved_while_running.append((record.status, record.rounds))
            if len(finished) == 2:
                stop.set()
        return shown

    shown = asyncio.run(consume())
    assert saved_while_running == [("running", 1)]
    assert shown["mad"].status == "cancelled"
    record = store.get_run(live.run_ids["mad"])
    assert record.status == "cancelled" and record.rounds == 2  # round 2 never finished


def test_live_side_by_side_shares_round0_and_saves_each_method(tmp_path):
    import asyncio

    from r2mad.serving.live import stream

    live, backend, store = scripted_run(tmp_path, ["mad", "madm2-subjective"], rounds=2, delay_s=0.0)

    async def consume():
        first_shared = None
        async for shown in stream(live, Given(backend)):
            if first_shared is None and shown["mad"].rounds:
                first_shared = shown["mad"].rounds[0].details.get("shared")
        return shown, first_shared

    shown, first_shared = asyncio.run(consume())
    assert first_shared is True  # labelled shared while round 0 was still streaming
    mad, masked = shown["mad"], shown["madm2-subjective"]
    assert [t.text for t in mad.rounds[0].turns] == [t.text for t in masked.rounds[0].turns]
    agent_calls = 2 + 2 + 2  # one shared round 0, then one debate round per method
    judge_calls = 2  # MAD-M² judges each of the 2 previous responses once
    assert len(backend.calls) == agent_calls + judge_calls
    assert {store.get_run(live.run_ids[m]).status for m in live.methods} == {"done"}


def test_stopping_a_side_by_side_keeps_the_methods_that_had_finished(tmp_path):
    import asyncio

    from r2mad.serving.live import stream

    live, backend, store = scripted_run(tmp_path, ["cot", "mad"])
    stop = asyncio.Event()

    async def consume():
        async for shown in stream(live, Given(backend), stop=stop):
            if len([r for r in shown["mad"].rounds if not r.details.get("running")]) == 2:
                stop.set()
        return shown

    shown = asyncio.run(consume())
    assert (shown["cot"].status, shown["mad"].status) == ("done", "cancelled")
    assert store.get_run(live.run_ids["cot"]).status == "done"  # it had ended before Stop
    assert store.get_run(live.run_ids["cot"]).final_answer in ("A", "B")
    assert store.get_run(live.run_ids["mad"]).status == "cancelled"


def saved(store, gold_seen: list[str], method="truemad") -> str:
    """A finished run saved directly (no model call): agents' answers per round as given."""
    task = Task("mcq", "Which gas do plants take in?", (("A", "CO2"), ("B", "O2")), "A", "t1")
    rounds = tuple(Round(i, tuple(AgentTurn(a, i, "Generalist", (), f"(({x}))", Answer(x, "double_paren"))
                                  for a, x in enumerate(answers)), 1.0)
                   for i, answers in enumerate(gold_seen))
    final = Answer(gold_seen[-1][0], "double_paren")
    t = Transcript(task, method, "smollm2-135m", {"agents": 2}, rounds, final, final.value == "A", "done")
    run_id = store.start_run(method=method, backbone="smollm2-135m", bank=None, task=task,
                             settings={"agents": 2, "rounds": len(rounds)}, seed=0, code_version="t", source="app")
    store.save_transcript(run_id, t, "done")
    return run_id


def test_inspect_lists_opens_and_annotates_a_saved_run(app, client):
    store = app[0].r2mad_services.store
    flipped = saved(store, ["AA", "BB"])  # both right in round 0, both wrong after: a flip
    steady = saved(store, ["AA", "AA"])
    rows = client.predict(method="truemad", backbone="any", bank="any", outcome="any",
                          flags=["correct→wrong flip"], status="any", api_name="/inspect_list_runs")
    assert [r[-1] for r in rows["data"]] == [flipped[:8]]  # short ids, question first
    assert rows["data"][0][0] == "Which gas do plants take in?" and "chip-wrong" in rows["data"][0][1]
    rows = client.predict(method="truemad", backbone="any", bank="any", outcome="correct", flags=[],
                          status="any", api_name="/inspect_list_runs")
    assert [r[-1] for r in rows["data"]] == [steady[:8]]

    header, chat, final, notes = client.predict(run_id=flipped, api_name="/open_run")
    assert flipped in header and "Final answer: B — wrong (gold A)" in final
    assert [m["metadata"]["title"].split(" —")[0] for m in chat if m["metadata"].get("id", "").count("-") == 1] \
        == ["Round 0 (each agent alone)", "Round 1 (debate)"]
    assert notes == "*No annotations yet.*"

    notes = client.predict(run_id=flipped, labels=["majority_persuaded_correct_agent", "advice_misled"],
                           note="Agent 2's rebuttal talked both into O2.", annotator="Ada", api_name="/annotate")
    assert "**Ada**" in notes and "advice_misled" in notes

    later = Client(app[1], verbose=False)  # a fresh page load
    _, _, _, notes = later.predict(run_id=flipped, api_name="/open_run")
    assert "**Ada**" in notes and "Agent 2's rebuttal talked both into O2." in notes
    labels = store.get_run(flipped).annotations[0].labels
    assert labels == ("majority_persuaded_correct_agent", "advice_misled")


def test_rerun_fills_the_debate_tab_from_a_saved_run(app, client):
    run_id = saved(app[0].r2mad_services.store, ["AB"], method="mad")
    before = app[0].r2mad_services.store.count_runs()
    job = client.submit(run_id=run_id, api_name="/rerun")
    values = rerun_values(job.result())
    assert values["backbone"] == "smollm2-135m" and values["methods"] == ["mad"] and values["agents"] == 2
    assert values["question"] == "Which gas do plants take in?"
    assert (values["option_a"], values["option_b"]) == ("CO2", "O2")
    assert app[0].r2mad_services.store.count_runs() == before  # it fills the form and waits for Run


def test_bank_browser_searches_opens_and_quarantines_cases(app, client):
    folder = str(app[2] / "memory" / "tiny")
    about, rows = client.predict(folder=folder, text="red planet", agent="any", round_="any",
                                 outcome="any", limit=50, api_name="/bank_search")
    assert rows["data"] == []  # substring search: "red planet" is not in any field
    about, rows = client.predict(folder=folder, text="planet", agent="2", round_="any", outcome="any",
                                 limit=50, api_name="/bank_search")
    assert "3 cases" in about and [r[0] for r in rows["data"]] == ["case-1"]
    assert rows["data"][0][3] == "no"  # agent 2 answered A; gold B
    shown = client.predict(folder=folder, case_id="case-0", api_name="/bank_case")
    assert "**Case case-0**" in shown and "Which planet is red?" in shown and "quarantined" not in shown
    shown = client.predict(folder=folder, case_id="case-0", api_name="/bank_quarantine")
    assert "**quarantined**" in shown
    assert "case-0" in (app[2] / "memory" / "tiny" / "quarantine.txt").read_text()
    shown = client.predict(folder=folder, case_id="case-0", api_name="/bank_unquarantine")
    assert "quarantined" not in shown


def test_live_text_shows_while_agents_write_and_is_never_saved(tmp_path):
    import asyncio
    import json

    from r2mad.serving.live import stream
    from r2mad.types import to_dict
    from r2mad.ui.render.chat import chat_messages

    live, backend, store = scripted_run(tmp_path, ["mad", "madm2-subjective"], rounds=2, delay_s=0.6,
                                        streams_text=True)

    async def consume():
        writing = []
        async for shown in stream(live, Given(backend)):
            for method, t in shown.items():
                titles = [m["metadata"].get("title", "") for m in chat_messages(t)]
                writing += [(method, t.rounds[-1].index, title) for title in titles if "writing" in title]
        return shown, writing

    shown, writing = asyncio.run(consume())
    assert {(m, r) for m, r, _ in writing} >= {("mad", 0), ("madm2-subjective", 0), ("mad", 1)}
    final_titles = [m["metadata"].get("title", "") for t in shown.values() for m in chat_messages(t)]
    assert not any("writing" in title for title in final_titles)
    for method in ("mad", "madm2-subjective"):
        saved = json.dumps(to_dict(store.get_run(live.run_ids[method]).transcript))
        assert store.get_run(live.run_ids[method]).status == "done" and "typing" not in saved
