"""R²-MAD (Jin et al. 2026): before each debate round, summarise the previous round (h), build each
agent's debate state <x, z_i, h, Cons>, retrieve cases from its memory with consensus-aware MMR, and
annotate peers' answers with memory-derived confidence. Ablations switch parts off via settings.
w/o Memory shows no cases but keeps the confidence tags (computed from the candidate pool)."""
from __future__ import annotations

import asyncio
import dataclasses
import itertools

from r2mad.answers import is_unanimous, strip_think
from r2mad.memory.confidence import annotate, confidence_label
from r2mad.memory.retrieval import case_reward, render_state
from r2mad.memory.summaries import SummaryCache
from r2mad.methods.base import Method, RoundContext
from r2mad.prompts import r2mad as prompts
from r2mad.prompts.common import format_task

SUMMARY_TOKENS = 128  # the faithful summary's budget: four sentences fit (the issue allows <= 150)
PREFETCH_LIMIT = 32  # at most this many speculative summary calls per round


def likely_outcomes(before: list[str | None] | None, n_agents: int) -> list[list[str]]:
    """Answer vectors a round is likely to end in, for prefetching its summary: after round 0 any split
    of the agents (their stance patterns are the set partitions); later, each agent keeping or adopting
    one of the previous round's answers. Empty when there would be more than PREFETCH_LIMIT."""
    if before is None:
        outcomes = [[]]
        for _ in range(n_agents):  # restricted growth strings: every partition once
            outcomes = [o + [f"p{k}"] for o in outcomes for k in range(len(set(o)) + 1)]
            if len(outcomes) > PREFETCH_LIMIT:
                return []
        return outcomes
    held = list(dict.fromkeys(a for a in before if a is not None))
    if not held or len(held) ** n_agents > PREFETCH_LIMIT:
        return []
    return [list(o) for o in itertools.product(held, repeat=n_agents)]


class R2MAD(Method):
    name = "r2mad"

    @property
    def steers(self) -> tuple[str, ...]:
        return ("drop-case", "replace-case") if self.settings.r2mad.use_memory else ()

    def check_steer(self, change, settings) -> str | None:
        k, who = settings.r2mad.k, f"Agent {change.agent + 1}"
        if change.case_rank > k:
            return (f"{who}'s memory block shows at most {k} case(s) (r2mad.k = {k}), so it has no case at "
                    f"rank {change.case_rank}; give a rank between 1 and {k}.")
        if change.kind != "replace-case":
            return None
        case = self.bank.case(change.case_id) if self.bank is not None else None
        if case is None:
            return (f"No case '{change.case_id}' in the fork's memory bank; pick a case id from the Bank tab "
                    "or search_bank.")
        if case.agent != change.agent:
            return (f"Case '{change.case_id}' belongs to agent {case.agent + 1}'s memory, not agent "
                    f"{change.agent + 1}'s; pick a case of agent {change.agent + 1}.")
        return None

    def __init__(self, settings, bank=None, *, summarize: bool | None = None,
                 summaries: SummaryCache | None = None):
        super().__init__(settings)
        self.summaries = summaries if summaries is not None else SummaryCache()  # given: shared across debates
        own = settings.r2mad
        self.prompt_reserve = 512 + own.k * (own.case_tokens + 256)  # the memory cases sit in the prompt too
        self.bank = bank if own.use_memory or own.use_confidence else None
        # memory building needs h in every state even though nothing is retrieved yet
        self.summarize = self.bank is not None if summarize is None else summarize
        self.retrieved: dict[int, object] = {}
        self.encoding: dict[int, asyncio.Future] = {}  # agent -> embedding of its latest response
        self.answers: dict[int, dict[int, object]] = {}  # round -> agent -> answer, as they come back
        self.prefetching: dict[str, asyncio.Task] = {}  # summary prompt -> speculative call
        self.prefetch_ctx: RoundContext | None = None  # records the speculative calls
        self.round_ctx: RoundContext | None = None
        self.last_summary = ""  # h^(t-2), read by the faithful summary of the next round

    def round_started(self, ctx: RoundContext) -> None:
        """With `prefetch_summaries`, ask for the summaries of the stance patterns this round is likely
        to end in while its agents answer, so the next round finds h ready instead of waiting for a call.
        Every call is counted in the transcript; the cache keeps the answers for later debates."""
        self.round_ctx = ctx
        own = self.settings.r2mad
        if not (self.summarize and own.summary == "pattern" and own.prefetch_summaries
                and ctx.index + 1 < self.n_rounds()):
            return
        before = [t.answer.value for t in ctx.previous.turns] if ctx.index > 0 else None
        self.prefetch_ctx = dataclasses.replace(ctx, index=ctx.index + 1, aux=[])  # the round that uses them
        for now in likely_outcomes(before, self.n_agents()):
            if self.settings.early_stop and len(set(now)) == 1:
                continue  # a unanimous round ends the debate: no next round needs its summary
            messages = self._summary_messages(now, before)
            prompt = messages[-1].content
            if self.summaries.get(self._summary_key(ctx, messages)) is None and prompt not in self.prefetching:
                self.prefetching[prompt] = asyncio.ensure_future(self._prefetch(self.prefetch_ctx, messages))

    def on_turn(self, turn) -> None:
        """Note each answer as it arrives (once all are in, a debate ending here drops its prefetches),
        and embed a response while other agents are still answering; the last one of a round is embedded
        together with the debate states instead (one batch, not two)."""
        arrived = self.answers.setdefault(turn.round, {})
        arrived[turn.agent] = turn.answer
        if len(arrived) == self.n_agents():
            self._drop_prefetches_if_last(turn.round)
        if self.bank is not None and turn.error is None and len(arrived) < self.n_agents():
            self.encoding[turn.agent] = asyncio.ensure_future(
                asyncio.to_thread(self.bank.embedder.encode, [strip_think(turn.text)]))

    async def before_round(self, ctx: RoundContext) -> None:
        self.retrieved = {}
        encoding, self.encoding = self.encoding, {}
        if not self.summarize:
            return
        if self.settings.r2mad.summary == "faithful":  # read from this debate's round: never cached
            missing = [a for a in ctx.agents if a.index not in encoding]
            call = asyncio.create_task(self._summary_call(ctx, None, self._faithful_messages(ctx)))
            responses = {a: (await future)[0] for a, future in encoding.items()}
            if self.bank is not None and missing:  # while the summary call is in flight
                responses.update(zip([a.index for a in missing], await asyncio.to_thread(
                    self.bank.embedder.encode, [a.text for a in missing])))
            missing = []
            summary = await call
        else:
            summary, responses, missing = await self._pattern_summary(ctx, encoding)
        self.last_summary = summary
        ctx.details["summary"] = summary
        ctx.emit("summary", text=summary)
        if self.bank is None:
            return
        encode = self.bank.embedder.encode
        consensus, question = ctx.previous.consensus, format_task(ctx.task)
        states = [render_state(question, a.text, summary, consensus) for a in ctx.agents]
        vectors = await asyncio.to_thread(encode, states + [a.text for a in missing])
        state_vectors = vectors[:len(states)]
        responses.update(zip([a.index for a in missing], vectors[len(states):]))
        own = self.settings.r2mad
        for agent in ctx.agents:
            peers = {p.index: responses[p.index] for p in self.visible_peers(ctx, agent.index)}
            seed = None if self.settings.seed is None else self.settings.seed + 7919 * ctx.index + agent.index
            found = self.bank.retrieve_vectors(agent.index, state_vectors[agent.index], peers, consensus,
                                               own.k, own.policy, own.gamma, seed, reward=own.reward,
                                               confidence_terms=own.confidence_terms)
            found, steer = self._steer_cases(ctx, agent.index, found)
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

    async def _pattern_summary(self, ctx: RoundContext, encoding: dict):
        """The speed variant: h from the abstract stance pattern, cached across debates (and prefetched)."""
        now = [t.answer.value for t in ctx.previous.turns]
        before = [t.answer.value for t in ctx.rounds[-2].turns] if len(ctx.rounds) > 1 else None
        messages = self._summary_messages(now, before)
        if self.prefetching:
            ctx.details["summary_prefetched"] = messages[-1].content in self.prefetching
            await asyncio.gather(*self.prefetching.values(), return_exceptions=True)
            ctx.aux.extend(self.prefetch_ctx.aux)
            self.prefetching = {}
        key = self._summary_key(ctx, messages)  # after the calls: a model read from /v1/models is known now
        summary = self.summaries.get(key)
        ctx.details["summary_cached"] = summary is not None
        encode = None if self.bank is None else self.bank.embedder.encode
        responses = {a: (await future)[0] for a, future in encoding.items()}
        missing = [a for a in ctx.agents if a.index not in responses]  # the last to answer, a shared round 0
        if summary is None:
            call = asyncio.create_task(self._summary_call(ctx, key, messages))
            if encode and missing:  # while the summary call is in flight
                responses.update(zip([a.index for a in missing],
                                     await asyncio.to_thread(encode, [a.text for a in missing])))
                missing = []
            summary = await call
        return summary, responses, missing

    def _steer_cases(self, ctx: RoundContext, agent: int, found):
        """A fork's drop-case / replace-case for this agent: the case shown at that rank is left out of
        its memory block, or another case of its bank takes its place (unscored: no similarity or MMR).
        The confidence tags stay as computed over the candidate pool."""
        steer = {}
        for change in ctx.steered("drop-case", "replace-case"):
            if change.agent != agent:
                continue
            cases, picked, rank = list(found.cases), list(found.picked), change.case_rank
            if rank > len(cases):
                ctx.notice(f"Round {ctx.index}: agent {agent + 1} was shown {len(cases)} case(s), none at rank "
                           f"{rank}; the fork's {change.kind} changed nothing.")
                continue
            old = cases[rank - 1]
            if change.kind == "drop-case":
                del cases[rank - 1], picked[rank - 1]
                steer.update({"drop-case": rank, "dropped": old.id})
            else:
                new = self.bank.case(change.case_id)
                cases[rank - 1] = new
                picked[rank - 1] = (new.id, None, case_reward(new, self.settings.r2mad.reward), None)
                steer.update({"replace-case": rank, "replaced": old.id, "by": new.id})
            found = dataclasses.replace(found, cases=tuple(cases), picked=tuple(picked))
        return found, steer

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

    def _drop_prefetches_if_last(self, round_index: int) -> None:
        """Every answer of the round is in: if the debate ends here (unanimous under early stop, or every
        call failed), cancel the speculative calls still running and count the finished ones here."""
        ctx = self.round_ctx
        if not self.prefetching or ctx is None or ctx.index != round_index:
            return
        answers = list(self.answers[round_index].values())
        stops = self.settings.early_stop and is_unanimous(answers, ctx.task.kind)
        if not stops and not all(a.how == "abstained" for a in answers):
            return
        for call in self.prefetching.values():
            call.cancel()
        ctx.aux.extend(dataclasses.replace(c, round=round_index) for c in self.prefetch_ctx.aux)
        self.prefetching = {}

    async def _prefetch(self, ctx: RoundContext, messages) -> None:
        call = await ctx.aux_call("summary", messages, max_tokens=96, labeler=lambda text: "prefetched")
        if not call.error and call.text.strip():
            self.summaries.put(self._summary_key(ctx, messages), call.text.strip())

    @staticmethod
    def _summary_messages(now: list[str | None], before: list[str | None] | None):
        """h^(t-1) is asked of the model on the abstract stance pattern only, so equal patterns give equal
        prompts, and the summary cache answers repeats without a call."""
        return prompts.summary_messages(prompts.stance_pattern(now, before))

    @staticmethod
    def _summary_key(ctx: RoundContext, messages) -> tuple[str, str, str]:
        model = str(getattr(ctx.backend, "model", "") or "")  # a custom endpoint is named "custom" whatever it serves
        return ctx.backend.name, model, messages[-1].content

    async def _summary_call(self, ctx: RoundContext, key, messages) -> str:
        """One summary call; `key` None: not cached (the faithful summary is this debate's own)."""
        budget = SUMMARY_TOKENS if key is None else 96
        call = await ctx.aux_call("summary", messages, max_tokens=min(budget, self.settings.max_tokens))
        if call.error:
            ctx.notice(f"Round {ctx.index}: the debate-state summary failed ({call.error}); "
                       "retrieval uses an empty summary.")
        summary = call.text.strip()
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
        cases = list(found.cases) if found is not None and own.use_memory else []
        confidence = found is not None and own.use_confidence
        return prompts.debate_prompt(ctx.task, cases, self.peers(ctx, agent), confidence, own.case_tokens)
