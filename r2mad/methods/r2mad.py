"""R²-MAD (Jin et al. 2026): before each debate round, summarise the previous round (h), build each
agent's debate state <x, z_i, h, Cons>, retrieve cases from its memory with consensus-aware MMR, and
annotate peers' answers with memory-derived confidence. Ablations switch parts off via settings.
w/o Memory shows no cases but keeps the confidence tags (computed from the candidate pool). Prefetching
and embedding as responses arrive: r2mad.memory.prefetch; a fork's case changes: r2mad.memory.case_edits."""
from __future__ import annotations

import asyncio

from r2mad.grading.answers import strip_think
from r2mad.memory.case_edits import CASE_KINDS, check_case_change, steer_cases
from r2mad.memory.confidence import annotate, confidence_label
from r2mad.memory.prefetch import PREFETCH_TOKENS, ResponseEmbeddings, SummaryPrefetch, pattern_summary_messages
from r2mad.memory.retrieval import render_state
from r2mad.memory.summaries import SummaryCache, summary_key
from r2mad.methods.base import Method, RoundContext
from r2mad.prompts import r2mad as prompts
from r2mad.prompts.common import format_task

SUMMARY_TOKENS = 128  # the faithful summary's budget: four sentences fit (the issue allows <= 150)


class R2MAD(Method):
    name = "r2mad"

    @property
    def steers(self) -> tuple[str, ...]:
        return CASE_KINDS if self.settings.r2mad.use_memory else ()

    def check_steer(self, change, settings) -> str | None:
        return check_case_change(change, settings.r2mad.k, self.bank)

    def __init__(self, settings, bank=None, *, summarize: bool | None = None,
                 summaries: SummaryCache | None = None):
        super().__init__(settings)
        self.summaries = summaries if summaries is not None else SummaryCache()  # given: shared across debates
        own = settings.r2mad
        self.prompt_reserve = 512 + own.k * (own.case_tokens + 256)  # the memory cases sit in the prompt too
        self.bank = bank if own.use_memory or own.use_confidence else None
        # memory building needs h in every state even though nothing is retrieved yet
        self.summarize = self.bank is not None if summarize is None else summarize
        self.retrieved: dict[int, object] = {}  # agent -> this round's retrieval
        self.last_summary = ""  # h^(t-2), read by the faithful summary of the next round
        self.prefetch = SummaryPrefetch(self.summaries)
        self.embeddings = ResponseEmbeddings(None if self.bank is None else self.bank.embedder)

    def round_started(self, ctx: RoundContext) -> None:
        own = self.settings.r2mad  # the speed variant may ask next round's h while this one is answered
        if self.summarize and own.summary == "pattern" and own.prefetch_summaries and ctx.index + 1 < self.n_rounds():
            self.prefetch.start(ctx, self.n_agents())

    def on_turn(self, turn) -> None:
        self.embeddings.on_turn(turn, last_of_round=self.prefetch.on_turn(turn, self.n_agents()))

    async def before_round(self, ctx: RoundContext) -> None:
        self.retrieved = {}
        pending = self.embeddings.take()
        if not self.summarize:
            return
        if self.settings.r2mad.summary == "faithful":  # read from this debate's round: never cached
            call = self._summary_call(ctx, None, self._faithful_messages(ctx))
            summary, responses = await self.embeddings.during(call, pending, ctx.agents)
        else:
            summary, responses = await self._pattern_summary(ctx, pending)
        self.last_summary = summary
        ctx.details["summary"] = summary
        ctx.emit("summary", text=summary)
        if self.bank is None:
            return
        consensus, question = ctx.previous.consensus, format_task(ctx.task)
        states = [render_state(question, a.text, summary, consensus) for a in ctx.agents]
        missing = [a for a in ctx.agents if a.index not in responses]  # embedded with the states: one batch
        vectors = await asyncio.to_thread(self.bank.embedder.encode, states + [a.text for a in missing])
        responses.update(zip([a.index for a in missing], vectors[len(states):]))
        own = self.settings.r2mad
        for agent in ctx.agents:
            peers = {p.index: responses[p.index] for p in self.visible_peers(ctx, agent.index)}
            seed = None if self.settings.seed is None else self.settings.seed + 7919 * ctx.index + agent.index
            found = self.bank.retrieve_vectors(agent.index, vectors[agent.index], peers, consensus,
                                               own.k, own.policy, own.gamma, seed, reward=own.reward,
                                               confidence_terms=own.confidence_terms)
            found, steer = steer_cases(ctx, agent.index, found, self.bank, own.reward)
            self.retrieved[agent.index] = found
            record = self._record(found, summary, consensus)
            if steer:
                record["steer"] = steer
            ctx.agent_details[agent.index] = record
            ctx.emit("retrieval", agent=agent.index, **{k: record[k] for k in ("lambda", "candidates", "retrieved")})
            ctx.emit("confidence", agent=agent.index, confidence=record["confidence"])

    def _faithful_messages(self, ctx: RoundContext):
        now, before = ctx.previous.turns, ctx.rounds[-2].turns if len(ctx.rounds) > 1 else None
        agents = [prompts.AgentRound(a.label, a.text, turn.answer.value,
                                     before[i].answer.value if before else None, first_round=before is None)
                  for i, (a, turn) in enumerate(zip(ctx.agents, now))]
        return prompts.faithful_summary_messages(ctx.task, self.last_summary, agents, ctx.previous.consensus)

    async def _pattern_summary(self, ctx: RoundContext, pending: dict):
        """The speed variant: h from the abstract stance pattern, cached across debates (and prefetched)."""
        now = [t.answer.value for t in ctx.previous.turns]
        before = [t.answer.value for t in ctx.rounds[-2].turns] if len(ctx.rounds) > 1 else None
        messages = pattern_summary_messages(now, before)
        prefetched = await self.prefetch.collect(ctx, messages[-1].content)
        if prefetched is not None:
            ctx.details["summary_prefetched"] = prefetched
        key = summary_key(ctx.backend, messages)  # after the calls: a model read from /v1/models is known now
        summary = self.summaries.get(key)
        ctx.details["summary_cached"] = summary is not None
        if summary is not None:
            return summary, await self.embeddings.ready(pending)
        return await self.embeddings.during(self._summary_call(ctx, key, messages), pending, ctx.agents)

    def _record(self, found, summary: str, consensus: float) -> dict:
        """What the transcript keeps of one agent's retrieval: the UI and the audit read it."""
        return {"summary": summary, "consensus": consensus,
                "lambda": None if found.lam is None else round(found.lam, 4),
                "candidates": [{"case_id": c, "similarity": round(s, 4), "reward": r}
                               for c, s, r in found.candidates],
                "memory_shown": self.settings.r2mad.use_memory,
                "retrieved": [{"case_id": case.id, "question": case.question,
                               "response": case.responses[case.agent], "answer": case.answers[case.agent],
                               "correct": case.own_correct, "similarity": None if s is None else round(s, 4),
                               "reward": r,
                               "mmr": None if m is None else round(m, 4)}
                              for case, (_, s, r, m) in zip(found.cases, found.picked)
                              if self.settings.r2mad.use_memory],  # w/o Memory: no case is shown
                "confidence": {str(j): {"c": None if c is None else round(c, 4), "label": self._label(c)}
                               for j, (c, _) in found.confidence.items()}}

    async def _summary_call(self, ctx: RoundContext, key, messages) -> str:
        """One summary call; `key` None: not cached (the faithful summary is this debate's own)."""
        budget = SUMMARY_TOKENS if key is None else PREFETCH_TOKENS  # the paper profile: the whole budget
        call = await ctx.aux_call("summary", messages, max_tokens=min(budget, self.settings.max_tokens)
                                  if self.clips or key is not None else self.settings.max_tokens)
        if call.error:
            ctx.notice(f"Round {ctx.index}: the debate-state summary failed ({call.error}); "
                       "retrieval uses an empty summary.")
        summary = strip_think(call.text)  # a thinking model's reasoning is not the summary
        if summary and key is not None:
            self.summaries.put(key, summary)
        return summary

    def peers(self, ctx: RoundContext, agent: int) -> list[tuple[str, str]]:
        found = self.retrieved.get(agent)
        if found is None or not self.settings.r2mad.use_confidence:
            return super().peers(ctx, agent)
        return self.fit(ctx, agent, [(p.label, annotate(p.text, self._label(found.confidence.get(p.index,
                                                                                            (None, None))[0])))
                                     for p in self.visible_peers(ctx, agent)])

    def _label(self, c: float | None) -> str | None:
        return confidence_label(c, self.settings.r2mad.conf_high, self.settings.r2mad.conf_low)

    def debate_message(self, ctx: RoundContext, agent: int) -> str:
        found, own = self.retrieved.get(agent), self.settings.r2mad
        tokens = own.case_tokens if self.clips else None
        cases = ctx.within_budget(agent, "memory case", list(found.cases) if found is not None and own.use_memory
                                  else [], lambda kept: prompts.cases_block(kept, tokens))
        confidence = found is not None and own.use_confidence
        return prompts.debate_prompt(ctx.task, cases, self.peers(ctx, agent), confidence, tokens)
