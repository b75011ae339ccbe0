"""The first screen's example cards: a question from the demo test split with a method preset, and the
finished debate recorded for it on the embedded model with seed 0 (shown at once; "Run it live" runs it
again). `python -m r2mad.ui.examples` records them into data/examples/, again for any recording the
current defaults or prompts would no longer produce (`stale`). No Gradio here."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from r2mad.types import Task, Transcript

CACHE = Path(__file__).resolve().parents[2] / "data" / "examples"
BACKBONE = "smollm2-135m"  # the cache holds only what this deterministic setting produced
SEED = 0


@dataclass(frozen=True)
class ExampleCard:
    id: str
    method: str
    dataset: str  # demo-mcq | demo-math
    question_id: str
    blurb: str  # "Method: what the card teaches"
    bank: str = ""

    def label(self, task: Task) -> str:
        """The method's name alone on the first line (drawn bold, so it never wraps half-bold), then what the
        card teaches, then the question."""
        q = task.question if len(task.question) <= 72 else task.question[:71] + "…"
        name, teaches = self.blurb.split(": ", 1)
        return f"{name}\n{teaches[0].upper()}{teaches[1:]}\n{q}"


CARDS = (
    ExampleCard("mad-berlin", "mad", "demo-mcq", "mcq-027", "MAD: agents debate"),
    ExampleCard("r2mad-plants", "r2mad", "demo-mcq", "mcq-024", "R²-MAD: agents recall past debates",
                bank="memory/demo-mcq"),
    ExampleCard("madm2-algebra", "madm2-objective", "demo-math", "math-009",
                "MAD-M²: weak answers are masked"),
    ExampleCard("truemad-piano", "truemad", "demo-mcq", "mcq-006", "TrueMAD: agents advise each other"),
)


def card_task(card: ExampleCard) -> Task:
    from r2mad.evaluation.datasets import load_split

    for task in load_split(card.dataset, "test").tasks:
        if task.id == card.question_id:
            return task
    raise ValueError(f"Example {card.id}: question {card.question_id} is not in {card.dataset}'s test split.")


def cached(card: ExampleCard, folder: Path = CACHE) -> Transcript | None:
    """The finished recorded debate of a card, or None when none was recorded (or it no longer reads)."""
    path = folder / f"{card.id}.json"
    try:
        t = Transcript.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return t if t.status == "done" else None


def recording_settings(config):
    """The app's defaults with seed 0; a generous deadline, so a busy CPU does not cut the recording."""
    return config.settings.replace(seed=SEED, deadline_s=7200)


def stale(card: ExampleCard, recorded: Transcript, config) -> list[str]:
    """Why the current code would not reproduce a recording: settings that differ from today's defaults
    (the answer guard as the embedded model decides it) and agents whose round-0 prompt changed."""
    from r2mad.methods import make_method

    now = dataclasses.asdict(recording_settings(config))
    why = [f"setting {key}" for key in sorted(set(now) | set(recorded.settings))
           if key != "deadline_s" and now.get(key) != recorded.settings.get(key)
           and not (key == "answer_guard" and now[key] == "auto" and recorded.settings.get(key) == "on")]
    method, task = make_method(card.method, recording_settings(config)), card_task(card)
    if recorded.task != task or recorded.method != method.name:
        why.append("question or method")
    for turn in recorded.rounds[0].turns if recorded.rounds else ():
        name, system = method.persona(task, turn.agent)
        if tuple(method.opening(task, turn.agent, system)) != tuple(turn.prompt):
            why.append(f"agent {turn.agent + 1}'s round-0 prompt")
    return why


async def record(card: ExampleCard, config) -> Transcript:
    """Run a card's debate as the app would with its defaults on the embedded model, seed 0."""
    from r2mad.resources import backend_for, open_bank
    from r2mad.runner import run_debate

    task = card_task(card)
    settings = recording_settings(config)
    bank, notices = open_bank(card.bank or None, config, task_kind=task.kind) if card.bank else (None, [])
    return await run_debate(task, card.method, backend_for(config, BACKBONE), settings, backbone=BACKBONE,
                            bank=bank, notices=tuple(notices))


def main() -> None:
    import asyncio

    from r2mad.config import load_config

    config = load_config()
    CACHE.mkdir(parents=True, exist_ok=True)
    for card in CARDS:
        recorded = cached(card)
        if recorded is not None and not stale(card, recorded, config):
            continue
        t = asyncio.run(record(card, config))
        (CACHE / f"{card.id}.json").write_text(json.dumps(json.loads(t.to_json()), ensure_ascii=False, indent=1),
                                               encoding="utf-8")
        print(f"{card.id}: {t.status}, final {t.final}, {t.seconds:.0f} s")


if __name__ == "__main__":
    main()
