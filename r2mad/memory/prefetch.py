"""R²-MAD's pipelining, kept out of the method: summaries asked speculatively while agents answer, and
responses embedded as they arrive. Speed only: what R²-MAD computes is r2mad.methods.r2mad's."""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
from typing import Any, Awaitable

from r2mad.grading.answers import is_unanimous, strip_think
from r2mad.memory.summaries import SummaryCache, summary_key
from r2mad.prompts import r2mad as prompts

PREFETCH_LIMIT = 32  # at most this many speculative summary calls per round
PREFETCH_TOKENS = 96  # a pattern summary's budget


def pattern_summary_messages(now: list[str | None], before: list[str | None] | None):
    """h^(t-1) asked of the model on the abstract stance pattern only, so equal patterns give equal
    prompts, and the summary cache answers repeats without a call."""
    return prompts.summary_messages(prompts.stance_pattern(now, before))


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


class SummaryPrefetch:
    """The summaries of the stance patterns a round is likely to end in, asked while its agents answer,
    so the next round finds h ready. Every call is counted in the transcript (in the round that uses it,
    or in this one when the debate ends here); the cache keeps the answers for later debates."""

    def __init__(self, summaries: SummaryCache):
        self.summaries = summaries
        self.calls: dict[str, asyncio.Task] = {}  # summary prompt -> speculative call
        self.answers: dict[int, dict[int, Any]] = {}  # round -> agent -> answer, as they come back
        self.round = None  # the RoundContext being answered
        self.next = None  # the next round's, recording the calls

    def start(self, ctx, n_agents: int) -> None:
        """Ask, in the background, for the summary of each likely end of round `ctx` not cached yet."""
        self.round = ctx
        before = [t.answer.value for t in ctx.previous.turns] if ctx.index > 0 else None
        self.next = dataclasses.replace(ctx, index=ctx.index + 1, aux=[])
        for now in likely_outcomes(before, n_agents):
            if ctx.settings.early_stop and len(set(now)) == 1:
                continue  # a unanimous round ends the debate: no next round needs its summary
            messages = pattern_summary_messages(now, before)
            prompt = messages[-1].content
            if self.summaries.get(summary_key(ctx.backend, messages)) is None and prompt not in self.calls:
                self.calls[prompt] = asyncio.ensure_future(self._ask(self.next, messages))

    def on_turn(self, turn, n_agents: int) -> bool:
        """Note an answer; True once the round's answers are all in (then a debate ending here, unanimous
        under early stop or with every call failed, cancels the calls still running)."""
        arrived = self.answers.setdefault(turn.round, {})
        arrived[turn.agent] = turn.answer
        if len(arrived) < n_agents:
            return False
        ctx = self.round
        if self.calls and ctx is not None and ctx.index == turn.round:
            answers = list(arrived.values())
            stops = ctx.settings.early_stop and is_unanimous(answers, ctx.task)
            if stops or all(a.how == "abstained" for a in answers):
                for call in self.calls.values():
                    call.cancel()
                ctx.aux.extend(dataclasses.replace(c, round=turn.round) for c in self.next.aux)
                self.calls = {}
        return True

    async def collect(self, ctx, prompt: str) -> bool | None:
        """Wait for the calls and count them in round `ctx`; whether `prompt` was among them (None: none
        was asked)."""
        if not self.calls:
            return None
        asked = prompt in self.calls
        await asyncio.gather(*self.calls.values(), return_exceptions=True)
        ctx.aux.extend(self.next.aux)
        self.calls = {}
        return asked

    async def _ask(self, ctx, messages) -> None:
        call = await ctx.aux_call("summary", messages, max_tokens=PREFETCH_TOKENS, labeler=lambda text: "prefetched")
        summary = strip_think(call.text)
        if not call.error and summary:
            self.summaries.put(summary_key(ctx.backend, messages), summary)


class ResponseEmbeddings:
    """The agents' response vectors, computed while the debate waits for something else: each response
    as it arrives, except a round's last (embedded with the debate states: one batch, not two)."""

    def __init__(self, embedder=None):
        self.embedder = embedder  # None: nothing is embedded (no bank)
        self.pending: dict[int, asyncio.Future] = {}  # agent -> embedding of its latest response

    def on_turn(self, turn, last_of_round: bool) -> None:
        if self.embedder is not None and turn.error is None and not last_of_round:
            self.pending[turn.agent] = asyncio.ensure_future(
                asyncio.to_thread(self.embedder.encode, [strip_think(turn.text)]))

    def take(self) -> dict[int, asyncio.Future]:
        """The previous round's embeddings under way (the next round starts with none)."""
        pending, self.pending = self.pending, {}
        return pending

    @staticmethod
    async def ready(pending: dict[int, asyncio.Future]) -> dict[int, Any]:
        return {agent: (await future)[0] for agent, future in pending.items()}

    async def during(self, call: Awaitable, pending: dict[int, asyncio.Future], agents) -> tuple[Any, dict]:
        """(`call`'s result, agent -> vector): the responses not embedded yet are embedded in one batch
        while `call` is in flight."""
        task = asyncio.ensure_future(call)
        vectors = await self.ready(pending)
        missing = [a for a in agents if a.index not in vectors]
        if self.embedder is not None and missing:
            vectors.update(zip([a.index for a in missing],
                               await asyncio.to_thread(self.embedder.encode, [a.text for a in missing])))
        return await task, vectors
