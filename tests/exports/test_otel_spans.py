"""A saved run's trace as otel.emit_run builds it, caught in memory (no collector): every span carries the run id
as session.id, and the Phoenix span annotations name the span each label blames, the annotator and the grade."""
import pytest

pytest.importorskip("opentelemetry.sdk", reason="pip install -r requirements.txt (opentelemetry-sdk)")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from r2mad.annotation.book import LabelBook  # noqa: E402
from r2mad.exports.attribution import verdicts  # noqa: E402
from r2mad.exports.otel import emit_run  # noqa: E402
from r2mad.exports.span_annotations import annotations_url  # noqa: E402
from r2mad.runs.store import RunStore  # noqa: E402
from tests.helpers import STORED_MCQ, make_transcript, save_run  # noqa: E402


def test_every_span_has_the_session_id_and_labels_become_annotations_of_the_blamed_turn(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run = save_run(store, make_transcript(STORED_MCQ, [["A", "B"], ["B", "B"]], "B", False))  # gold A: wrong
    book = LabelBook(store)
    book.save_labels(run, "ada", ["other"], "agent 1 gave in", {"other": {"round": 1, "agent": 0}})
    book.save_labels(run, "bob", ["oscillation"], "", {})
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    notes = []
    count = emit_run(provider.get_tracer("test"), store.get_run(run), verdicts(store, run), store.taxonomy, notes)

    spans = caught.get_finished_spans()
    assert count == len(spans) == 1 + 2 + 4 + 1  # root, 2 rounds, 2 x 2 turns, round 0's summary call
    assert {s.attributes["session.id"] for s in spans} == {run}
    [root] = [s for s in spans if s.name == "debate mad"]
    [blamed] = [s for s in spans if s.name == "invoke_agent Agent 1" and s.attributes["r2mad.round"] == 1]
    hexed = {s.name if s is root else "blamed": format(s.context.span_id, "016x") for s in (root, blamed)}
    assert sorted(notes, key=lambda n: n["name"]) == [
        {"span_id": hexed["debate mad"], "name": "correct", "annotator_kind": "CODE", "identifier": "r2mad",
         "result": {"label": "wrong", "score": 0.0, "explanation": "wrong: different letters"}},
        {"span_id": hexed["debate mad"], "name": "oscillation", "annotator_kind": "HUMAN", "identifier": "bob",
         "result": {"label": "oscillation", "explanation": store.taxonomy["oscillation"]}},
        {"span_id": hexed["blamed"], "name": "other", "annotator_kind": "HUMAN", "identifier": "ada",
         "result": {"label": "other", "explanation": "agent 1 gave in"}}]


def test_span_annotations_go_beside_phoenix_s_traces_path_only():
    assert annotations_url("http://127.0.0.1:6006/v1/traces") == "http://127.0.0.1:6006/v1/span_annotations"
    assert annotations_url("https://h/api/public/otel/v1/traces/") == "https://h/api/public/otel/v1/span_annotations"
    assert annotations_url("http://127.0.0.1:4318/custom") is None
