"""Who&When records (Zhang et al., ICML 2025): one JSON file per run with its `history` (the question, then
every turn), `mistake_agent`, `mistake_step` and `mistake_reason` (the earliest turn blamed), `question_ID`,
`level`, `ground_truth`, `is_correct` and `system_prompt`; our own keys (`run_id`, `annotator`, `labels`,
`blame`, `note`) ride beside them, so labels made in another tool come back into the label book."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from r2mad.exports.attribution import (
    FINAL,
    Verdict,
    agent_index,
    agent_name,
    history,
    known_labels,
    save_verdict,
    step_turns,
    system_prompts,
    verdicts,
)


def reason(verdict: Verdict, taxonomy: dict[str, str]) -> str:
    """The note, else each label with its description."""
    return verdict.note or "; ".join(f"{label}: {taxonomy.get(label, '')}" for label in verdict.labels)


def run_record(record: Any, verdict: Verdict | None, taxonomy: dict[str, str]) -> dict[str, Any]:
    """A saved run (RunRecord with its transcript) and one verdict as a Who&When record."""
    t = record.transcript
    steps = verdict.blamed_steps(t) if verdict else {}
    first = min(steps) if steps else None
    turn = step_turns(t)[first] if first is not None else None
    out: dict[str, Any] = {
        "is_correct": t.correct, "question": history(t)[0]["content"], "question_ID": t.task.id or record.id,
        "level": "", "ground_truth": t.task.gold, "history": history(t),
        "mistake_agent": agent_name(turn[1]) if turn else "", "mistake_step": str(first) if turn else "",
        "mistake_reason": reason(verdict, taxonomy) if verdict else "", "system_prompt": system_prompts(t),
        "run_id": record.id}
    if verdict is not None:
        out.update(annotator=verdict.annotator, labels=list(verdict.labels),
                   blame={label: [list(x) for x in turns] for label, turns in verdict.blame.items()},
                   note=verdict.note)
    return out


def read_verdict(rec: dict[str, Any], t: Any, taxonomy: dict[str, str], annotator: str | None = None) -> Verdict:
    """The labels a Who&When record gives one of our runs. The mistake step wins over our `blame` key when
    another tool moved it; a reason rewritten there becomes the note."""
    who = str(rec.get("annotator") or annotator or "").strip()
    if not who:
        raise ValueError(f"Record for run {rec.get('run_id')} names no annotator; give --annotator NAME.")
    labels = known_labels(rec.get("labels") or [], taxonomy)
    turns = step_turns(t)
    try:
        step = int(rec.get("mistake_step"))
    except (TypeError, ValueError):
        step = None
    if step is not None and not (0 < step < len(turns)):
        raise ValueError(f"Record for run {rec.get('run_id')}: mistake_step {step} is not a turn of that run "
                         f"(steps 1..{len(turns) - 1}); fix the step.")
    mistake = turns[step] if step is not None else None
    if mistake is not None and agent_index(rec.get("mistake_agent")) not in (None, mistake[1]):
        raise ValueError(f"Record for run {rec.get('run_id')}: step {step} is {agent_name(mistake[1])}'s turn, "
                         f"not {rec.get('mistake_agent')}'s; fix mistake_agent or mistake_step.")
    blame = {k: [tuple(x) for x in v] for k, v in (rec.get("blame") or {}).items() if k in labels}
    ours = Verdict(who, labels, blame, str(rec.get("note") or ""))
    kept = ours.blamed_steps(t)
    if mistake is not None and (min(kept) if kept else None) != step:
        blame = {label: [mistake] for label in labels}
    note = ours.note if rec.get("mistake_reason", "") == reason(ours, taxonomy) else str(rec.get("mistake_reason"))
    return Verdict(who, labels, blame, note)


def export_runs(store: Any, run_ids: Sequence[str], out: Path, who: str | None = None) -> list[Path]:
    """One file per run, `<out>/<run id>.json`: the labels of `who` (an annotator, or "final"), else the
    adjudicated ones, else the first annotator's, else none."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for run_id in run_ids:
        record = store.get_run(run_id)
        if record.transcript is None:
            raise ValueError(f"Run {record.id} stopped before round 0; it has no turns to export.")
        found = verdicts(store, record.id, who)
        if who is not None and not found:
            raise ValueError(f"Run {record.id} has no labels by {who!r}; leave out --annotator or name another.")
        chosen = found[0] if who else next((v for v in found if v.annotator == FINAL), found[0] if found else None)
        path = out / f"{record.id}.json"
        path.write_text(json.dumps(store.scrub(run_record(record, chosen, store.taxonomy), keys=False),
                                   ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append(path)
    return written


def import_files(store: Any, paths: Sequence[Path], annotator: str | None = None) -> int:
    """Labels from Who&When files of our runs into the label book; returns how many were saved."""
    saved = 0
    for path in paths:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
        run_id = str(rec.get("run_id") or Path(path).stem)
        try:
            t = store.get_run(run_id).transcript
        except KeyError:
            raise ValueError(f"{path} is about run {run_id}, which this store does not have; import the run "
                             "first (python -m r2mad import FILE.jsonl).") from None
        save_verdict(store, run_id, read_verdict(rec, t, store.taxonomy, annotator))
        saved += 1
    return saved
