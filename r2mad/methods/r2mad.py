"""R²-MAD (Jin et al. 2026): before each debate round, summarise the previous round (h), build each
agent's debate state <x, z_i, h, Cons>, retrieve cases from its memory with consensus-aware MMR, and
annotate peers' answers with memory-derived confidence. Ablations switch parts off via settings."""
from __future__ import annotations

import asyncio

from r2mad.answers import strip_think
from r2mad.confidence import annotate, confidence_label
from r2mad.debate import Method, RoundContext
from r2mad.prompts import r2mad as prompts
from r2mad.prompts.common import format_task
from r2mad.retrieval import render_state


_SUMMARIES: dict[tuple[str, str], str] = {}  # (backbone, summary prompt) -> h


class R2MAD(Method):
    name = "r2mad"

    def __init__(self, settings, bank=None, *, summarize: bool | None = None):
        super().__init__(settings)
        self.bank = bank if settings.use_memory else None
        # memory building needs h in every state even though nothing is retrieved yet
        self.summarize = self.bank is not None if summarize is None else summarize
        self.retrieved: dict[int, object] = {}
        self.encoding: dict[int, asyncio.Future] = {}  # agent -> embedding of its latest response

    def on_turn(self, turn) -> None:
        """Embed each response as soon as it arrives, off the critical path of the next round."""
        if self.bank is not None and turn.error is None:
            self.encoding[turn.agent] = asyncio.ensure_future(
                asyncio.to_thread(self.bank.embedder.encode, [strip_think(turn.text)]))

    async def before_round(self, ctx: RoundContext) -> None:
        self.retrieved = {}
        if not self.summarize:
            return
        summary_call = asyncio.create_task(self._summarise(ctx))
        if self.bank is None:
            await summary_call
            return
        encode, consensus, question = self.bank.embedder.encode, ctx.previous.consensus, format_task(ctx.task)
        responses = {a.index: (await self.encoding[a.index])[0] for a in ctx.agents if a.index in self.encoding}
        missing = [a for a in ctx.agents if a.index not in responses]  # e.g. a shared round 0
        if missing:
            responses.update(zip([a.index for a in missing],
                                 await asyncio.to_thread(encode, [a.text for a in missing])))
        summary = await summary_call
        state_vectors = await asyncio.to_thread(
            encode, [render_state(question, a.text, summary, consensus) for a in ctx.agents])
        for agent in ctx.agents:
            peers = {p.index: responses[p.index] for p in self.visible_peers(ctx, agent.index)}
            seed = None if self.settings.seed is None else self.settings.seed + 7919 * ctx.index + agent.index
            found = self.bank.retrieve_vectors(agent.index, state_vectors[agent.index], peers, consensus,
                                               self.settings.k, self.settings.policy, self.settings.gamma, seed)
            self.retrieved[agent.index] = found
            record = self._record(found, summary, consensus)
            ctx.agent_details[agent.index] = record
            ctx.emit("retrieval", agent=agent.index, **{k: record[k] for k in ("lambda", "candidates", "retrieved")})
            ctx.emit("confidence", agent=agent.index, confidence=record["confidence"])

    def _record(self, found, summary: str, consensus: float) -> dict:
        """What the transcript keeps of one agent's retrieval: the UI and the audit read it."""
        return {"summary": summary, "consensus": consensus, "lambda": None if found.lam is None else round(found.lam, 4),
                "candidates": [{"case_id": c, "similarity": round(s, 4), "reward": r}
                               for c, s, r in found.candidates],
                "retrieved": [{"case_id": case.id, "question": case.question,
                               "response": case.responses[case.agent], "answer": case.answers[case.agent],
                               "correct": case.own_correct, "similarity": round(s, 4), "reward": r,
                               "mmr": None if m is None else round(m, 4)}
                              for case, (_, s, r, m) in zip(found.cases, found.picked)],
                "confidence": {str(j): {"c": None if c is None else round(c, 4), "label": self._label(c)}
                               for j, (c, _) in found.confidence.items()}}

    async def _summarise(self, ctx: RoundContext) -> str:
        """h^(t-1): one model call per round, on the abstract stance pattern only. Equal patterns give
        equal prompts, so a process-wide cache answers repeats without another call."""
        now = [t.answer.value for t in ctx.previous.turns]
        before = [t.answer.value for t in ctx.rounds[-2].turns] if len(ctx.rounds) > 1 else None
        messages = prompts.summary_messages(prompts.stance_pattern(now, before))
        key = (ctx.backend.name, messages[-1].content)
        ctx.details["summary_cached"] = key in _SUMMARIES
        if key in _SUMMARIES:
            summary = _SUMMARIES[key]
        else:
            call = await ctx.aux_call("summary", messages, max_tokens=96)
            if call.error:
                ctx.notice(f"Round {ctx.index}: the debate-state summary failed ({call.error}); "
                           "retrieval uses an empty summary.")
            summary = call.text.strip()
            if summary:
                _SUMMARIES[key] = summary
        ctx.details["summary"] = summary
        ctx.emit("summary", text=summary)
        return summary

    def peers(self, ctx: RoundContext, agent: int) -> list[tuple[str, str]]:
        found = self.retrieved.get(agent)
        if found is None or not self.settings.use_confidence:
            return super().peers(ctx, agent)
        return [(p.label, annotate(p.text, self._label(found.confidence.get(p.index, (None, None))[0])))
                for p in self.visible_peers(ctx, agent)]

    def _label(self, c: float | None) -> str | None:
        return confidence_label(c, self.settings.conf_high, self.settings.conf_low)

    def debate_message(self, ctx: RoundContext, agent: int) -> str:
        found = self.retrieved.get(agent)
        cases = list(found.cases) if found is not None else []
        confidence = found is not None and self.settings.use_confidence
        return prompts.debate_prompt(ctx.task, cases, self.peers(ctx, agent), confidence)
