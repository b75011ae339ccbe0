"""OpenTelemetry traces read by a real Arize Phoenix (started here, from its own environment under var/): two
debates on the scripted server, one sent live (R2MAD_OTEL_ENDPOINT) and both by `export-otel`; Phoenix's own
client reads back every turn as an `invoke_agent` span with the messages the server received, the model and
the usage, the labels as annotation events and as span annotations (people's, an LLM judge's, the grade), and
every span of a run by its session id. With R2MAD_OTEL_ENDPOINT unset nothing of it is imported."""
import json
import subprocess
import sys

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.annotation.suggestion import Suggestion
from r2mad.cli import main
from r2mad.runs.store import RunStore
from tests.helpers import ROOT, debate_cli

SPANS = """
import json, sys
from phoenix.client import Client
spans = Client(base_url=sys.argv[1]).spans.get_spans(project_identifier=sys.argv[2], limit=1000)
print(json.dumps(spans, default=str))
"""

# Phoenix files span annotations from a queue, so they are read until as many as expected are in (bounded)
ANNOTATIONS = """
import json, sys, time
from phoenix.client import Client
client, project, runs, expected = Client(base_url=sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
by_session = {run: client.spans.get_spans(project_identifier=project, attributes={"session.id": run}, limit=1000)
              for run in runs}
traces = {run: sorted({s["context"]["trace_id"] for s in spans}) for run, spans in by_session.items()}
in_trace = {run: client.spans.get_spans(project_identifier=project, trace_ids=traces[run], limit=1000) for run in runs}
every = [s for spans in in_trace.values() for s in spans]
deadline = time.monotonic() + 60
while True:
    notes = client.spans.get_span_annotations(spans=every, project_identifier=project)
    if len(notes) >= expected or time.monotonic() > deadline:
        break
    time.sleep(0.5)
print(json.dumps({"session": {run: sorted(s["context"]["span_id"] for s in spans) for run, spans in by_session.items()},
                  "trace": {run: sorted(s["context"]["span_id"] for s in spans) for run, spans in in_trace.items()},
                  "spans": {s["context"]["span_id"]: {"name": s["name"], "attributes": s["attributes"]} for s in every},
                  "notes": notes}, default=str))
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
        LabelBook(store).save_labels(runs[0], "bob", ["oscillation"], "", {})  # blames no turn: the root span
        store.save_judgement(runs[0], "llm:fake", [Suggestion("wrong_confidence", "llm:fake", 1, (0,),
                                                              "agent 1 sounded sure")], "reply", 0)
        assert main(["--config-dir", str(config_dir), "export-otel", *runs, "--endpoint", f"{url}/v1/traces",
                     "--project", "exported"]) == 0
        live, exported = turn_spans(url, "r2mad"), turn_spans(url, "exported")
        from tests.phoenix import query
        read = query(ANNOTATIONS, url, "exported", json.dumps(runs), "5")

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

    # every span of a run (root, rounds, turns) carries its session id: filtering by it finds the whole trace
    for run in runs:
        assert read["session"][run] == read["trace"][run] and len(read["trace"][run]) == 1 + 2 + 6
    # the labels, the judge's label and the grades reach Phoenix's annotations (its feedback columns)
    spans = {i: (s["name"], flat(s["attributes"]).get("r2mad.round")) for i, s in read["spans"].items()}
    notes = {run: sorted((n["name"], n["identifier"], n["annotator_kind"], *spans[n["span_id"]],
                          n["result"].get("label"), n["result"].get("score"))
                         for n in read["notes"] if n["span_id"] in read["trace"][run]) for run in runs}
    assert notes[runs[0]] == [("correct", "r2mad", "CODE", "debate mad", None, "correct", 1.0),
                              ("oscillation", "bob", "HUMAN", "debate mad", None, "oscillation", None),
                              ("other", "ada", "HUMAN", "invoke_agent Agent 2", 1, "other", None),
                              ("wrong_confidence", "llm:fake", "LLM", "invoke_agent Agent 1", 1, "wrong_confidence",
                               None)]
    assert notes[runs[1]] == [("correct", "r2mad", "CODE", "debate mad", None, "wrong", 0.0)]  # B, gold A
