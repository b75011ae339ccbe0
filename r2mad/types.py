"""Plain data shared by every layer: messages, completions, answers, turns, rounds, transcripts,
memory cases and events. Frozen dataclasses that serialise to JSON and back losslessly; no I/O here."""
from __future__ import annotations

import dataclasses
import functools
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

TaskKind = Literal["math", "mcq", "integer", "yesno", "short", "open"]  # grading.kinds.KINDS


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    """One generated answer as a backend returns it."""
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    logprobs: tuple[float, ...] | None = None  # per generated token, when asked for and available
    finish_reason: str | None = None
    provider: str | None = None  # who served it behind a router (HF's x-inference-provider header)
    tokens_cached: int = 0  # prompt tokens reused from an earlier call's KV cache (counted in tokens_in)


@dataclass(frozen=True)
class Answer:
    """A parsed answer; value None means UNPARSED. `how` records the rule that produced it."""
    value: str | None
    # boxed | double_paren | answer_is | answer_colon | option_line | guarded | unparsed | abstained
    how: str = "unparsed"

    @property
    def parsed(self) -> bool:
        return self.value is not None

    @property
    def source(self) -> str:
        """How it was obtained: parsed from the reasoning, guarded (asked for alone), unparsed or abstained."""
        if self.how in ("guarded", "abstained"):
            return self.how
        return "parsed" if self.value is not None else "unparsed"

    def __str__(self) -> str:
        return self.value if self.value is not None else "UNPARSED"


UNPARSED = Answer(None, "unparsed")


@dataclass(frozen=True)
class AnswerShape:
    """The outputs an answer guard accepts, in each form a backend can enforce: exact strings (vLLM's
    choice, a JSON enum), a regular expression, and a llama.cpp GBNF grammar."""
    choices: tuple[str, ...]
    regex: str
    grammar: str


OPTION_LETTERS = "ABCDEFGHIJ"  # a multiple-choice question's option letters, at most ten


@dataclass(frozen=True)
class Task:
    """One question. For multiple choice, options are (letter, text) pairs and gold is a letter."""
    kind: TaskKind
    question: str
    options: tuple[tuple[str, str], ...] = ()
    gold: str | None = None
    id: str = ""
    source: str = ""  # e.g. "demo-mcq", "math500"
    solution: str = ""  # a worked reference solution, where the data set has one (MATH)


@dataclass(frozen=True)
class Usage:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    tokens_cached: int = 0  # of tokens_in, those a server's prefix cache served

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls, self.tokens_in + other.tokens_in,
                     self.tokens_out + other.tokens_out, round(self.seconds + other.seconds, 6),
                     self.tokens_cached + other.tokens_cached)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True)
class AgentTurn:
    """What one agent was shown in one round and what it answered."""
    agent: int
    round: int
    persona: str
    prompt: tuple[Message, ...]
    text: str
    answer: Answer
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    started_at: float = 0.0  # time.monotonic() at call start (for overlap checks)
    ended_at: float = 0.0
    mean_logprob: float | None = None
    error: str | None = None  # set when the agent abstained because its call failed
    details: dict[str, Any] = field(default_factory=dict)  # method-specific: retrieval, confidence, mask, advice
    backbone: str = ""  # the model that answered (mixed-model debates give agents different ones)
    provider: str | None = None  # who served the call behind a router (HF's provider, or a replica's name)
    tokens_cached: int = 0  # of tokens_in, those the server's prefix cache served


@dataclass(frozen=True)
class AuxCall:
    """An extra model call that is not an agent's answer: summary, judge, advice."""
    kind: str  # "summary" | "judge" | "advice" | "guard" (the answer guard's follow-up) | "grade" (a verdict)
    round: int
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    source: int | None = None  # agent that wrote it (advice)
    target: int | None = None  # agent it is about / addressed to
    label: str | None = None  # judge label or advice type
    error: str | None = None
    backbone: str = ""  # the model that made the call
    provider: str | None = None  # who served the call behind a router
    tokens_cached: int = 0  # of tokens_in, those the server's prefix cache served


@dataclass(frozen=True)
class Round:
    index: int
    turns: tuple[AgentTurn, ...]
    consensus: float
    aux: tuple[AuxCall, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)  # round-level: summary h, lambda, masks


@dataclass(frozen=True)
class Judged:
    """Two answers the rules could not tell apart, graded by a judge model (a peer's answer against another's, or
    an answer against a reference): kept with the transcript, so every later view of the run reads the same
    verdict without asking again. `a` and `b` are in sorted order (the verdict is symmetric)."""
    a: str
    b: str
    same: bool | None  # None: the judge gave no grade
    how: str  # "judge: CORRECT", "judge: INCORRECT", "judge: NOT_ATTEMPTED", "judge: no grade"
    judge: str = ""  # the backbone that judged


@dataclass(frozen=True)
class Transcript:
    task: Task
    method: str
    backbone: str
    settings: dict[str, Any]
    rounds: tuple[Round, ...]
    final: Answer
    correct: bool | None = None
    status: str = "done"  # running | done | failed | cancelled
    notices: tuple[str, ...] = ()  # visible remarks: fallbacks, memory off, abstentions
    started_at: float = 0.0  # wall clock (time.time())
    seconds: float = 0.0
    shared_round0: bool = False
    judged: tuple[Judged, ...] = ()  # pairs a judge decided (grading/verdicts.py reads them)

    def usage(self, kinds: tuple[str, ...] = ("debate", "summary", "judge", "advice", "guard", "grade")) -> Usage:
        total = Usage()
        for rnd in self.rounds:
            if "debate" in kinds:
                for turn in rnd.turns:
                    if turn.error is None and not turn.details.get("human"):  # a person's turn is no model call
                        total += Usage(1, turn.tokens_in, turn.tokens_out, turn.seconds, turn.tokens_cached)
            for call in rnd.aux:
                if call.kind in kinds and call.error is None:
                    total += Usage(1, call.tokens_in, call.tokens_out, call.seconds, call.tokens_cached)
        return total

    def usage_by_model(self) -> dict[str, Usage]:
        """Every call's usage (agents' and auxiliary) summed per backbone that made it."""
        per: dict[str, Usage] = {}
        for rnd in self.rounds:
            for item in (*(t for t in rnd.turns if t.error is None and not t.details.get("human")),
                         *(c for c in rnd.aux if c.error is None and c.kind != "human")):
                name = item.backbone or self.backbone
                per[name] = per.get(name, Usage()) + Usage(1, item.tokens_in, item.tokens_out, item.seconds,
                                                             item.tokens_cached)
        return per

    def agent_backbones(self) -> list[str]:
        """The backbone of each agent, from its first recorded turn."""
        first = {t.agent: t.backbone or self.backbone for rnd in reversed(self.rounds) for t in rnd.turns}
        return [first[a] for a in sorted(first)]

    def finished(self) -> Transcript:
        """Without the round a stopped or timed-out debate never finished (kept for its cost)."""
        rounds = tuple(r for r in self.rounds if not r.details.get("running"))
        return self if len(rounds) == len(self.rounds) else dataclasses.replace(self, rounds=rounds)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(to_dict(self), ensure_ascii=False, **kw)

    @classmethod
    def from_json(cls, text: str) -> Transcript:
        return from_dict(cls, json.loads(text))


@dataclass(frozen=True)
class Case:
    """One memory case e_i^(t) (R²-MAD Eq. 6): agent i's debate state before round t, all agents'
    responses at round t, the gold answer, per-agent correctness at t, and agent i's outcome reward."""
    id: str
    question_id: str
    task_kind: TaskKind
    agent: int
    round: int
    question: str  # x (with options rendered for multiple choice)
    previous_response: str  # z_i^(t-1)
    summary: str  # h^(t-1)
    consensus: float  # Cons(Z^(t-1))
    responses: tuple[str, ...]  # Z^(t)
    answers: tuple[str | None, ...]  # a(z_j^(t)), None = UNPARSED
    gold: str
    correct: tuple[bool, ...]  # zeta_j^(t) for every agent j
    reward: float  # r_i: 1 if agent i's final answer was correct, else 0
    stance_changed: bool = False  # a(z_i^(t)) != a(z_i^(t-1))
    quarantined: bool = False
    solution: str = ""  # the task's worked reference solution, where the data set has one (older banks: none)
    provenance: dict = field(default_factory=dict)  # a case from a saved run: run, annotator, time (memory/growth.py)

    @property
    def own_correct(self) -> bool:
        return self.correct[self.agent]


EventKind = Literal["round_start", "delta", "turn", "summary", "retrieval", "confidence", "mask", "advice", "notice",
                   "round_end", "final"]  # delta: an agent's text so far, shown while written and never saved


@dataclass(frozen=True)
class Event:
    """One step of a running debate, for streaming to the UI and the run store."""
    kind: EventKind
    round: int | None = None
    agent: int | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Vote:
    """A visitor's blind vote for the debate of a comparison that convinced them most (kept by runs/votes.py)."""
    comparison: str
    voter: str
    winner: str  # run id
    runs: dict[str, str]  # method -> run id
    shown: dict[str, str]  # label -> method
    username: str | None = None
    created_at: float = 0.0

    @property
    def winner_method(self) -> str:
        return next(m for m, run in self.runs.items() if run == self.winner)

    def row(self) -> dict[str, Any]:
        """The flat row of an export (runs and shown as JSON text)."""
        return {"comparison": self.comparison, "voter": self.voter, "username": self.username,
                "winner": self.winner, "winner_method": self.winner_method, "runs": json.dumps(self.runs),
                "shown": json.dumps(self.shown), "created_at": self.created_at}


# --- JSON (lossless round trip for the dataclasses above) ---------------------------------------

def to_dict(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


@functools.lru_cache(maxsize=None)
def _field_hints(cls: type) -> tuple[tuple[str, Any], ...]:
    """(name, resolved type) of each field of dataclass `cls`, worked out once per class (slow)."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def from_dict(cls: Any, data: Any) -> Any:
    """Rebuild `cls` (a dataclass or a typing annotation) from `to_dict` output."""
    if data is None:
        return None
    if dataclasses.is_dataclass(cls):
        return cls(**{name: from_dict(hint, data[name]) for name, hint in _field_hints(cls) if name in data})
    origin, args = typing.get_origin(cls), typing.get_args(cls)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_dict(args[0], x) for x in data)
        return tuple(from_dict(a, x) for a, x in zip(args, data))
    if origin in (list,):
        return [from_dict(args[0], x) for x in data]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for arg in args:
            if arg is type(None):
                continue
            if dataclasses.is_dataclass(arg) or typing.get_origin(arg) is not None:
                return from_dict(arg, data)
        return data
    return data
