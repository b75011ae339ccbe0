"""`python -m r2mad bench`'s debate speed figures, printed side by side (figures, not timed tests), on the
scripted OpenAI-compatible server `bench` starts itself, with a fixed latency per call or per token."""
from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from r2mad.backends.base import Wrapped
from r2mad.debate import Debate
from r2mad.memory.summaries import SummaryCache
from r2mad.methods import FULL, PLAIN, REGISTRY, make_method
from r2mad.methods.r2mad import SUMMARY_TOKENS
from r2mad.prompts.common import PERSONAS
from r2mad.prompts.r2mad import SUMMARY_SYSTEM
from r2mad.settings.config import ROOT, DebateSettings
from r2mad.types import Completion, Event, Task

TASK = Task("mcq", "Which planet is the largest in the solar system?",
            (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"), ("D", "Earth")), "B", "bench-1")
EASY = Task("mcq", "Which planet is the biggest one?", TASK.options, "B", "bench-2")  # all agree in round 0
COMPARED = [name for name, spec in REGISTRY.items() if "speed" in spec.tables]


class Counting(Wrapped):
    """Wraps a backend: counts tokens; `serial=True` makes calls wait for each other (a sequential loop)."""

    def __init__(self, inner, serial: bool = False):
        super().__init__(inner)
        self.tokens, self.generated, self.calls = 0, 0, 0
        self.lock = asyncio.Lock() if serial else None

    async def chat(self, messages, **kw) -> list[Completion]:
        if self.lock:
            async with self.lock:
                out = await self.inner.chat(messages, **kw)
        else:
            out = await self.inner.chat(messages, **kw)
        self.calls += 1
        self.tokens += sum(c.tokens_in + c.tokens_out for c in out)
        self.generated += sum(c.tokens_out for c in out)
        return out


# Round 0 splits the agents (one right, two wrong); they move to the right answer one by one.
ANSWERS = ("BBB", "CBB", "AAB")  # per agent (persona), per round
REASONING = ("Compare the planets by mass and by radius. The gas giants are far larger than the rocky "
             "planets, and among them one stands out with more than twice the mass of all the others "
             "together. Checking the options one by one against that fact gives a single candidate. ")


def reply_for(body: dict):
    """A plausible debate: agents disagree in round 0 and converge; judges reject wrong answers; advice
    is tagged by whether its target is right; summaries are one sentence."""
    from r2mad.bench.scripted.server import ok

    messages = body["messages"]
    text = messages[-1]["content"]
    if "verdict word" in text or "Begin with one tag" in text:
        judged = text.split("<response>" if "verdict word" in text else "<theirs>")[-1]
        right = "((B))" in judged
        if "verdict word" in text:
            return ok("YES, the reasoning holds." if right else "NO, the chosen option is not the largest.")
        return ok("SUPPORT: your comparison is sound." if right else
                  "REBUTTAL: compare the masses again; your option is not the largest planet.")
    if "Positions of the agents" in text:
        return ok("Most agents share one position; one moved toward it.")
    systems = [system for _, system in PERSONAS["mcq"]]
    persona = messages[0]["content"]
    easy = any(EASY.question in m["content"] for m in messages)
    answers = ANSWERS[systems.index(persona)] if persona in systems and not easy else "BBB"
    round_index = min(sum(m["role"] == "assistant" for m in messages), 2)
    return ok(f"{REASONING}So I choose (({answers[round_index]})).")


AGENT_WORDS, SUMMARY_WORDS = 400, 96  # a four-sentence summary; model "bench-full-summary": its whole budget


def long_reply(body: dict):
    """reply_for, with answers of AGENT_WORDS words and summaries of SUMMARY_WORDS (or their budget)."""
    from r2mad.bench.scripted.server import ok

    behaviour = reply_for(body)
    if body["messages"][0]["content"] == SUMMARY_SYSTEM:
        words = SUMMARY_TOKENS if body.get("model") == "bench-full-summary" else SUMMARY_WORDS
        return ok(" ".join(["Positions moved."] * (words // 2)))
    words = behaviour.text.split()
    return ok(" ".join((words[:-4] * (AGENT_WORDS // len(words) + 1))[:AGENT_WORDS - 4] + words[-4:]))


async def _timed_debate(backend, method: str, settings: DebateSettings, bank=None, summaries=None):
    marks: dict[tuple[str, int], float] = {}

    def emit(event: Event) -> None:
        if event.kind in ("round_start", "round_end"):
            marks[(event.kind, event.round)] = time.monotonic()

    started = time.monotonic()
    t = await Debate(backend, make_method(method, settings, bank=bank, summaries=summaries), emit=emit).run(TASK)
    ratios = [(marks[("round_end", r.index)] - marks[("round_start", r.index)])
              / max(turn.seconds for turn in r.turns) for r in t.rounds if ("round_start", r.index) in marks]
    return time.monotonic() - started, ratios


def _bank(tmp: Path):
    """The shipped demo bank when present; otherwise a small synthetic one."""
    from r2mad.backends.embedder import load_embedder
    from r2mad.bench.retrieval import synthetic_cases
    from r2mad.memory.bank import MemoryBank

    embedder = load_embedder()
    demo = ROOT / "memory" / "demo-mcq"
    if (demo / "manifest.yaml").exists():
        return MemoryBank.open(demo, embedder, index_root=tmp / "index")
    bank = MemoryBank.create(tmp / "bank", task_kind="math", split="synthetic", backbone="none",
                             embedder=embedder, code_version="bench", index_root=tmp / "index")
    bank.add(synthetic_cases(300))
    return bank


SETTINGS = DebateSettings(early_stop=False, max_tokens=64, seed=1)


def _backend(base_url: str, name: str, model: str = "bench"):
    from r2mad.backends.openai_compat import OpenAICompatBackend
    return OpenAICompatBackend(base_url=base_url, model=model, api_key=None, name=name)


async def debate_figures(base_url: str, per_token_url: str, repeats: int = 3) -> list[dict]:
    settings = SETTINGS
    backend = _backend(base_url, "bench")
    rows = []
    walls = {PLAIN: [], FULL: []}
    ratios, serial_ratios = [], []
    summaries = SummaryCache()  # "first debate" figures start cold
    pattern = settings.replace(summary="pattern")  # the speed variant: h from the stance pattern, cached
    with tempfile.TemporaryDirectory(prefix="r2mad-bench-") as tmp:
        bank = _bank(Path(tmp))
        # the first pattern-only debate finds the cache cold; each repeat then adds a later (warm) one, so
        # "later debates" has a figure even with --repeats 1
        walls["pattern"] = [(await _timed_debate(Counting(backend), FULL, pattern, bank, summaries))[0]]
        for _ in range(repeats):
            wall, r = await _timed_debate(Counting(backend), PLAIN, settings)
            walls[PLAIN].append(wall)
            ratios += r
            walls[FULL].append((await _timed_debate(Counting(backend), FULL, settings, bank, summaries))[0])
            walls["pattern"].append((await _timed_debate(Counting(backend), FULL, pattern, bank, summaries))[0])
            serial_ratios += (await _timed_debate(Counting(backend, serial=True), PLAIN, settings))[1]
        rows.append({"figure": "round wall / slowest call (concurrent agents)", "value": _med(ratios),
                     "target": "<= 1.1"})
        rows.append({"figure": "round wall / slowest call (sequential baseline)", "value": _med(serial_ratios),
                     "target": "~3 for 3 agents"})
        mad = statistics.median(walls[PLAIN])
        rows.append({"figure": "R²-MAD wall / MAD wall, faithful summary (a call costs the same whatever its length)",
                     "value": round(statistics.median(walls[FULL]) / mad, 3), "target": ""})
        later = statistics.median(walls["pattern"][1:]) / mad
        rows.append({"figure": "  pattern-only summary (a departure): first debate / later debates",
                     "value": f"{walls['pattern'][0] / mad:.3f} / {later:.3f}", "target": "<= 1.2"})
        summaries = SummaryCache()  # cold again, now asking the likely patterns' summaries while agents answer
        counting = Counting(backend)
        first = (await _timed_debate(counting, FULL, pattern.replace(prefetch_summaries=True), bank,
                                     summaries))[0]
        asked = counting.calls - settings.agents * settings.rounds
        rows.append({"figure": f"  pattern-only, first debate with prefetch_summaries ({asked} summary calls "
                               f"instead of {settings.rounds - 1})",
                     "value": round(first / mad, 3), "target": "<= 1.2"})
        # A real server takes time per generated token: agents write ~400 tokens, the summary four sentences
        # (SUMMARY_WORDS), at most its budget (SUMMARY_TOKENS, the worst case, on a second model name).
        per_token = _backend(per_token_url, "bench-per-token")
        full = _backend(per_token_url, "bench-per-token", "bench-full-summary")
        pattern_cache = SummaryCache()  # the pattern variant's cache for this server: starts cold
        mad = (await _timed_debate(per_token, PLAIN, settings))[0]
        faithful = (await _timed_debate(per_token, FULL, settings, bank, summaries))[0]
        worst = (await _timed_debate(full, FULL, settings, bank, summaries))[0]
        first = (await _timed_debate(per_token, FULL, pattern, bank, pattern_cache))[0]
        later = (await _timed_debate(per_token, FULL, pattern, bank, pattern_cache))[0]
        rows.append({"figure": f"R²-MAD wall / MAD wall, latency per generated token ({AGENT_WORDS}-word answers, "
                               f"{SUMMARY_WORDS}-word summary), faithful summary",
                     "value": round(faithful / mad, 3), "target": "<= 1.25 (paper: 1.5-2x)"})
        rows.append({"figure": f"  same, the summary filling its {SUMMARY_TOKENS}-token budget (worst case)",
                     "value": round(worst / mad, 3), "target": ""})
        rows.append({"figure": "  pattern-only summary (a departure), same server: first debate / later debates",
                     "value": f"{first / mad:.3f} / {later / mad:.3f}", "target": ""})
        shared, separate, round0 = await _side_by_side(TASK, backend, settings, bank, summaries)
        methods = len(COMPARED)
        rows.append({"figure": f"side-by-side tokens / separate runs ({', '.join(COMPARED)})",
                     "value": round(shared.tokens / separate.tokens, 3), "target": "<= 0.85"})
        rows.append({"figure": "  best possible from sharing round 0 (round 0 = "
                               f"{round0 / separate.tokens:.1%} of the separate runs' tokens)",
                     "value": round(1 - round0 * (methods - 1) / methods / separate.tokens, 3), "target": ""})
        rows.append({"figure": "side-by-side generated tokens / separate runs",
                     "value": round(shared.generated / separate.generated, 3), "target": ""})
        rows.append({"figure": "side-by-side calls / separate runs",
                     "value": round(shared.calls / separate.calls, 3), "target": ""})
        # With early stop (as in evaluation), a question all agents answer alike ends after round 0 in
        # every method, so all but one round 0 is saved; a benchmark mixes both kinds of question.
        easy_shared, easy_separate, _ = await _side_by_side(EASY, backend, settings.replace(early_stop=True), bank,
                                                            summaries)
        rows.append({"figure": "  same, early stop on, a question all agents answer alike in round 0",
                     "value": round(easy_shared.tokens / easy_separate.tokens, 3), "target": ""})
        hard_excess = max(0.0, shared.tokens - 0.85 * separate.tokens)
        easy_room = 0.85 * easy_separate.tokens - easy_shared.tokens
        rows.append({"figure": "  share of such questions a benchmark needs for 0.85 in tokens",
                     "value": f"{hard_excess / (hard_excess + easy_room):.0%}", "target": ""})
        bank.close()
    return rows


async def _side_by_side(task: Task, backend, settings: DebateSettings, bank, summaries):
    """(shared counter, separate counter, round-0 tokens of the separate runs) for the compared methods."""
    from r2mad.engine.runner import Setup, run_debate, run_methods

    shared, separate = Counting(backend), Counting(backend)
    await run_methods(task, COMPARED, Setup(shared, settings, bank=bank, summaries=summaries))
    round0 = 0
    for method in COMPARED:
        t = await run_debate(task, method, Setup(separate, settings, bank=bank, summaries=summaries))
        round0 += sum(turn.tokens_in + turn.tokens_out for turn in t.rounds[0].turns)
    return shared, separate, round0


def _med(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else float("nan")
