"""The first screen's example cards: a question from the demo test split with a method preset, and the
finished debate recorded for it with seed 0 (shown at once; "Run it live" runs it again), on the embedded model
unless recorded on another backbone. `python -m r2mad.ui.examples [--backbone NAME]` records them into
data/examples/, again for any recording the current defaults or prompts would no longer produce (`stale`) or that
another backbone made; each recording keeps the model it used (`recorded_with`), which its card shows, and, on the
embedded model, the build that decides its tokens beside the seed (llama-cpp-python's version and the weights it
runs): a recording made on another build is stale, since seed 0 there gives another debate. No Gradio here."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from r2mad.methods import PLAIN
from r2mad.settings.config import ROOT
from r2mad.types import Task, Transcript

CACHE = ROOT / "data" / "examples"
BACKBONE = "smollm2-135m"  # the cache holds only what this deterministic setting produced
SEED = 0


@dataclass(frozen=True)
class ExampleCard:
    id: str
    method: str
    dataset: str  # demo-mcq | demo-math; "" for a question of the card's own
    question_id: str
    blurb: str  # "Method: what the card teaches"
    bank: str = ""
    question: str = ""  # a question of the card's own (no data set has it), of answer kind `kind`
    kind: str = ""

    def label(self, task: Task, model: str | None = None) -> str:
        """The method's name alone on the first line (drawn bold, so it never wraps half-bold), then what the
        card teaches, then the question, then the model its recording used."""
        q = task.question if len(task.question) <= 72 else task.question[:71] + "…"
        name, teaches = self.blurb.split(": ", 1)
        return f"{name}\n{teaches[0].upper()}{teaches[1:]}\n{q}" + (f"\nRecorded on {model}" if model else "")


CARDS = (
    ExampleCard("mad-berlin", "mad", "demo-mcq", "mcq-027", "MAD: agents debate"),
    ExampleCard("r2mad-plants", "r2mad", "demo-mcq", "mcq-024", "R²-MAD: agents recall past debates",
                bank="memory/demo-mcq"),
    ExampleCard("madm2-algebra", "madm2-objective", "demo-math", "math-009",
                "MAD-M²: weak answers are masked"),
    ExampleCard("truemad-piano", "truemad", "demo-mcq", "mcq-006", "TrueMAD: agents advise each other"),
    ExampleCard("mad-rust-or-go", PLAIN, "", "", "MAD: an open question, its positions and the dissent",
                question="Should I learn Rust or Go first?", kind="open"),
)


def card_task(card: ExampleCard) -> Task:
    if card.question:
        return Task(card.kind, card.question, id=card.id, source="card")
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


def recorded_with(config, backbone: str) -> dict[str, str]:
    """What a recording keeps of the model it used: the backbone's name, the model's name (its label up to the
    first bracket) and the model id or file behind it."""
    spec = config.backbone(backbone)
    if spec.kind == "embedded":
        from r2mad.backends.embedded import GGUF_NAME

        served = spec.gguf_file or GGUF_NAME
    else:
        served = spec.model or spec.base_url or ""
    kept = {"backbone": backbone, "model": (spec.label or backbone).split(" (")[0].strip(), "served": served}
    return {**kept, "build": model_build()} if spec.kind == "embedded" and not spec.gguf_repo else kept


def model_build() -> str:
    """What decides the embedded model's tokens beside the seed: the llama.cpp build and the weights it runs
    ("llama-cpp-python 0.3.36, SmolLM2-135M-Instruct.Q4_1.gguf as Q8_0")."""
    from importlib.metadata import version

    from r2mad.backends.embedded import smollm2_path
    from r2mad.backends.requantize import SLOW_FILE_TYPES, file_type

    path = smollm2_path()
    return f"llama-cpp-python {version('llama_cpp_python')}, {path.name}" + (
        " as Q8_0" if file_type(path) in SLOW_FILE_TYPES else "")


def recording_build(card: ExampleCard, folder: Path = CACHE) -> str | None:
    """The build a card's recording was made on (None: not recorded on the embedded model, or before builds
    were kept)."""
    try:
        return (json.loads((folder / f"{card.id}.json").read_text(encoding="utf-8")).get("recorded_with")
                or {}).get("build")
    except (OSError, ValueError):
        return None


def recording_model(card: ExampleCard, folder: Path = CACHE) -> str | None:
    """The model a card's recording used, as the card shows it (None: no recording). Read from the recording's
    `recorded_with`, else (older recordings) from its backbone's configured label."""
    try:
        data = json.loads((folder / f"{card.id}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kept = data.get("recorded_with") or {}
    return kept.get("model") or data.get("backbone")


def write_recording(path: Path, t: Transcript, config, backbone: str) -> None:
    data = {**json.loads(t.to_json()), "recorded_with": recorded_with(config, backbone)}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def recording_settings(config):
    """The app's defaults with seed 0; a generous deadline, so a busy CPU does not cut the recording."""
    return config.settings.replace(seed=SEED, deadline_s=7200)


def stale(card: ExampleCard, recorded: Transcript, config, build: str | None = None) -> list[str]:
    """Why the current code would not reproduce a recording: settings that differ from today's defaults
    (the answer guard as the backbone decides it), agents whose round-0 prompt changed and, given the
    recording's `build`, an embedded model of another build."""
    from r2mad.methods import make_method

    now = dataclasses.asdict(recording_settings(config))
    why = [f"setting {key}" for key in sorted(set(now) | set(recorded.settings))
           if key != "deadline_s" and now.get(key) != recorded.settings.get(key)
           and not (key == "answer_guard" and now[key] == "auto" and recorded.settings.get(key) in ("on", "off"))]
    method, task = make_method(card.method, recording_settings(config)), card_task(card)
    if recorded.task != task or recorded.method != method.name:
        why.append("question or method")
    for turn in recorded.rounds[0].turns if recorded.rounds else ():
        name, system = method.persona(task, turn.agent)
        if tuple(method.opening(task, turn.agent, system)) != tuple(turn.prompt):
            why.append(f"agent {turn.agent + 1}'s round-0 prompt")
    if recorded.backbone == BACKBONE and build is not None and build != model_build():
        why.append(f"model build (recorded on {build}; this is {model_build()})")
    return why


async def record(card: ExampleCard, config, backbone: str = BACKBONE) -> Transcript:
    """Run a card's debate through the engine as the app would with its defaults, seed 0, on `backbone` (the
    embedded model unless told; a remote backbone takes its key from the environment); nothing is saved."""
    from r2mad.engine.resources import Local
    from r2mad.engine.service import KeptSink, RunRequest, start

    request = RunRequest(card_task(card), (card.method,), recording_settings(config), backbone, source="examples",
                         bank=card.bank or None)
    [runs] = await start([request], Local(config), KeptSink())
    return runs.transcripts[card.method]


def main(argv: list[str] | None = None) -> None:
    import argparse
    import asyncio

    from r2mad.settings.config import ConfigError, load_config

    parser = argparse.ArgumentParser(prog="python -m r2mad.ui.examples",
                                     description="Record the first screen's example debates.")
    parser.add_argument("--backbone", default=BACKBONE, help=f"a backbone of backbones.yaml (default {BACKBONE})")
    parser.add_argument("--config", type=Path, default=None, help="the configs folder (default configs/)")
    parser.add_argument("--out", type=Path, default=CACHE, help="the folder of the recordings (default data/examples)")
    parser.add_argument("--force", action="store_true", help="record every card again, even a current recording")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config) if args.config else load_config()
        config.backbone(args.backbone)
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None
    args.out.mkdir(parents=True, exist_ok=True)
    for card in CARDS:
        recorded = cached(card, args.out)
        build = recording_build(card, args.out)
        if (recorded is not None and not args.force and recorded.backbone == args.backbone
                and not stale(card, recorded, config, build or ("" if args.backbone == BACKBONE else None))):
            print(f"{card.id}: current ({recording_model(card, args.out)}{', ' + build if build else ''}), kept")
            continue
        t = asyncio.run(record(card, config, args.backbone))
        if t.status != "done":
            print(f"{card.id}: {t.status} ({'; '.join(t.notices) or 'see the log'}), not kept")
            continue
        write_recording(args.out / f"{card.id}.json", t, config, args.backbone)
        kept = recorded_with(config, args.backbone)
        verdict = "unscored" if t.correct is None else "right" if t.correct else "wrong"
        print(f"{card.id}: final {t.final.value}, {verdict}, {t.usage().calls} calls, "
              f"{t.seconds:.0f} s on {kept['model']}" + (f" ({kept['build']})" if "build" in kept else ""))


if __name__ == "__main__":
    main()
