"""Pure renderers for the app's tables and detail panes: the side-by-side summary, the run list and
annotations of the Inspect tab, and memory cases of the bank browser. No Gradio; all text escaped."""
from __future__ import annotations

import time
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from r2mad.types import Case, Transcript
from r2mad.ui.render.chat import answer_text, esc
from r2mad.ui.render.scoreboard import Chip, chip_html
from r2mad.ui.render.states import memory_off

SUMMARY_HEADERS = ["Method", "Final answer", "Correct", "Rounds", "Calls", "Tokens", "Seconds",
                   "Parse failures", "Status"]
RUN_HEADERS = ["Question", "Outcome", "Method", "Final", "Gold", "Flags", "Labels", "Started", "Backbone",
               "Rounds", "Run"]
SHORT_ID = 8  # characters of a run id shown in the list
CASE_HEADERS = ["Case id", "Agent", "Round", "Agent correct", "Reward", "Quarantined", "Question",
                "Answers", "Gold"]


def yes_no(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "no")


def summary_rows(transcripts: Mapping[str, Transcript], seconds: Mapping[str, float] | None = None) -> list[list[Any]]:
    """One row per method of a side-by-side comparison (in the given order); `seconds`: each method's run from its
    start to its end as saved (a debate that replayed the shared round 0 counts it), else the loop's own."""
    rows = []
    for method, t in transcripts.items():
        done = [r for r in t.rounds if not r.details.get("running")]
        failures = sum(1 for r in t.rounds for turn in r.turns if turn.answer.value is None and not turn.error)
        usage = t.usage()
        final = answer_text(t.final) if done and t.status == "done" else "—"
        name = method + (" (memory off)" if memory_off(t) else "")
        rows.append([name, final, yes_no(t.correct) if t.status == "done" else "—", len(done), usage.calls,
                     usage.tokens, round((seconds or {}).get(method, t.seconds), 1), failures, t.status])
    return rows


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _snippet(text: str | None, limit: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_flags(run: Any) -> str:
    flags = []
    if run.shared_misconception:
        flags.append("shared misconception")
    if run.flip:
        flags.append("correct→wrong flip")
    if run.parse_failures:
        flags.append(f"{run.parse_failures} parse failure{'s' if run.parse_failures > 1 else ''}")
    return ", ".join(flags)


def run_outcome(run: Any) -> str:
    """correct / wrong / no gold / stopped / failed / running, in one word or two."""
    if run.status == "cancelled":
        return "stopped"
    if run.status in ("failed", "running"):
        return run.status
    return {True: "correct", False: "wrong"}.get(run.correct, "no gold" if not run.gold else "not scored")


OUTCOME_CHIPS = {"correct": "gold", "wrong": "wrong", "no gold": "answer", "not scored": "answer"}
RUN_DATATYPES = ["str", "html", "str", "str", "str", "str", "html", "str", "str", "number", "str"]


def outcome_chip(outcome: str) -> str:
    """The outcome word as a chip in the scoreboard's colours (stopped, failed and running are grey)."""
    return chip_html(Chip(outcome, OUTCOME_CHIPS.get(outcome, "none"), why=f"Outcome: {outcome}"))


def label_chips(labels: Sequence[str], final: Sequence[str] = (), taxonomy: Mapping[str, str] | None = None) -> str:
    """One chip per failure label: how many annotators gave it, and a solid frame when it was adjudicated
    final. The chip's tooltip is the label's description."""
    counts = Counter(labels)
    if not counts and not final:
        return "—"
    chips = []
    for label in [*final, *(x for x in counts if x not in final)]:
        n, decided = counts.get(label, 0), label in final
        text = label.replace("_", " ") + (f" ×{n}" if n > 1 else "")
        why = (taxonomy or {}).get(label, label) + (" — adjudicated final" if decided else "") + \
            (f" — given by {n} annotator{'s' if n != 1 else ''}" if n else "")
        border = "2px solid #312e81" if decided else "1px solid #94a3b8"
        style = (f"display:inline-block;margin:1px 2px;padding:0 6px;border-radius:6px;border:{border};"
                 "background:#f1f5f9;color:#1e293b;font-size:0.85em;line-height:1.4")
        chips.append(f"<span class='label-chip' title=\"{esc(why)}\" aria-label=\"{esc(why)}\" "
                     f"style=\"{style}\">{esc(text)}</span>")
    return "".join(chips)


def run_rows(runs: Iterable[Any], taxonomy: Mapping[str, str] | None = None) -> list[list[Any]]:
    """The Inspect list, question first and a short id last; outcome and labels are chips (HTML cells,
    RUN_DATATYPES), every other cell plain text."""
    return [[_snippet(r.question, 90), outcome_chip(run_outcome(r)), r.method, r.final_answer or "—", r.gold or "—",
             run_flags(r) or "—", label_chips(r.labels, r.final_labels, taxonomy), _when(r.created_at), r.backbone,
             r.rounds, r.id[:SHORT_ID]]
            for r in runs]


def run_header_markdown(record: Any) -> str:
    """The run's question first, then its outcome and where it came from."""
    note = f" ({esc(record.status_note)})" if record.status_note else ""
    return (f"**Question:** {esc(_snippet(record.question, 400))}  \n"
            f"**Run {esc(record.id)}** · {esc(record.status)}{note} · source {esc(record.source)} · "
            f"started {_when(record.created_at)}  \n"
            f"Method {esc(record.method)} · backbone {esc(record.backbone)} · bank {esc(record.bank or 'none')} · "
            f"seed {esc(record.seed)} · code {esc(record.code_version)}  \n"
            f"Final {esc(record.final_answer or '—')} · gold {esc(record.gold or '—')} · correct "
            f"{yes_no(record.correct)} · {record.tokens} tokens · {record.seconds:.1f} s"
            + (f" · flags: {run_flags(record)}" if run_flags(record) else ""))


def annotations_markdown(annotations: Sequence[Any], taxonomy: Mapping[str, str]) -> str:
    if not annotations:
        return "*No annotations yet.*"
    out = []
    for a in annotations:
        labels = ", ".join(esc(label) for label in a.labels)
        edited = f" · edited {len(a.history)} time(s), last {_when(a.updated_at)}" if a.history else ""
        out.append(f"- **{esc(a.annotator)}** ({_when(a.created_at)}{edited}): {labels}"
                   + (f"  \n  {esc(a.note)}" if a.note else ""))
    return "\n".join(out)


def case_rows(cases: Iterable[Case]) -> list[list[Any]]:
    return [[c.id, c.agent + 1, c.round, yes_no(c.own_correct), c.reward, yes_no(c.quarantined),
             _snippet(c.question), ", ".join("—" if a is None else str(a) for a in c.answers), c.gold]
            for c in cases]


def provenance_lines(case: Case) -> list[str]:
    """Where a case written from a saved run came from (memory/growth.py); nothing for build-memory's."""
    p = case.provenance or {}
    if not p:
        return []
    labels = p.get("labels")
    judged = "no adjudicated labels" if labels is None else f"adjudicated labels: {esc(', '.join(labels) or 'none')}"
    return [f"**From run** {esc(p.get('run'))} ({esc(p.get('method'))} on {esc(p.get('backbone'))}) · annotator "
            f"{esc(p.get('annotator'))} · added by {esc(p.get('added_by'))} on {esc(p.get('added_at'))} · {judged}"]


def case_markdown(case: Case) -> str:
    """One memory case in full, for auditing."""
    lines = [f"**Case {esc(case.id)}** · question {esc(case.question_id)} · {esc(case.task_kind)} · "
             f"agent {case.agent + 1} · round {case.round} · reward {case.reward:g}"
             + (" · **quarantined** (never retrieved)" if case.quarantined else ""),
             *provenance_lines(case),
             f"**Question**\n\n{esc(case.question)}",
             f"**Gold answer:** {esc(case.gold)}",
             f"**State before round {case.round}** — consensus {case.consensus:.2f}  \n"
             f"Summary h: {esc(case.summary) or '—'}",
             f"**This agent's previous response**\n\n{esc(case.previous_response) or '—'}"]
    for j, (text, answer, ok) in enumerate(zip(case.responses, case.answers, case.correct)):
        mark = "— correct" if ok else "— wrong"
        who = " (this agent)" if j == case.agent else ""
        lines.append(f"**Agent {j + 1}{who}, round {case.round}** — answer "
                     f"{esc('UNPARSED' if answer is None else answer)} {mark}\n\n{esc(text)}")
    return "\n\n".join(lines)
