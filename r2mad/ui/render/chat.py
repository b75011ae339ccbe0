"""Pure renderers from a transcript (the loop's own, also while it runs) to what the chat shows:
messages grouped per round, the consensus per round, notices and the final verdict. Every piece of
model or visitor text is HTML-escaped here. No Gradio import, no I/O."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from r2mad.evaluation.costs import PriceTable, format_cost, model_costs, total_words
from r2mad.grading.answers import split_think
from r2mad.grading.kinds import kind_of
from r2mad.grading.outcome import kind_line
from r2mad.grading.verdicts import how_read
from r2mad.types import (
    AgentTurn,
    Answer,
    AuxCall,
    Judged,
    Round,
    Task,
    Transcript,
)
from r2mad.ui.render import panels
from r2mad.ui.render.agent_input import previous_turns, saw_html
from r2mad.ui.render.scoreboard import agent_models, chip_for
from r2mad.ui.render.states import outcome_line
from r2mad.ui.render.text import esc

STATUS_LABELS = {"running": "running…", "done": "finished", "failed": "failed",
                 "cancelled": "stopped (cancelled)"}


def clip(text: str, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def answer_text(answer: Answer) -> str:
    if answer.how == "abstained":
        return "abstained"
    return "no answer" if answer.value is None else answer.value  # as its chip says


def answer_label(answer: Answer, task: Task) -> str:
    """'D (strict: ((letter)))', 'no answer (no answer found)'."""
    if answer.how == "abstained":
        return "abstained"
    return f"{esc(answer.value) if answer.value is not None else 'no answer'} ({esc(how_read(answer, task))})"


def task_markdown(task: Task) -> str:
    lines = [f"**Question** ({kind_of(task).label})", "", esc(task.question)]
    if task.options:
        lines.append("")
        lines.extend(f"({letter}) {esc(text)}" for letter, text in task.options)
    return "\n".join(lines)


def turn_title(turn: AgentTurn, task: Task, max_tokens: int | None = None, model: str = "",
               judged: Sequence[Judged] = ()) -> str:
    """'Agent 2 · Skeptic — answer B (strict: ((letter))) · 101+40 tokens · 2.2 s'; a rejected citation
    or an answer cut at the token limit says so in words; `model` (a mixed-model debate) after the persona."""
    who = f"Agent {turn.agent + 1} · {esc(turn.persona)}" + (f" · on {esc(model)}" if model else "")
    if turn.error:
        return f"{who} — abstained (call failed)"
    if turn.details.get("human"):  # a person took this agent's seat (r2mad/human.py)
        return f"Agent {turn.agent + 1} · written by a person — answer {answer_label(turn.answer, task)}"
    said = f"answer {answer_label(turn.answer, task)}"
    chip = chip_for(turn, task, max_tokens=max_tokens, judged=judged)
    if "rejected" in chip.note or (turn.answer.value is None and "cut" in chip.note):
        said = esc(chip.why)
    elif "cut" in chip.note:
        said += " · cut at the token limit"
    fork = " · changed by the fork" if turn.details.get("steer") else ""
    return f"{who} — {said} · {turn.tokens_in}+{turn.tokens_out} tokens · {turn.seconds:.1f} s{fork}"


def turn_body(turn: AgentTurn, kind: str, round_summary: str | None = None) -> str:
    """What the method showed this agent (memory, masks, advice) first, then what it answered."""
    if turn.error:
        body = f"The model call failed: {esc(turn.error)}"
    else:
        body = thinking_folded(turn.text)
    shown = panels.turn_panels(turn.details, round_summary)
    return (shown + "\n\n---\n**Response**\n\n" + body) if shown else body


def thinking_folded(text: str) -> str:
    """A reply with its <think> reasoning (a thinking model's) folded in a <details> above the answer; the
    answer was read from the reply alone (answers.split_think)."""
    reasoning, reply = split_think(text)
    if not reasoning:
        return esc(reply) or "*(empty response)*"
    words = len(reasoning.split())
    reply_part = esc(reply) or "*(no answer after the reasoning: it was cut off or never closed)*"
    return (f'<details class="thinking"><summary>Thinking ({words:,} words, not read as the answer)</summary>\n\n'
            f"{esc(reasoning)}\n\n</details>\n\n{reply_part}")


def agree_count(rnd: Round, kind: str) -> tuple[int, int]:
    n = len(rnd.turns)
    return round(rnd.consensus * n) if n else 0, n


def round_title(rnd: Round, kind: str, state: str = "") -> str:
    """state: "" for a finished round, "running", or "stopped" (the debate ended mid-round)."""
    label = "Round 0 (each agent alone)" if rnd.index == 0 else f"Round {rnd.index} (debate)"
    if rnd.details.get("shared"):
        label += " · shared by every method"
    if state == "running":
        return f"{label} — running…"
    if state == "stopped":
        return f"{label} — stopped before it finished"
    agree, n = agree_count(rnd, kind)
    return f"{label} — consensus {rnd.consensus:.2f} ({agree}/{n} agree)"


def round_body(rnd: Round, kind: str, previous: Round | None = None) -> str:
    answers = ", ".join(f"Agent {t.agent + 1}: {esc(answer_text(t.answer))}" for t in rnd.turns)
    lines = [f"Answers — {answers}" if answers else "Waiting for the agents…"]
    notes = [c for c in rnd.aux if c.kind == "human"]
    if notes:
        to = lambda c: "to every agent" if c.target is None else f"to agent {c.target + 1}"  # noqa: E731
        lines.append("\n".join(f"**Moderator's note** ({to(c)}): {esc(c.text)}" for c in notes))
    panel = panels.round_panels(rnd, previous)
    if panel:
        lines.append(panel)
    extra = aux_usage([c for c in rnd.aux if c.kind != "human"])
    if extra:
        lines.append(extra)
    return "\n\n".join(lines)


def aux_usage(aux: Iterable[AuxCall]) -> str:
    counts: dict[str, list[int]] = {}
    for call in aux:
        c = counts.setdefault(call.kind, [0, 0, 0])
        c[0] += 1
        c[1] += call.tokens_in + call.tokens_out
        c[2] += int(call.error is not None)
    if not counts:
        return ""
    parts = [f"{n} {kind} call{'s' if n != 1 else ''} ({tok} tokens{f', {f} failed' if f else ''})"
             for kind, (n, tok, f) in counts.items()]
    return "*Extra calls this round: " + "; ".join(parts) + ".*"


def final_markdown(t: Transcript, prices: PriceTable | None = None, elapsed: float | None = None) -> str:
    """The outcome in words (see states.outcome_line), then what it cost (in money too, given the models'
    prices: backbone name -> Prices); a mixed-model debate names each agent's model and the usage per model.
    `elapsed`: while the debate runs, the seconds since the visitor asked for it, shown instead of the
    loop's own (which move only when the loop hands over a transcript)."""
    finished = [r for r in t.rounds if not r.details.get("running")]
    usage, per_model = t.usage(), t.usage_by_model()
    costs = model_costs(per_model, prices or {})
    money = "" if costs is None else f" ({esc(total_words(costs))})"
    models = agent_models(t)
    on = mix_words(models) if models else esc(t.backbone)
    text = (f"**{esc(outcome_line(t))}**  \n{esc(t.method)} on {on} · {len(finished)} round(s) · "
            f"{usage.calls} calls · {usage.tokens} tokens{money} · {_seconds(t, elapsed)}  \n{esc(kind_line(t))}")
    if len(per_model) > 1:
        text += "  \nBy model: " + "; ".join(
            f"{esc(name)} {u.calls} call{'s' if u.calls != 1 else ''} · {u.tokens} tokens"
            + ("" if costs is None else f" ({'price unknown' if costs[name] is None else format_cost(costs[name])})")
            for name, u in per_model.items())
    return text


def _seconds(t: Transcript, elapsed: float | None) -> str:
    if t.status == "running" and elapsed is not None:
        return f"{elapsed:.0f} s so far"
    return f"{t.seconds:.1f} s"


def mix_words(models: dict[int, str]) -> str:
    """'left (agents 1, 3), right (agent 2)'."""
    by_model: dict[str, list[int]] = {}
    for agent, name in sorted(models.items()):
        by_model.setdefault(name, []).append(agent + 1)
    return ", ".join(f"{esc(name)} (agent{'s' if len(a) > 1 else ''} {', '.join(map(str, a))})"
                     for name, a in by_model.items())


def notice_messages(notices: Iterable[str]) -> list[dict]:
    return [{"role": "assistant", "content": f"⚠️ **Notice:** {esc(n)}", "metadata": {}}
            for n in notices]


def chat_messages(t: Transcript, saw: bool = False) -> list[dict]:
    """The whole chat for one transcript: question, notices, one group per round with one message
    per agent, then the final verdict (once the debate has ended). `saw`: each turn ends with what its
    agent saw (agent_input.saw_html), folded."""
    before = previous_turns(t.rounds) if saw else {}
    messages = [{"role": "user", "content": task_markdown(t.task), "metadata": {}}]
    messages += notice_messages(t.notices)
    max_tokens = (t.settings or {}).get("max_tokens")
    models = agent_models(t)
    for i, rnd in enumerate(t.rounds):
        state = ("running" if t.status == "running" else "stopped") if rnd.details.get("running") else ""
        rid = f"round-{rnd.index}"
        meta: dict[str, Any] = {"title": round_title(rnd, t.task.kind, state), "id": rid}
        if state == "running":
            meta["status"] = "pending"
        messages.append({"role": "assistant", "content": round_body(rnd, t.task.kind, t.rounds[i - 1] if i else None),
                         "metadata": meta})
        for turn in rnd.turns:
            body = turn_body(turn, t.task.kind, rnd.details.get("summary"))
            if saw:
                body += "\n\n" + saw_html(turn, t.task, before.get((rnd.index, turn.agent)), rnd.details)
            messages.append({"role": "assistant", "content": body,
                             "metadata": {"title": turn_title(turn, t.task, max_tokens, models.get(turn.agent, ""),
                                                              t.judged),
                                          "parent_id": rid,
                                          "id": f"{rid}-agent-{turn.agent}", "status": "done"}})
        answered = {turn.agent for turn in rnd.turns}
        for agent, text in (rnd.details.get("typing") or {}).items():  # turns still being written
            if int(agent) not in answered and state == "running":
                messages.append({"role": "assistant", "content": esc(clip(text, 4000)),
                                 "metadata": {"title": f"Agent {int(agent) + 1} — writing…", "status": "pending",
                                              "parent_id": rid, "id": f"{rid}-agent-{agent}"}})
    if t.status != "running":
        messages.append({"role": "assistant", "content": final_markdown(t), "metadata": {}})
    return messages


