"""MAD-M² (Tian et al. 2026): between rounds, evaluate each previous response and mask the unreliable
ones before anyone sees them. Subjective: the model labels responses YES / NO / NOT SURE. Objective:
keep the responses whose exp(mean token logprob) is strictly above the median (lowest perplexity)."""
from __future__ import annotations

import asyncio
import math
import re
import statistics

from r2mad.config import ConfigError
from r2mad.debate import Agent, Method, RoundContext
from r2mad.prompts import common, mad
from r2mad.prompts import madm2 as prompts

_LABEL = re.compile(r"\b(NOT\s+SURE|YES|NO)\b", re.IGNORECASE)


def parse_judgment(text: str) -> str:
    """The first verdict word; a judgment without one counts as NOT SURE."""
    m = _LABEL.search(text or "")
    return re.sub(r"\s+", " ", m.group(1).upper()) if m else "NOT SURE"


def subjective_keep(label: str, strict: bool) -> bool:
    return label == "YES" or (label == "NOT SURE" and not strict)


def perplexity(mean_logprob: float) -> float:
    return math.exp(-mean_logprob)


def objective_keep(mean_logprobs: dict[int, float]) -> dict[int, bool]:
    """The official rule: keep responses strictly above the median of exp(mean logprob)."""
    if not mean_logprobs:
        return {}
    scores = {j: math.exp(lp) for j, lp in mean_logprobs.items()}
    median = statistics.median(scores.values())
    return {j: s > median for j, s in scores.items()}


class MADM2(Method):
    def __init__(self, settings, *, objective: bool):
        super().__init__(settings)
        self.objective = objective
        self.name = "madm2-objective" if objective else "madm2-subjective"
        self.wants_logprobs = objective
        self.keep: dict[int, dict[int, bool]] = {}  # viewer -> response author -> shown?

    def prepare(self, backend) -> list[str]:
        if not self.objective or backend.supports_logprobs:
            return []
        if not self.settings.madm2.fallback_subjective:
            raise ConfigError(f"Backbone '{backend.name}' gives no token logprobs, which objective masking "
                              "needs; choose madm2-subjective or allow the fallback.")
        self.objective, self.wants_logprobs = False, False
        return [f"Backbone '{backend.name}' gives no token logprobs; objective masking falls back to "
                "subjective masking."]

    async def before_round(self, ctx: RoundContext) -> None:
        turns = [t for t in ctx.previous.turns if t.error is None]
        if not self.objective:
            return await self._judge(ctx, turns)
        scored = {t.agent: t.mean_logprob for t in turns if t.mean_logprob is not None}
        if len(scored) < len(turns) and self.settings.madm2.fallback_subjective:
            ctx.notice(f"Round {ctx.index}: logprobs missing for some responses; masking this round "
                       "subjectively instead.")
            return await self._judge(ctx, turns)
        decision = objective_keep(scored)
        masks = {j: {"mean_logprob": round(lp, 4), "perplexity": round(perplexity(lp), 4),
                     "keep": decision[j]} for j, lp in scored.items()}
        ctx.details["masks"] = masks
        ctx.emit("mask", rule="objective", masks=masks)
        self.keep = {a.index: dict(decision) for a in ctx.agents}

    async def _judge(self, ctx: RoundContext, turns) -> None:
        """One judgment per response, shared by all agents (same base model), or one per viewer."""
        per_agent = self.settings.madm2.per_agent_judge
        jobs = [(v, t) for v in ([a.index for a in ctx.agents] if per_agent else [None])
                for t in turns if v != t.agent]
        calls = await asyncio.gather(*(ctx.aux_call("judge", prompts.judge_messages(ctx.task, t.text),
                                                    source=v, target=t.agent, max_tokens=96,
                                                    labeler=parse_judgment)
                                       for v, t in jobs))
        verdicts: dict[str, dict[int, dict]] = {}
        for (viewer, turn), call in zip(jobs, calls):
            label = call.label or "NOT SURE"  # a failed judgment counts as NOT SURE, recorded
            verdicts.setdefault(str(viewer if per_agent else "all"), {})[turn.agent] = {
                "label": label, "keep": subjective_keep(label, self.settings.madm2.strict),
                "judgment": call.text, "error": call.error}
        ctx.details["masks"] = verdicts
        ctx.emit("mask", rule="subjective", strict=self.settings.madm2.strict, masks=verdicts)
        self.keep = {a.index: {j: v["keep"] for j, v in verdicts.get(str(a.index) if per_agent else "all",
                                                                      {}).items()}
                     for a in ctx.agents}

    def visible_peers(self, ctx: RoundContext, agent: int) -> list[Agent]:
        shown = self.keep.get(agent, {})
        return [p for p in super().visible_peers(ctx, agent) if shown.get(p.index, False)]

    def debate_message(self, ctx: RoundContext, agent: int) -> str:
        visible = sorted(j for j, ok in self.keep.get(agent, {}).items() if ok)
        ctx.agent_details.setdefault(agent, {})["shown"] = visible
        if not visible:  # every response it would see was masked: solve again alone
            ctx.agent_details[agent]["resolved_alone"] = True
            return f"{prompts.resolve_alone_prompt(ctx.task)}\n\n{common.format_instruction(ctx.task)}"
        return mad.debate_prompt(ctx.task, self.peers(ctx, agent))
