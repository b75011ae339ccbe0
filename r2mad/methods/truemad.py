"""TrueMAD (Bao et al. 2026) as a plug-in: after answers are broadcast and before self-revision, each
source agent writes one-to-one advice (support, rebuttal, refinement or a question) to a target agent;
the target then revises, keeping control over how. Our re-implementation: no official code exists."""
from __future__ import annotations

import asyncio
import re

from r2mad.debate import Method, RoundContext
from r2mad.prompts import truemad as prompts

_TYPE = re.compile(r"^\W*(SUPPORT|REBUTTAL|REFINEMENT|QUESTION)\b", re.IGNORECASE)


def parse_advice_type(text: str) -> str:
    """The tag the advice starts with; an untagged advice is kept as "other"."""
    m = _TYPE.search(text or "")
    return m.group(1).lower() if m else "other"


def advice_pairs(n: int, pairing: str) -> list[tuple[int, int]]:
    """(source, target) pairs: all ordered pairs (n(n-1) calls a round) or a ring (n calls)."""
    if pairing == "ring":
        return [(s, (s + 1) % n) for s in range(n)] if n > 1 else []
    return [(s, g) for s in range(n) for g in range(n) if s != g]


class WithAdvice(Method):
    """Wraps a debate method: same hooks, plus advice between broadcast and revision."""

    def __init__(self, inner: Method, *, name: str):
        super().__init__(inner.settings)
        self.inner, self.name = inner, name
        self.wants_logprobs = inner.wants_logprobs
        self.received: dict[int, list[tuple[str, str, str]]] = {}

    def n_agents(self):
        return self.inner.n_agents()

    def n_rounds(self):
        return self.inner.n_rounds()

    def persona(self, task, agent):
        return self.inner.persona(task, agent)

    def opening(self, task, agent, system):
        return self.inner.opening(task, agent, system)

    def prepare(self, backend):
        return self.inner.prepare(backend)

    def on_turn(self, turn):
        self.inner.on_turn(turn)

    def visible_peers(self, ctx, agent):
        return self.inner.visible_peers(ctx, agent)

    def peers(self, ctx, agent):
        return self.inner.peers(ctx, agent)

    async def before_round(self, ctx: RoundContext) -> None:
        await self.inner.before_round(ctx)
        live = {a.index: a for a in ctx.agents if a.answer.how != "abstained"}
        pairs = [(s, g) for s, g in advice_pairs(len(ctx.agents), self.settings.pairing)
                 if s in live and g in live]
        calls = await asyncio.gather(*(self._advise(ctx, live[s], live[g]) for s, g in pairs))
        self.received = {a.index: [] for a in ctx.agents}
        log = []
        for (s, g), call in zip(pairs, calls):
            if call.error:
                ctx.notice(f"Round {ctx.index}: advice from agent {s + 1} to agent {g + 1} failed "
                           f"({call.error}); the round goes on without it.")
                continue
            self.received[g].append((live[s].label, call.label, call.text))
            log.append({"source": s, "target": g, "type": call.label})
        ctx.details["advice"] = log

    async def _advise(self, ctx: RoundContext, source, target):
        messages = prompts.advice_messages(ctx.task, source.history[0].content, source.text,
                                           target.label, target.text)
        call = await ctx.aux_call("advice", messages, source=source.index, target=target.index,
                                  max_tokens=160, labeler=parse_advice_type)
        if call.error is None:
            ctx.emit("advice", agent=target.index, source=source.index, type=call.label, text=call.text)
        return call

    def debate_message(self, ctx: RoundContext, agent: int) -> str:
        advice = self.received.get(agent, [])
        ctx.agent_details.setdefault(agent, {})["advice_from"] = [src for src, _, _ in advice]
        block = prompts.advice_block(advice, ctx.task)
        base = self.inner.debate_message(ctx, agent)
        return f"{base}\n\n{block}" if block else base
