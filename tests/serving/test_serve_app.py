"""The app as `python app.py` serves it (app.serve, on loopback), debates on a scripted OpenAI-compatible server:
the OpenAI-compatible model at /v1 beside the UI, and the MCP tools answering in JSON and structured content that
their output schemas validate, with a progress notification per round, step of total, for run_debate and fork_run
(the `mcp` package's streamable-HTTP client)."""
from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from app import serve
from testing.scripted_server import FakeServer
from tests.helpers import free_port, scripted_config, two_rounds

pytestmark = pytest.mark.slow  # the whole app on a port

PLANETS = "Which planet is largest?\nA) Mars\nB) Jupiter\nC) Venus"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-app")
    with FakeServer(responder=two_rounds) as backbone:
        config = scripted_config(backbone.base_url, tmp / "var", rounds=3)
        config = dataclasses.replace(config, app=dataclasses.replace(config.app, default_bank=None))
        port = free_port()
        demo = serve(config, port=port, block=False, warm=False)
        yield demo, f"http://127.0.0.1:{port}", backbone
        demo.close()


def test_the_app_serves_the_debate_as_a_model_at_v1(app):
    from openai import OpenAI

    demo, base, _ = app
    client = OpenAI(base_url=base + "/v1", api_key="unused-on-loopback", max_retries=0)
    assert "r2mad@fake" in {m.id for m in client.models.list()}
    raw = client.chat.completions.with_raw_response.create(model="mad@fake",
                                                           messages=[{"role": "user", "content": PLANETS}])
    record = demo.r2mad_services.store.get_run(raw.headers["x-r2mad-run-id"])
    assert raw.parse().choices[0].message.content.endswith("The answer is (B).") and record.source == "serve"
    assert record.transcript.final.value == "B" and len(record.transcript.rounds) == 2


def test_mcp_tools_answer_in_json_and_structured_content_with_progress_per_round_of_a_total(app):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    demo, base, _ = app
    notes: dict[str, list[str]] = {"run_debate": [], "fork_run": []}
    steps: dict[str, list[tuple]] = {"run_debate": [], "fork_run": []}

    async def session():
        async with streamablehttp_client(base + "/gradio_api/mcp/") as (read, write, _):
            async with ClientSession(read, write) as s:
                await s.initialize()

                async def call(name, arguments):
                    async def progress(done, total, message):
                        notes[name].append(message or "")
                        steps[name].append((done, total))
                    return await s.call_tool(name, arguments, progress_callback=progress)
                tools = {t.name: t for t in (await s.list_tools()).tools}
                debate = await call("run_debate", {"question": "Which planet is largest?",
                                                   "options": {"A": "Mars", "B": "Jupiter", "C": "Venus"},
                                                   "gold": "B", "method": "mad", "backbone": "fake", "bank": ""})
                run_id = json.loads(debate.content[0].text)["run_id"]
                fork = await call("fork_run", {"run_id": run_id, "from_round": 1, "answers": {"2": "A"}})
                listed = await s.call_tool("list_runs", {"limit": 5})  # the client checks each against its schema
                return tools, debate, fork, listed

    tools, debate, fork, listed = asyncio.run(session())
    assert not debate.isError and not fork.isError and not listed.isError
    assert all(tool.outputSchema["type"] == "object" for tool in tools.values())
    assert "final" in tools["run_debate"].outputSchema["required"]
    t = json.loads(debate.content[0].text)  # JSON, not a Python literal
    assert debate.structuredContent == t
    assert [r["run_id"] for r in listed.structuredContent["result"]] == [f["run_id"] for f in
                                                                         json.loads(listed.content[0].text)]
    assert {r["run_id"] for r in listed.structuredContent["result"]} >= {t["run_id"], fork.structuredContent["run_id"]}
    assert t["final"] == "B" and t["correct"] is True and [r["round"] for r in t["rounds"]] == [0, 1]
    assert demo.r2mad_services.store.get_run(t["run_id"]).transcript.final.value == "B"
    rounds = [m for m in notes["run_debate"] if "round" in m and "finished" in m]
    assert rounds == ["Progress round 0 finished (A, B, B): Step 1 of 3",
                      "Progress round 1 finished (B, B, B): Step 2 of 3"], notes["run_debate"]
    # a client can show a share done: each round is a step of the 3 asked for, and progress never goes back
    assert [(1, 3), (2, 3)] == sorted({s for s in steps["run_debate"] if s[0] > 0}), steps["run_debate"]
    assert steps["run_debate"] == sorted(steps["run_debate"], key=lambda s: s[0])
    f = json.loads(fork.content[0].text)
    assert f["forked_from"] == t["run_id"] and f["rounds"][0]["turns"][1]["answer"] == "A"
    assert [m for m in notes["fork_run"] if "finished" in m][-1].startswith("Progress round 1 finished")
