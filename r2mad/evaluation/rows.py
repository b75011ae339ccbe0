"""An eval's resumable results folder: run.json (what it measures, checked when a rerun continues it) and
rows.jsonl (one row per question, method and seed). Running the eval is r2mad/engine/evaluate.py."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from r2mad import __version__
from r2mad.evaluation.costs import Prices, model_costs, total_cost
from r2mad.evaluation.datasets import Split
from r2mad.evaluation.metrics import AUXILIARY_KINDS, call_seconds
from r2mad.evaluation.prereg import data_digest
from r2mad.jsonl import read_jsonl
from r2mad.methods import METHODS, make_method
from r2mad.settings.config import ConfigError, DebateSettings
from r2mad.types import Task, Transcript, to_dict

ROWS, RUN = "rows.jsonl", "run.json"
# run.json keys that must match for a rerun to continue the same results
RESUME_KEYS = ("dataset", "split", "split_seed", "methods", "backbone", "agent_backbones", "aux_backbone",
               "settings", "share_round0")
WORDS = {"agent_backbones": "agent backbones", "aux_backbone": "auxiliary backbone"}


@dataclass(frozen=True)
class EvalRun:
    """What one eval measures; recorded in run.json and checked when a rerun continues it."""
    split: Split
    methods: tuple[str, ...]
    backbone: str  # the one backbone, or a mixed-model run's mix as the run store names it ("a,b,a")
    settings: DebateSettings
    share_round0: bool = True
    data_file: str | None = None
    limit: int | None = None
    bank: dict | None = None  # where the bank's cases come from (leakage.bank_record), for the record
    seeds: int = 1  # each method runs with sampling seeds seed, seed + 1, ..., seed + seeds - 1
    prices: Prices | None = None  # the backbone's, for cost in money
    serial_calls: bool = False  # the backend answered one call at a time (runs saved before batching)
    agent_backbones: tuple[str, ...] = ()  # a mixed-model run: one backbone per agent
    aux_backbone: str | None = None  # a mixed-model run: summaries, judges and advice
    model_prices: dict[str, Prices | None] = field(default_factory=dict)  # each model's, for cost per model
    sample: str = "first"  # which questions: the split's first `limit`, or the paper's own draw ("authors")
    unparsed: str = "wrong"  # a question with no parsed final answer in the paper's table: "wrong" or "authors"

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise ConfigError(f"--seeds must be 1 or more, not {self.seeds}.")
        if self.seeds > 1 and self.settings.seed is None:
            raise ConfigError("--seeds needs a base sampling seed; pass --seed N as well.")

    @property
    def loop_backbone(self) -> str:
        """The backbone the loop is given: the auxiliary one of a mixed-model run, else the one backbone."""
        return self.aux_backbone or self.backbone

    def price_table(self) -> dict[str, Prices | None]:
        return {self.loop_backbone: self.prices, **self.model_prices}

    @property
    def seed_values(self) -> list[int | None]:
        base = self.settings.seed
        return [base] if base is None else [base + i for i in range(self.seeds)]

    def config(self) -> dict:
        return {"dataset": self.split.dataset, "split": self.split.name, "split_seed": self.split.seed,
                "limit": self.limit, "data_file": self.data_file, "question_ids": list(self.split.ids),
                "data_digest": data_digest(self.split.tasks),
                "methods": list(self.methods), "backbone": self.backbone,
                "agent_backbones": list(self.agent_backbones) or None, "aux_backbone": self.aux_backbone,
                "seed": self.settings.seed, "seeds": self.seed_values, "settings": dataclasses.asdict(self.settings),
                "share_round0": self.share_round0, "bank": self.bank, "code_version": __version__,
                "prices": self.prices.to_dict() if self.prices else None, "serial_calls": self.serial_calls,
                "prices_by_model": {name: p.to_dict() if p else None for name, p in self.model_prices.items()}
                or None, "sample": self.sample, "unparsed": self.unparsed}


def parse_methods(text: str, settings: DebateSettings) -> tuple[str, ...]:
    """Comma-separated method names, checked by building each one before any token is spent."""
    names = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    if not names:
        raise ConfigError(f"--methods is empty; name one or more of: {', '.join(METHODS)}.")
    for name in names:
        try:
            make_method(name, settings)
        except ModuleNotFoundError as exc:
            raise ConfigError(f"Method '{name}' is not available in this installation ({exc.name} is "
                              "missing); leave it out of --methods.") from None
    return names


# --- the results folder ---------------------------------------------------------------------------

def read_rows(path: Path, *, repair: bool = False) -> list[dict]:
    """Rows of rows.jsonl. A partial last line (a run killed mid-write) is ignored, and with
    `repair` cut from the file so new rows start on a clean line."""
    if not path.exists():
        return []
    with path.open("r+b" if repair else "rb") as handle:
        rows = [row for _, row in read_jsonl(handle, path, whole_lines=True, bad_line=_bad_row)]
        if repair:
            handle.truncate(handle.tell())  # the reader stopped at the partial line's start
    return rows


def _bad_row(path: str | Path, number: int, why: str) -> ValueError:
    return ValueError(f"{path}:{number} is not a valid result row; delete that line and rerun to recompute it.")


def row_key(row: dict) -> tuple[str, str, int | None]:
    """What a row measures: (question id, method, sampling seed)."""
    return row["question_id"], row["method"], row.get("seed")


def finished_keys(rows: list[dict], *, retry_failed: bool = False) -> set[tuple[str, str, int | None]]:
    """(question id, method, seed) keys that a rerun skips; the last row of a key counts."""
    last = {row_key(r): r for r in rows}
    return {key for key, r in last.items() if not (retry_failed and r.get("status") == "failed")}


def prepare_folder(out: Path, run: EvalRun) -> dict:
    """Create or continue a results folder; refuse to mix runs that measure different things."""
    out.mkdir(parents=True, exist_ok=True)
    new = run.config()
    path = out / RUN
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise ConfigError(f"{path} is damaged; delete the folder {out} to start over, or restore "
                              "the file.") from None
        check_resumable(old, new, out)
        limits = (old.get("limit"), new["limit"])
        longer = len(new["question_ids"]) >= len(old["question_ids"])  # the digest of the questions kept
        new = {**new, "question_ids": max(old["question_ids"], new["question_ids"], key=len),
               "data_digest": new["data_digest"] if longer else old.get("data_digest"),
               "seeds": max(old.get("seeds") or [old.get("seed")], new["seeds"], key=len),
               "limit": None if None in limits else max(limits), "started": old.get("started"),
               "bank": new["bank"] or old.get("bank"),  # a rerun with nothing left opens no bank
               "resumed": [*old.get("resumed", []), now()]}
    else:
        new["started"] = now()
    path.write_text(json.dumps(new, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return new


def check_resumable(old: dict, new: dict, out: Path) -> None:
    differ = [k for k in RESUME_KEYS if _canon(k, old.get(k)) != _canon(k, new.get(k))]
    ids_old, ids_new = old.get("question_ids", []), new["question_ids"]
    n = min(len(ids_old), len(ids_new))
    if ids_old[:n] != ids_new[:n]:
        differ.append("questions")
    if differ:
        what = ", ".join(_describe(k, old.get(k), new.get(k)) for k in differ)
        raise ConfigError(f"{out} holds a run made with other {what}; rerun with the same options to "
                          "continue it, or pass another --out folder.")


def _describe(key: str, old, new) -> str:
    if key == "settings" and isinstance(old, dict):
        changed = [f"{k} {old.get(k)} -> {new.get(k)}" for k in new if old.get(k) != new.get(k)]
        return f"settings ({', '.join(changed)})"
    if key == "questions":
        return "questions"
    return f"{WORDS.get(key, key)} ({_show(old)} -> {_show(new)})"


def _show(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _canon(key: str, value):
    return sorted(value) if key == "methods" and value else value


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def make_row(index: int, task: Task, method: str, run: EvalRun, t: Transcript, seconds: float,
             seed: int | None = None) -> dict:
    """One result row; `seconds` (wall) includes a shared round 0, which the transcript's own clock misses;
    `call_seconds` is what the question's calls took, without waiting in line for a serialising backend."""
    usage = t.usage()
    tokens = {"debate": t.usage(("debate",)).tokens, "summary": t.usage(("summary",)).tokens,
              "auxiliary": t.usage(AUXILIARY_KINDS).tokens, "input": usage.tokens_in, "output": usage.tokens_out,
              "cached": usage.tokens_cached}  # of "input", those a server's prefix cache served
    per_model = t.usage_by_model()
    costs = model_costs(per_model, run.price_table())  # None: no model has a price
    cost = total_cost(costs)
    return {"question_index": index, "question_id": task.id, "method": method, "backbone": run.backbone,
            "agent_backbones": t.agent_backbones(),  # each agent's model (a mixed-model debate differs)
            "dataset": run.split.dataset, "split": run.split.name, "split_seed": run.split.seed,
            "seed": seed, "final": t.final.value, "correct": t.correct, "status": t.status,
            "tokens": tokens, "cost_usd": None if cost is None else round(cost, 8),
            "usage_by_model": {name: {"calls": u.calls, "input": u.tokens_in, "output": u.tokens_out}
                               for name, u in per_model.items()},
            "cost_by_model": costs and {name: None if c is None else round(c, 8) for name, c in costs.items()},
            "seconds": round(seconds, 4),
            "call_seconds": round(call_seconds(t), 4), "transcript": to_dict(t)}
