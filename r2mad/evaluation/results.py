"""A results folder read back (run.json + rows.jsonl, every sampling seed) and the formatting the report's
sections share: method labels, numbers, markdown tables, saving a plot. Not for the sections themselves (report.py,
trust.py)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from r2mad.evaluation import metrics as m
from r2mad.evaluation import prereg
from r2mad.evaluation.rows import ROWS, RUN, read_rows, row_key
from r2mad.methods import FULL, REGISTRY
from r2mad.types import Transcript, from_dict

LABELS = {name: spec.label if spec.family != "ablation" else f"R²-MAD {spec.label}"
          for name, spec in REGISTRY.items()}
TABLE3 = {**{name: spec.label for name, spec in REGISTRY.items() if "policies" in spec.tables and name != FULL},
          FULL: "Debate-State-Aware"}
BENCHMARKS = {"math500": "MATH500", "mmlu-pro-economics": "Economics",
              "mmlu-pro-engineering": "Engineering", "truthfulqa": "TruthfulQA"}


@dataclass
class Results:
    run: dict
    rows: list[dict]  # the first seed's: one per (question, method), by (question index, method order)
    by_method: dict[str, list[Transcript]]  # the first seed's, in the run's method order, split order
    by_seed: dict[int | None, dict[str, list[Transcript]]]  # every seed's, the first seed first
    all_rows: list[dict]
    prereg: dict | None = None  # OUT/prereg.json of a pre-registered run

    @property
    def benchmark(self) -> str:
        return BENCHMARKS.get(self.run["dataset"], self.run["dataset"])

    @property
    def seeds(self) -> list[int | None]:
        return list(self.by_seed)

    def seconds(self, method: str) -> list[float]:
        return [r["seconds"] for r in self.rows if r["method"] == method]


def load_results(results_dir: str | Path) -> Results:
    folder = Path(results_dir)
    run = json.loads((folder / RUN).read_text(encoding="utf-8"))
    order = {name: i for i, name in enumerate(run["methods"])}
    rows = [r if "seed" in r else {**r, "seed": run.get("seed")} for r in read_rows(folder / ROWS)]
    latest = {row_key(r): r for r in rows}  # last row wins
    all_rows = sorted(latest.values(), key=lambda r: (r["question_index"], order.get(r["method"], len(order)),
                                                      r["method"]))
    seeds = list(run.get("seeds") or [run.get("seed")])
    seeds += sorted({r.get("seed") for r in all_rows} - set(seeds), key=str)
    by_seed: dict = {seed: {name: [] for name in run["methods"]} for seed in seeds}
    for row in all_rows:
        by_seed[row.get("seed")].setdefault(row["method"], []).append(from_dict(Transcript, row["transcript"]))
    first = seeds[0]
    return Results(run, [r for r in all_rows if r.get("seed") == first], by_seed[first], by_seed, all_rows,
                   prereg.read(folder))


def label(method: str) -> str:
    base = method.removesuffix("+advice")
    if base in TABLE3 and base != FULL:
        name = f"R²-MAD ({TABLE3[base].lower()} retrieval)"
    else:
        name = LABELS.get(base, base)
    return name + (" + advice" if method.endswith("+advice") else "")


def fmt(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.3f}"


def fmt_ci(e: m.Estimate) -> str:
    return "–" if e.n == 0 else f"[{e.low:.3f}, {e.high:.3f}]"


def fmt_tokens(x: float) -> str:
    if math.isnan(x) or x == 0:
        return "–"
    return f"{x / 1000:.2f}K" if x >= 1000 else f"{x:.0f}"


def table(header: Sequence[str], rows: list[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])


def save_plot(plt, fig, ax, path: Path) -> Path:
    """How every plot of the report ends: a light grid, a tight layout, a PNG at 120 dpi, the figure freed."""
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
