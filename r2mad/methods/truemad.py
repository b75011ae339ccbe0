"""TrueMAD (Bao et al. 2026) as a plug-in: after answers are broadcast and before self-revision, each
source agent writes one-to-one advice (support, rebuttal, refinement or a question) to a target agent;
the target then revises, keeping control over how. Our re-implementation: no official code exists."""
from __future__ import annotations

import asyncio
import re

from r2mad.grading.answers import strip_think
from r2mad.methods.base import Plugin, RoundContext, keeps_clips
from r2mad.prompts import truemad as prompts

ADVICE_TOKENS = 160  # the demo's cap: a tag and at most four sentences
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


class Advice(Plugin):
    """Advice between broadcast and revision, beside any debate method's own hooks."""
    steers = ("drop-advice",)

    def __init__(self):
        self.received: dict[int, list[tuple[str, str, str]]] = {}

    def check_steer(self, change, settings) -> str | None:
        source, target, n = change.source, change.agent, settings.agents
        pairs = advice_pairs(n, settings.truemad.pairing)
        if not 0 <= source < n or source == target:
            return (f"Advice to agent {target + 1} cannot come from agent {source + 1}; name another agent of "
                    f"this run (1 to {n}) as the source.")
        if (source, target) not in pairs:
            sources = ", ".join(str(s + 1) for s, g in pairs if g == target)
            return (f"Agent {target + 1} gets no advice from agent {source + 1} under {settings.truemad.pairing} "
                    f"pairing; drop the advice of agent {sources or 'none'} instead.")
        return None

    async def before_round(self, ctx: RoundContext) -> None:
        live = {a.index: a for a in ctx.agents if a.answer.how != "abstained"}
        dropped = {(c.source, c.agent) for c in ctx.steered("drop-advice")}  # a fork's change: not asked for
        for s, g in sorted(dropped):
            ctx.agent_details.setdefault(g, {}).setdefault("steer", {})["drop-advice"] = s + 1
        pairs = [(s, g) for s, g in advice_pairs(len(ctx.agents), ctx.settings.truemad.pairing)
                 if s in live and g in live and (s, g) not in dropped]
        calls = await asyncio.gather(*(self._advise(ctx, live[s], live[g]) for s, g in pairs))
        self.received = {a.index: [] for a in ctx.agents}
        log = []
        for (s, g), call in zip(pairs, calls):
            if call.error:
                ctx.notice(f"Round {ctx.index}: advice from agent {s + 1} to agent {g + 1} failed "
                           f"({call.error}); the round goes on without it.")
                continue
            self.received[g].append((live[s].label, call.label, strip_think(call.text)))
            log.append({"source": s, "target": g, "type": call.label})
        ctx.details["advice"] = log
        if dropped:
            ctx.details["advice_dropped"] = [{"source": s, "target": g} for s, g in sorted(dropped)]

    async def _advise(self, ctx: RoundContext, source, target):
        clips = keeps_clips(ctx.settings, [ctx.backend])  # the paper profile: whole texts, the whole budget
        messages = prompts.advice_messages(ctx.task, source.history[0].content, source.text,
                                           target.label, target.text, clips)
        budget = min(ADVICE_TOKENS, ctx.settings.max_tokens) if clips else ctx.settings.max_tokens
        call = await ctx.aux_call("advice", messages, source=source.index, target=target.index,
                                  max_tokens=budget, labeler=parse_advice_type)
        if call.error is None:
            ctx.emit("advice", agent=target.index, source=source.index, type=call.label, text=strip_think(call.text))
        return call

    def extend_message(self, ctx: RoundContext, agent: int, message: str) -> str:
        clipped = keeps_clips(ctx.settings, [ctx.backend])
        advice = ctx.within_budget(agent, "advice message", self.received.get(agent, []),
                                   lambda kept: prompts.advice_block(kept, ctx.task, clipped))
        ctx.agent_details.setdefault(agent, {})["advice_from"] = [src for src, _, _ in advice]
        block = prompts.advice_block(advice, ctx.task, clipped)
        return f"{message}\n\n{block}" if block else message
