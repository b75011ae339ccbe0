"""MP-Bench records: one folder per annotator, one JSON file per run, each step of `history` (the question,
then every turn) with `step`, `fail_annotation` ("1" where the annotator blamed that turn), `fail_category`
(the labels blaming it, comma-separated), `fail_reason` and `ideal_action`; beside them `is_correct`,
`question`, `ground_truth`, `system_prompt`, and our `run_id`, run-level `labels` and `note`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from r2mad.exports.attribution import Verdict, history, known_labels, save_verdict, step_turns, system_prompts, verdicts
from r2mad.runs.counterfactuals import corrections_of, write_correction


def run_record(record: Any, verdict: Verdict, ideals: dict[tuple[int, int], str] | None = None) -> dict[str, Any]:
    """`ideals`: the annotator's ideal action per (round, agent) of a turn (runs/counterfactuals.py)."""
    t = record.transcript
    blamed, turns = verdict.blamed_steps(t), step_turns(t)
    steps = []
    for i, step in enumerate(history(t)):
        labels = blamed.get(i, [])
        steps.append({**step, "step": str(i), "fail_annotation": "1" if labels else "0",
                      "fail_category": ",".join(labels), "fail_reason": verdict.note if labels else "",
                      "ideal_action": (ideals or {}).get(turns[i], "")})
    return {"is_correct": t.correct, "question": steps[0]["content"], "ground_truth": t.task.gold, "history": steps,
            "system_prompt": system_prompts(t), "run_id": record.id, "labels": list(verdict.labels),
            "note": verdict.note}


def read_verdict(rec: dict[str, Any], t: Any, taxonomy: dict[str, str], annotator: str) -> Verdict:
    """The labels one annotator's MP-Bench file gives one of our runs: each failed step blames its turn for
    the labels of its category (known ones; 'other' else)."""
    turns = step_turns(t)
    blame: dict[str, list[tuple[int, int]]] = {}
    reasons = []
    for item in rec.get("history") or []:
        if str(item.get("fail_annotation", "0")).strip() != "1":
            continue
        step = int(item.get("step", -1))
        if not 0 < step < len(turns):
            raise ValueError(f"{annotator}'s record of run {rec.get('run_id')}: step {step} is not a turn of that "
                             f"run (steps 1..{len(turns) - 1}); fix the step.")
        for label in known_labels(str(item.get("fail_category") or "").split(","), taxonomy):
            blame.setdefault(label, []).append(turns[step])
        if item.get("fail_reason") and item["fail_reason"] not in reasons:
            reasons.append(str(item["fail_reason"]))
    listed = known_labels(rec["labels"], taxonomy) if rec.get("labels") else ()
    labels = tuple(dict.fromkeys([*listed, *blame]))
    if not labels:
        raise ValueError(f"{annotator}'s record of run {rec.get('run_id')} gives no label and blames no step; "
                         "mark a step with fail_annotation \"1\" or list labels.")
    return Verdict(annotator, labels, blame, "\n".join(reasons) if reasons else str(rec.get("note") or ""))


def export_runs(store: Any, run_ids: Sequence[str], out: Path) -> list[Path]:
    """`<out>/<annotator>/<run id>.json` for every annotator of each run (the adjudicated labels as
    "final"); a run nobody labelled is left out."""
    written = []
    for run_id in run_ids:
        record = store.get_run(run_id)
        if record.transcript is None:
            raise ValueError(f"Run {record.id} stopped before round 0; it has no turns to export.")
        corrections = corrections_of(store, record.id)
        for verdict in verdicts(store, record.id):
            ideals = {(c.round, c.agent): c.ideal for c in corrections if c.annotator == verdict.annotator}
            folder = out / _folder(verdict.annotator)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{record.id}.json"
            path.write_text(json.dumps(store.scrub(run_record(record, verdict, ideals), keys=False), ensure_ascii=False,
                                       indent=1) + "\n", encoding="utf-8")
            written.append(path)
    return written


def _folder(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_. " else "_" for c in name).strip(". ")
    return safe or "annotator"


def import_folder(store: Any, root: Path) -> int:
    """Every `<root>/<annotator>/**/<run id>.json` into the label book as that annotator's labels."""
    folders = [d for d in sorted(Path(root).iterdir()) if d.is_dir()] if Path(root).is_dir() else []
    if not folders:
        raise ValueError(f"{root} holds no annotator folder; give the folder that holds one folder per annotator.")
    saved = 0
    for folder in folders:
        for path in sorted(folder.rglob("*.json")):
            rec = json.loads(path.read_text(encoding="utf-8"))
            run_id = str(rec.get("run_id") or path.stem)
            try:
                t = store.get_run(run_id).transcript
            except KeyError:
                raise ValueError(f"{path} is about run {run_id}, which this store does not have; import the run "
                                 "first (python -m r2mad import FILE.jsonl).") from None
            save_verdict(store, run_id, read_verdict(rec, t, store.taxonomy, folder.name))
            turns = step_turns(t)
            for item in rec.get("history") or []:
                step, ideal = int(item.get("step", -1)), str(item.get("ideal_action") or "").strip()
                if ideal and 0 < step < len(turns):
                    write_correction(store, run_id, *turns[step], folder.name, ideal)
            saved += 1
    return saved
