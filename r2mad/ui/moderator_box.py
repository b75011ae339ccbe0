"""A visitor in the debate (r2mad/human.py), in the Debate tab: while a debate (or a side-by-side comparison, each
of its debates) runs, a line under the status takes a moderator note ("@2 …" for agent 2 alone, "seat 2: …" to
write agent 2's turn); Send keeps it for this browser session's debates, whose loops read it before their next
round. Notes are bounded and checked as they are sent, and land in the visitor's own runs (private on a Space
like the rest of them)."""
from __future__ import annotations

import html
from typing import Any, Sequence

import gradio as gr

from r2mad.budget import NOTE_CHARS, admit, notes_full
from r2mad.human import Interjection, Moderator, parse
from r2mad.settings.config import bounds
from r2mad.text import clip
from r2mad.types import Transcript

HELP = ("Between rounds you may add a note: it reaches every agent, or one with @2; `seat 2: …` writes agent 2's "
        "turn yourself.")


def part(ui: dict[str, Any]) -> None:
    """The note line, by name in `ui`."""
    with gr.Row(equal_height=True, elem_id="note-row"):
        ui["note"] = gr.Textbox("", label="Note to the agents (before the next round)", elem_id="note", scale=4,
                                max_length=NOTE_CHARS, placeholder="e.g. Check the units · @2 explain your sum · "
                                                                   "seat 3: my answer is ((B))")
        ui["note_send"] = gr.Button("Send note", elem_id="note-send", scale=1, min_width=110)
    ui["note_said"] = gr.Markdown(HELP, elem_id="note-said")


def mailbox(services: Any, session: str) -> Moderator:
    """The moderator of the debates run in `session`: the notes its visitor sent, taken before each round. Side
    by side, every method's debate asks it (told apart by its transcript's method) and reads each note once,
    before its own next round; a note taken by none stays in `services.notes`, and the run's end says so."""
    taken: list[str] = []  # the notes some debate of this run took, in the order sent
    read: dict[str, int] = {}  # method -> how many of `taken` its debate has read

    async def moderate(t: Transcript, round_index: int) -> Sequence[Interjection]:
        with services._lock:
            taken.extend(services.notes.pop(session, []))
        lines, read[t.method] = taken[read.get(t.method, 0):], len(taken)
        agents = len(t.rounds[-1].turns) if t.rounds else 0
        said = []
        for line in lines:
            try:
                found = parse(line, round_index, agents)
            except ValueError:  # e.g. "@3" in a debate of 2 agents: checked at Send against the most agents
                continue
            if found is not None:
                said.append(found)
        return said
    return moderate


def send(services: Any, line: str, session: str) -> tuple[str, str]:
    """(the note box, what the visitor reads): kept for the session's running debate, or why not."""
    try:
        found = parse(line, 1, bounds("agents")[1])
    except ValueError as exc:
        return line, f"**Not sent:** {html.escape(str(exc), quote=False)}"
    if found is None:
        return "", HELP
    with services._lock:
        if session not in services._active:
            return line, "**Not sent:** no debate is running here; a note reaches a running debate between rounds."
        carried = services.noted.get(session, 0)  # the debate's loop holds the bound; this says it at Send
        if admit([found.text], carried)[1]:
            return line, f"**Not sent:** {html.escape(notes_full(carried, 1), quote=False)}"
        services.notes.setdefault(session, []).append(line)
        services.noted[session] = carried + len(found.text)
    who = ("agent " + ", ".join(str(a + 1) for a in found.to) if found.to else
           f"agent {found.seat + 1}'s turn, written by you" if found.seat is not None else "every agent")
    return "", f"Sent — reaches {who} before the next round: “{html.escape(clip(found.text, 60), quote=False)}”"


def unheard(n: int) -> str:
    """The note line once the run ended with `n` notes no debate took (sent after its last round began, or the
    agents agreed and it stopped early): not "Sent" any more."""
    what = "Your note reached no agent" if n == 1 else f"{n} of your notes reached no agent"
    return f"**Not delivered:** {what}: the debate had no round after it. {HELP}"


def events(services: Any, ui: dict[str, Any]) -> None:
    """Send (or Enter in the note) while a debate runs; outside the debate's queue, like Stop."""
    def on_send(line: str, request: gr.Request):
        return send(services, line, getattr(request, "session_hash", None) or "anonymous")

    for trigger in (ui["note_send"].click, ui["note"].submit):
        trigger(on_send, [ui["note"]], [ui["note"], ui["note_said"]], queue=False, api_visibility="private",
                show_progress="hidden")
