"""MAD-M² (Tian et al. 2026): between rounds, evaluate each previous response and mask the unreliable
ones before anyone sees them. Subjective: the model evaluates each response and ends with a tagged
YES / NO / NOT SURE. Objective: keep the responses whose exp(mean token logprob) is strictly above the
median. As in the authors' code, each round every agent gets a fresh prompt with the kept responses,
its own included; all masked -> the plain single-agent prompt (settings madm2.context = "history":
the agent's own history plus its kept peers, the paper text's reading)."""
from __future__ import annotations

import asyncio
import math
import re
import statistics

from r2mad.grading.answers import strip_think
from r2mad.methods.base import Agent, Method, RoundContext
from r2mad.prompts import common, mad
from r2mad.prompts import madm2 as prompts
from r2mad.settings.config import ConfigError
from r2mad.types import Message

_TAG = re.compile(r"<label>\s*(NOT\s+SURE|YES|NO)\s*</label>", re.IGNORECASE)
_WORD = r"\b(NOT\s+SURE|YES|NO)\b"


def parse_judgment(text: str) -> str:
    """The verdict in the last <label> tag; untagged, the last verdict word in capitals, else the last in
    any case ("There is no error. YES" reads YES); none at all counts as NOT SURE."""
    text = text or ""
    found = (_TAG.findall(text) or re.findall(_WORD, text)
             or re.findall(_WORD, text, re.IGNORECASE))
    return re.sub(r"\s+", " ", found[-1].upper()) if found else "NOT SURE"


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


JUDGE_TOKENS = 384  # an evaluation, then the tagged verdict


class MADM2(Method):
    steers = ("unmask",)

    def __init__(self, settings, *, objective: bool):
        super().__init__(settings)
        self.objective = objective
        self.name = "madm2-objective" if objective else "madm2-subjective"
        self.wants_logprobs = objective
        self.keep: dict[int, dict[int, bool]] = {}  # viewer -> response author -> shown?
        self.unmasked: set[int] = set()  # authors a fork's change shows this round whatever the masks

    def prepare(self, backend) -> list[str]:
        notices = super().prepare(backend)
        if not self.objective or backend.capabilities.supports_logprobs:
            return notices
        if not self.settings.madm2.fallback_subjective:
            raise ConfigError(f"Backbone '{backend.name}' gives no token logprobs, which objective masking "
                              "needs; choose madm2-subjective or allow the fallback.")
        self.objective, self.wants_logprobs = False, False
        return notices + [f"Backbone '{backend.name}' gives no token logprobs; objective masking falls back to "
                "subjective masking."]

    async def before_round(self, ctx: RoundContext) -> None:
        await self._decide(ctx)
        self.unmasked = set()
        for change in ctx.steered("unmask"):
            self._unmask(ctx, change.agent)

    def _unmask(self, ctx: RoundContext, j: int) -> None:
        """A fork's unmask: agent j's response is shown to every agent whatever the rule decided; each
        verdict about it keeps what was decided under "decided" and says "steer": "unmasked"."""
        masks = ctx.details.setdefault("masks", {})
        per_view = bool(masks) and all("keep" not in v for v in masks.values())  # subjective: viewer -> author
        for view in (masks.values() if per_view else [masks]):
            entry = view.setdefault(j, {})
            entry.update(decided=entry.get("keep", False), keep=True, steer="unmasked")
        for shown in self.keep.values():
            shown[j] = True
        self.unmasked.add(j)

    async def _decide(self, ctx: RoundContext) -> None:
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
        fresh = self.settings.madm2.context == "fresh"  # an agent's own response is judged too
        jobs = [(v, t) for v in ([a.index for a in ctx.agents] if per_agent else [None])
                for t in turns if fresh or v != t.agent]
        clips = self.clips  # the paper profile: the whole response, the whole output budget
        budget = min(JUDGE_TOKENS, self.settings.max_tokens) if clips else self.settings.max_tokens
        judged = prompts.judge_messages  # the judge reads the reply, never the agent's <think> reasoning
        calls = await asyncio.gather(*(ctx.aux_call("judge", judged(ctx.task, strip_think(t.text), clips),
                                                    source=v, target=t.agent, max_tokens=budget,
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
        visible = sorted(j for j, ok in self.keep.get(agent, {}).items()
                         if ok and (j == agent or not ctx.agents[j].hidden))  # a fork's mask
        fresh = self.settings.madm2.context == "fresh"
        if not fresh:
            visible = [j for j in visible if j != agent]
        ctx.agent_details.setdefault(agent, {})["shown"] = visible
        unmasked = [j for j in visible if j in self.unmasked]
        if unmasked:
            ctx.agent_details[agent]["steer"] = {"unmasked": unmasked}
        if not visible:  # every response it would see was masked: solve again alone
            ctx.agent_details[agent]["resolved_alone"] = True
            if fresh:
                return common.task_prompt(ctx.task)  # the plain single-agent prompt, in a fresh context
            return f"{prompts.resolve_alone_prompt(ctx.task)}\n\n{common.format_instruction(ctx.task)}"
        if not fresh:
            return mad.debate_prompt(ctx.task, self.peers(ctx, agent))
        live = {a.index: a for a in ctx.agents if a.answer.how != "abstained"}
        shown = [(f"{live[j].label} (your own answer)" if j == agent else live[j].label, live[j].text)
                 for j in visible if j in live]
        return prompts.fresh_prompt(ctx.task, self.fit(ctx, agent, shown))

    def next_prompt(self, ctx: RoundContext, agent: Agent, message: str) -> list[Message]:
        if self.settings.madm2.context == "history":
            return super().next_prompt(ctx, agent, message)
        return [agent.history[0], Message("user", message)]  # its persona, then this round's prompt alone
