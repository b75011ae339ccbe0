"""The debate's shape at a glance: one answer chip per agent and round (gold, wrong, no answer, cut at the
token limit, rejected citation, abstained), the consensus and majority of each round, and the same chips
as a methods × rounds matrix for a side-by-side run. Pure HTML strings with inline styles (they look the
same wherever they are shown); every model or visitor text is escaped. No Gradio, no I/O."""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Mapping, Sequence

from r2mad.grading.answers import is_correct, same_answer
from r2mad.grading.verdicts import how_graded, how_read
from r2mad.methods import is_debate
from r2mad.types import AgentTurn, Judged, Round, Task, Transcript
from r2mad.ui.render.states import outcome_line, vote_words
from r2mad.ui.render.text import esc

# (background, text, border): every text colour has at least 7:1 contrast on its background
COLOURS = {
    "gold": ("#dcfce7", "#14532d", "#15803d"),
    "wrong": ("#fee2e2", "#7f1d1d", "#b91c1c"),
    "answer": ("#e0e7ff", "#1e3a8a", "#4f46e5"),  # an answer, no gold given
    "undecided": ("#fef3c7", "#78350f", "#b45309"),  # an answer the rules could not grade, and no judge did
    "none": ("#f3f4f6", "#374151", "#6b7280"),  # unparsed, rejected, abstained
    "pending": ("#ffffff", "#374151", "#9ca3af"),
}
KIND_WORDS = {"gold": "matches the gold answer", "wrong": "wrong", "answer": "answer (no gold given)",
              "undecided": "undecided against the gold answer", "none": "no answer", "pending": "still writing"}
_CITATION = re.compile(r"^\(?([A-Ja-j])[).:]\s*(.+?)\s*[.!]?$")


@dataclass(frozen=True)
class Chip:
    text: str  # what the chip says: the answer, "no answer", "…"
    kind: str  # a key of COLOURS
    note: str = ""  # short mark under the answer: "cut", "rejected", "changed", "guard"
    why: str = ""  # the full sentence (tooltip and screen readers)


def cut_at_limit(turn: AgentTurn, max_tokens: int | None) -> bool:
    """The answer stopped at the token limit (the server said so, or it used every allowed token)."""
    if turn.error:
        return False
    if (turn.details or {}).get("finish") == "length":
        return True
    return bool(max_tokens) and turn.tokens_out >= int(max_tokens)


def rejected_citation(text: str, task: Task) -> str | None:
    """Why a cited option was not taken as the answer, e.g. "letter C but the text names option B's
    answer", when a line cites an option letter with another option's text (or text of no option)."""
    if task.kind != "mcq" or not task.options:
        return None
    options = {letter: body.strip().rstrip(".").casefold() for letter, body in task.options}
    lines = [x.strip() for x in unicodedata.normalize("NFKC", text or "").replace("*", "").splitlines() if x.strip()]
    for line in reversed(lines):
        m = _CITATION.match(line)
        if not m or m.group(1).upper() not in options:
            continue
        letter, cited = m.group(1).upper(), m.group(2).casefold()
        if cited == options[letter]:
            return None
        named = [k for k, body in options.items() if body == cited]
        if named:
            return f"letter {letter} but the text names option {named[0]}'s answer"
        return f"letter {letter} but “{clip(m.group(2), 40)}” is not option {letter}'s text"
    return None


def clip(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def chip_for(turn: AgentTurn, task: Task, *, max_tokens: int | None = None,
             previous: AgentTurn | None = None, judged: Sequence[Judged] = ()) -> Chip:
    """The chip of one agent's answer in one round; its `why` says how the answer was read and graded."""
    a = turn.answer
    if turn.error or a.how == "abstained":
        return Chip("abstained", "none", "", f"Abstained: the model call failed ({clip(turn.error or '', 160)})")
    cut = cut_at_limit(turn, max_tokens)
    if a.value is None:
        rejected = rejected_citation(turn.text, task)
        if rejected:
            return Chip("no answer", "none", "rejected", f"Rejected: {rejected}")
        if cut:
            return Chip("no answer", "none", "cut", "Cut at the token limit before an answer was given")
        return Chip("no answer", "none", "", "No answer found in the task's format")
    graded = how_graded(a, task, judged)
    correct = is_correct(a, task, judged)
    kind = ("answer" if not graded else "undecided") if correct is None else ("gold" if correct else "wrong")
    changed = (previous is not None and previous.answer.value is not None
               and not same_answer(previous.answer, a, task, judged))
    forked = bool((turn.details or {}).get("steer"))
    notes = [n for n, on in (("cut", cut), ("guard", a.how == "guarded"), ("changed", changed), ("fork", forked))
             if on]
    why = f"{a.value}: {KIND_WORDS[kind]}" + (f" ({graded})" if graded else "") + f"; {how_read(a, task)}"
    if cut:
        why += "; cut at the token limit"
    if changed:
        why += f"; changed from {previous.answer.value}"
    if forked:
        why += "; this turn was changed by a fork"
    return Chip(a.value, kind, " · ".join(notes), why)


def chip_html(chip: Chip) -> str:
    bg, fg, border = COLOURS[chip.kind]
    style = (f"display:inline-block;min-width:3.2em;padding:2px 8px;border-radius:999px;background:{bg};"
             f"color:{fg};border:1.5px {'dashed' if chip.kind in ('none', 'pending') else 'solid'} {border};"
             "font-weight:600;text-align:center;line-height:1.25;white-space:nowrap")
    note = (f"<br><span style='font-weight:400;font-size:0.78em'>{esc(chip.note)}</span>" if chip.note else "")
    why = esc(chip.why, quote=True)  # inside attributes
    return (f"<span class='chip chip-{chip.kind}' title=\"{why}\" aria-label=\"{why}\" "
            f"style=\"{style}\">{esc(clip(chip.text, 14))}{note}</span>")


# --- one debate ---------------------------------------------------------------------------------

def _agents(t: Transcript) -> list[int]:
    seen = {turn.agent for r in t.rounds for turn in r.turns}
    planned = t.settings.get("agents") if isinstance(t.settings, Mapping) else None
    if isinstance(planned, int) and is_debate(t.method):
        seen |= set(range(planned))
    return sorted(seen)


def _personas(t: Transcript) -> dict[int, str]:
    return {turn.agent: turn.persona for r in t.rounds for turn in r.turns}


def agent_models(t: Transcript) -> dict[int, str]:
    """Each agent's model in a mixed-model debate (some agent answered on another backbone than the run's
    named one); {} when every agent ran on the run's backbone."""
    models = {turn.agent: turn.backbone or t.backbone for r in t.rounds for turn in r.turns
              if not turn.details.get("human")}  # a person's seat is no other model
    return models if any(name != t.backbone for name in models.values()) else {}


def round_chips(t: Transcript, rnd: Round, agents: list[int], previous: Round | None) -> list[Chip]:
    max_tokens = t.settings.get("max_tokens") if isinstance(t.settings, Mapping) else None
    by_agent = {turn.agent: turn for turn in rnd.turns}
    before = {turn.agent: turn for turn in previous.turns} if previous else {}
    typing = rnd.details.get("typing") or {}
    chips = []
    for agent in agents:
        if agent in by_agent:
            chips.append(chip_for(by_agent[agent], t.task, max_tokens=max_tokens, previous=before.get(agent),
                                  judged=t.judged))
        elif rnd.details.get("running") and t.status == "running":
            chips.append(Chip("…", "pending", "writing" if str(agent) in typing else "",
                              "This agent is still writing its answer"))
        else:
            chips.append(Chip("—", "none", "", "No answer: the debate ended before this agent answered"))
    return chips


def unfinished(t: Transcript) -> str:
    """What a round cut short reads: still running, or how the debate ended before the round did."""
    return {"running": "running…", "cancelled": "stopped mid-round", "failed": "failed mid-round"}.get(
        t.status, "unfinished")


def round_heading(rnd: Round) -> str:
    return "Round 0<br><span style='font-weight:400'>alone</span>" if rnd.index == 0 else f"Round {rnd.index}"


CELL = "padding:6px 8px;border-bottom:1px solid #e5e7eb;text-align:center;vertical-align:middle"
HEAD = "padding:6px 8px;border-bottom:2px solid #9ca3af;text-align:center;color:#111827"
LEFT = "padding:6px 8px;border-bottom:1px solid #e5e7eb;text-align:left;color:#111827;white-space:nowrap"
TABLE = "border-collapse:collapse;background:#ffffff;color:#111827;font-size:14px"


def scoreboard_html(t: Transcript) -> str:
    """Agents × rounds grid of answer chips, a consensus row, a vote row (majority, plurality or tie) and a
    one-line legend."""
    agents, personas, models = _agents(t), _personas(t), agent_models(t)
    if not t.rounds:
        return ("<div class='scoreboard' style='color:#374151;padding:8px'>Round 0 is starting: each agent "
                "answers alone first.</div>")
    heads = "".join(f"<th style='{HEAD}'>{round_heading(r)}</th>" for r in t.rounds)
    grid = [round_chips(t, r, agents, t.rounds[i - 1] if i else None) for i, r in enumerate(t.rounds)]
    rows = []
    for row, agent in enumerate(agents):
        # persona and model: beside the name, or under it on a phone (CSS in layout.py)
        who = f"Agent {agent + 1}" + (f" <span class='who-extra' style='color:#4b5563'>· {esc(personas[agent])}</span>"
                                      if agent in personas else "")
        if agent in models:
            who += (f" <span class='who-extra agent-model' style='color:#1f2937;font-weight:600'>"
                    f"· {esc(models[agent])}</span>")
        cells = "".join(f"<td style='{CELL}'>{chip_html(col[row])}</td>" for col in grid)
        rows.append(f"<tr><th scope='row' style='{LEFT}'>{who}</th>{cells}</tr>")
    cons, major = [], []
    for rnd in t.rounds:
        if rnd.details.get("running"):
            cons.append(unfinished(t))
            major.append("—")
            continue
        cons.append(f"{rnd.consensus:.2f}")
        major.append(esc(vote_words(rnd, t.task, short=True, judged=t.judged)))
    rows.append(f"<tr><th scope='row' style='{LEFT}'>Consensus</th>"
                + "".join(f"<td style='{CELL}'>{c}</td>" for c in cons) + "</tr>")
    rows.append(f"<tr><th scope='row' style='{LEFT}' title='The most held answer and how many agents hold it; "
                f"a tie goes to the earliest agent holding a top answer'>Vote</th>"
                + "".join(f"<td style='{CELL}'>{m}</td>" for m in major) + "</tr>")
    table = (f"<table style='{TABLE}'><thead><tr><th style='{HEAD};text-align:left'>Agent</th>{heads}</tr>"
             f"</thead><tbody>{''.join(rows)}</tbody></table>")
    return f"<div class='scoreboard' style='overflow-x:auto'>{table}{LEGEND}</div>"


def legend_html() -> str:
    parts = [chip_html(Chip("B", "gold", "", "matches the gold answer")) + " matches the gold answer",
             chip_html(Chip("C", "wrong", "", "wrong")) + " wrong",
             chip_html(Chip("D", "undecided", "", "undecided against the gold")) + " undecided (the rules could not "
             "tell it from the gold, and no judge did)",
             chip_html(Chip("B", "answer", "", "an answer; no gold given")) + " answer (no gold given)",
             chip_html(Chip("no answer", "none", "", "no answer")) + " no answer in the task's format"]
    marks = ("Marks: <b>cut</b> = stopped at the token limit · <b>rejected</b> = cited a letter with another "
             "option's text · <b>changed</b> = changed answer since the previous round · <b>guard</b> = asked "
             "again for the answer alone · <b>fork</b> = changed by a fork. Hover a chip for how its answer was read "
             "and graded.")
    return ("<div style='font-size:13px;color:#374151;margin-top:6px;line-height:2'>"
            + " &nbsp; ".join(parts) + f"<br>{marks}</div>")


LEGEND = legend_html()


# --- side by side -------------------------------------------------------------------------------

def matrix_html(transcripts: Mapping[str, Transcript], titles: Mapping[str, str] | None = None) -> str:
    """Rows = methods, columns = rounds; each cell holds that round's chips (one per agent) and its
    consensus. Rounds a method did not run (early stop, baseline) stay empty."""
    titles = titles or {}
    if not transcripts:
        return ""
    width = max((len(t.rounds) for t in transcripts.values()), default=0)
    planned = max((int(t.settings.get("rounds", 0) or 0) for t in transcripts.values()), default=0)
    width = max(width, planned, 1)
    heads = "".join(f"<th style='{HEAD}'>Round {i}{' (alone)' if i == 0 else ''}</th>" for i in range(width))
    rows = []
    for method, t in transcripts.items():
        agents = _agents(t)
        cells = []
        for i in range(width):
            if i < len(t.rounds):
                rnd = t.rounds[i]
                chips = " ".join(chip_html(c) for c in round_chips(t, rnd, agents, t.rounds[i - 1] if i else None))
                cons = unfinished(t) if rnd.details.get("running") else f"consensus {rnd.consensus:.2f}"
                cells.append(f"<td style='{CELL}'>{chips}<div style='font-size:12px;color:#374151'>{cons}</div></td>")
            else:
                cells.append(f"<td style='{CELL};color:#4b5563'>{'—' if t.status != 'running' else '…'}</td>")
        label = esc(titles.get(method, method))
        rows.append(f"<tr><th scope='row' style='{LEFT}'>{label}<div style='font-weight:400;font-size:12px;"
                    f"color:#374151;white-space:normal;max-width:16em'>{esc(outcome_line(t))}</div></th>"
                    f"{''.join(cells)}</tr>")
    return (f"<div class='matrix' style='overflow-x:auto'><table style='{TABLE};width:100%'><thead><tr>"
            f"<th style='{HEAD};text-align:left'>Method</th>{heads}</tr></thead><tbody>{''.join(rows)}</tbody>"
            f"</table>{LEGEND}</div>")

