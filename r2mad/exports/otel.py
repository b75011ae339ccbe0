"""Saved runs as OpenTelemetry traces over OTLP/HTTP (opentelemetry-sdk), readable by Phoenix, Langfuse and
Weave: one trace per run, a span per round, an `invoke_agent` span per turn with the GenAI semantic
conventions (gen_ai.conversation.id = the run id, the model, the usage) and the OpenInference attributes
for its messages (openinference-semantic-conventions), a `chat` span per extra call, every span with the run
id as session.id, and the labels as span events carrying OpenInference's annotation attributes and, for
Phoenix, as span annotations (span_annotations.py) with the grade and an LLM judge's labels. Imported only
when asked for."""
from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any, Sequence

from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import (
    AnnotationAttributes,
    MessageAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode, set_span_in_context

from r2mad.exports import span_annotations
from r2mad.exports.attribution import FINAL, Verdict, agent_name, verdicts

log = logging.getLogger(__name__)
PROJECT = "r2mad"
NS = 1_000_000_000


def _kind(value: OpenInferenceSpanKindValues) -> dict[str, str]:
    return {SpanAttributes.OPENINFERENCE_SPAN_KIND: value.value}


def message_attributes(prefix: str, messages: Sequence[Any]) -> dict[str, str]:
    """OpenInference's flattened messages: `<prefix>.<i>.message.role` and `.content`."""
    out = {}
    for i, m in enumerate(messages):
        out[f"{prefix}.{i}.{MessageAttributes.MESSAGE_ROLE}"] = m.role
        out[f"{prefix}.{i}.{MessageAttributes.MESSAGE_CONTENT}"] = m.content
    return out


def turn_attributes(run_id: str, t: Any, turn: Any) -> dict[str, Any]:
    """The GenAI and OpenInference attributes of one agent's turn."""
    model = turn.backbone or t.backbone
    settings = t.settings or {}
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": run_id,
        "gen_ai.agent.id": str(turn.agent + 1), "gen_ai.agent.name": f"{agent_name(turn.agent)} ({turn.persona})",
        "gen_ai.request.model": model, "gen_ai.response.model": model,
        "gen_ai.usage.input_tokens": turn.tokens_in, "gen_ai.usage.output_tokens": turn.tokens_out,
        **_kind(OpenInferenceSpanKindValues.LLM), SpanAttributes.SESSION_ID: run_id,
        SpanAttributes.AGENT_NAME: agent_name(turn.agent), SpanAttributes.LLM_MODEL_NAME: model,
        SpanAttributes.GRAPH_NODE_ID: agent_name(turn.agent), SpanAttributes.GRAPH_NODE_PARENT_ID: "debate",
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT: turn.tokens_in,
        SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: turn.tokens_out,
        SpanAttributes.LLM_TOKEN_COUNT_TOTAL: turn.tokens_in + turn.tokens_out,
        SpanAttributes.INPUT_VALUE: json.dumps([{"role": m.role, "content": m.content} for m in turn.prompt],
                                               ensure_ascii=False),
        SpanAttributes.INPUT_MIME_TYPE: OpenInferenceMimeTypeValues.JSON.value,
        SpanAttributes.OUTPUT_VALUE: turn.text, SpanAttributes.OUTPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
        **message_attributes(SpanAttributes.LLM_INPUT_MESSAGES, turn.prompt),
        "r2mad.round": turn.round, "r2mad.agent": turn.agent + 1, "r2mad.answer": str(turn.answer),
    }
    for key, name in (("gen_ai.request.temperature", "temperature"), ("gen_ai.request.top_p", "top_p"),
                      ("gen_ai.request.max_tokens", "max_tokens")):
        if isinstance(settings.get(name), (int, float)):
            attrs[key] = settings[name]
    if turn.error is None:
        attrs[f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}"] = "assistant"
        attrs[f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}"] = turn.text
    if turn.provider:
        attrs["gen_ai.provider.name"] = turn.provider
    if turn.tokens_cached:
        attrs["gen_ai.usage.cache_read.input_tokens"] = turn.tokens_cached
    return attrs


def annotation_event(v: Verdict, label: str, taxonomy: dict[str, str]) -> dict[str, Any]:
    return {AnnotationAttributes.ANNOTATION_NAME: label, AnnotationAttributes.ANNOTATION_LABEL: label,
            AnnotationAttributes.ANNOTATION_EXPLANATION: v.note or taxonomy.get(label, ""),
            AnnotationAttributes.ANNOTATION_IDENTIFIER: v.annotator,
            AnnotationAttributes.ANNOTATION_ANNOTATOR_KIND: "HUMAN"}


class Clock:
    """Wall-clock nanoseconds for a saved run's calls: the run's start plus each call's offset on the monotonic
    clock (a turn without times follows the one before)."""

    def __init__(self, t: Any):
        starts = [turn.started_at for rnd in t.rounds for turn in rnd.turns if turn.started_at > 0]
        self.base, self.start, self.last = (min(starts) if starts else 0.0), t.started_at, t.started_at

    def span(self, started: float, seconds: float) -> tuple[int, int]:
        begin = self.start + (started - self.base) if started > 0 else self.last
        begin = max(begin, self.start)
        self.last = max(self.last, begin + seconds)
        return int(begin * NS), int((begin + max(seconds, 0.0)) * NS)


def grade_annotation(span: Any, t: Any) -> list[dict[str, Any]]:
    """The run's grade on its root span: correct (1) or wrong (0), how it was graded, by a judge model (LLM) or
    the rules (CODE); none for an unscored run."""
    from r2mad.grading.verdicts import how_graded

    if t.correct is None:
        return []
    how = how_graded(t.final, t.task, t.judged)
    return [span_annotations.annotation(span.get_span_context().span_id, "correct",
                                        "LLM" if "judge" in how else "CODE", PROJECT,
                                        label="correct" if t.correct else "wrong", score=float(t.correct),
                                        explanation=how)]


def label_annotation(span: Any, v: Verdict, label: str, taxonomy: dict[str, str]) -> dict[str, Any]:
    """A person's label as a Phoenix span annotation (its name and label the label's id, its identifier the
    annotator, `final` for the adjudicated labels)."""
    return span_annotations.annotation(span.get_span_context().span_id, label, "HUMAN", v.annotator, label=label,
                                       explanation=v.note or taxonomy.get(label, ""))


def judge_annotation(span: Any, s: Any) -> dict[str, Any]:
    """An LLM judge's label (a stored suggestion of detector `llm:<backbone>`) with the turn it quotes."""
    return span_annotations.annotation(span.get_span_context().span_id, s.label, "LLM", s.detector, label=s.label,
                                       explanation=s.summary)


def emit_run(tracer: Any, record: Any, found: Sequence[Verdict], taxonomy: dict[str, str],
             notes: list[dict[str, Any]] | None = None, judged: Sequence[Any] = ()) -> int:
    """One run as one trace; returns how many spans were made. `notes` receives the Phoenix span annotations of
    the labels (`found`, and an LLM judge's suggestions in `judged`) and of the grade."""
    t, run_id = record.transcript, record.id
    clock, count = Clock(t), 1
    notes = [] if notes is None else notes
    session = {SpanAttributes.SESSION_ID: run_id}
    end = int((t.started_at + max(t.seconds, 0.0)) * NS)
    final = next((v for v in found if v.annotator == FINAL), None)
    root = tracer.start_span(f"debate {t.method}", start_time=int(t.started_at * NS), attributes={
        **_kind(OpenInferenceSpanKindValues.CHAIN), "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.conversation.id": run_id, SpanAttributes.SESSION_ID: run_id, "gen_ai.request.model": t.backbone,
        SpanAttributes.GRAPH_NODE_ID: "debate", SpanAttributes.INPUT_VALUE: t.task.question,
        SpanAttributes.OUTPUT_VALUE: str(t.final), "r2mad.method": t.method, "r2mad.status": t.status,
        "r2mad.correct": str(t.correct), "gen_ai.usage.input_tokens": t.usage().tokens_in,
        "gen_ai.usage.output_tokens": t.usage().tokens_out,
        SpanAttributes.TAG_TAGS: list(final.labels if final else dict.fromkeys(x for v in found for x in v.labels))})
    for v in found:
        for label in v.labels:
            if not v.blame.get(label):
                root.add_event("annotation", annotation_event(v, label, taxonomy), timestamp=end)
                notes.append(label_annotation(root, v, label, taxonomy))
    notes.extend(grade_annotation(root, t))
    notes.extend(judge_annotation(root, s) for s in judged if s.round is None or not s.agents)
    inside = set_span_in_context(root)
    for rnd in t.finished().rounds:
        calls = [clock.span(x.started_at, x.seconds) for x in rnd.turns]
        begin, finish = (min(c[0] for c in calls), max(c[1] for c in calls)) if calls else (end, end)
        span = tracer.start_span(f"round {rnd.index}", context=inside, start_time=begin, attributes={
            **_kind(OpenInferenceSpanKindValues.CHAIN), **session, "r2mad.round": rnd.index,
            "r2mad.consensus": rnd.consensus})
        in_round = set_span_in_context(span)
        for turn, (a, b) in zip(rnd.turns, calls):
            child = tracer.start_span(f"invoke_agent {agent_name(turn.agent)}", context=in_round, start_time=a,
                                      attributes=turn_attributes(run_id, t, turn))
            if turn.error:
                child.set_status(Status(StatusCode.ERROR, turn.error))
            for v in found:
                for label in v.labels:
                    if (turn.round, turn.agent) in [tuple(x) for x in v.blame.get(label, [])]:
                        child.add_event("annotation", annotation_event(v, label, taxonomy), timestamp=b)
                        notes.append(label_annotation(child, v, label, taxonomy))
            notes.extend(judge_annotation(child, s) for s in judged if s.round == turn.round and turn.agent in s.agents)
            child.end(end_time=b)
        for call in rnd.aux:
            a, b = clock.span(0, call.seconds)
            child = tracer.start_span(f"chat {call.kind}", context=in_round, start_time=a, attributes={
                **_kind(OpenInferenceSpanKindValues.LLM), **session, "gen_ai.operation.name": "chat",
                "gen_ai.conversation.id": run_id, "gen_ai.request.model": call.backbone or t.backbone,
                "gen_ai.usage.input_tokens": call.tokens_in, "gen_ai.usage.output_tokens": call.tokens_out,
                SpanAttributes.OUTPUT_VALUE: call.text, "r2mad.call": call.kind})
            child.end(end_time=b)
        span.end(end_time=max(finish, begin))
        count += 1 + len(rnd.turns) + len(rnd.aux)
    root.end(end_time=max(end, int(t.started_at * NS)))
    return count


class Checked(SpanExporter):
    """The OTLP exporter, remembering whether any batch failed (the SDK only logs it)."""

    def __init__(self, inner: SpanExporter):
        self.inner, self.failed = inner, False

    def export(self, spans):
        result = self.inner.export(spans)
        self.failed |= result is not SpanExportResult.SUCCESS
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


@dataclasses.dataclass(frozen=True)
class Sent:
    """What export_runs sent: spans, span annotations Phoenix took, and why none were taken (one sentence)."""
    spans: int
    annotations: int = 0
    note: str = ""


def export_runs(store: Any, run_ids: Sequence[str], endpoint: str, *, headers: dict[str, str] | None = None,
                timeout_s: float = 10.0, project: str = PROJECT) -> Sent:
    """Send saved runs (scrubbed as stored) to an OTLP/HTTP traces endpoint, then their labels and grades as
    span annotations where the endpoint is Phoenix's. A run that stopped before round 0 is skipped."""
    from r2mad.annotation.judge_book import is_judge

    provider = TracerProvider(resource=Resource.create({"service.name": PROJECT,
                                                        ResourceAttributes.PROJECT_NAME: project}))
    exporter = Checked(OTLPSpanExporter(endpoint=endpoint, headers=headers or None, timeout=timeout_s))
    provider.add_span_processor(BatchSpanProcessor(exporter, export_timeout_millis=int(timeout_s * 1000)))
    tracer, count, notes = provider.get_tracer("r2mad.exports.otel"), 0, []
    try:
        for run_id in run_ids:
            record = store.get_run(run_id)
            if record.transcript is None:
                continue
            record = dataclasses.replace(record, transcript=store.scrub_transcript(record.transcript))
            judged = [x for x in store.suggestions(record.id) if is_judge(x.detector)]
            count += emit_run(tracer, record, verdicts(store, record.id), store.taxonomy, notes, judged)
        if not provider.force_flush(int(timeout_s * 1000)) or exporter.failed:
            raise ValueError(f"The traces did not reach {endpoint} within {timeout_s:g} s; check that a collector "
                             "listens there (OTLP over HTTP, path /v1/traces).")
    finally:
        provider.shutdown()
    url = span_annotations.annotations_url(endpoint)
    if not notes or url is None:
        return Sent(count)
    note = span_annotations.send(url, store.scrub(notes), headers=headers, timeout_s=timeout_s)
    return Sent(count, 0 if note else len(notes), note)


def send_live(store: Any, run_ids: Sequence[str], endpoint: str) -> None:
    """The live exporter (R2MAD_OTEL_ENDPOINT): finished runs as traces, bounded in time; a collector that
    cannot be reached costs a log line, never the run."""
    try:
        sent = export_runs(store, run_ids, endpoint, timeout_s=5.0)
        if sent.note:
            log.info("%s", sent.note)
    except Exception as exc:  # noqa: BLE001 - tracing must never fail a debate
        log.warning("Traces of runs %s were not sent to %s: %s", ", ".join(r[:8] for r in run_ids), endpoint, exc)
