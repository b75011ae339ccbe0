"""A pre-registered eval (`eval --prereg`): before the first model call the plan (methods, seeds, split and
split seed, the data's digest, the decision rule, the settings) goes to OUT/prereg.json under its sha256;
the report then says whether the run kept to it. Not for running or scoring (evaluate.py, paired.py)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

from r2mad.evaluation.paired import BOOTSTRAP_RESAMPLES
from r2mad.settings.config import ConfigError
from r2mad.types import Task

PREREG = "prereg.json"
ALPHA = 0.05
# run.json keys the plan fixes; the report compares them with what run.json says the run did
PLAN_KEYS = ("dataset", "split", "split_seed", "question_ids", "data_digest", "methods", "seeds", "backbone",
             "agent_backbones", "aux_backbone", "settings", "share_round0", "bank", "code_version")
DECISION_RULE = {
    "metric": "plurality accuracy on the questions both methods scored (the first sampling seed's)",
    "comparisons": "every pair of the registered methods",
    "test": "McNemar's exact two-sided test on the discordant questions",
    "interval": f"paired bootstrap 95% percentile interval ({BOOTSTRAP_RESAMPLES} resamples of questions)",
    "alpha": ALPHA,
    "decision": f"A differs from B when p < {ALPHA}; otherwise these questions cannot tell them apart",
}


def data_digest(tasks: Sequence[Task]) -> str:
    """sha256 of the questions as the debaters see them and their gold answers, in split order."""
    rows = [[t.id, t.kind, t.question, [list(o) for o in t.options], t.gold] for t in tasks]
    return hashlib.sha256(_canonical(rows).encode()).hexdigest()


def plan_of(config: dict) -> dict:
    """The plan of a run from its run.json record (EvalRun.config()), with the decision rule."""
    return {**{key: config.get(key) for key in PLAN_KEYS}, "decision_rule": DECISION_RULE}


def plan_hash(plan: dict) -> str:
    return hashlib.sha256(_canonical(plan).encode()).hexdigest()


def register(out: Path, config: dict, written: str, *, started: bool) -> dict:
    """Write OUT/prereg.json for a run about to start (`config`: its run.json record) and return it; a plan
    already there is kept (a rerun continues the registered run). Refused for a run `started` without a
    plan: a plan written after the first call is not a pre-registration."""
    path = out / PREREG
    if path.exists():
        return read(out)
    if started:
        raise ConfigError(f"{out} holds a run started without --prereg, so a plan written now would not be "
                          "pre-registered; pass another --out folder to register one before the first call.")
    plan = plan_of(config)
    record = {"sha256": plan_hash(plan), "written": written, "plan": plan}
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return record


def read(out: Path) -> dict | None:
    """OUT/prereg.json, or None when the run was not pre-registered."""
    path = Path(out) / PREREG
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise ConfigError(f"{path} is damaged; restore it, or remove it and run without --prereg.") from None


def departures(record: dict, run: dict) -> list[str]:
    """How the run departed from its registered plan: [] when it kept to it."""
    plan = record.get("plan") or {}
    if plan_hash(plan) != record.get("sha256"):
        return ["the plan in prereg.json no longer matches its sha256 (it was edited after it was written)"]
    done = plan_of(run)
    return [_difference(key.replace("_", " "), plan.get(key), done.get(key))
            for key in (*PLAN_KEYS, "decision_rule") if _canon(key, plan.get(key)) != _canon(key, done.get(key))]


def _difference(name: str, registered, done) -> str:
    if isinstance(registered, dict) and isinstance(done, dict):
        changed = [f"{k} {_show(registered.get(k))} -> {_show(done.get(k))}"
                   for k in dict.fromkeys([*registered, *done]) if registered.get(k) != done.get(k)]
        return f"{name} ({', '.join(changed)})"
    return f"{name} ({_show(registered)} registered, {_show(done)} run)"


def section(record: dict | None, run: dict) -> list[str]:
    """The report's lines on the pre-registration, or [] when there was none."""
    if record is None:
        return []
    away = departures(record, run)
    verdict = ("The run kept to the registered plan." if not away else
               "**The run did not keep to the registered plan:** " + "; ".join(away) + ".")
    rule = DECISION_RULE
    return ["", "## Pre-registration", "",
            f"Plan `{PREREG}` (sha256 `{record.get('sha256')}`), written {record.get('written')}, before the "
            f"first model call. {verdict}", "",
            f"Decision rule: {rule['comparisons']}, {rule['metric']}; {rule['test']}, α = {rule['alpha']}; "
            f"{rule['decision']}. The paired comparisons above apply it."]


def _canon(key: str, value):
    return sorted(value) if key == "methods" and value else value


def _show(value) -> str:
    if isinstance(value, list) and len(value) > 6:
        return f"{len(value)} items"
    if isinstance(value, dict):
        return "{…}"
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
