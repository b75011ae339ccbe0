"""THE debate loop shared by every method: round 0 alone, then debate rounds whose agents answer
concurrently, early stop on unanimity, a plurality vote, and an event for every step. Methods are
strategies that override the hooks of `r2mad.methods.base.Method`, which this loop calls with a
`RoundContext`; it knows nothing of any one method."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from typing import Any, AsyncIterator, Sequence

from r2mad.backends.affinity import debate_key
from r2mad.backends.base import BackendError, ChatBackend
from r2mad.budget import TimeLimit, stored_chars, stored_full
from r2mad.grading.answers import consensus_ratio, is_correct, is_unanimous, plurality_vote
from r2mad.grading.judge import Judge
from r2mad.grading.offloop import extract, settle
from r2mad.grading.outcome import closing_lines, stopped_for_time
from r2mad.guard import guard_answer
from r2mad.human import HUMAN, Interjection, Moderator, admitted, note_calls, person_chars, with_notes
from r2mad.methods.base import ABSTAINED, Agent, EventSink, Method, RoundContext, seed_for
from r2mad.relay import at_most_every, relay
from r2mad.types import UNPARSED, AgentTurn, Answer, Event, Judged, Round, Task, Transcript, to_dict

TYPING_S = 0.2  # an agent's text so far goes out as a `delta` event at most this often (the turn event counts)


class Debate:
    """`backend` answers for every agent and makes the auxiliary calls; `agent_backends`, one per agent, gives
    each agent its own model (a mixed-model debate); each is recorded under the backbone name it carries.
    `judge` grades the pairs of answers the rules leave undecided (none: they stay undecided)."""

    def __init__(self, backend: ChatBackend, method: Method, *, emit: EventSink | None = None,
                 agent_backends: Sequence[ChatBackend] = (), moderator: Moderator | None = None,
                 judge: Judge | None = None):
        self.backend, self.method, self.backbone = backend, method, backend.name
        self.moderator = moderator  # asked before each live round t > 0 (r2mad/human.py)
        if agent_backends and len(agent_backends) != method.n_agents():
            raise ValueError(f"{len(agent_backends)} agent backbones were given for {method.n_agents()} agents; "
                             "give one per agent.")
        self.agent_backends = list(agent_backends) or [backend] * method.n_agents()
        if method.settings.answer_guard == "auto":  # recorded as decided: the backbone's own default
            on = backend.capabilities.guard_by_default
            method.settings = dataclasses.replace(method.settings, answer_guard="on" if on else "off")
        self.settings = method.settings
        self.emit = emit or (lambda event: None)  # hears each event of `run`
        self._emit: EventSink = lambda event: None  # where the loop sends its events while it runs
        self.rounds: list[Round] = []
        self.running: RoundContext | None = None  # the round in progress
        self.notices: list[str] = []
        self.answered: list[Answer] = []  # the round's answers so far, settled with each other as they arrive
        self.judge = judge
        self.judged: list[Judged] = []  # the judge's verdicts on this debate's undecided pairs

    async def events(self, task: Task, *, replay: Sequence[Round] = (), notices: tuple[str, ...] = (),
                     steer: Sequence[Any] = ()) -> AsyncIterator[Event | Transcript]:
        """The debate as it happens: each event in order, then the transcript, last. Leaving the loop early (break,
        an error, a cancelled consumer) cancels the debate (see relay.relay). Never raises for a backend failure:
        the transcript says what happened. `replay` holds recorded rounds 0..T-1 that are taken over as they are,
        without a model call (a side-by-side comparison's shared round 0, a fork's rounds before the one it
        changes); the debate goes on live from round T. `steer`: a fork's changes that round T's hooks read
        (ctx.steer), recorded in its details. `notices` open the transcript (e.g. why memory is off). Every call
        carries one routing key (the enclosing one, e.g. an eval question's, else a new one)."""
        async def debate(emit: EventSink) -> None:
            self._emit = emit
            with debate_key():
                emit(await self._run(task, replay, notices, steer))

        async with contextlib.aclosing(relay(debate)) as batches:
            async for batch in batches:
                for step in batch:
                    yield step

    async def run(self, task: Task, *, replay: Sequence[Round] = (), notices: tuple[str, ...] = (),
                  steer: Sequence[Any] = (), emit: EventSink | None = None) -> Transcript:
        """The whole debate (see `events`), each event handed to `emit` (else the one given at construction);
        returns the transcript."""
        hear = emit or self.emit
        async for step in self.events(task, replay=replay, notices=notices, steer=steer):
            if isinstance(step, Event):
                hear(step)
        return step

    async def _run(self, task: Task, replay: Sequence[Round], notices: tuple[str, ...],
                   steer: Sequence[Any]) -> Transcript:
        self.started, self.clock = time.time(), TimeLimit(self.settings.deadline_s)
        self.task = task
        backends = list({id(b): b for b in [self.backend, *self.agent_backends]}.values())
        prepared = [n for b in backends for n in self.method.prepare(b)]  # before the openings: they read it
        agents = []
        for i in range(self.method.n_agents()):
            name, system = self.method.persona(task, i)
            agents.append(Agent(i, name, self.method.opening(task, i, system)))
        self.agents, status = agents, "done"
        self.person = person_chars(replay)  # what a person added so far: a fork's edits, replayed notes (budget.py)
        stored = 0  # the characters the rounds so far store
        for text in (*notices, *prepared):
            self.notice(text, 0)
        last = self.method.n_rounds() - 1
        try:
            for t in range(self.method.n_rounds()):
                if t >= len(replay) and not self.clock.room_for_a_round():
                    self.notice(stopped_for_time(self.rounds[-1].index, last, self.settings.deadline_s), t - 1)
                    break
                began = time.monotonic()
                async with asyncio.timeout_at(self.clock.cut_at()):
                    if t < len(replay):
                        rnd = self._adopt(replay[t])
                        calls = await self._settle([x.answer for x in rnd.turns], t)
                        rnd = dataclasses.replace(rnd, aux=(*rnd.aux, *calls)) if calls else rnd
                    else:
                        said = await self.moderator(self.transcript(), t) if self.moderator and t else ()
                        rnd = await self._round(t, tuple(steer) if t == len(replay) else (), self._admit(said, t))
                self.rounds.append(rnd)
                stored += stored_chars(rnd)
                if t >= len(replay):
                    self.clock.last_round_s = time.monotonic() - began
                self._emit(Event("round_end", t, None, {"consensus": rnd.consensus,
                                                        "answers": [str(x.answer) for x in rnd.turns]}))
                answers = [turn.answer for turn in rnd.turns]
                if all(turn.error for turn in rnd.turns):
                    status = "failed"
                    self.notice(f"Round {t}: every agent's call failed ({rnd.turns[0].error})", t)
                    break
                if (self.settings.early_stop and t < last
                        and is_unanimous(answers, task, self.judged)):
                    self.notice(f"All agents agree after round {t}; stopping early.", t)
                    break
                if t < last and (why := self.method.stop_after(task, rnd.turns)):
                    self.notice(why, t)
                    break
                if t < last and (full := stored_full(stored)):  # budget.STORED_CHARS
                    self.notice(full, t)
                    break
        except TimeoutError:  # a round ran far past the time limit: end with the rounds that finished
            if self.rounds:
                self.notice(stopped_for_time(self.rounds[-1].index, last, self.settings.deadline_s), len(self.rounds))
            else:
                status = "failed"
                self.notice(self.clock.round0_cut(), 0)
        except asyncio.CancelledError:
            self._emit(Event("final", None, None, {"status": "cancelled"}))
            raise
        self._close()
        transcript = self.transcript(status)
        self._emit(Event("final", None, None, {"status": status, "answer": str(transcript.final),
                                               "correct": transcript.correct}))
        return transcript

    def transcript(self, status: str = "running") -> Transcript:
        """The debate so far: its finished rounds, then the round in progress with the turns and
        auxiliary calls it has so far (details["running"]), which a stopped debate keeps for its cost.
        The final answer is the vote of the last finished round."""
        seconds = time.monotonic() - self.clock.start
        last = self.rounds[-1].turns if self.rounds else ()
        final = plurality_vote([t.answer for t in last], self.task, self.judged) if last else ABSTAINED
        rounds = list(self.rounds)
        if self.running is not None:
            ctx = self.running
            turns = tuple(ctx.arrived[a] for a in sorted(ctx.arrived))
            rounds.append(Round(ctx.index, turns, consensus_ratio([x.answer for x in turns], self.task, self.judged),
                                tuple(ctx.aux), to_dict({**ctx.details, "running": True})))
        return Transcript(self.task, self.method.name, self.backbone, dataclasses.asdict(self.settings),
                          tuple(rounds), final, is_correct(final, self.task, self.judged) if self.rounds else None,
                          status, tuple(self.notices), self.started, round(seconds, 4),
                          shared_round0=bool(self.rounds and self.rounds[0].details.get("shared")),
                          judged=tuple(self.judged))

    def _close(self) -> None:
        """The last round's closing notices (outcome.closing_lines): the positions a vote on a kind with no single
        right answer did not pick; without a judge, what the rules left undecided."""
        if self.rounds:
            last = self.rounds[-1]
            for line in closing_lines(last.turns, self.transcript().final, self.task, self.judged,
                                      judge=self.judge is not None):
                self.notice(line, last.index)

    def notice(self, text: str, t: int) -> None:
        self.notices.append(text)
        self._emit(Event("notice", t, None, {"text": text}))

    def _admit(self, said: Sequence[Interjection], t: int) -> tuple[Interjection, ...]:
        """What a person says before round t, as far as their budget goes (budget.PERSON_CHARS); one notice
        for the rest."""
        kept, refused = admitted(said, self.person)
        if refused:
            self.notice(refused, t)
        self.person += sum(len(x.text) for x in kept)
        return tuple(kept)

    async def _round(self, t: int, steer: tuple = (), said: tuple[Interjection, ...] = ()) -> Round:
        ctx = RoundContext(self.task, self.settings, self.backend, t, self.agents, self.rounds, self._emit,
                           backbone=self.backbone, steer=steer, person_chars=self.person)
        ctx.aux.extend(note_calls(said))
        seats = {x.seat: x.text for x in said if x.seat is not None}
        if steer:
            ctx.details["steer"] = to_dict(list(steer))
        self.running = ctx
        self._emit(Event("round_start", t, None, {}))
        if t > 0:
            await self.method.before_round(ctx)
            for plugin in self.method.plugins:
                await plugin.before_round(ctx)
        in_turn = self.method.in_turn(self.task)  # one after another, each reading the replies given before it
        if not in_turn:
            for a in self.agents:
                self._brief(ctx, a, said)
        self.method.round_started(ctx)
        self.answered = []
        if in_turn:
            turns = []
            for a in self.agents:
                self._brief(ctx, a, said)
                turns.append(await self._call(a, t, ctx, seats.get(a.index)))
                a.take(turns[-1], t)
        else:
            turns = await asyncio.gather(*(self._call(a, t, ctx, seats.get(a.index)) for a in self.agents))
            for a, turn in zip(self.agents, turns):
                a.take(turn, t)
        self.notices.extend(ctx.notices)
        self.running = None
        return Round(t, tuple(turns), consensus_ratio([x.answer for x in turns], self.task, self.judged),
                     tuple(ctx.aux), to_dict(ctx.details))

    def _brief(self, ctx: RoundContext, agent: Agent, said: tuple[Interjection, ...]) -> None:
        """Put the round's debate message (after round 0) at the end of the agent's history."""
        if ctx.index > 0:
            message = self.method.debate_message(ctx, agent.index)
            for plugin in self.method.plugins:
                message = plugin.extend_message(ctx, agent.index, message)
            agent.history = self.method.next_prompt(ctx, agent, with_notes(message, said, agent.index))

    async def _settle(self, answers: list[Answer], t: int) -> list:
        """Check the answers against each other and the gold off the loop, before anything compares them, and
        have the judge grade what the rules leave undecided (see offloop.settle); a pair that could not be
        checked gets its notice once. Returns the judge's calls (a live round records them itself)."""
        settled = await settle(answers, self.task, judge=self.judge, judged=self.judged, round_index=t)
        for text in settled.notices:
            if text not in self.notices:
                self.notice(text, t)
        self.judged.extend(j for j in settled.judged if (j.a, j.b) not in {(k.a, k.b) for k in self.judged})
        if self.running is not None:
            self.running.aux.extend(settled.calls)
            return []
        return settled.calls

    async def _call(self, agent: Agent, t: int, ctx: RoundContext, human: str | None = None) -> AgentTurn:
        s, details = self.settings, ctx.agent_details.get(agent.index, {})
        backend = self.agent_backends[agent.index]
        prompt = tuple(agent.history)
        if human is not None:  # a person took this agent's seat: their text is the turn, no model call
            now = time.monotonic()
            turn = AgentTurn(agent.index, t, agent.name, prompt, human, await extract(human, self.task),
                             started_at=now, ended_at=now, details=to_dict({**details, HUMAN: True}), backbone=HUMAN)
            ctx.arrived[agent.index] = turn
            self.method.on_turn(turn)
            self._emit(Event("turn", t, agent.index, to_dict(turn)))
            return turn
        want_lp = self.method.wants_logprobs and backend.capabilities.supports_logprobs
        shown = at_most_every(TYPING_S, lambda text: self._emit(Event("delta", t, agent.index, {"text": text})))
        live = {"on_text": shown} if backend.capabilities.streams_text else {}
        started = time.monotonic()
        try:
            [c] = await backend.chat(prompt, n=1, temperature=s.temperature, top_p=s.top_p,
                                     max_tokens=s.max_tokens, seed=seed_for(s, t, agent.index),
                                     logprobs=want_lp, **live)
        except BackendError as exc:
            turn = AgentTurn(agent.index, t, agent.name, prompt, "", ABSTAINED, started_at=started,
                             ended_at=time.monotonic(), error=str(exc), details=to_dict(details), backbone=backend.name)
        else:
            mean_lp = sum(c.logprobs) / len(c.logprobs) if c.logprobs else None
            asked = self.method.asks_answer(self.task)
            answer = await extract(c.text, self.task, cut=c.finish_reason == "length") if asked else UNPARSED
            if asked and not answer.parsed and s.answer_guard == "on":
                answer, call = await guard_answer(backend, prompt, c.text, self.task, round_index=t,
                                                  agent=agent.index, seed=seed_for(s, t, 50 + agent.index))
                ctx.aux.append(dataclasses.replace(call, backbone=backend.name))
            self.answered.append(answer)
            await self._settle(self.answered, t)
            turn = AgentTurn(agent.index, t, agent.name, prompt, c.text, answer,
                             c.tokens_in, c.tokens_out, c.latency_s, started, time.monotonic(),
                             mean_lp, details=to_dict(details), backbone=backend.name,
                             provider=c.provider, tokens_cached=c.tokens_cached)
        ctx.arrived[agent.index] = turn
        self.method.on_turn(turn)
        self._emit(Event("turn", t, agent.index, to_dict(turn)))
        return turn

    def _adopt(self, rnd: Round) -> Round:
        """Take over a recorded round: rebuild each agent's history from what it was shown and said (a
        turn whose details say `hidden` is kept from the peers in the next round)."""
        for a, turn in zip(self.agents, rnd.turns):
            a.history = list(turn.prompt)
            a.take(turn, rnd.index)
            a.hidden = bool(turn.details.get("hidden"))
        for turn in rnd.turns:
            self._emit(Event("turn", rnd.index, turn.agent, to_dict(turn)))
        return rnd

