"""Accuracy as the bank grows (continual R²-MAD): evaluate the bank's methods on the test split, debate the
next batch of training questions into the bank (engine/build_memory.build), evaluate again, and so on;
each step's eval is a whole eval folder (OUT/step-K, resumable), the curve is OUT/learning_curve.md and
.png. The bank grown is a copy, so the one given stays as it was. Not for a single eval (evaluate.py)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from r2mad.engine.build_memory import build
from r2mad.engine.evaluate import run_eval
from r2mad.engine.resources import Given
from r2mad.evaluation import metrics as m
from r2mad.evaluation.results import fmt, label, load_results, save_plot, table
from r2mad.types import Task

CURVE = "learning_curve.md"


@dataclass(frozen=True)
class Point:
    step: int
    questions_added: int  # training questions debated into the bank so far by this curve
    bank_questions: int
    bank_cases: int
    accuracy: dict[str, m.Estimate]  # method -> plurality accuracy on the test split


def copy_bank(folder: str | Path, out: Path) -> Path:
    """The bank to grow: OUT/bank-<name>, copied from `folder` on the first run (kept when resuming)."""
    source = Path(folder)
    target = out / f"bank-{source.name}"
    if not (target / "manifest.yaml").is_file():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target, dirs_exist_ok=True)
    return target


def batches(train: Sequence[Task], size: int, steps: int) -> list[list[Task]]:
    """The first `steps` batches of `size` training questions, in split order."""
    return [list(train[i * size:(i + 1) * size]) for i in range(steps) if train[i * size:(i + 1) * size]]


async def learning_curve(run: Any, resources: Given, out: str | Path, *, train: Sequence[Task], batch: int,
                         steps: int, build_settings, **eval_kw) -> list[Point]:
    """Step 0 evaluates the bank `resources` hold as it is; step k first adds batch k of `train` (debated with
    memory off, full length, on their backend) and evaluates again; `eval_kw` go to evaluate.run_eval."""
    out, points, added, bank = Path(out), [], 0, resources.opened
    for step, questions in enumerate([[], *batches(train, batch, steps)]):
        if questions:
            await build(questions, bank, resources.backend, build_settings, summaries=resources.summaries)
            added += len(questions)
        usable = bank if len(bank) else None  # an empty bank: memory off
        step_resources = Given(resources.backend, resources.agents, bank=usable, summaries=resources.summaries)
        folder = out / f"step-{step}"
        await run_eval(run, step_resources, folder, **eval_kw)
        res = load_results(folder)
        points.append(Point(step, added, len(bank.question_ids), len(bank),
                            {name: m.accuracy(ts) for name, ts in res.by_method.items()}))
    write_curve(points, out, run.split.dataset)
    return points


def curve_markdown(points: Sequence[Point], dataset: str) -> str:
    methods = list(points[0].accuracy) if points else []
    rows = [[str(p.step), str(p.questions_added), str(p.bank_questions), str(p.bank_cases)]
            + [f"{fmt(a.value)} [{fmt(a.low)}, {fmt(a.high)}] (n={a.n})" for a in (p.accuracy[n] for n in methods)]
            for p in points]
    head = ["Step", "Questions added", "Bank questions", "Bank cases", *(label(n) for n in methods)]
    return (f"# Accuracy as the bank grows ({dataset})\n\nStep 0: the bank as given; each later step first debates "
            "one more batch of training questions into a copy of it. Plurality accuracy on the same test "
            "questions, Wilson 95% interval.\n\n" + table(head, rows) + "\n\n![learning curve](learning_curve.png)\n")


def write_curve(points: Sequence[Point], out: Path, dataset: str) -> Path:
    from r2mad.evaluation.report import _pyplot
    from r2mad.evaluation.report_html import report_page

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name in (points[0].accuracy if points else {}):
        xs = [p.bank_cases for p in points]
        ys = [p.accuracy[name].value for p in points]
        errs = [[p.accuracy[name].value - p.accuracy[name].low for p in points],
                [p.accuracy[name].high - p.accuracy[name].value for p in points]]
        ax.errorbar(xs, ys, yerr=errs, marker="o", capsize=3, label=label(name))
    if ax.lines:
        ax.legend(fontsize=8)
    ax.set(xlabel="cases in the bank", ylabel="accuracy (plurality, 95% CI)", ylim=(-0.02, 1.02),
           title=f"{dataset}: accuracy as the bank grows")
    save_plot(plt, fig, ax, out / "learning_curve.png")
    path = out / CURVE
    path.write_text(curve_markdown(points, dataset), encoding="utf-8")
    (out / "learning_curve.html").write_text(report_page(path.read_text(encoding="utf-8"), out), encoding="utf-8")
    return path
