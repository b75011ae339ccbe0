"""The vote under a blind side-by-side comparison (r2mad.ui.render.blind): "Which debate convinced you most?", one
button per debate and "Skip", shown once every debate finished, unless the debates are identical (nothing to
choose). A vote is counted once per visitor per comparison (r2mad.runs.votes; a second is refused in one
sentence), then the names, the gold answer and the method panels are shown, every figure read from the saved
runs; skipping shows them without a vote."""
from __future__ import annotations

import html
from typing import Any

import gradio as gr

from r2mad.runs.faults import StoreError
from r2mad.runs.votes import VoteRefused, VoteStore
from r2mad.serving.line import visitor_key
from r2mad.serving.visitors import identify
from r2mad.text import without_paths
from r2mad.types import Transcript
from r2mad.ui.render.blind import LETTERS, Curtain, identical, identical_note, label, revealed
from r2mad.ui.render.states import title_of
from r2mad.ui.views import VIEW_OUTPUTS, as_saved, view

PROMPT = ("### Which debate's reasoning convinced you most?\nThe methods' names, the gold answer and each "
          "method's panels are hidden until you vote (or skip). One vote per comparison; the votes make the "
          "**Method board** tab.")
VOTE_NAMES = ("vote_state", "vote_box", "vote_note", *(f"vote_{i}" for i in range(len(LETTERS))))


def toggle() -> gr.Checkbox:
    """"Blind" beside the methods, shown when 2+ are picked. Off as built, so an API client's comparison comes back
    with its names; each browser page turns it on as it loads (BLIND_ON_LOAD), and a visitor may untick it."""
    return gr.Checkbox(False, label="Blind: hide the methods' names and the gold answer until I vote",
                       elem_id="blind", visible=False, container=False)


BLIND_ON_LOAD = "() => true"  # demo.load's js: a page, unlike an API client, compares blind by default


def part(ui: dict[str, Any]) -> None:
    """The vote's components, by name, in `ui`."""
    with gr.Column(visible=False, elem_id="vote-box") as ui["vote_box"]:
        gr.Markdown(PROMPT, elem_id="vote-prompt")
        with gr.Row(elem_id="vote-buttons"):
            for i in range(len(LETTERS)):
                ui[f"vote_{i}"] = gr.Button(f"{label(i)} convinced me", variant="primary", visible=i < 2,
                                            elem_id=f"vote-{i}", min_width=160)
            ui["vote_skip"] = gr.Button("Skip: show the names", variant="secondary", elem_id="vote-skip",
                                        min_width=160)
    ui["vote_note"] = gr.Markdown(elem_id="vote-note")
    ui["vote_state"] = gr.State({})


def cleared(note: str = "") -> tuple:
    """A new run: no vote pending."""
    return ({}, gr.Column(visible=False), note, *(gr.skip() for _ in LETTERS))


def unchanged() -> tuple:
    return tuple(gr.skip() for _ in VOTE_NAMES)


def ending(curtain: Curtain, saved: tuple[dict[str, Transcript], dict[str, float]] | None = None) -> tuple:
    """After a blind comparison: ask for the vote, or (stopped, failed, identical) show the names at once, with
    `saved`: the runs as saved and their seconds (r2mad.ui.views.as_saved)."""
    if curtain.votable():
        n = len(curtain.labels)
        return (*(gr.skip() for _ in range(VIEW_OUTPUTS)), curtain.state(), gr.Column(visible=True), "",
                *(gr.Button(visible=i < n) for i in range(len(LETTERS))))
    transcripts, seconds = saved or (curtain.real, {})
    why = identical_note(curtain.real) if curtain.ended() else \
        "*Not every debate finished, so no vote is asked; the methods' names are shown.*"
    return (*view(transcripts, final=True, seconds=seconds), *cleared(why))


def reveal_note(state: dict[str, Any], chosen: str | None) -> str:
    """Who was who, and how each ended against the gold answer."""
    real, shown = revealed(state), state.get("shown") or {}
    lines = []
    for name, method in sorted(shown.items()):
        t = real.get(method)
        verdict = "" if t is None or t.correct is None else (" — correct" if t.correct else " — wrong")
        mark = " ← your vote" if name == chosen else ""
        extra = 0 if t is None else t.usage().calls - t.usage(("debate",)).calls  # the blind figures left out
        added = f" (+{extra} call{'s' if extra != 1 else ''} of the method's own, now counted)" if extra else ""
        lines.append(f"- **{html.escape(name)}** was **{html.escape(title_of(method))}**{verdict}{added}{mark}")
    gold = next((t.task.gold for t in real.values() if t.task.gold), None)
    head = "**Thanks — your vote is counted.**" if chosen else "**The names, as you skipped the vote:**"
    return "\n".join([head, *lines] + ([f"\nGold answer: **{html.escape(str(gold))}**"] if gold else []))


class VoteHandlers:
    def __init__(self, services: Any):
        self.services = services
        self._votes: VoteStore | None = None

    @property
    def votes(self) -> VoteStore:
        if self._votes is None:  # made on first use: a store opened read-only still serves the app
            self._votes = VoteStore(self.services.store)
        return self._votes

    def vote(self, choice: int | None, state: dict[str, Any], visitor_id: str | None, request: Any,
             login: Any, oauth_token: Any) -> tuple:
        """Count the vote for debate `choice` (None: skip), then show the comparison with its names."""
        if not state or not state.get("shown"):
            gr.Info("There is no comparison waiting for a vote here.")
            return (*(gr.skip() for _ in range(VIEW_OUTPUTS)), *cleared())
        chosen = label(choice) if choice is not None else None
        self.services.sealed.unseal((state.get("runs") or {}).values())  # the names are shown now
        if chosen is not None and identical(revealed(state).values()):  # nothing to choose between: not counted
            gr.Info("The debates are identical, so this vote is not counted; the names are shown.")
            chosen = None
        if chosen is not None:
            session = getattr(request, "session_hash", None)
            visitor = identify(self.services.config, browser_id=visitor_id, session=session, profile=login,
                               token=oauth_token)
            try:
                self.votes.record(runs=state["runs"], winner_method=state["shown"][chosen], shown=state["shown"],
                                  voter_key=visitor_key(visitor.owner, visitor_id, session),
                                  username=visitor.username)
            except (VoteRefused, StoreError) as exc:
                gr.Warning(html.escape(without_paths(str(exc)), quote=False))
                chosen = None
        transcripts, seconds = as_saved(self.services.store, state.get("runs") or {}, revealed(state))
        return (*view(transcripts, final=True, seconds=seconds), *cleared(reveal_note(state, chosen)))


def events(services: Any, ui: dict[str, Any], outputs: list[Any], visitor_id: Any) -> VoteHandlers:
    """Wire the vote buttons and Skip: each reveals the comparison in the Debate tab's outputs."""
    handlers = VoteHandlers(services)
    vote_outputs = [*outputs, *(ui[name] for name in VOTE_NAMES)]
    def clicked(choice: int | None):
        def on_click(state, browser_id, request: gr.Request, login: gr.OAuthProfile | None = None,
                     oauth_token: gr.OAuthToken | None = None):
            return handlers.vote(choice, state, browser_id, request, login, oauth_token)
        return on_click

    for choice in (*range(len(LETTERS)), None):
        button = ui["vote_skip"] if choice is None else ui[f"vote_{choice}"]
        button.click(clicked(choice), [ui["vote_state"], visitor_id], vote_outputs, api_visibility="private",
                     show_progress="hidden")
    return handlers
