"""What a visitor asked the Debate tab for, as typed, and the run request it makes: the form's values by name
(r2mad/ui/debate_form.py) in, an engine RunRequest out, with one sentence for what cannot run."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from r2mad.engine.service import Endpoint, RunRequest
from r2mad.grading.tasks import task_from_input
from r2mad.methods import METHODS
from r2mad.settings.config import ConfigError, DebateSettings, with_profile
from r2mad.settings.fields import ON_FORM
from r2mad.text import quoted
from r2mad.ui.debate_form import AGENTS, LETTERS, OPTIONS


@dataclass(frozen=True)
class DebateRequest:
    """What a visitor asked the Debate tab for, as typed (checked by `run_request`)."""
    backbone: str
    question: str
    methods: tuple[str, ...]
    typed: dict[str, Any]  # the form's settings by field name (r2mad.settings.fields.ON_FORM), as typed
    token: str | None = None
    base_url: str = ""
    model: str = ""
    bank: str = ""
    options: tuple[str, ...] = ()  # A..J, empty ones ignored
    gold: str = ""
    agent_backbones: tuple[str, ...] = ()  # mixed models: one backbone per agent (empty: every agent on `backbone`)
    aux_backbone: str = ""  # mixed models: summaries, judges and advice (empty: agent 1's)
    kind: str = ""  # the answer kind picked on the chip (empty: guessed from the question)

    @classmethod
    def from_form(cls, form: dict[str, Any]) -> DebateRequest:
        """From the Debate form's values by name (r2mad.ui.debate_form); with `mixed_models`, agent i answers
        on `agent_i` and the auxiliary calls use `aux_backbone`."""
        text = {name: form.get(name) or "" for name in ("backbone", "question", "base_url", "model", "bank", "gold",
                                                         "aux_backbone", "kind")}
        agents = AGENTS[:int(form.get("agents") or 0)] if form.get("mixed_models") else ()
        return cls(**text, methods=tuple(m for m in (form.get("methods") or []) if m),
                   typed={f.name: form[f.name] for f in ON_FORM if f.name in form},
                   token=(form.get("token") or "").strip() or None,
                   options=tuple(form.get(name) or "" for name in OPTIONS),
                   agent_backbones=tuple(form.get(name) or "" for name in agents))

    def settings(self, base: DebateSettings) -> DebateSettings:
        profile = self.typed.get("profile") or "demo"  # "paper": the papers' personas and prompts
        if profile != "demo":  # paper, or one paper's protocol (its agents and rounds unless typed)
            base = with_profile(base, profile)
        # numbers go as typed: the settings check each one's type and range in one sentence
        typed = {**self.typed, "profile": profile, "answer_guard": self.typed.get("answer_guard") or "auto"}
        if typed.get("seed") == "":
            typed["seed"] = None
        return base.replace(**typed)

    def run_request(self, base: DebateSettings, owner: str | None = None) -> RunRequest:
        """The run request the form asks for, on the app's settings `base`; raises ConfigError or ValueError to
        refuse. Its backbones are resolved by the engine (VisitorResources), before it enters the line."""
        unknown = [m for m in self.methods if m.removesuffix("+advice") not in METHODS]
        if unknown:
            raise ConfigError(f"Unknown method {quoted(unknown[0])}; choose methods from the list.")
        settings = self.settings(base)
        chosen = {letter: text for letter, text in zip(LETTERS, self.options) if (text or "").strip()}
        task = task_from_input(self.question, chosen or None, self.gold, max_chars=settings.max_question_chars,
                               kind=self.kind or None)
        agents = tuple((n or "").strip() for n in self.agent_backbones)
        if agents and (self.base_url or "").strip():
            raise ConfigError("Mixed models use the listed backbones; clear the custom endpoint or untick "
                              "Mixed models.")
        backbone = ((self.aux_backbone or "").strip() or agents[0]) if agents else self.backbone
        endpoint = Endpoint(self.base_url.strip(), self.model) if (self.base_url or "").strip() else None
        return RunRequest(task, self.methods, settings, endpoint.name if endpoint else backbone, source="app",
                          agent_backbones=agents, bank=self.bank or None, owner=owner, endpoint=endpoint)
