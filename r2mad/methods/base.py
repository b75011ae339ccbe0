"""What a debate method is: `Method`'s hooks, which the one debate loop (r2mad.debate) calls around each
round with a `RoundContext` (the round's agents, what came before, helpers to record work), default to
MAD; a method overrides only the hooks it changes. A `Plugin` adds work beside any method's hooks
(TrueMAD's advice); both say which fork changes their hooks take."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from r2mad.backends.base import BackendError, ChatBackend
from r2mad.budget import fit_head, method_room, trimmed
from r2mad.grading.answers import strip_think
from r2mad.grading.tasks import format_task
from r2mad.prompts import biographies, common, mad
from r2mad.settings.config import DebateSettings
from r2mad.types import AgentTurn, Answer, AuxCall, Event, EventKind, Message, Round, Task, to_dict

EventSink = Callable[[Event], None]
ABSTAINED = Answer(None, "abstained")
CLIPS = ("the round summary within 128 tokens, MAD-M²'s judge on a response's last 1,500 characters within "
         "384 tokens, TrueMAD's advice within 160 tokens, memory cases and ICL-CoT examples within "
         "r2mad.case_tokens")  # the demo's clips and caps, none of them in the authors' code


def keeps_clips(settings: DebateSettings, backends) -> bool:
    """Whether the demo's clips and caps (CLIPS) apply: always under the demo profile; under the paper
    profile only where a backbone's context window is known (the embedded model) and so forces them."""
    return settings.profile == "demo" or any(b.capabilities.n_ctx for b in backends)


@dataclasses.dataclass
class Agent:
    index: int
    name: str
    history: list[Message]  # everything this agent has been shown and has said
    text: str = ""  # its latest response, <think> removed (what peers see)
    answer: Answer = ABSTAINED
    hidden: bool = False  # its latest response is kept from its peers (a fork's mask)

    @property
    def label(self) -> str:
        return f"Agent {self.index + 1} ({self.name})"

    def take(self, turn: AgentTurn, t: int) -> None:
        """Keep its reply of round `t` in its history and as what its peers see; a failed call leaves it
        abstaining, and a debate message it did not answer is not kept."""
        if turn.error is None:
            self.history.append(Message("assistant", turn.text))
            self.text, self.answer, self.hidden = strip_think(turn.text), turn.answer, False
        else:
            if t > 0:
                self.history.pop()
            self.answer = ABSTAINED


class Steerable:
    """A fork's changes a strategy's round hooks take (read from RoundContext.steer)."""
    steers: tuple[str, ...] = ()  # kinds of fork change its hooks act on

    def check_steer(self, change, settings: DebateSettings) -> str | None:
        """Why `change` cannot act on these hooks, in one sentence naming the fix (None: it can)."""
        return None


class Plugin(Steerable):
    """Work the loop runs beside any method's own hooks (TrueMAD's advice): after the method's
    before_round, and on each agent's debate message."""

    async def before_round(self, ctx: RoundContext) -> None:
        """Work between rounds, after the method's own."""

    def extend_message(self, ctx: RoundContext, agent: int, message: str) -> str:
        return message


class Method(Steerable):
    """Default strategy = MAD. Subclasses override only the hooks they change; `plugins` add work
    the loop runs beside them."""
    name = "mad"
    wants_logprobs = False
    shares_round0 = True  # its round 0 is MAD's, so a shared round 0 serves it (DMAD's prompts differ)

    def __init__(self, settings: DebateSettings):
        self.settings = settings
        self.plugins: list[Plugin] = []
        self.backends: list[ChatBackend] = []  # the backbones prepared for this debate

    @property
    def clips(self) -> bool:
        """The demo's clips and caps apply (keeps_clips); read by the hooks that clip or cap."""
        return keeps_clips(self.settings, self.backends)

    def n_agents(self) -> int:
        return self.settings.agents

    def n_rounds(self) -> int:
        return self.settings.rounds

    solo = False  # a single-agent baseline: the first debater's persona, "solve step by step"

    def authors_biography(self, task: Task) -> bool:
        """Du et al.'s biographies under --profile du, run as their code runs them: their prompts word for word
        (prompts.biographies), no persona, no answer line asked or read; in each update the agents answer one
        after another, each shown the others' latest biographies (this round's for those before it); the debate
        stops after a round whose last agent wrote one bullet ("the model does not know this person")."""
        return self.settings.profile == "du" and task.source == "biographies"

    def in_turn(self, task: Task) -> bool:
        """Whether a round's agents answer one after another, each after the previous agent's reply is in."""
        return self.authors_biography(task)

    def asks_answer(self, task: Task) -> bool:
        """Whether replies are read for an answer (and the answer guard asks for one when none is read)."""
        return not self.authors_biography(task)

    def stop_after(self, task: Task, turns: tuple[AgentTurn, ...]) -> str | None:
        """A notice when the debate should stop after the round of these turns (before its last round); else None."""
        if self.authors_biography(task) and turns and len(biographies.bullets_of(strip_think(turns[-1].text))) == 1:
            return ("The last agent wrote one bullet, so it does not know this person; the debate stops here, as "
                    "Du et al.'s code stops it.")
        return None

    def persona(self, task: Task, agent: int) -> tuple[str, str]:
        """The task's persona; under the paper profile the answer format sits in the system prompt. Du et al.'s
        biographies: none (authors_biography)."""
        if self.authors_biography(task):
            return "Biographer", ""
        name, system = common.persona(task.kind, agent, 1 if self.solo else self.n_agents(), task.source)
        return name, common.paper_system(system, task) if self.settings.profile != "demo" else system

    def opening(self, task: Task, agent: int, system: str) -> list[Message]:
        """Round 0: the agent answers alone (paper profile: the format is in the system prompt already)."""
        if self.authors_biography(task):
            return [Message("user", task.question)]
        user = common.format_task(task) if self.settings.profile != "demo" else common.task_prompt(task)
        return [Message("system", system), Message("user", user)]

    async def before_round(self, ctx: RoundContext) -> None:
        """Work between rounds t-1 and t (summaries, retrieval, masks, advice)."""

    def prepare(self, backend: ChatBackend) -> list[str]:
        """Check the backend's capabilities before any token is spent (and before the openings); return
        visible notices. A subclass calls it first."""
        if all(b is not backend for b in self.backends):  # a strategy may serve several debates
            self.backends.append(backend)
        window = backend.capabilities.n_ctx
        if self.settings.profile == "demo" or not window:
            return []
        return [f"Paper profile on {backend.name}: its context window of {window} tokens keeps the demo's clips "
                f"({CLIPS}); the papers' runs had none."]

    def round_started(self, ctx: RoundContext) -> None:
        """Called as round t's agents start answering (round 0 included, unless it was shared)."""

    def on_turn(self, turn: AgentTurn) -> None:
        """Called as soon as one agent's answer arrives, while the others may still be generating."""

    def visible_peers(self, ctx: RoundContext, agent: int) -> list[Agent]:
        """The peers whose previous response this agent sees; abstainers and hidden ones are left out."""
        return [p for p in ctx.agents if p.index != agent and p.answer.how != "abstained" and not p.hidden]

    def peers(self, ctx: RoundContext, agent: int) -> list[tuple[str, str]]:
        """(label, text) pairs shown to the agent."""
        return self.fit(ctx, agent, [(p.label, p.text) for p in self.visible_peers(ctx, agent)])

    prompt_reserve = 512  # tokens kept free for the instructions around the peers' responses

    def fit(self, ctx: RoundContext, agent: int, peers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Peers' responses whole, unless the prompt would overflow the backend's context window (known
        for the embedded model): then clipped (common.fit_to_window), and that is recorded."""
        window = ctx.backend.capabilities.n_ctx
        if not window:
            return peers
        used = sum(len(m.content) for m in ctx.agents[agent].history)
        fitted, share, clipped = common.fit_to_window(peers, window - self.settings.max_tokens - self.prompt_reserve,
                                                      used)
        if clipped:
            ctx.agent_details.setdefault(agent, {})["clipped_peers"] = clipped
            if not ctx.details.get("clipped_peers"):
                ctx.details["clipped_peers"] = True
                ctx.notice(f"Round {ctx.index}: peers' responses were clipped to about {share} characters "
                           f"each to fit the context window of {window} tokens.")
        return fitted

    def debate_message(self, ctx: RoundContext, agent: int) -> str:
        if self.authors_biography(ctx.task):
            return biographies.update_prompt(ctx.task.solution, [text for _, text in self.peers(ctx, agent)],
                                             final=ctx.index == self.n_rounds() - 1)
        return mad.debate_prompt(ctx.task, self.peers(ctx, agent))

    def next_prompt(self, ctx: RoundContext, agent: Agent, message: str) -> list[Message]:
        """The agent's whole prompt for round t > 0: its own history plus the debate message (MAD)."""
        return [*agent.history, Message("user", message)]


@dataclasses.dataclass
class RoundContext:
    """What a method's hooks see for round t and the helpers they use to record their work."""
    task: Task
    settings: DebateSettings
    backend: ChatBackend  # summaries, judges, advice (agents may each have their own: Debate.agent_backends)
    index: int
    agents: list[Agent]
    rounds: list[Round]  # finished rounds
    emit_event: EventSink
    aux: list[AuxCall] = dataclasses.field(default_factory=list)
    arrived: dict[int, AgentTurn] = dataclasses.field(default_factory=dict)  # this round's turns so far
    details: dict[str, Any] = dataclasses.field(default_factory=dict)
    agent_details: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    notices: list[str] = dataclasses.field(default_factory=list)
    backbone: str = ""  # the name of `backend`, recorded on each auxiliary call
    steer: tuple = ()  # a fork's changes to this round's own hooks (its first live round only)
    person_chars: int = 0  # what a person added to the debate so far (budget.py): notes, seats, a fork's edits
    method_chars: dict[int, int] = dataclasses.field(default_factory=dict)  # agent -> its cases and advice so far

    def within_budget(self, agent: int, what: str, items: list, render) -> list:
        """The head of `items` (most relevant first) whose rendering `render(items)` fits what is left of the
        agent's prompt budget beside the question and the person's additions (budget.py); a notice says how many
        were left out. The kept rendering counts against the room of what the agent's prompt adds next."""
        room = method_room(len(format_task(self.task)), self.person_chars) - self.method_chars.get(agent, 0)
        kept, left_out = fit_head(items, render, room)
        if left_out:
            self.notice(trimmed(what, left_out, agent))
        self.method_chars[agent] = self.method_chars.get(agent, 0) + (len(render(kept)) if kept else 0)
        return kept

    @property
    def previous(self) -> Round:
        return self.rounds[-1]

    def steered(self, *kinds: str) -> list:
        """This round's fork changes of these kinds (steer.fork.Change: kind, agent, value)."""
        return [c for c in self.steer if c.kind in kinds]

    def emit(self, kind: EventKind, agent: int | None = None, **data: Any) -> None:
        self.emit_event(Event(kind, self.index, agent, to_dict(data)))

    def notice(self, text: str) -> None:
        self.notices.append(text)
        self.emit("notice", text=text)

    async def aux_call(self, kind: str, messages: list[Message], *, source: int | None = None,
                       target: int | None = None, max_tokens: int | None = None,
                       labeler: Callable[[str], str] | None = None) -> AuxCall:
        """One auxiliary model call (summary, judge, advice), recorded with the label `labeler` reads
        from its text; a failure is recorded, not raised."""
        s = self.settings
        slot = 100 + 20 * (source if source is not None else 19) + (target if target is not None else 19)
        try:
            [c] = await self.backend.chat(messages, n=1, temperature=s.temperature, top_p=s.top_p,
                                          max_tokens=max_tokens or s.max_tokens,
                                          seed=seed_for(s, self.index, slot))
        except BackendError as exc:
            call = AuxCall(kind, self.index, "", source=source, target=target, error=str(exc),
                           backbone=self.backbone)
        else:
            call = AuxCall(kind, self.index, c.text, c.tokens_in, c.tokens_out, c.latency_s, source, target,
                           labeler(strip_think(c.text)) if labeler else None, backbone=self.backbone,
                           provider=c.provider, tokens_cached=c.tokens_cached)
        self.aux.append(call)
        return call


def seed_for(s: DebateSettings, round_index: int, agent: int) -> int | None:
    return None if s.seed is None else s.seed + 1000 * round_index + agent
