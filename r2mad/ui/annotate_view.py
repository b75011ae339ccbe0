"""Pure renderers of the annotation workbench: queue progress and rows, detector suggestions with their
evidence, other people's labels (or the blind notice), the turns a label can blame, the key help.
No Gradio; every piece of stored or visitor text is escaped."""
from __future__ import annotations

import html
import json
import re
from typing import Any, Mapping, Sequence

from r2mad.annotation.book import blame_turns
from r2mad.ui.render.chat import esc

QUEUE_HEADERS = ["#", "Run", "Question", "Flags", "You"]
DISAGREEMENT_HEADERS = ["Run", "Question", "Labels per annotator"]
SHORT = 8  # characters of a run id shown; the whole id is on hover
NO_TURN = "no particular turn"
KEYS_HELP = ("**Keys** (outside text boxes): **1–9** toggle the first nine labels · **J** next run · "
             "**K** previous run · **Ctrl+Enter** save and go to the next pending run · **?** show or hide "
             "this help. Click an agent's message in the chat to blame that turn.")


def label_choices(taxonomy: Mapping[str, str]) -> list[tuple[str, str]]:
    """Checkbox labels numbered 1-9 for the keys (the rest unnumbered); descriptions in label_guide."""
    return [(f"{i + 1 if i < 9 else '·'} {key}", key) for i, key in enumerate(taxonomy)]


def label_guide(taxonomy: Mapping[str, str]) -> str:
    """What each label means, and the closest mode of the MAST taxonomy of multi-agent failures."""
    from r2mad.annotation.mast import mast_name
    rows = [f"| `{esc(k)}` | {esc(v)} | {esc(mast_name(k) or '—')} |" for k, v in taxonomy.items()]
    return "\n".join(["| label | meaning | closest MAST mode |", "| --- | --- | --- |", *rows])


def turn_choices(transcript: Any) -> list[str]:
    if transcript is None:
        return [NO_TURN]
    return [NO_TURN] + [turn_name(r.index, t.agent) for r in transcript.finished().rounds
                        for t in sorted(r.turns, key=lambda x: x.agent)]


def turn_name(round_index: int, agent: int) -> str:
    return f"round {round_index} · agent {agent + 1}"


def parse_turn(name: str | None) -> dict[str, int] | None:
    """'round 1 · agent 2' -> {"round": 1, "agent": 1}; anything else -> None."""
    parts = (name or "").replace("·", " ").split()
    if len(parts) == 4 and parts[0] == "round" and parts[2] == "agent" and parts[1].isdigit() and parts[3].isdigit():
        return {"round": int(parts[1]), "agent": int(parts[3]) - 1}
    return None


def parse_turns(names: Any) -> list[tuple[int, int]]:
    """The (round, agent) pairs of the picked turn names (a list, one name, or none)."""
    names = names if isinstance(names, (list, tuple)) else [names]
    return sorted({(t["round"], t["agent"]) for t in map(parse_turn, names) if t})


def turn_names(turns: Sequence[tuple[int, int]]) -> list[str]:
    return [turn_name(r, a) for r, a in turns]


def short_id(run_id: str) -> str:
    """The first SHORT characters of a run id, the whole id on hover and in data-run (for clicks)."""
    full = esc(run_id)
    return f'<span class="run-id" title="{full}" data-run="{full}">{esc(run_id[:SHORT])}</span>'


def full_id(cell: Any) -> str:
    """The run id behind a short_id cell (or a plain id)."""
    text = str(cell or "")
    found = re.search(r'data-run="([^"]+)"', text)
    return html.unescape(found.group(1)) if found else text.strip()


def queue_rows(items: Sequence[Any], current: str | None) -> list[list[Any]]:
    you = {"done": "done", "pending": "pending", "full": "enough labels"}
    return [[("▶ " if i.run.id == current else "") + str(n), short_id(i.run.id), _snippet(i.run.question, 40),
             i.flags, you[i.state]] for n, i in enumerate(items, 1)]


def progress_markdown(queue: Any, items: Sequence[Any], current: str | None, annotator: str) -> str:
    if queue is None:
        return "*No queue chosen: pick one above, or create one from a filter.*"
    ids = [i.run.id for i in items]
    done = sum(i.state == "done" for i in items)
    pending = sum(i.state == "pending" for i in items)
    where = f"run {ids.index(current) + 1} of {len(ids)}" if current in ids else f"{len(ids)} runs"
    mode = (f" · {queue.annotators_per_run} annotator(s) per run" + (" · **blind**" if queue.blind else ""))
    tail = " · **all done for you**" if items and pending == 0 else ""
    return (f"Queue **{esc(queue.name)}** · {where} · as **{esc(annotator)}**: {done} done, {pending} pending"
            f"{mode}{tail}")


def suggestions_markdown(groups: Sequence[Any], annotator: str, others_visible: bool = True) -> str:
    """One line per group of suggestions (label × source: a detector, blame's replays, a judge), with the
    source's precision, whether it starts ticked and why, and each suggestion's evidence folded below;
    others' reviews hidden while their labels are."""
    if not groups:
        return "*No detector flagged this run.*"
    lines = ["**Suggestions** (☑ starts ticked below; untick to reject):"]
    for g in groups:
        score = g.score
        measured = ("precision not measured" if score is None or score.precision is None else
                    f"precision {score.precision:.0%} ({score.true_pos} of {score.true_pos + score.false_pos} "
                    "kept by adjudication)")
        label = (f"`{esc(g.label)}`" if g.label else
                 "**counterfactual** (blame's replay; no label picked: tick why, its turns are pre-selected)")
        count = f" ×{g.count}" if g.count > 1 else ""
        lines.append(f"- {'☑' if g.ticked else '☐'} {label}{count} · *{esc(g.source)}* · {measured} — "
                     f"{'ticked' if g.ticked else 'unticked'}: {esc(g.why)}")
        body = []
        for s in g.items:
            where = "" if s.round is None else f"round {s.round}, agent(s) {', '.join(str(a + 1) for a in s.agents)}: "
            evidence = "; ".join(f"{esc(k)} = {esc(_short(v))}" for k, v in s.evidence.items())
            reviews = ", ".join(f"{esc(who)} {verdict}" for who, verdict in s.reviews.items()
                                if others_visible or who == annotator)
            body.append(f"{where}{esc(s.summary)}<br><i>evidence:</i> {evidence or '—'}"
                        + (f"<br><i>reviews:</i> {reviews}" if reviews else ""))
        if len(body) == 1:
            lines.append(f"  - {body[0]}")
        else:  # one row per group: its members folded under it
            lines.append(f"  <details><summary>each of the {len(body)}</summary><ul>"
                         + "".join(f"<li>{b}</li>" for b in body) + "</ul></details>")
    return "\n".join(lines)


def others_markdown(annotations: Sequence[Any], annotator: str, visible: bool) -> str:
    others = [a for a in annotations if a.annotator != annotator]
    if not others:
        return "*No one else has labelled this run.*"
    if not visible:
        return (f"*{len(others)} other annotator(s) labelled this run; their labels stay hidden until you "
                "submit yours (blind queue).*")
    lines = ["**Other annotators**"]
    for a in others:
        blame = "; ".join(f"{esc(k)} → {' + '.join(turn_names(blame_turns(v)))}" for k, v in a.blame.items())
        lines.append(f"- **{esc(a.annotator)}**: {', '.join(esc(x) for x in a.labels)}"
                     + (f" ({blame})" if blame else "") + (f" — {esc(a.note)}" if a.note else ""))
    return "\n".join(lines)


def disagreement_rows(rows: Sequence[tuple[str, dict[str, tuple[str, ...]]]], questions: Mapping[str, str]):
    return [[short_id(run), _snippet(questions.get(run, "")),
             " | ".join(f"{who}: {', '.join(labels)}" for who, labels in by.items())] for run, by in rows]


def _snippet(text: str | None, limit: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _snippet(text, 160)


COMPARE_HEADERS = ["Round", "This run: answers", "consensus", "Other run: answers", "consensus"]


def influence_svg(edges: Mapping[tuple[int, int], int], agents: int, title: str) -> str:
    """A small directed graph: agents on a circle, an arrow j → i labelled with how often i took j's
    answer. Only numbers and fixed words go into the markup."""
    import html
    import math
    title, size, r = html.escape(title, quote=True), 220, 78
    pos = {a: (size / 2 + r * math.cos(2 * math.pi * a / max(agents, 1) - math.pi / 2),
               size / 2 + r * math.sin(2 * math.pi * a / max(agents, 1) - math.pi / 2)) for a in range(agents)}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size + 20}" role="img" '
             f'aria-label="{title}"><defs><marker id="arr" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
             '</marker></defs>']
    for (src, dst), count in sorted(edges.items()):
        if src not in pos or dst not in pos:
            continue
        (x1, y1), (x2, y2) = pos[src], pos[dst]
        dx, dy = x2 - x1, y2 - y1
        norm = math.hypot(dx, dy) or 1
        ox, oy = -dy / norm * 6, dx / norm * 6  # offset so j→i and i→j do not overlap
        sx, sy = x1 + dx / norm * 20 + ox, y1 + dy / norm * 20 + oy
        ex, ey = x2 - dx / norm * 20 + ox, y2 - dy / norm * 20 + oy
        parts.append(f'<line class="move" data-from="{src + 1}" data-to="{dst + 1}" x1="{sx:.1f}" '
                     f'y1="{sy:.1f}" x2="{ex:.1f}" y2="{ey:.1f}" stroke="#e8590c" stroke-width="{1 + count}" '
                     'marker-end="url(#arr)"/>')
        parts.append(f'<text x="{(sx + ex) / 2 + ox:.1f}" y="{(sy + ey) / 2 + oy:.1f}" font-size="11">{count}</text>')
    for a, (x, y) in pos.items():
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="17" fill="#fff4e6" stroke="#555"/>'
                     f'<text x="{x:.1f}" y="{y + 4:.1f}" font-size="12" text-anchor="middle">A{a + 1}</text>')
    parts.append(f'<text x="4" y="{size + 14}" font-size="11">{title}</text></svg>')
    return "".join(parts)
