"""The API for programs, end to end: each gr.api endpoint through gradio_client against the app on
loopback (debates on a scripted OpenAI-compatible server), the UI's events kept out of the API, and the
MCP tools listed and `run_debate` called on the embedded model by the `mcp` package's client."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os

import pytest

pytest.importorskip("gradio_client")

from r2mad.settings.config import Backbone, load_config  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.api import ENDPOINTS  # noqa: E402
from r2mad.ui.serving import launch  # noqa: E402
from testing.scripted_server import FakeServer  # noqa: E402  # noqa: E402  # noqa: E402  # noqa: E402
from tests.conftest import answer  # noqa: E402
from tests.helpers import free_port, make_bank  # noqa: E402
from tests.ui_client import PatientClient as Client  # noqa: E402

pytestmark = pytest.mark.slow  # a real app, server and (for MCP) the embedded model
PLANETS = {"A": "Mars", "B": "Jupiter"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api")
    make_bank(tmp / "memory")
    with FakeServer(responder=answer) as server:
        config = load_config(env={**os.environ, "R2MAD_DATA_DIR": str(tmp / "var")})
        fake = Backbone(name="fake", base_url=server.base_url, model="fake-model", timeout_s=60, max_retries=0)
        config = dataclasses.replace(
            config, backbones={**config.backbones, "fake": fake}, default_backbone="fake",
            settings=config.settings.replace(rounds=2, max_tokens=48),
            app=dataclasses.replace(config.app, embedder="hash-64", memory_dirs=(str(tmp / "memory"),),
                                    default_bank=str(tmp / "memory" / "tiny"), private_runs="on"))
        demo = build_app(config)
        demo.queue(default_concurrency_limit=4)
        port = free_port()
        launch(demo, prevent_thread_lock=True, server_port=port, quiet=True, mcp_server=True)
        yield demo, f"http://127.0.0.1:{port}/", server, tmp
        demo.close()


@pytest.fixture(scope="module")
def client(app):
    return Client(app[1], verbose=False)


def test_only_the_five_endpoints_are_public_and_none_takes_a_token(client):
    info = client.view_api(return_format="dict", print_info=False)
    assert sorted(info["named_endpoints"]) == sorted(f"/{name}" for name in ENDPOINTS)
    params = [p["parameter_name"] for e in info["named_endpoints"].values() for p in e["parameters"]]
    secretish = [p for p in params if ("token" in p and p != "max_tokens") or "key" in p or p == "request"]
    assert params and not secretish  # max_tokens is the output budget, not a secret
    # the API page names and describes every parameter (not Gradio's "the '1st' Api component")
    for endpoint in info["named_endpoints"].values():
        for p in endpoint["parameters"]:
            assert p["label"] == p["parameter_name"] and p["python_type"]["description"], p
    question = info["named_endpoints"]["/run_debate"]["parameters"][0]
    assert question["python_type"]["description"] == "The question to debate."


def test_run_debate_get_run_list_runs_and_fork_run(app, client):
    server = app[2]
    hits = server.hits
    t = client.predict(question="Largest planet?", options=PLANETS, gold="B", method="mad", api_name="/run_debate")
    assert t["final"] == "B" and t["correct"] is True and t["status"] == "done"
    assert [[x["answer"] for x in r["turns"]] for r in t["rounds"]] == [["B", "B", "B"]]  # early stop after round 0
    assert server.hits - hits == 3 and t["usage"]["calls"] == 3 and t["usage_by_model"]["fake"]["calls"] == 3
    hits = server.hits  # the Advanced panel's settings: two agents, round 0 only
    two = client.predict(question="Largest planet?", options=PLANETS, gold="B", method="mad", rounds=1, agents=2,
                         max_tokens=64, temperature=0.0, seed=7, api_name="/run_debate")
    assert [len(r["turns"]) for r in two["rounds"]] == [2] and server.hits - hits == 2
    with pytest.raises(Exception, match="agents"):
        client.predict(question="Largest planet?", agents=99, api_name="/run_debate")
    rows = client.predict(limit=5, method="mad", correct="yes", api_name="/list_runs")
    assert rows[1]["run_id"] == t["run_id"] and rows[0]["final"] == "B"
    saved = client.predict(run_id=t["run_id"], api_name="/get_run")
    assert saved["rounds"] == t["rounds"] and saved["forked_from"] is None and saved["forks"] == []

    hits = server.hits
    f = client.predict(run_id=t["run_id"], from_round=1, answers={"1": "A"}, api_name="/fork_run")
    assert f["forked_from"] == t["run_id"] and f["rounds"][0]["replayed"] is True
    assert [x["answer"] for x in f["rounds"][0]["turns"]] == ["A", "B", "B"]
    assert server.hits - hits == 3 == len(f["rounds"][1]["turns"])  # only round 1 ran
    assert client.predict(run_id=t["run_id"], api_name="/get_run")["forks"] == [f["run_id"]]
    assert client.predict(run_id=f["run_id"], api_name="/get_run")["fork"]["from_round"] == 1

    hits = server.hits
    g = client.predict(run_id=t["run_id"], from_round=1, answers={"1": "A"}, method="truemad", drop_advice={"1": 2},
                       api_name="/fork_run")
    assert g["fork"]["changes"][1] == {"kind": "drop-advice", "agent": 1, "value": "2"}  # agents from 1, as asked
    assert client.predict(run_id=g["run_id"], api_name="/get_run")["fork"]["changes"][0] == {
        "kind": "answer", "agent": 1, "value": "A"}
    assert server.hits - hits == 5 + 3  # round 1: five advisers asked, not six; all agree, so it stops there
    with pytest.raises(Exception, match="Unmasking a response acts on MAD-M²'s masks, which 'mad' does not have"):
        client.predict(run_id=t["run_id"], from_round=1, unmasks=[1], api_name="/fork_run")
    assert server.hits - hits == 8


@pytest.mark.parametrize("endpoint, kwargs, problem", [
    ("/run_debate", {"question": "Largest planet?", "method": "nope"}, "Unknown method 'nope'"),
    ("/run_debate", {"question": "  "}, "The question is empty"),
    ("/run_debate", {"question": "What is 2+2?", "gold": "4" * 2**20},  # the probe: a 1 MB gold answer
     r"^The gold answer is 1,048,576 characters long, over the limit of 200; give the answer alone"),
    ("/run_debate", {"question": "Largest planet?", "backbone": "gpt-9"}, "Unknown backbone 'gpt-9'"),
    ("/get_run", {"run_id": "missing"}, "No saved run of yours has that id"),
    ("/fork_run", {"run_id": "missing", "from_round": 1}, "No saved run of yours has that id"),
    ("/search_bank", {"bank": "elsewhere"}, "The bank 'elsewhere' is not one of this app's; name one of: "),
    ("/search_bank", {"bank": "/etc"}, r"^That bank is not one of this app's; name one of: "),
    ("/search_bank", {"limit": 2.5}, "limit: expected a whole number, got 2.5"),
    ("/list_runs", {"limit": 10**30}, "limit: 1000000000000000000000000000000 is out of range; allowed 1 to 200"),
    ("/fork_run", {"run_id": "missing", "from_round": 1e30}, "from_round: 1000000000000000019884624838656 is out"),
    ("/fork_run", {"run_id": "missing", "from_round": 1, "edits": {"2": "Z" * 2**20}},  # checked on the server
     r"^The new message for agent 2 is 1,048,576 characters long, over the limit of 4,000; shorten it\.$"),
    ("/fork_run", {"run_id": "missing", "from_round": 1, "answers": {"1": "7" * 201}},
     r"^The forced answer for agent 1 is 201 characters long, over the limit of 200; give the answer alone"),
])
def test_bad_input_gets_one_sentence_and_runs_nothing(app, client, endpoint, kwargs, problem):
    hits = app[2].hits
    with pytest.raises(Exception, match=problem) as caught:
        client.predict(**kwargs, api_name=endpoint)
    assert str(caught.value).count("\n") == 0 and app[2].hits == hits


def test_search_bank(app, client):
    cases = client.predict(query="planet", api_name="/search_bank")
    assert [c["case_id"] for c in cases] == ["case-0", "case-1"] and cases[0]["answer"] == "B"
    assert [c["case_id"] for c in client.predict(query="planet", agent=2, api_name="/search_bank")] == ["case-1"]


def test_mcp_client_lists_the_tools_and_runs_a_debate_on_the_embedded_model(app):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def session():
        async with streamablehttp_client(app[1] + "gradio_api/mcp/") as (read, write, _):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = (await s.list_tools()).tools
                result = await s.call_tool("run_debate", {
                    "question": "Which gas do plants take in?", "options": {"A": "Oxygen", "B": "Carbon dioxide"},
                    "gold": "B", "method": "mad", "backbone": "smollm2-135m", "bank": ""})
                return tools, result

    tools, result = asyncio.run(session())
    assert sorted(t.name for t in tools) == sorted(ENDPOINTS)
    assert "question" in next(t for t in tools if t.name == "run_debate").inputSchema["properties"]
    assert not result.isError
    t = json.loads(result.content[0].text)  # JSON (r2mad/ui/mcp_results.py), not gradio's Python literal
    assert t["backbone"] == "smollm2-135m" and t["status"] == "done" and len(t["rounds"]) >= 1
    assert all(x["backbone"] == "smollm2-135m" and x["text"] for x in t["rounds"][0]["turns"])


def test_on_a_public_space_each_api_session_reads_and_forks_only_its_own_runs(app, client):
    t = client.predict(question="Largest planet?", options=PLANETS, gold="B", api_name="/run_debate")
    other = Client(app[1], verbose=False)  # another program: another session
    assert t["run_id"] not in [r["run_id"] for r in other.predict(api_name="/list_runs")]
    for endpoint, kwargs in (("/get_run", {}), ("/fork_run", {"from_round": 1})):
        with pytest.raises(Exception, match="No saved run of yours has that id"):
            other.predict(run_id=t["run_id"], **kwargs, api_name=endpoint)
    assert t["run_id"] in [r["run_id"] for r in client.predict(api_name="/list_runs")]
