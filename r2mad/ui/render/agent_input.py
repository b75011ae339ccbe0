""""What this agent saw": a turn's exact prompt (AgentTurn.prompt, the messages its backend received) as
HTML that reads with JavaScript off: each message split into its parts (system, task, peers' answers with
their confidence tags, retrieved cases, advice, instructions) with a token count each, the masks applied,
and the change since the agent's previous round (difflib). Each part's text is shown whole and exact; the
parts of a message, joined, are the message. Pure: no Gradio, no I/O."""
from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from typing import Any, Sequence

from r2mad.grading.tasks import format_task
from r2mad.prompts.common import format_instruction
from r2mad.runs.records import scrub
from r2mad.types import AgentTurn, Message, Task

CHARS_PER_TOKEN = 4  # the estimate used when the backend reported no count (a failed call)
PEER = re.compile(r"^--- (?!advice from )(.+?) ---$", re.M)
ADVICE = re.compile(r"^--- advice from (.+?) \((\w+)\) ---$", re.M)
CASE = re.compile(r"^<memory case (\d+)>$(.*?)^</memory case \1>\n?", re.M | re.S)
CONFIDENCE = re.compile(r"<confidence>\s*(\w+)")
# Lines that open an instruction between the parts above (the wording of r2mad/prompts/*.py).
INSTRUCTION = re.compile(r"^(Here are the latest answers|These answers from the previous round|No other agent's "
                         r"answer|None of the previous answers|Use their reasoning|Use the records|Use them as "
                         r"extra|A note in <confidence>|Records from earlier debates|Advice written to you|"
                         r"You decide how to use this advice)", re.M)
KIND_COLOURS = {"system": "#6b7280", "task": "#2563eb", "format": "#2563eb", "peer": "#d97706", "case": "#7c3aed",
                "advice": "#059669", "own": "#374151", "instruction": "#6b7280"}
# The app's page script: a click inside the block opens and closes it (the browser's own <details>) and never
# reaches the chat's message click (in Annotate, that blames the turn).
KEEP_CLICKS = ("() => { document.addEventListener('click', (e) => { if (e.target.closest && "
               "e.target.closest('details.saw')) e.stopPropagation(); }, true); }")
PRE = "white-space:pre-wrap;word-break:break-word;margin:0 0 6px;padding:6px;background:rgba(127,127,127,.08)"


@dataclass(frozen=True)
class Part:
    kind: str  # system | task | format | peer | case | advice | own | instruction
    label: str
    text: str


def split_message(message: Message, task: Task | None = None, round_index: int | None = None) -> list[Part]:
    """The parts of one message, in order; their texts joined are the message's content exactly."""
    text = message.content
    if message.role == "system":
        return [Part("system", "System prompt (persona)", text)]
    if message.role == "assistant":
        return [Part("own", "Its own earlier answer" + (f" (round {round_index})" if round_index is not None else ""),
                     text)]
    starts: dict[int, tuple[str, str]] = {}
    cases = [(m.start(), m.end()) for m in CASE.finditer(text)]
    inside = lambda pos: any(a < pos < b for a, b in cases)  # noqa: E731 - anchors inside a case are its own
    for m in CASE.finditer(text):
        starts[m.start()] = ("case", f"Retrieved case {m.group(1)}")
        starts.setdefault(m.end(), ("instruction", "Instruction"))
    for m in PEER.finditer(text):
        if not inside(m.start()):
            starts[m.start()] = ("peer", m.group(1))
    for m in ADVICE.finditer(text):
        if not inside(m.start()):
            starts[m.start()] = ("advice", f"Advice from {m.group(1)} ({m.group(2)})")
    for m in INSTRUCTION.finditer(text):
        if not inside(m.start()):
            starts[m.start()] = ("instruction", "Instruction")
    if task is not None:
        for kind, label, piece in (("task", "Task", format_task(task)), ("format", "Answer format",
                                                                          format_instruction(task))):
            at = text.find(piece)
            if at >= 0 and not inside(at):
                starts[at] = (kind, label)
                starts.setdefault(at + len(piece), ("instruction", "Instruction"))
    starts.setdefault(0, ("instruction", "Instruction"))
    bounds = sorted(p for p in starts if p < len(text)) + [len(text)]
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        kind, label = starts[a]
        piece = text[a:b]
        if kind == "peer":
            found = CONFIDENCE.search(piece)
            label = f"Peer answer · {label}" + (f" · {found.group(1).lower()} confidence tag" if found else "")
        if parts and (not piece.strip() or kind == "instruction" == parts[-1].kind):  # a bare separator joins
            parts[-1] = Part(parts[-1].kind, parts[-1].label, parts[-1].text + piece)
        else:
            parts.append(Part(kind, label, piece))
    return parts or [Part("instruction", "Instruction", "")]


def token_shares(total: int, texts: Sequence[str]) -> list[int]:
    """`total` tokens shared out over `texts` by their length (largest remainders), so the shares add up to
    the backend's own count; with no count, about CHARS_PER_TOKEN characters a token."""
    chars = sum(len(t) for t in texts)
    if total <= 0 or chars == 0:
        return [round(len(t) / CHARS_PER_TOKEN) for t in texts]
    exact = [total * len(t) / chars for t in texts]
    shares = [int(x) for x in exact]
    for i in sorted(range(len(texts)), key=lambda i: exact[i] - shares[i], reverse=True)[: total - sum(shares)]:
        shares[i] += 1
    return shares


def prompt_lines(prompt: Sequence[Message]) -> list[str]:
    """The prompt as lines to compare: each message under a line naming its role."""
    lines: list[str] = []
    for i, m in enumerate(prompt):
        lines.append(f"── message {i + 1} · {m.role} ──")
        lines.extend(m.content.split("\n"))
    return lines


def prompt_diff(before: Sequence[Message], after: Sequence[Message]) -> list[str]:
    """A unified diff (difflib) of two prompts, without its two file lines."""
    return list(difflib.unified_diff(prompt_lines(before), prompt_lines(after), lineterm="", n=2))[2:]


def masks_line(turn: AgentTurn, round_details: dict[str, Any] | None = None) -> str:
    """The masks applied to what this agent saw, in words ('' when none)."""
    d, notes = turn.details or {}, []
    if d.get("resolved_alone"):
        notes.append("every peer response was masked, so it solved the question again alone")
    elif "shown" in d:
        shown = ", ".join(f"Agent {int(j) + 1}" for j in d.get("shown") or []) or "none"
        notes.append(f"responses shown after masking: {shown}")
    masks = (round_details or {}).get("masks") or {}
    verdicts = masks.get(str(turn.agent)) or masks.get("all") or {}
    masked = [f"Agent {int(j) + 1}" for j, v in verdicts.items() if isinstance(v, dict) and not v.get("keep", True)]
    if masked:
        notes.append("masked: " + ", ".join(masked))
    if d.get("clipped_peers"):
        notes.append("clipped to fit the context window: " + ", ".join(map(str, d["clipped_peers"])))
    if d.get("hidden"):
        notes.append("this turn was hidden from its peers by a fork")
    return "; ".join(notes)


def _pre(text: str, kind: str) -> str:
    """Exact text in a <pre> on one source line (newlines as character references), so Markdown leaves it
    alone and the page's text is the message's, byte for byte."""
    body = html.escape(text, quote=False).replace("\r", "&#13;").replace("\n", "&#10;")
    return f'<pre class="saw-part part-{kind}" style="{PRE}">&#10;{body}</pre>'


def round_change(before: Sequence[Message], after: Sequence[Message]) -> tuple[str, list[str]]:
    """(what kind of change, diff lines). A prompt that extends the previous one (an agent keeping its history,
    as in MAD) is compared by its newest message against the previous round's newest; else whole."""
    grew = len(before) < len(after) and list(after[:len(before)]) == list(before) and before and \
        before[-1].role == after[-1].role == "user"
    if grew:
        lines = list(difflib.unified_diff(before[-1].content.split("\n"), after[-1].content.split("\n"),
                                          lineterm="", n=2))[2:]
        return (f"messages 1–{len(before)} as then, {len(after) - len(before)} added; the new message "
                f"{len(after)} against message {len(before)} of then", lines)
    return "the whole prompt", prompt_diff(before, after)


def diff_html(previous: AgentTurn | None, turn: AgentTurn) -> str:
    if previous is None:
        return ""
    how, lines = round_change([Message(m.role, scrub(m.content)) for m in previous.prompt],
                              [Message(m.role, scrub(m.content)) for m in turn.prompt])
    added = sum(1 for x in lines if x.startswith("+"))
    removed = sum(1 for x in lines if x.startswith("-"))
    colours = {"+": "background:rgba(22,163,74,.15)", "-": "background:rgba(220,38,38,.15)",
               "@": "color:#6b7280"}
    body = "&#10;".join(f'<span style="{colours.get(x[:1], "")}">{html.escape(x, quote=False)}</span>'
                        for x in lines) or "No change."
    return (f'<details class="saw-diff"><summary>What changed since this agent\'s previous round (round '
            f"{previous.round}): +{added} lines, −{removed} lines</summary><p><small>Compared: {html.escape(how)}."
            f'</small></p><pre style="{PRE}">&#10;{body}</pre></details>')


def saw_html(turn: AgentTurn, task: Task | None = None, previous: AgentTurn | None = None,
             round_details: dict[str, Any] | None = None) -> str:
    """The whole block for one turn, folded: one HTML line (no blank line), safe inside Markdown."""
    messages = [Message(m.role, scrub(m.content)) for m in turn.prompt]  # the store scrubbed it; again, cheaply
    split = [split_message(m, task, turn.round - 1 if turn.round else None) for m in messages]
    shares = iter(token_shares(turn.tokens_in, [p.text for parts in split for p in parts]))
    counted = (f"{turn.tokens_in} prompt tokens as the backend counted them, shared out over the parts by length"
               if turn.tokens_in else f"no count from the backend; about {CHARS_PER_TOKEN} characters a token")
    out = [f'<details class="saw saw-r{turn.round}-a{turn.agent}"><summary>What this agent saw: '
           f"{len(messages)} message{'s' if len(messages) != 1 else ''}, {turn.tokens_in or '≈'} tokens</summary>"
           f"<p><small>The exact messages sent to the model ({counted}).</small></p>"]
    masks = masks_line(turn, round_details)
    if masks:
        out.append(f"<p><b>Masks applied:</b> {html.escape(masks)}</p>")
    for i, (message, parts) in enumerate(zip(messages, split)):
        out.append(f'<div class="saw-message"><p><b>Message {i + 1} · {message.role}</b></p>')
        for part in parts:
            colour = KIND_COLOURS.get(part.kind, "#6b7280")
            out.append(f'<p style="margin:4px 0 0;border-left:4px solid {colour};padding-left:6px"><small>'
                       f"{html.escape(part.label)} · ≈{next(shares)} tokens</small></p>"
                       + _pre(part.text, part.kind))
        out.append("</div>")
    out.append(diff_html(previous, turn))
    out.append("</details>")
    return "".join(out)


def previous_turns(rounds: Sequence[Any]) -> dict[tuple[int, int], AgentTurn]:
    """(round, agent) -> that agent's turn in the round before, for every turn that has one."""
    last: dict[int, AgentTurn] = {}
    before: dict[tuple[int, int], AgentTurn] = {}
    for rnd in rounds:
        for turn in rnd.turns:
            if turn.agent in last:
                before[(rnd.index, turn.agent)] = last[turn.agent]
        for turn in rnd.turns:
            last[turn.agent] = turn
    return before
