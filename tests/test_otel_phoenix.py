"""OpenTelemetry traces read by a real Arize Phoenix (started here, from its own environment under var/): two
debates on the scripted server, one sent live (R2MAD_OTEL_ENDPOINT) and both by `export-otel`; Phoenix's own
client reads back every turn as an `invoke_agent` span with the messages the server received, the model and
the usage, and the labels as annotation events. With R2MAD_OTEL_ENDPOINT unset nothing of it is imported."""
import json
import subprocess
import sys

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.cli import main
from r2mad.runs.store import RunStore
from tests.helpers import ROOT, debate_cli

SPANS = """
import json, sys
from phoenix.client import Client
spans = Client(base_url=sys.argv[1]).spans.get_spans(project_identifier=sys.argv[2], limit=1000)
print(json.dumps(spans, default=str))
"""


def test_with_no_endpoint_the_live_exporter_imports_nothing():
    code = ("import asyncio, sys; from r2mad.exports.live import send_traces; asyncio.run(send_traces(None, ['x'])); "
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'r2mad.exports.otel', "
            "'openinference'))))")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def flat(attrs, prefix=""):
    """Phoenix may hand attributes back nested ({"llm": {"model_name": …}}): flattened to dotted keys."""
    out = {}
    for key, value in (attrs or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, name + "."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                out.update(flat(v, f"{name}.{i}."))
        else:
            out[name] = value
    return out


def turn_spans(url, project):
    from tests.phoenix import query
    spans = query(SPANS, url, project)
    return [dict(s, attributes=flat(s.get("attributes"))) for s in spans if s["name"].startswith("invoke_agent")]


@pytest.mark.slow
def test_phoenix_reads_every_turn_with_its_messages_model_and_usage(tmp_path, config_dir, server, monkeypatch):
    from tests.phoenix import phoenix_server

    pytest.importorskip("opentelemetry.sdk", reason="pip install -r requirements.txt (opentelemetry-sdk)")
    (tmp_path / "phoenix").mkdir()
    with phoenix_server(tmp_path / "phoenix") as url:
        monkeypatch.setenv("R2MAD_OTEL_ENDPOINT", f"{url}/v1/traces")
        assert debate_cli(config_dir, "--question", "Which is prime?", "--option", "A=4", "--option", "B=7",
                          "--gold", "B", "--method", "mad", "--rounds", "2", "--no-early-stop") == 0
        monkeypatch.delenv("R2MAD_OTEL_ENDPOINT")
        assert debate_cli(config_dir, "--question", "Which is even?", "--option", "A=4", "--option", "B=7",
                          "--gold", "A", "--method", "mad", "--rounds", "2", "--no-early-stop") == 0
        sent = [r.body["messages"] for r in server.requests]
        from r2mad.settings.config import load_config
        store = RunStore(load_config(config_dir).app.runs_db)
        runs = [r.id for r in reversed(store.list_runs())]
        LabelBook(store).save_labels(runs[0], "ada", ["other"], "agent 2 gave in", {"other": {"round": 1, "agent": 1}})
        assert main(["--config-dir", str(config_dir), "export-otel", *runs, "--endpoint", f"{url}/v1/traces",
                     "--project", "exported"]) == 0
        live, exported = turn_spans(url, "r2mad"), turn_spans(url, "exported")

    assert len(sent) == 12  # 2 runs x 2 rounds x 3 agents, every one a turn
    assert len(live) == 6 and {s["attributes"]["gen_ai.conversation.id"] for s in live} == {runs[0]}
    assert len(exported) == 12 and {s["attributes"]["gen_ai.conversation.id"] for s in exported} == set(runs)
    assert len({s["context"]["trace_id"] for s in exported}) == 2  # one trace per run
    seen = []
    for span in exported:
        a = span["attributes"]
        messages, i = [], 0
        while f"llm.input_messages.{i}.message.role" in a:
            messages.append({"role": a[f"llm.input_messages.{i}.message.role"],
                             "content": a[f"llm.input_messages.{i}.message.content"]})
            i += 1
        seen.append(messages)
        assert a["gen_ai.operation.name"] == "invoke_agent" and a["llm.model_name"] == "fake"
        assert a["gen_ai.request.model"] == "fake" and a["llm.output_messages.0.message.content"] == \
            "Checked it twice. ((B))"
        assert a["gen_ai.usage.input_tokens"] == a["llm.token_count.prompt"] > 0
        assert a["gen_ai.usage.output_tokens"] == a["llm.token_count.completion"] > 0
    assert sorted(map(json.dumps, seen)) == sorted(map(json.dumps, sent))  # what the server received, exactly
    blamed = [s for s in exported if s["attributes"]["gen_ai.conversation.id"] == runs[0]
              and s["attributes"]["r2mad.round"] == 1 and s["attributes"]["r2mad.agent"] == 2]
    [event] = [e for e in blamed[0].get("events") or [] if e["name"] == "annotation"]
    assert flat(event.get("attributes"))["annotation.label"] == "other"
