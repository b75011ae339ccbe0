"""One self-contained HTML page for a saved run: scoreboard, chat, memory cases, influence graph and labels,
styles inline, no script and no external URL (the page frame is evaluation/report_html.py's), so the file
reads the same offline and with JavaScript off. Pure; writing the file is the caller's job."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from r2mad.annotation.influence import edge_counts
from r2mad.evaluation.report_html import markdown_html, page
from r2mad.ui.render.annotate_view import influence_svg
from r2mad.ui.render.chat import chat_messages, esc
from r2mad.ui.render.scoreboard import scoreboard_html


def chat_html(t: Any) -> str:
    """The Inspect chat as nested <details>: one per round (open), one per agent turn inside it."""
    parts, open_round = [], False
    for m in chat_messages(t):
        meta = m.get("metadata") or {}
        content = markdown_html(m["content"])
        if meta.get("title") and not meta.get("parent_id"):  # a round
            parts.append("</div></details>" if open_round else "")
            parts.append(f"<details open><summary>{markdown_html(meta['title'])[3:-5]}</summary><div>{content}")
            open_round = True
        elif meta.get("parent_id"):
            parts.append(f"<details><summary>{markdown_html(meta['title'])[3:-5]}</summary>{content}</details>")
        else:
            if open_round:
                parts.append("</div></details>")
                open_round = False
            parts.append(f"<div class='msg {'user' if m['role'] == 'user' else ''}'>{content}</div>")
    return "".join(parts) + ("</div></details>" if open_round else "")


def memory_rows(t: Any) -> list[tuple]:
    """(round, agent, case id, similarity, case answer, case right) for every case shown to an agent."""
    return [(rnd.index, turn.agent + 1, c.get("case_id"), c.get("similarity"), c.get("answer"), c.get("correct"))
            for rnd in t.rounds for turn in rnd.turns for c in (turn.details.get("retrieved") or [])]


def table_html(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else esc(v)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def run_page(record: Any, suggestions: Sequence[Any] = (), final: Any = None,
             taxonomy: Mapping[str, str] | None = None) -> str:
    """The page of one saved run: header, scoreboard, chat, memory cases, influence graph and labels
    (people's, the adjudicated ones, and the detectors' and judges' suggestions)."""
    t = record.transcript
    head = (f"<h1>Run {esc(record.id)}</h1><p>{esc(record.method)} on {esc(record.backbone)} · status "
            f"{esc(record.status)} · bank {esc(record.bank or 'none')} · gold {esc(record.gold or '—')} · final "
            f"{esc(record.final_answer or '—')}</p>")
    if t is None:
        return page(f"Run {record.id}", head + "<p>This run stopped before round 0; there is no debate to show.</p>")
    finished = t.finished()
    agents = len(finished.rounds[0].turns) if finished.rounds else 0
    cases = memory_rows(finished)
    labels = [(a.annotator, ", ".join(a.labels) or "none", a.note) for a in record.annotations]
    described = taxonomy or {}
    sections = [
        head, "<h2>Scoreboard</h2>", scoreboard_html(finished),
        "<h2>Debate</h2>", chat_html(t),
        "<h2>Memory cases shown to the agents</h2>",
        table_html(["round", "agent", "case", "similarity", "case answer", "case right"], cases) if cases
        else "<p>No memory case was retrieved in this run.</p>",
        "<h2>Influence graph</h2><p>An arrow j → i counts the times agent i took the answer agent j held the "
        "round before.</p>", influence_svg(edge_counts(finished), agents, f"{record.method} · {record.id[:8]}"),
        "<h2>Labels</h2>",
        table_html(["annotator", "labels", "note"], labels) if labels else "<p>No one has labelled this run.</p>",
        f"<p>Adjudicated: {esc(', '.join(final.labels) or 'none')} (by {esc(final.adjudicator)})</p>" if final
        else "<p>No adjudicated labels yet.</p>",
    ]
    if suggestions:
        sections.append(table_html(["suggested by", "label", "round", "agents", "why"],
                                   [(s.detector, s.label or "(turn only)", s.round,
                                     ", ".join(str(a + 1) for a in s.agents), s.summary) for s in suggestions]))
    if described:
        sections.append("<details><summary>Label descriptions</summary>"
                        + table_html(["label", "description"], list(described.items())) + "</details>")
    return page(f"Run {record.id}", "".join(sections))
