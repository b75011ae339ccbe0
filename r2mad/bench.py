"""`python -m r2mad bench`: speed figures, printed side by side (figures, not timed tests). With no
arguments it starts the scripted OpenAI-compatible server itself with a fixed latency per call."""
from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from r2mad.config import DebateSettings
from r2mad.debate import Debate
from r2mad.methods import make_method
from r2mad.types import Completion, Event, Task

TASK = Task("mcq", "Which planet is the largest in the solar system?",
            (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"), ("D", "Earth")), "B", "bench-1")
COMPARED = ["mad", "madm2-subjective", "truemad", "r2mad"]


class Counting:
    """Wraps a backend: counts tokens; `serial=True` makes calls wait for each other (a sequential loop)."""

    def __init__(self, inner, serial: bool = False):
        self.inner, self.name, self.supports_logprobs = inner, inner.name, inner.supports_logprobs
        self.tokens, self.calls = 0, 0
        self.lock = asyncio.Lock() if serial else None

    async def chat(self, messages, **kw) -> list[Completion]:
        if self.lock:
            async with self.lock:
                out = await self.inner.chat(messages, **kw)
        else:
            out = await self.inner.chat(messages, **kw)
        self.calls += 1
        self.tokens += sum(c.tokens_in + c.tokens_out for c in out)
        return out


def reply_for(body: dict):
    """Agents disagree in round 0 and drift to B; judges say YES; everything else is short text."""
    from r2mad.fakeserver import ok

    text = body["messages"][-1]["content"]
    if "verdict word" in text:
        return ok("YES, the reasoning holds.")
    if "advice" in text and "Begin with one tag" in text:
        return ok("SUPPORT: the steps look right.")
    if "Positions of the agents" in text:
        return ok("Most agents share one position; one moved toward it.")
    letter = "ABC"[len(body["messages"]) % 3] if len(body["messages"]) < 4 else "B"
    return ok(f"Jupiter is the largest planet by mass and volume, so I pick it. (({letter}))")


async def _timed_debate(backend, method: str, settings: DebateSettings, bank=None):
    marks: dict[tuple[str, int], float] = {}

    def emit(event: Event) -> None:
        if event.kind in ("round_start", "round_end"):
            marks[(event.kind, event.round)] = time.monotonic()

    started = time.monotonic()
    t = await Debate(backend, make_method(method, settings, bank=bank), emit=emit).run(TASK)
    ratios = [(marks[("round_end", r.index)] - marks[("round_start", r.index)])
              / max(turn.seconds for turn in r.turns) for r in t.rounds if ("round_start", r.index) in marks]
    return time.monotonic() - started, ratios


def _bank(tmp: Path):
    """The shipped demo bank when present; otherwise a small synthetic one."""
    from r2mad.bank import MemoryBank
    from r2mad.bench_memory import synthetic_cases
    from r2mad.embedder import load_embedder

    embedder = load_embedder()
    demo = Path(__file__).resolve().parent.parent / "memory" / "demo-mcq"
    if (demo / "manifest.yaml").exists():
        return MemoryBank.open(demo, embedder, index_root=tmp / "index")
    bank = MemoryBank.create(tmp / "bank", task_kind="math", split="synthetic", backbone="none",
                             embedder=embedder, code_version="bench", index_root=tmp / "index")
    bank.add(synthetic_cases(300))
    return bank


async def debate_figures(base_url: str, repeats: int = 3) -> list[dict]:
    from r2mad.backends.openai_compat import OpenAICompatBackend

    settings = DebateSettings(early_stop=False, max_tokens=64, seed=1)
    backend = OpenAICompatBackend(base_url=base_url, model="bench", api_key=None, name="bench")
    rows = []
    walls = {"mad": [], "r2mad": []}
    ratios, serial_ratios = [], []
    with tempfile.TemporaryDirectory(prefix="r2mad-bench-") as tmp:
        bank = _bank(Path(tmp))
        for _ in range(repeats):
            wall, r = await _timed_debate(Counting(backend), "mad", settings)
            walls["mad"].append(wall)
            ratios += r
            walls["r2mad"].append((await _timed_debate(Counting(backend), "r2mad", settings, bank))[0])
            serial_ratios += (await _timed_debate(Counting(backend, serial=True), "mad", settings))[1]
        rows.append({"figure": "round wall / slowest call (concurrent agents)", "value": _med(ratios),
                     "target": "<= 1.1"})
        rows.append({"figure": "round wall / slowest call (sequential baseline)", "value": _med(serial_ratios),
                     "target": "~3 for 3 agents"})
        mad = statistics.median(walls["mad"])
        rows.append({"figure": "R²-MAD wall / MAD wall, first debate (summaries not cached)",
                     "value": round(walls["r2mad"][0] / mad, 3), "target": "<= 1.2 (paper: 1.5-2x)"})
        if len(walls["r2mad"]) > 1:
            rows.append({"figure": "R²-MAD wall / MAD wall, later debates (stance patterns seen before)",
                         "value": round(statistics.median(walls["r2mad"][1:]) / mad, 3), "target": "<= 1.2"})
        shared, separate = Counting(backend), Counting(backend)
        from r2mad.runner import run_side_by_side, run_debate

        await run_side_by_side(TASK, COMPARED, shared, settings, bank=bank)
        for method in COMPARED:
            await run_debate(TASK, method, separate, settings, bank=bank)
        rows.append({"figure": f"side-by-side tokens / separate runs ({', '.join(COMPARED)})",
                     "value": round(shared.tokens / separate.tokens, 3), "target": "<= 0.85"})
        rows.append({"figure": "side-by-side calls / separate runs (same methods)",
                     "value": round(shared.calls / separate.calls, 3), "target": "(round 0 = 9 of the calls)"})
        bank.close()
    return rows


def _med(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else float("nan")


def register(sub) -> None:
    p = sub.add_parser("bench", help="print speed figures (debate concurrency, R²-MAD overhead, retrieval)")
    p.add_argument("--latency", type=float, default=0.2, help="seconds per call of the scripted server")
    p.add_argument("--sizes", default="1000,10000,100000", help="bank sizes for the retrieval figures")
    p.add_argument("--repeats", type=int, default=3)
    p.set_defaults(func=cmd_bench)


def cmd_bench(args, config) -> int:
    from r2mad.bench_memory import bench_retrieval, format_rows
    from r2mad.fakeserver import FakeServer

    def responder(body):
        behaviour = reply_for(body)
        behaviour.latency_s = args.latency
        return behaviour

    with FakeServer(models=["bench"], responder=responder) as server:
        rows = asyncio.run(debate_figures(server.base_url, args.repeats))
    print(f"Debate figures (scripted server, {args.latency:g} s per call, 3 agents x 3 rounds):")
    print(format_rows(rows))
    sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    print("\nRetrieval (one agent-round; target <= 20 ms p50 at 10k cases):")
    print(format_rows(bench_retrieval(sizes=sizes)))
    return 0
