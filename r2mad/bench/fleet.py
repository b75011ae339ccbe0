"""An eval run through a router in front of scripted replicas, as `bench --prefix / --scale` and the router
tests drive it: a synthetic multiple-choice split (distinct questions, so no two debates share a prompt by
accident), the scripted debate replies of speed.py, and `run_eval` itself on the backbone a lab would use."""
from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from r2mad.bench.speed import reply_for
from r2mad.evaluation.datasets import Split
from r2mad.settings.config import DebateSettings
from r2mad.types import Task

DATASET = "bench-mcq"
OPTIONS = (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"), ("D", "Earth"))
SETTINGS = DebateSettings(early_stop=False, max_tokens=64, seed=1, answer_guard="off")  # 3 agents x 3 rounds


def synthetic_split(n: int, tag: str = "bench") -> Split:
    """`n` questions; a different `tag` gives questions no other split shares a prompt with."""
    tasks = tuple(Task("mcq", f"Survey {tag}-{i}: which planet of the solar system is the largest by mass?",
                       OPTIONS, "B", f"{tag}-{i}") for i in range(n))
    return Split("test", DATASET, tasks, 0, tuple(t.id for t in tasks))


def replica_reply(body: dict):
    """A plausible debate (speed.reply_for): agents split in round 0 and converge; judges, advice, summaries.
    Asked for logprobs (objective MAD-M²), an answer gets one per word, steady within the answer and
    different between answers (from a digest of its text), so the median rule keeps some and masks others."""
    behaviour = reply_for(body)
    if body.get("logprobs"):
        text = behaviour.text if isinstance(behaviour.text, str) else behaviour.text[0]
        level = -0.05 - hashlib.sha1(text.encode()).digest()[0] / 255
        behaviour.logprobs = [level] * max(1, len(text.split()))
    return behaviour


@dataclass(frozen=True)
class EvalFigures:
    rows: list[dict]
    seconds: float  # wall time of the whole run_eval

    @property
    def debates_per_hour(self) -> float:
        return len(self.rows) * 3600 / self.seconds if self.seconds else float("nan")


def run_through(base_url: str, methods: tuple[str, ...], split: Split, out: Path, *, concurrency: int = 32,
                bank=None, settings: DebateSettings = SETTINGS, max_retries: int = 2,
                model: str = "replica-model", timeout_s: float = 60) -> EvalFigures:
    """`eval` of `methods` over `split` against the OpenAI-compatible endpoint at `base_url` (a router)."""
    from r2mad.backends.openai_compat import OpenAICompatBackend
    from r2mad.engine.evaluate import run_eval
    from r2mad.evaluation.rows import EvalRun, read_rows
    from r2mad.memory.summaries import SummaryCache

    backend = OpenAICompatBackend(base_url=base_url, model=model, api_key=None, name="fleet",
                                  max_retries=max_retries, timeout_s=timeout_s)
    run = EvalRun(split, methods, "fleet", settings, share_round0=len(methods) > 1)
    async def run_and_close() -> None:
        try:
            await run_eval(run, backend, out, bank=bank, concurrency=concurrency, summaries=SummaryCache())
        finally:
            await backend.aclose()

    started = time.monotonic()
    asyncio.run(run_and_close())
    return EvalFigures(read_rows(out / "rows.jsonl"), time.monotonic() - started)
